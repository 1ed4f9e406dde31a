#include "health/HealthReport.h"

#include "util/Faults.h"

#include <QJsonArray>

namespace sy {

bool HealthReport::allHold() const
{
    for (const HealthCriterion &c : criteria) {
        if (!c.ok)
            return false;
    }
    return true;
}

int HealthReport::exitCode() const
{
    if (SY_FAULT("health-exit-zero"))
        return 0; // the planted failure (fault build only): exit 0 no matter what
    if (SY_FAULT("health-empty-criteria") && criteria.isEmpty())
        return 0; // the planted failure (fault build only): "all of nothing holds"
    if (criteria.isEmpty())
        return 2;
    return allHold() ? 0 : 2;
}

QJsonObject HealthReport::toJson() const
{
    QJsonArray list;
    for (const HealthCriterion &c : criteria) {
        list.append(QJsonObject{{QStringLiteral("name"), c.name},
                                {QStringLiteral("ok"), c.ok},
                                {QStringLiteral("detail"), c.detail},
                                {QStringLiteral("facts"), c.facts}});
    }
    return QJsonObject{{QStringLiteral("exit_code"), exitCode()},
                       {QStringLiteral("healthy"), exitCode() == 0},
                       {QStringLiteral("criteria"), list}};
}

QString HealthReport::toText() const
{
    QString out;
    int width = 8;
    for (const HealthCriterion &c : criteria)
        width = qMax(width, int(c.name.size()) + 2);
    for (const HealthCriterion &c : criteria)
        out += (c.ok ? QStringLiteral("ok    ") : QStringLiteral("FAIL  ")) + c.name.leftJustified(width) + c.detail +
               QLatin1Char('\n');
    out += exitCode() == 0 ? QStringLiteral("healthy (%1 criteria hold)").arg(criteria.size())
                           : QStringLiteral("problems found (exit %1)").arg(exitCode());
    return out;
}

} // namespace sy
