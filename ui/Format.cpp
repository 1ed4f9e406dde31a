#include "Format.h"

#include <QDateTime>
#include <QLocale>
#include <cmath>

namespace sy::ui {

QString Format::percent(const std::optional<double> &v)
{
    return v ? QString::number(qRound(*v)) + QLatin1Char('%') : QStringLiteral("?");
}

QString Format::duration(qint64 ms)
{
    const qint64 s = qMax<qint64>(0, ms) / 1000;
    if (s < 60)
        return tr("%1 s").arg(s);
    const qint64 minutes = s / 60;
    if (minutes < 60)
        return tr("%1 min").arg(minutes);
    const qint64 hours = minutes / 60;
    if (hours < 48)
        return tr("%1 h %2 min").arg(hours).arg(minutes % 60);
    return tr("%1 d %2 h").arg(hours / 24).arg(hours % 24);
}

QString Format::countdown(const std::optional<qint64> &atMs, qint64 nowMs)
{
    if (!atMs)
        return QStringLiteral("-");
    if (*atMs <= nowMs)
        return tr("now");
    return tr("in %1").arg(duration(*atMs - nowMs));
}

QString Format::dateTime(const std::optional<qint64> &epochMs)
{
    if (!epochMs)
        return QStringLiteral("-");
    return QDateTime::fromMSecsSinceEpoch(*epochMs).toString(QStringLiteral("yyyy-MM-dd HH:mm"));
}

QString Format::tokens(qint64 n)
{
    if (std::llabs(n) >= 1000000)
        return QString::number(double(n) / 1e6, 'f', 1) + QStringLiteral(" M");
    if (std::llabs(n) >= 1000)
        return QString::number(double(n) / 1e3, 'f', 1) + QStringLiteral(" k");
    return QString::number(n);
}

QString Format::accountStatus(const QString &status)
{
    if (status == QLatin1String("active"))
        return tr("Active");
    if (status == QLatin1String("rate_limited"))
        return tr("Rate limited");
    if (status == QLatin1String("quota_exceeded"))
        return tr("Quota exceeded");
    if (status == QLatin1String("paused"))
        return tr("Paused");
    if (status == QLatin1String("reauth_required"))
        return tr("Needs login");
    if (status == QLatin1String("deactivated"))
        return tr("Deactivated");
    return status;
}

QString Format::stage(const QString &stage)
{
    if (stage == QLatin1String("preparing"))
        return tr("Preparing");
    if (stage == QLatin1String("routing"))
        return tr("Routing");
    if (stage == QLatin1String("gate_wait"))
        return tr("Queued");
    if (stage == QLatin1String("connect"))
        return tr("Connecting");
    if (stage == QLatin1String("pre_response"))
        return tr("Waiting for response");
    if (stage == QLatin1String("streaming"))
        return tr("Streaming");
    if (stage == QLatin1String("settling"))
        return tr("Settling");
    return stage;
}

} // namespace sy::ui
