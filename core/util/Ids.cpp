#include "util/Ids.h"

#include <QDateTime>
#include <QRandomGenerator>

namespace sy {

namespace {

constexpr quint64 kLow48Bits = (quint64(1) << 48) - 1;

QString hex12(quint64 value)
{
    return QStringLiteral("%1").arg(value & kLow48Bits, 12, 16, QLatin1Char('0'));
}

} // namespace

QString newRequestId(qint64 epochMs)
{
    return QStringLiteral("req_") + hex12(quint64(epochMs)) + hex12(QRandomGenerator::global()->generate64());
}

QString requestIdFloor(qint64 epochMs)
{
    return QStringLiteral("req_") + hex12(quint64(epochMs));
}

QString newOpaqueId()
{
    QRandomGenerator *random = QRandomGenerator::global();
    return hex12(random->generate64()) + hex12(random->generate64());
}

QString isoUtc(qint64 epochMs)
{
    return QDateTime::fromMSecsSinceEpoch(epochMs, Qt::UTC).toString(Qt::ISODateWithMs);
}

} // namespace sy
