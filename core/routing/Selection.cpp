#include "routing/Selection.h"

#include "util/Faults.h"
#include "util/Ids.h"

#include <algorithm>
#include <array>
#include <utility>

namespace sy {

namespace {

constexpr std::array<std::pair<Strategy, const char *>, 4> strategyNames{{
    {Strategy::CapacityWeighted, "capacity_weighted"},
    {Strategy::UsageWeighted, "usage_weighted"},
    {Strategy::RoundRobin, "round_robin"},
    {Strategy::FillFirst, "fill_first"},
}};

bool isLimitStatus(AccountStatus s)
{
    return s == AccountStatus::RateLimited || s == AccountStatus::QuotaExceeded;
}

// The latest reset among windows known to be used up: a limited account needs all of them to reset.
std::optional<qint64> exhaustedUntil(const AccountUsage &usage, qint64 nowMs)
{
    std::optional<qint64> until;
    for (const QuotaWindow *w : {&usage.primary, &usage.secondary}) {
        if (isExhausted(*w, nowMs) && w->resetAtMs)
            until = std::max(until.value_or(0), *w->resetAtMs);
    }
    return until;
}

// Unknown usage counts as 0 % used (DESIGN): an account we know nothing about is presumed fresh.
double weeklyUsed(const Candidate &c, qint64 nowMs)
{
    return effectiveUsedPercent(c.usage.secondary, nowMs).value_or(0.0);
}

double fiveHourUsed(const Candidate &c, qint64 nowMs)
{
    return effectiveUsedPercent(c.usage.primary, nowMs).value_or(0.0);
}

// The common tie-break: least recently selected, then id.
bool tieBefore(const Candidate *a, const Candidate *b)
{
    if (a->lastSelectedMs != b->lastSelectedMs)
        return a->lastSelectedMs < b->lastSelectedMs;
    return a->accountId < b->accountId;
}

const Candidate *pickUsageWeighted(const QList<const Candidate *> &eligible, qint64 nowMs)
{
    return *std::min_element(eligible.begin(), eligible.end(), [nowMs](const Candidate *a, const Candidate *b) {
        const double wa = weeklyUsed(*a, nowMs), wb = weeklyUsed(*b, nowMs);
        if (wa != wb)
            return wa < wb;
        const double fa = fiveHourUsed(*a, nowMs), fb = fiveHourUsed(*b, nowMs);
        if (fa != fb)
            return fa < fb;
        return tieBefore(a, b);
    });
}

const Candidate *pickRoundRobin(const QList<const Candidate *> &eligible)
{
    return *std::min_element(eligible.begin(), eligible.end(), tieBefore);
}

const Candidate *pickFillFirst(const QList<const Candidate *> &eligible, qint64 nowMs)
{
    return *std::min_element(eligible.begin(), eligible.end(), [nowMs](const Candidate *a, const Candidate *b) {
        const double fa = fiveHourUsed(*a, nowMs), fb = fiveHourUsed(*b, nowMs);
        const bool fullA = fa >= 100.0, fullB = fb >= 100.0;
        if (fullA != fullB)
            return !fullA;
        if (!fullA && fa != fb)
            return fa > fb;
        return tieBefore(a, b);
    });
}

// nullptr when every weight is zero (the caller then falls back to usage_weighted).
const Candidate *pickCapacityWeighted(QList<const Candidate *> eligible, qint64 nowMs, QRandomGenerator &rng)
{
    // A fixed order makes a seeded draw independent of the order the caller listed candidates in.
    std::sort(eligible.begin(), eligible.end(),
              [](const Candidate *a, const Candidate *b) { return a->accountId < b->accountId; });
    QList<double> weights;
    double total = 0;
    for (const Candidate *c : eligible) {
        const double w = planWeight(c->plan) * (1.0 - weeklyUsed(*c, nowMs) / 100.0);
        weights.append(std::max(0.0, w));
        total += weights.constLast();
    }
    if (total <= 0)
        return nullptr;
    const double draw = rng.bounded(total);
    double cumulative = 0;
    const Candidate *lastPositive = nullptr;
    for (qsizetype i = 0; i < eligible.size(); ++i) {
        if (weights[i] <= 0)
            continue;
        lastPositive = eligible[i];
        cumulative += weights[i];
        if (draw < cumulative)
            return eligible[i];
    }
    return lastPositive; // only reachable through rounding at the very top of the range
}

const Candidate *findById(const QList<Candidate> &candidates, const QString &id)
{
    for (const Candidate &c : candidates) {
        if (c.accountId == id)
            return &c;
    }
    return nullptr;
}

QList<QPair<QString, QString>> skippedList(const QList<Candidate> &candidates, const SelectionRequest &request,
                                           const QString &chosenId, qint64 nowMs)
{
    QList<QPair<QString, QString>> skipped;
    for (const Candidate &c : candidates) {
        if (!chosenId.isEmpty() && c.accountId == chosenId)
            continue;
        QString reason = ineligibilityReason(c, request, nowMs);
        if (reason.isEmpty())
            reason = QStringLiteral("not_selected");
        skipped.append({c.accountId, reason});
    }
    return skipped;
}

SelectionResult chosen(const QList<Candidate> &candidates, const SelectionRequest &request, const Candidate &c,
                       const QString &reason, qint64 nowMs)
{
    SelectionResult r;
    r.accountId = c.accountId;
    r.reason = reason;
    r.skipped = skippedList(candidates, request, c.accountId, nowMs);
    return r;
}

SelectionResult failed(const QList<Candidate> &candidates, const SelectionRequest &request, const QString &code,
                       const QList<const Candidate *> &resetSources, qint64 nowMs)
{
    SelectionResult r;
    r.errorCode = code;
    r.skipped = skippedList(candidates, request, QString(), nowMs);
    for (const Candidate *c : resetSources) {
        if (const auto at = availableAgainAtMs(*c, nowMs))
            r.earliestResetMs = std::min(r.earliestResetMs.value_or(*at), *at);
    }
    return r;
}

} // namespace

QString strategyName(Strategy strategy)
{
    for (const auto &[value, name] : strategyNames) {
        if (value == strategy)
            return QLatin1String(name);
    }
    return QStringLiteral("capacity_weighted");
}

std::optional<Strategy> parseStrategy(const QString &name)
{
    const QString key = name.trimmed().toLower();
    for (const auto &[value, text] : strategyNames) {
        if (key == QLatin1String(text))
            return value;
    }
    return std::nullopt;
}

double planWeight(const QString &plan)
{
    QString key = plan.trimmed().toLower();
    key.remove(QLatin1Char('-')).remove(QLatin1Char('_')).remove(QLatin1Char(' '));
    if (key == QLatin1String("prolite"))
        return 5.0;
    if (key == QLatin1String("pro") || key == QLatin1String("enterprise"))
        return 6.67;
    if (key == QLatin1String("free"))
        return 0.15;
    return 1.0; // plus, team, business, edu, and any plan we do not know yet
}

QString ineligibilityReason(const Candidate &c, const SelectionRequest &request, qint64 nowMs)
{
    if (request.excluded.contains(c.accountId))
        return QStringLiteral("excluded");
    switch (c.status) {
    case AccountStatus::Paused:
    case AccountStatus::ReauthRequired:
    case AccountStatus::Deactivated:
        return accountStatusName(c.status);
    case AccountStatus::Active:
    case AccountStatus::RateLimited:
    case AccountStatus::QuotaExceeded:
        break;
    }
    if (c.cooldownUntilMs > nowMs)
        return QStringLiteral("cooldown_until=") + isoUtc(c.cooldownUntilMs);
    if (isLimitStatus(c.status)) {
        // An active account whose numbers say 100 % stays eligible (the numbers may be stale and the
        // strategies already rank it last); a limited one waits for its known reset.
        if (const auto until = exhaustedUntil(c.usage, nowMs))
            return accountStatusName(c.status) + QStringLiteral("_until=") + isoUtc(*until);
    }
    if (c.freeSlots <= 0)
        return QStringLiteral("no_free_slot");
    return {};
}

std::optional<qint64> availableAgainAtMs(const Candidate &c, qint64 nowMs)
{
    if (c.status == AccountStatus::Paused || c.status == AccountStatus::ReauthRequired ||
        c.status == AccountStatus::Deactivated)
        return std::nullopt;
    qint64 at = c.cooldownUntilMs;
    if (isLimitStatus(c.status))
        at = std::max(at, exhaustedUntil(c.usage, nowMs).value_or(0));
    if (at <= nowMs)
        return std::nullopt;
    return at;
}

SelectionResult selectAccount(const QList<Candidate> &candidates, const SelectionRequest &request, Strategy strategy,
                              qint64 nowMs, QRandomGenerator &rng)
{
    const auto eligible = [&](const Candidate *c) { return c && ineligibilityReason(*c, request, nowMs).isEmpty(); };
    const QString previousOwnerUnavailable = QStringLiteral("previous_response_owner_unavailable");

    // A continuation sent to another account is accepted upstream and then never answered, so the owner
    // serves it or the request fails (the client then resends the full history).
    // (The cross-account-anchor fault of test builds treats a continuation like mere affinity.)
    if (!request.continuationAccountId.isEmpty() && !SY_FAULT("cross-account-anchor")) {
        const Candidate *owner = findById(candidates, request.continuationAccountId);
        if (eligible(owner))
            return chosen(candidates, request, *owner, QStringLiteral("continuation"), nowMs);
        QList<const Candidate *> sources;
        if (owner)
            sources.append(owner);
        return failed(candidates, request, previousOwnerUnavailable, sources, nowMs);
    }
    if (request.continuationOwnerUnknown)
        return failed(candidates, request, previousOwnerUnavailable, {}, nowMs);
    if (SY_FAULT("cross-account-anchor") && !request.continuationAccountId.isEmpty()) {
        const Candidate *owner = findById(candidates, request.continuationAccountId);
        if (eligible(owner))
            return chosen(candidates, request, *owner, QStringLiteral("continuation"), nowMs);
    }

    if (!request.affinityAccountId.isEmpty()) {
        const Candidate *bound = findById(candidates, request.affinityAccountId);
        if (eligible(bound))
            return chosen(candidates, request, *bound, QStringLiteral("affinity"), nowMs);
    }

    bool pinFallback = false;
    if (!request.pinnedAccountId.isEmpty()) {
        const Candidate *pinned = findById(candidates, request.pinnedAccountId);
        if (eligible(pinned))
            return chosen(candidates, request, *pinned, QStringLiteral("pin"), nowMs);
        if (request.pinStrict) {
            QList<const Candidate *> sources;
            if (pinned)
                sources.append(pinned);
            return failed(candidates, request, QStringLiteral("pinned_account_unavailable"), sources, nowMs);
        }
        pinFallback = true;
    }

    QList<const Candidate *> pool;
    QList<const Candidate *> all;
    for (const Candidate &c : candidates) {
        all.append(&c);
        if (eligible(&c))
            pool.append(&c);
    }
    if (pool.isEmpty()) {
        SelectionResult r = failed(candidates, request, QStringLiteral("no_eligible_account"), all, nowMs);
        r.pinFallback = pinFallback;
        return r;
    }

    Strategy decided = strategy;
    const Candidate *pick = nullptr;
    switch (strategy) {
    case Strategy::CapacityWeighted:
        pick = pickCapacityWeighted(pool, nowMs, rng);
        if (!pick) {
            decided = Strategy::UsageWeighted;
            pick = pickUsageWeighted(pool, nowMs);
        }
        break;
    case Strategy::UsageWeighted:
        pick = pickUsageWeighted(pool, nowMs);
        break;
    case Strategy::RoundRobin:
        pick = pickRoundRobin(pool);
        break;
    case Strategy::FillFirst:
        pick = pickFillFirst(pool, nowMs);
        break;
    }
    SelectionResult r = chosen(candidates, request, *pick, QStringLiteral("strategy:") + strategyName(decided), nowMs);
    r.pinFallback = pinFallback;
    return r;
}

} // namespace sy
