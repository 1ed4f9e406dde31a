#pragma once

#include <QStyledItemDelegate>

namespace sy::ui {

// Draws a used-% bar behind the cell text for cells whose model gives AccountsModel::UsedPercentRole
// (green, amber from 75 %, red from 95 %).
class UsageBarDelegate : public QStyledItemDelegate
{
    Q_OBJECT
public:
    using QStyledItemDelegate::QStyledItemDelegate;
    void paint(QPainter *painter, const QStyleOptionViewItem &option, const QModelIndex &index) const override;
};

} // namespace sy::ui
