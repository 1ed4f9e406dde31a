#include "tray/TrayIconPainter.h"

#include <QFont>
#include <QPainter>
#include <QPainterPath>
#include <QSvgRenderer>

namespace sy::ui {

namespace {

void toGrey(QImage &image)
{
    for (int y = 0; y < image.height(); ++y) {
        auto *line = reinterpret_cast<QRgb *>(image.scanLine(y));
        for (int x = 0; x < image.width(); ++x) {
            const QRgb p = line[x];
            const int g = qGray(p);
            line[x] = qRgba(g, g, g, qAlpha(p));
        }
    }
}

} // namespace

QColor TrayIconPainter::badgeColor(TrayState state)
{
    switch (state) {
    case TrayState::Serving:
        return QColor(0x2e, 0x9d, 0x48);
    case TrayState::Degraded:
        return QColor(0xe0, 0xa1, 0x00);
    case TrayState::AllLimited:
        return QColor(0xd0, 0x31, 0x2d);
    case TrayState::Paused:
        return QColor(0x6b, 0x72, 0x80);
    case TrayState::Stopped:
        return QColor(0x30, 0x30, 0x30);
    }
    return Qt::black;
}

QPointF TrayIconPainter::badgeCenter(int size)
{
    return QPointF(size * 0.76, size * 0.76);
}

QImage TrayIconPainter::render(TrayState state, std::optional<int> number, int size)
{
    QImage image(size, size, QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::transparent);
    {
        QPainter p(&image);
        QSvgRenderer svg(QStringLiteral(":/icons/switchyard.svg"));
        svg.render(&p, QRectF(0, 0, size, size));
    }
    if (state == TrayState::Paused || state == TrayState::Stopped)
        toGrey(image);

    QPainter p(&image);
    p.setRenderHint(QPainter::Antialiasing);
    const double r = size * 0.22;
    const QPointF c = badgeCenter(size);
    p.setPen(QPen(Qt::white, qMax(1.0, size / 32.0)));
    p.setBrush(badgeColor(state));
    p.drawEllipse(c, r, r);
    const QPen mark(Qt::white, qMax(1.0, size / 16.0), Qt::SolidLine, Qt::RoundCap);
    if (state == TrayState::Paused) {
        p.setPen(mark);
        p.drawLine(QPointF(c.x() - r * 0.35, c.y() - r * 0.45), QPointF(c.x() - r * 0.35, c.y() + r * 0.45));
        p.drawLine(QPointF(c.x() + r * 0.35, c.y() - r * 0.45), QPointF(c.x() + r * 0.35, c.y() + r * 0.45));
    } else if (state == TrayState::Stopped || state == TrayState::AllLimited) {
        p.setPen(mark);
        const double d = r * 0.4;
        p.drawLine(c + QPointF(-d, -d), c + QPointF(d, d));
        p.drawLine(c + QPointF(-d, d), c + QPointF(d, -d));
    }

    if (number) {
        const QString text = QString::number(qBound(0, *number, 100));
        QFont font;
        font.setPixelSize(qMax(7, int(size * 0.42)));
        font.setBold(true);
        p.setFont(font);
        const QRectF band(0, 0, size, size * 0.5);
        QPainterPath path;
        path.addRoundedRect(band, size * 0.12, size * 0.12);
        p.fillPath(path, QColor(0, 0, 0, 190));
        p.setPen(Qt::white);
        p.drawText(band, Qt::AlignCenter, text);
    }
    return image;
}

QIcon TrayIconPainter::icon(TrayState state, std::optional<int> number)
{
    QIcon icon;
    for (int size : {16, 22, 24, 32, 48, 64})
        icon.addPixmap(QPixmap::fromImage(render(state, number, size)));
    return icon;
}

} // namespace sy::ui
