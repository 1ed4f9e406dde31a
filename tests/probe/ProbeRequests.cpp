#include "EgressProbe.h"

#include <QSet>
#include <algorithm>

namespace probe {

namespace {

const QStringList kReasons{QStringLiteral("attempts_exhausted"), QStringLiteral("budget_exhausted"),
                           QStringLiteral("no_healthy_proxy"),   QStringLiteral("pool_unusable"),
                           QStringLiteral("proxy_unreachable"),  QStringLiteral("upstream_rejected")};

// Outcomes after which nothing reached the upstream.
bool neverReachedUpstream(const QString &outcome)
{
    return outcome == QLatin1String("proxy_unreachable") || outcome == QLatin1String("egress_timeout") ||
           outcome == QLatin1String("connect_failed") || outcome == QLatin1String("connect_timeout");
}

// Allowed slack for time measured on two sides of a socket.
int tolerance(int budgetMs)
{
    return 30 + budgetMs / 20;
}

struct Carrier
{
    QString proxy;
    bool opened = false; // the request was the first one on a new tunnel: it paid the set-up
    qint64 setUpMs = 0;
};

class RequestChecker
{
public:
    RequestChecker(const Inputs &in, Verdict *v) : m_in(in), m_v(v)
    {
        for (const QString &name : in.config.proxies.keys()) {
            const FakeProxy *fake = in.fakeFor(name);
            if (!fake)
                continue;
            for (const FakeConnection &c : fake->connections) {
                for (int i = 0; i < c.requests.size(); ++i) {
                    Carrier carrier{name, i == 0, c.establishedAtMs >= 0 ? c.establishedAtMs - c.acceptedAtMs : 0};
                    m_carried[c.requests.at(i)].append(carrier);
                }
            }
        }
        for (const UpstreamEntry &e : in.upstream)
            m_upstream[e.requestId].append(e);
    }

    void mismatch(const QString &id, const QString &what)
    {
        m_v->mismatches << QStringLiteral("%1: %2").arg(id.isEmpty() ? QStringLiteral("-") : id, what);
    }

    QString chatgptOf(const QString &accountId) const { return m_in.accounts.value(accountId).chatgptAccountId; }

