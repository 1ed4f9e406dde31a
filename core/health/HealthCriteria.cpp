#include "health/HealthCriteria.h"

#include "config/Config.h"
#include "util/Faults.h"

#include <QJsonArray>
#include <QSet>
#include <algorithm>

namespace sy {

namespace {

const QStringList kReasons{QStringLiteral("attempts_exhausted"), QStringLiteral("budget_exhausted"),
                           QStringLiteral("no_healthy_proxy"),   QStringLiteral("pool_unusable"),
                           QStringLiteral("proxy_unreachable"),  QStringLiteral("upstream_rejected")};

QString unavailable(const HealthInputs &in)
{
    return QStringLiteral("unavailable: the store could not be read (%1)").arg(in.storeProblem);
}

// The pool an account id is bound to, read from the configuration and the accounts table (not from the
// gateway): by id, then by alias, else the default pool.
QString boundPool(const HealthInputs &in, const QString &accountId)
{
    const EgressSettings &e = in.config->egress;
    if (e.accountBindings.contains(accountId))
        return e.accountBindings.value(accountId);
    for (const AccountRecord &a : in.accounts) {
        if (a.id == accountId && a.alias && e.accountBindings.contains(*a.alias))
            return e.accountBindings.value(*a.alias);
    }
    return e.defaultPool;
}

HealthCriterion configCriterion(const HealthInputs &in)
{
    HealthCriterion c{QStringLiteral("config"), true, {}, {}};
    QJsonObject bindings;
    QStringList problems;
    for (auto it = in.config->egress.accountBindings.begin(); it != in.config->egress.accountBindings.end(); ++it) {
        QStringList matches;
        for (const AccountRecord &a : in.accounts) {
            if (a.id == it.key() || (a.alias && *a.alias == it.key()))
                matches << a.id;
        }
        bindings.insert(it.key(), QJsonObject{{QStringLiteral("pool"), it.value()},
                                              {QStringLiteral("accounts"), QJsonArray::fromStringList(matches)}});
        if (matches.size() != 1)
            problems << QStringLiteral("binding \"%1\" matches %2 accounts").arg(it.key()).arg(matches.size());
    }
    if (!in.storeOk && !in.config->egress.accountBindings.isEmpty())
        problems << unavailable(in);
    c.facts = QJsonObject{
        {QStringLiteral("file"), in.config->configFile.isEmpty() ? QJsonValue() : QJsonValue(in.config->configFile)},
        {QStringLiteral("egress_proxies"), int(in.config->egress.proxies.size())},
        {QStringLiteral("egress_pools"), int(in.config->egress.pools.size())},
        {QStringLiteral("bindings"), bindings}};
    c.ok = problems.isEmpty();
    c.detail = c.ok ? QStringLiteral("valid; %1 binding(s) resolve to one account each").arg(bindings.size())
                    : problems.join(QStringLiteral("; "));
    return c;
}

HealthCriterion poolCriterion(const HealthInputs &in, const EgressPoolSpec &pool)
{
    HealthCriterion c{QStringLiteral("egress_pool:") + pool.name, false, {}, {}};
    QJsonArray members;
    int reached = 0;
    QStringList locked;
    for (const QString &name : pool.proxies) {
        const ProxyProbeResult probe = in.probes.value(name);
        const QString credentials = in.credentialProblems.value(name);
        reached += probe.reached ? 1 : 0;
        if (!credentials.isEmpty())
            locked << name;
        members.append(QJsonObject{
            {QStringLiteral("proxy"), name},
            {QStringLiteral("reached"), probe.reached},
            {QStringLiteral("detail"), probe.detail},
            {QStringLiteral("elapsed_ms"), probe.elapsedMs < 0 ? QJsonValue() : QJsonValue(probe.elapsedMs)},
            {QStringLiteral("credentials_problem"), credentials.isEmpty() ? QJsonValue() : QJsonValue(credentials)}});
    }
    c.facts = QJsonObject{{QStringLiteral("strategy"), egressStrategyName(pool.strategy)},
                          {QStringLiteral("members"), members},
                          {QStringLiteral("healthy_members"), reached}};
    // Healthy = live probes reached the upstream through at least one member, and every member's credentials
    // are there (the gateway refuses a pool with a member it cannot authenticate).
    c.ok = reached > 0 && locked.isEmpty();
    if (SY_FAULT("egress-health-from-candidates"))
        c.ok = !pool.proxies.isEmpty(); // the planted failure (fault build only): "a candidate exists"
    if (!locked.isEmpty())
        c.detail = QStringLiteral("unusable: no credentials for %1").arg(locked.join(QStringLiteral(", ")));
    else
        c.detail = QStringLiteral("%1 of %2 proxies reached the upstream").arg(reached).arg(pool.proxies.size());
    return c;
}

QList<HealthCriterion> accountCriteria(const HealthInputs &in)
{
    QList<HealthCriterion> out;
    HealthCriterion all{QStringLiteral("accounts"), in.storeOk && !in.accounts.isEmpty(), {}, {}};
    all.detail = !in.storeOk ? unavailable(in)
                             : (in.accounts.isEmpty() ? QStringLiteral("no accounts: nothing can be served")
                                                      : QStringLiteral("%1 account(s)").arg(in.accounts.size()));
    all.facts = QJsonObject{{QStringLiteral("count"), int(in.accounts.size())}};
    out.append(all);
    for (const AccountRecord &a : in.accounts) {
        HealthCriterion c{QStringLiteral("account:") + a.displayName(), true, {}, {}};
        const UsageRecord u = in.usage.value(a.id);
        QStringList problems;
        if (a.status == QLatin1String("reauth_required") || a.status == QLatin1String("deactivated"))
            problems << QStringLiteral("%1: needs the user (%2)").arg(a.status, a.statusReason);
        for (const auto &[name, w] :
             {std::pair{QStringLiteral("5h"), u.primary}, std::pair{QStringLiteral("weekly"), u.secondary}}) {
            if (w.usedPercent && (*w.usedPercent < 0 || *w.usedPercent > 100))
                problems << QStringLiteral("%1 window used %2%").arg(name).arg(*w.usedPercent);
        }
        const bool limited = a.status == QLatin1String("rate_limited") || a.status == QLatin1String("quota_exceeded");
        if (limited && !a.cooldownUntilMs && !u.primary.resetAtMs && !u.secondary.resetAtMs)
            problems << QStringLiteral("%1 with no known reset: it would never be tried again").arg(a.status);
        c.ok = problems.isEmpty();
        c.detail = c.ok ? a.status : problems.join(QStringLiteral("; "));
        c.facts = QJsonObject{
            {QStringLiteral("account_id"), a.id},
            {QStringLiteral("status"), a.status},
            {QStringLiteral("cooldown_until_ms"), a.cooldownUntilMs ? QJsonValue(*a.cooldownUntilMs) : QJsonValue()},
            {QStringLiteral("primary_used_percent"),
             u.primary.usedPercent ? QJsonValue(*u.primary.usedPercent) : QJsonValue()},
            {QStringLiteral("secondary_used_percent"),
             u.secondary.usedPercent ? QJsonValue(*u.secondary.usedPercent) : QJsonValue()}};
        out.append(c);
    }
    return out;
}

QString ownReason(const QString &outcome, bool viaProxy)
{
    if (outcome == QLatin1String("egress_timeout"))
        return QStringLiteral("budget_exhausted");
    if (outcome == QLatin1String("proxy_unreachable") ||
        (viaProxy && (outcome == QLatin1String("connect_failed") || outcome == QLatin1String("connect_timeout"))))
        return QStringLiteral("proxy_unreachable");
    return QStringLiteral("upstream_rejected");
}

QStringList rowProblems(const HealthInputs &in, const RequestLogRecord &r)
{
    QStringList p;
    QStringList sorted = r.blockedBy;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    if (sorted != r.blockedBy)
        p << QStringLiteral("blocked_by not distinct and sorted");
    for (const QString &b : r.blockedBy) {
        if (!kReasons.contains(b))
            p << QStringLiteral("unknown blocked_by reason %1").arg(b);
    }
    const bool completed = r.status == QLatin1String("completed");
    const QString last = r.attempts.isEmpty() ? QString() : r.attempts.last().outcome;
    if (completed != (last == QLatin1String("completed")))
        p << QStringLiteral("status %1 after last attempt %2").arg(r.status, last);
    if (completed && !r.blockedBy.isEmpty())
        p << QStringLiteral("completed with blocked_by");
    if ((r.status == QLatin1String("failed") || r.status == QLatin1String("timed_out")) && r.blockedBy.isEmpty())
        p << QStringLiteral("%1 without any blocked_by reason").arg(r.status);
    QHash<QString, int> perPool;
    for (const RequestAttempt &a : r.attempts) {
        const QString pool = boundPool(in, a.accountId);
        const EgressPoolSpec *spec = in.config->egress.pool(pool);
        if (!a.egressProxy && !pool.isEmpty())
            p << QStringLiteral("account %1 (pool %2) went direct").arg(a.accountId, pool);
        if (a.egressProxy && (!spec || !spec->proxies.contains(*a.egressProxy)))
            p << QStringLiteral("proxy %1 is not in account %2's pool \"%3\"").arg(*a.egressProxy, a.accountId, pool);
        if (spec && a.egressProxy && ++perPool[pool] > spec->maxAttempts)
            p << QStringLiteral("more than %1 attempts through pool %2").arg(spec->maxAttempts).arg(pool);
        const bool failedAttempt = a.outcome != QLatin1String("completed") && a.outcome != QLatin1String("cancelled");
        if (!completed && failedAttempt && r.status != QLatin1String("cancelled") &&
            !r.blockedBy.contains(ownReason(a.outcome, a.egressProxy.has_value())))
            p << QStringLiteral("attempt outcome %1 has no %2 in blocked_by")
                     .arg(a.outcome, ownReason(a.outcome, a.egressProxy.has_value()));
    }
    return p;
}

HealthCriterion requestsCriterion(const HealthInputs &in)
{
    HealthCriterion c{QStringLiteral("requests"), in.storeOk, {}, {}};
    if (!in.storeOk) {
        c.detail = unavailable(in);
        return c;
    }
    QJsonArray problems;
    int checked = 0;
    for (const RequestLogRecord &r : in.recentRows) {
        if (r.startedAtMs < in.configSinceMs || r.status == QLatin1String("rejected"))
            continue;
        ++checked;
        for (const QString &problem : rowProblems(in, r)) {
            if (problems.size() < 20)
                problems.append(QString(r.requestId + QStringLiteral(": ") + problem));
            c.ok = false;
        }
    }
    c.facts = QJsonObject{{QStringLiteral("rows_checked"), checked},
                          {QStringLiteral("since_ms"), in.configSinceMs},
                          {QStringLiteral("problems"), problems}};
    c.detail = c.ok
                   ? QStringLiteral("%1 recent request(s) agree with the configuration and their attempts").arg(checked)
                   : problems.first().toString();
    return c;
}

HealthCriterion aggregatesCriterion(const HealthInputs &in)
{
    HealthCriterion c{QStringLiteral("aggregates"), false, {}, {}};
    if (!in.storeOk || !in.aggregatesError.isEmpty()) {
        c.detail = !in.storeOk ? unavailable(in) : QStringLiteral("unavailable: ") + in.aggregatesError;
        return c;
    }
    QHash<QString, TokenTotals> sums;
    for (const RequestLogRecord &r : in.allRows) {
        if (!r.accountId)
            continue;
        TokenTotals &t = sums[*r.accountId];
        ++t.requests;
        t.input += r.tokens.input.value_or(0);
        t.cached += r.tokens.cached.value_or(0);
        t.output += r.tokens.output.value_or(0);
        t.reasoning += r.tokens.reasoning.value_or(0);
        t.total += r.tokens.total.value_or(0);
    }
    QSet<QString> ids(sums.keyBegin(), sums.keyEnd());
    for (auto it = in.aggregates.begin(); it != in.aggregates.end(); ++it)
        ids.insert(it.key());
    QJsonArray differ;
    for (const QString &id : ids) {
        const TokenTotals a = in.aggregates.value(id), s = sums.value(id);
        if (a.requests != s.requests || a.input != s.input || a.cached != s.cached || a.output != s.output ||
            a.reasoning != s.reasoning || a.total != s.total)
            differ.append(QStringLiteral("%1: aggregate %2 requests / %3 tokens, rows %4 / %5")
                              .arg(id)
                              .arg(a.requests)
                              .arg(a.total)
                              .arg(s.requests)
                              .arg(s.total));
    }
    c.ok = differ.isEmpty();
    c.facts = QJsonObject{{QStringLiteral("rows"), int(in.allRows.size())}, {QStringLiteral("differences"), differ}};
    c.detail = c.ok ? QStringLiteral("per-account totals equal the sum of %1 rows").arg(in.allRows.size())
                    : differ.first().toString();
    return c;
}

} // namespace

HealthReport evaluateHealth(const HealthInputs &in)
{
    HealthReport report;
    if (SY_FAULT("health-empty-criteria"))
        return report; // the planted failure (fault build only): a table with nothing in it
    if (!in.liveStoreProblem.isEmpty()) {
        // Reads still work on a full or read-only disk, so only the running instance can tell.
        report.criteria.append(HealthCriterion{QStringLiteral("store"), false,
                                               QStringLiteral("store unavailable: ") + in.liveStoreProblem,
                                               QJsonObject{{QStringLiteral("writable"), false},
                                                           {QStringLiteral("problem"), in.liveStoreProblem}}});
    }
    report.criteria.append(configCriterion(in));
    for (const EgressPoolSpec &pool : in.config->egress.pools)
        report.criteria.append(poolCriterion(in, pool));
    report.criteria.append(accountCriteria(in));
    report.criteria.append(requestsCriterion(in));
    report.criteria.append(aggregatesCriterion(in));
    return report;
}

} // namespace sy
