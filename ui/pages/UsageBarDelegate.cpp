#include "pages/UsageBarDelegate.h"

#include "models/AccountsModel.h"

#include <QPainter>

namespace sy::ui {

void UsageBarDelegate::paint(QPainter *painter, const QStyleOptionViewItem &option, const QModelIndex &index) const
{
    const QVariant used = index.data(AccountsModel::UsedPercentRole);
    if (used.isValid()) {
        const double pct = qBound(0.0, used.toDouble(), 100.0);
        const QColor color = pct >= 95   ? QColor(0xd0, 0x31, 0x2d)
                             : pct >= 75 ? QColor(0xe0, 0xa1, 0x00)
                                         : QColor(0x2e, 0x9d, 0x48);
        QRectF bar = QRectF(option.rect).adjusted(2, 3, -2, -3);
        painter->save();
        painter->setPen(Qt::NoPen);
        painter->setBrush(QColor(color.red(), color.green(), color.blue(), 40));
        painter->drawRoundedRect(bar, 3, 3);
        bar.setWidth(bar.width() * pct / 100.0);
        painter->setBrush(QColor(color.red(), color.green(), color.blue(), 120));
        painter->drawRoundedRect(bar, 3, 3);
        painter->restore();
    }
    QStyledItemDelegate::paint(painter, option, index);
}

} // namespace sy::ui
