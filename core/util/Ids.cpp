#include "util/Ids.h"

#include <QDateTime>
#include <QRandomGenerator>

namespace sy {

QString newRequestId()
{
    quint32 words[3];
    QRandomGenerator::global()->fillRange(words);
    QString id = QStringLiteral("req_");
    for (quint32 w : words)
        id += QStringLiteral("%1").arg(w, 8, 16, QLatin1Char('0'));
    return id;
}

QString isoUtc(qint64 epochMs)
{
    return QDateTime::fromMSecsSinceEpoch(epochMs, Qt::UTC).toString(Qt::ISODateWithMs);
}

} // namespace sy
