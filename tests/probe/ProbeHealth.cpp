#include "EgressProbe.h"

#include <QJsonArray>
#include <limits>

namespace probe {

void checkHealth(const Inputs &in, Verdict *v)
{
    if (!in.health.present)
        return;
    const auto mismatch = [v](const QString &what) { v->mismatches << QStringLiteral("health: ") + what; };
    // An invalid configuration is answered with 3 and nothing else.
    if (!in.config.valid()) {
        if (in.health.exitCode != 3)
            mismatch(QStringLiteral("the configuration is invalid (%1): expected exit 3, found %2")
                         .arg(in.config.problems.join(QStringLiteral("; ")))
                         .arg(in.health.exitCode));
        return;
    }
    const QJsonArray criteria = in.health.json.value(QLatin1String("criteria")).toArray();
    if (criteria.isEmpty()) {
        mismatch(QStringLiteral("expected a non-empty criteria table, found none (exit %1)").arg(in.health.exitCode));
        if (in.health.exitCode == 0)
            mismatch(QStringLiteral("exit 0 without checking anything"));
        return;
    }
    QHash<QString, QJsonObject> byName;
    bool allOk = true;
    for (const QJsonValue &c : criteria) {
        const QJsonObject o = c.toObject();
        byName.insert(o.value(QLatin1String("name")).toString(), o);
        if (!o.value(QLatin1String("ok")).isBool())
            mismatch(QStringLiteral("criterion %1 has no ok verdict").arg(o.value(QLatin1String("name")).toString()));
        allOk = allOk && o.value(QLatin1String("ok")).toBool();
    }
    QStringList required{QStringLiteral("config"), QStringLiteral("requests"), QStringLiteral("aggregates")};
    for (const PoolConf &p : in.config.pools)
        required << QStringLiteral("egress_pool:") + p.name;
    for (const Account &a : in.accounts) {
        if (!a.status.isEmpty()) // only accounts the accounts list names (rows may outlive a removed account)
            required << QStringLiteral("account:") + (a.alias.isEmpty() ? a.id : a.alias);
    }
    for (const QString &name : required) {
        if (!byName.contains(name))
            mismatch(QStringLiteral("expected a criterion %1, found none").arg(name));
    }
    // Each pool's health, recomputed from the fake proxies' own modes now.
    const qint64 now = std::numeric_limits<qint64>::max();
    for (const PoolConf &p : in.config.pools) {
        const QJsonObject c = byName.value(QStringLiteral("egress_pool:") + p.name);
        if (c.isEmpty())
            continue;
        const bool expected = poolHealthyAt(in, p, now);
        if (c.value(QLatin1String("ok")).toBool() != expected)
            mismatch(QStringLiteral("pool %1: expected %2 (its proxies' own records), found %3")
                         .arg(p.name, expected ? QStringLiteral("healthy") : QStringLiteral("unhealthy"),
                              c.value(QLatin1String("ok")).toBool() ? QStringLiteral("healthy")
                                                                    : QStringLiteral("unhealthy")));
    }
    // Accounts the store knows as needing the user: never green.
    for (const Account &a : in.accounts) {
        const QJsonObject c = byName.value(QStringLiteral("account:") + (a.alias.isEmpty() ? a.id : a.alias));
        const bool broken = a.status == QLatin1String("reauth_required") || a.status == QLatin1String("deactivated");
        if (!c.isEmpty() && broken && c.value(QLatin1String("ok")).toBool())
            mismatch(QStringLiteral("account %1 is %2: expected its criterion to fail").arg(a.id, a.status));
    }
    const int expectedExit = allOk ? 0 : 2;
    if (in.health.exitCode != expectedExit)
        mismatch(QStringLiteral("criteria %1: expected exit %2, found %3")
                     .arg(allOk ? QStringLiteral("all hold") : QStringLiteral("include a failure"))
                     .arg(expectedExit)
                     .arg(in.health.exitCode));
    const QJsonValue reported = in.health.json.value(QLatin1String("exit_code"));
    if (reported.isDouble() && reported.toInt() != in.health.exitCode)
        mismatch(QStringLiteral("prints exit_code %1 but exits %2").arg(reported.toInt()).arg(in.health.exitCode));
}

} // namespace probe