    void row(const Row &r)
    {
        ++m_v->rowsChecked;
        QHash<QString, int> attemptsPerPool;
        QHash<QString, qint64> spentPerPool;
        QSet<QString> required;
        QSet<QString> allowed;
        int reachedIndex = 0;
        const QList<UpstreamEntry> upstream = m_upstream.value(r.id);
        QList<Carrier> carriers = m_carried.value(r.id);
        for (int i = 0; i < r.attempts.size(); ++i) {
            const Attempt &a = r.attempts.at(i);
            ++m_v->attemptsChecked;
            // An egress run has one replica: no one else can take over a slot whose lease it renews.
            const bool ownerLost = a.outcome == QLatin1String("owner_lost");
            if (ownerLost)
                mismatch(r.id, QStringLiteral("attempt %1 ended owner_lost: expected none (one replica renews its "
                                              "own leases; nothing else can take its slot over)")
                                   .arg(i));
            const QString pool = poolOf(m_in, a.accountId);
            const PoolConf *conf = m_in.config.pool(pool);
            // Fail closed: a bound account never goes direct, and only through its own pool's proxies.
            if (a.proxy.isEmpty() && !pool.isEmpty())
                mismatch(r.id, QStringLiteral("attempt %1 went direct: expected a proxy of pool %2").arg(i).arg(pool));
            if (!a.proxy.isEmpty() && (!conf || !conf->proxies.contains(a.proxy)))
                mismatch(r.id, QStringLiteral("attempt %1 recorded proxy %2: expected a member of pool \"%3\"")
                                   .arg(i)
                                   .arg(a.proxy, pool));
            if (conf && !a.proxy.isEmpty()) {
                const int k = attemptsPerPool[pool]++;
                if (k >= conf->maxAttempts)
                    mismatch(r.id, QStringLiteral("attempt %1 through pool %2: expected at most %3 attempts")
                                       .arg(i)
                                       .arg(pool)
                                       .arg(conf->maxAttempts));
                if (conf->strategy == QLatin1String("ordered") &&
                    conf->proxies.value(k % conf->proxies.size()) != a.proxy)
                    mismatch(r.id, QStringLiteral("ordered pool %1 attempt %2: expected %3, found %4")
                                       .arg(pool)
                                       .arg(k)
                                       .arg(conf->proxies.value(k % conf->proxies.size()), a.proxy));
                if (!poolHealthyAt(m_in, *conf, r.startedAtMs))
                    mismatch(r.id, QStringLiteral("attempt %1 through pool %2, which has no healthy proxy: expected "
                                                  "no attempt (no_healthy_proxy)")
                                       .arg(i)
                                       .arg(pool));
                m_walks[pool].append(a.proxy);
            }
            // Whether an owner_lost attempt went through shows in its proxy's record (or, direct, at the upstream).
            const bool lostAfterSending =
                ownerLost && (a.proxy.isEmpty() ? upstream.size() > reachedIndex
                                                : std::any_of(carriers.cbegin(), carriers.cend(),
                                                              [&](const Carrier &c) { return c.proxy == a.proxy; }));
            checkOutcome(r, i, a, conf, &spentPerPool, &carriers);
            if (lostAfterSending)
                ++reachedIndex;
            // What reached the upstream must be there, on the recorded account, in order.
            if (!neverReachedUpstream(a.outcome) && a.outcome != QLatin1String("cancelled") && !ownerLost) {
                if (m_in.haveUpstream) {
                    if (reachedIndex >= upstream.size())
                        mismatch(r.id, QStringLiteral("attempt %1 (%2): expected the upstream to have received it")
                                           .arg(i)
                                           .arg(a.outcome));
                    else if (!chatgptOf(a.accountId).isEmpty() &&
                             upstream.at(reachedIndex).chatgptAccountId != chatgptOf(a.accountId))
                        mismatch(r.id, QStringLiteral("attempt %1 carried by account %2: expected %3")
                                           .arg(i)
                                           .arg(upstream.at(reachedIndex).chatgptAccountId, chatgptOf(a.accountId)));
                    else if (a.outcome == QLatin1String("completed") && upstream.at(reachedIndex).status != 200)
                        mismatch(r.id, QStringLiteral("attempt %1 recorded completed: the upstream answered %2")
                                           .arg(i)
                                           .arg(upstream.at(reachedIndex).status));
                }
                ++reachedIndex;
            }
            if (a.outcome != QLatin1String("completed") && a.outcome != QLatin1String("cancelled") && !ownerLost)
                required.insert(reasonFor(a.outcome));
        }
        // Recorded == carrying: every tunnel that carried this request must be explained by an attempt.
        for (const Carrier &c : std::as_const(carriers))
            mismatch(r.id, QStringLiteral("egress proxy %1 carried it: expected no attempt through it beyond those "
                                          "recorded")
                               .arg(c.proxy));
        if (m_in.haveUpstream && upstream.size() > reachedIndex)
            mismatch(r.id, QStringLiteral("the upstream received it %1 times: expected %2")
                               .arg(upstream.size())
                               .arg(reachedIndex));
        verdict(r, attemptsPerPool, spentPerPool, required, allowed);
    }

    void checkOutcome(const Row &r, int i, const Attempt &a, const PoolConf *conf, QHash<QString, qint64> *spent,
                      QList<Carrier> *carriers)
    {
        if (a.proxy.isEmpty() || !conf)
            return;
        const FakeProxy *fake = m_in.fakeFor(a.proxy);
        if (!fake)
            return;
        const QString mode = fake->modeAt(r.startedAtMs);
        const bool reached = !neverReachedUpstream(a.outcome) && a.outcome != QLatin1String("cancelled");
        if (mode == QLatin1String("down") && a.outcome != QLatin1String("proxy_unreachable") &&
            a.outcome != QLatin1String("cancelled"))
            mismatch(r.id,
                     QStringLiteral("attempt %1 through %2, which refuses everything: expected proxy_unreachable, "
                                    "found %3")
                         .arg(i)
                         .arg(a.proxy, a.outcome));
        if (mode != QLatin1String("down") && a.outcome == QLatin1String("proxy_unreachable"))
            mismatch(r.id, QStringLiteral("attempt %1 through %2 (%3): expected a tunnel, found proxy_unreachable")
                               .arg(i)
                               .arg(a.proxy, mode));
        const int budget = conf->budgetMs;
        qint64 &poolSpent = (*spent)[conf->name];
        if (a.outcome == QLatin1String("egress_timeout")) {
            const int delay = fake->delayAt(r.startedAtMs);
            if (poolSpent + delay < budget - tolerance(budget))
                mismatch(r.id, QStringLiteral("attempt %1 ran out of egress budget through %2 after %3 ms of this "
                                              "request's %4 ms: expected it to fit (per-request budget)")
                                   .arg(i)
                                   .arg(a.proxy)
                                   .arg(poolSpent + delay)
                                   .arg(budget));
            poolSpent = budget;
        }
        if (a.outcome == QLatin1String("owner_lost")) {
            // Already a mismatch of its own; it may have ended before or after its request went through.
            const auto it =
                std::find_if(carriers->begin(), carriers->end(), [&](const Carrier &c) { return c.proxy == a.proxy; });
            if (it != carriers->end())
                carriers->erase(it);
            return;
        }
        if (!reached)
            return;
        // The recorded proxy must be the one whose own record shows it carrying this request.
        const auto it =
            std::find_if(carriers->begin(), carriers->end(), [&](const Carrier &c) { return c.proxy == a.proxy; });
        if (it == carriers->end()) {
            mismatch(r.id, QStringLiteral("attempt %1 recorded egress proxy %2: its own record does not show it "
                                          "carrying the request")
                               .arg(i)
                               .arg(a.proxy));
            return;
        }
        ++m_v->carriedChecked;
        if (it->opened)
            poolSpent += it->setUpMs;
        carriers->erase(it);
        if (r.status == QLatin1String("completed") && poolSpent > budget + tolerance(budget))
            mismatch(r.id,
                     QStringLiteral("set-up through pool %1 took %2 ms: expected the %3 ms egress budget to stop it")
                         .arg(conf->name)
                         .arg(poolSpent)
                         .arg(budget));
    }

    void verdict(const Row &r, const QHash<QString, int> &attemptsPerPool, const QHash<QString, qint64> &spent,
                 QSet<QString> required, QSet<QString> allowed)
    {
        const bool completed = r.status == QLatin1String("completed");
        const QString last = r.attempts.isEmpty() ? QString() : r.attempts.last().outcome;
        if (completed != (last == QLatin1String("completed")))
            mismatch(r.id, QStringLiteral("status %1 after a last attempt %2").arg(r.status, last));
        QStringList sorted = r.blockedBy;
        std::sort(sorted.begin(), sorted.end());
        sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
        if (sorted != r.blockedBy)
            mismatch(r.id, QStringLiteral("blocked_by %1: expected distinct and sorted").arg(r.blockedBy.join(u',')));
        if (completed) {
            if (!r.blockedBy.isEmpty())
                mismatch(r.id,
                         QStringLiteral("completed with blocked_by %1: expected none").arg(r.blockedBy.join(u',')));
            return;
        }
        if (r.status == QLatin1String("rejected") || r.status == QLatin1String("cancelled"))
            return;
        // After an egress failure the same account tries again; being the last attempt, the try was refused.
        const QString lastPool = r.attempts.isEmpty() ? QString() : poolOf(m_in, r.attempts.last().accountId);
        const PoolConf *conf = m_in.config.pool(lastPool);
        if (conf && (last == QLatin1String("proxy_unreachable") || last == QLatin1String("egress_timeout"))) {
            if (attemptsPerPool.value(lastPool) >= conf->maxAttempts)
                required.insert(QStringLiteral("attempts_exhausted"));
            else if (spent.value(lastPool) >= conf->budgetMs - tolerance(conf->budgetMs))
                required.insert(QStringLiteral("budget_exhausted"));
            else
                allowed << QStringLiteral("no_healthy_proxy"); // the pool went unhealthy meanwhile
        }
        if (r.status == QLatin1String("timed_out"))
            required.insert(QStringLiteral("budget_exhausted"));
        if (r.attempts.isEmpty()) {
            const PoolConf *own = m_in.config.pool(poolOf(m_in, r.accountId));
            if (own && !poolHealthyAt(m_in, *own, r.startedAtMs))
                required.insert(QStringLiteral("no_healthy_proxy"));
        }
        // Reasons an account the log does not show may have added.
        if (!r.attempts.isEmpty())
            allowed << QStringLiteral("attempts_exhausted");
        for (const PoolConf &p : m_in.config.pools) {
            if (!poolHealthyAt(m_in, p, r.startedAtMs))
                allowed << QStringLiteral("no_healthy_proxy");
            for (const QString &m : p.proxies) {
                if (m_in.config.proxies.value(m).credentials)
                    allowed << QStringLiteral("pool_unusable");
            }
        }
        const QSet<QString> recorded(r.blockedBy.begin(), r.blockedBy.end());
        for (const QString &reason : std::as_const(required)) {
            if (!recorded.contains(reason))
                mismatch(
                    r.id,
                    QStringLiteral("blocked_by %1: expected it to include %2").arg(r.blockedBy.join(u','), reason));
        }
        for (const QString &reason : recorded) {
            if (!kReasons.contains(reason))
                mismatch(r.id, QStringLiteral("blocked_by names unknown reason %1").arg(reason));
            else if (!required.contains(reason) && !allowed.contains(reason))
                mismatch(r.id,
                         QStringLiteral("blocked_by includes %1: nothing this request met explains it").arg(reason));
        }
        // A budget blamed must have been spent by this request itself.
        if (recorded.contains(QStringLiteral("budget_exhausted")) && r.status != QLatin1String("timed_out") &&
            !required.contains(QStringLiteral("budget_exhausted")))
            mismatch(r.id, QStringLiteral("budget_exhausted without this request spending its egress budget"));
        if (r.status == QLatin1String("timed_out") && r.killStage == QLatin1String("egress")) {
            bool spentOne = false;
            for (auto it = spent.begin(); it != spent.end(); ++it) {
                const PoolConf *p = m_in.config.pool(it.key());
                spentOne = spentOne || (p && it.value() >= p->budgetMs - tolerance(p->budgetMs));
            }
            if (!spentOne)
                mismatch(r.id, QStringLiteral("killed by the egress budget without this request spending it"));
        }
    }

    // round_robin: one cursor per pool over every attempt. In order when the requests ran one at a time,
    // else as counts (the first N positions of the walk, whatever the interleaving).
    void walks(bool sequential)
    {
        m_v->sequenceChecked = sequential;
        for (const PoolConf &p : m_in.config.pools) {
            if (p.strategy != QLatin1String("round_robin") || p.proxies.isEmpty())
                continue;
            const QStringList seen = m_walks.value(p.name);
            QHash<QString, int> expectedCounts, seenCounts;
            for (int k = 0; k < seen.size(); ++k) {
                const QString expected = p.proxies.at(k % p.proxies.size());
                ++expectedCounts[expected];
                ++seenCounts[seen.at(k)];
                if (sequential && seen.at(k) != expected) {
                    mismatch(QString(), QStringLiteral("round_robin pool %1 attempt #%2: expected %3, found %4")
                                            .arg(p.name)
                                            .arg(k)
                                            .arg(expected, seen.at(k)));
                    break;
                }
            }
            if (expectedCounts != seenCounts)
                mismatch(QString(), QStringLiteral("round_robin pool %1: attempts per proxy differ from the cursor "
                                                   "walk over %2 attempts")
                                        .arg(p.name)
                                        .arg(seen.size()));
        }
    }

private:
    const Inputs &m_in;
    Verdict *m_v;
    QHash<QString, QList<Carrier>> m_carried;
    QHash<QString, QList<UpstreamEntry>> m_upstream;
    QHash<QString, QStringList> m_walks;
};

} // namespace

QString reasonFor(const QString &outcome)
{
    if (outcome == QLatin1String("proxy_unreachable"))
        return QStringLiteral("proxy_unreachable");
    if (outcome == QLatin1String("egress_timeout"))
        return QStringLiteral("budget_exhausted");
    return QStringLiteral("upstream_rejected");
}

QString poolOf(const Inputs &in, const QString &accountId)
{
    if (in.config.bindings.contains(accountId))
        return in.config.bindings.value(accountId);
    const QString alias = in.accounts.value(accountId).alias;
    if (!alias.isEmpty() && in.config.bindings.contains(alias))
        return in.config.bindings.value(alias);
    return in.config.defaultPool;
}

bool poolHealthyAt(const Inputs &in, const PoolConf &pool, qint64 ms)
{
    for (const QString &name : pool.proxies) {
        const FakeProxy *fake = in.fakeFor(name);
        // A proxy the probe has no record of counts as healthy: it cannot be shown otherwise.
        if (!fake || fake->modeAt(ms) != QLatin1String("down"))
            return true;
    }
    return false;
}

void checkRequests(const Inputs &in, Verdict *v)
{
    RequestChecker checker(in, v);
    bool sequential = true;
    qint64 previousEnd = -1;
    for (const Row &r : in.rows) {
        if (previousEnd >= 0 && r.startedAtMs + 1 < previousEnd)
            sequential = false;
        previousEnd = r.totalMs >= 0 ? r.startedAtMs + r.totalMs : r.startedAtMs;
        checker.row(r);
    }
    checker.walks(sequential);
    // Every request a proxy carried belongs to a logged request.
    QSet<QString> ids;
    for (const Row &r : in.rows)
        ids.insert(r.id);
    for (const FakeProxy &p : in.proxies) {
        for (const FakeConnection &c : p.connections) {
            for (const QString &id : c.requests) {
                if (id != QLatin1String("(none)") && !ids.contains(id))
                    checker.mismatch(
                        id, QStringLiteral("carried by fake proxy %1 but missing from the request log").arg(p.name));
            }
        }
    }
}

} // namespace probe
