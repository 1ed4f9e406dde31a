#pragma once

#include "routing/AccountStatus.h"
#include "usage/UsageWindows.h"

#include <QList>
#include <QPair>
#include <QRandomGenerator>
#include <QSet>
#include <QString>
#include <optional>

namespace sy {

// Everything selection knows about one account, as of one moment. Built by the caller from the account
// snapshot, slot table and usage store; selection itself does no I/O.
struct Candidate
{
    QString accountId;
    QString alias;
    QString plan; // "plus", "pro", ... as reported by the account/usage; empty when unknown
    AccountStatus status = AccountStatus::Active;
    qint64 cooldownUntilMs = 0; // epoch ms; 0 = none
    AccountUsage usage;
    qint64 lastSelectedMs = 0; // epoch ms; 0 = never
    int freeSlots = 0; // selection only tells 0 from more (AccountPool counts up to 1)
};

enum class Strategy
{
    CapacityWeighted,
    UsageWeighted,
    RoundRobin,
    FillFirst
};

// "capacity_weighted", "usage_weighted", "round_robin", "fill_first".
QString strategyName(Strategy strategy);
std::optional<Strategy> parseStrategy(const QString &name);

struct SelectionRequest
{
    QString continuationAccountId;         // owner of previous_response_id / turn state; empty if none
    bool continuationOwnerUnknown = false; // the request continues something whose owner is not known
    QString affinityAccountId;             // account the session is bound to; empty if none
    QString pinnedAccountId;               // empty = pin auto
    bool pinStrict = false;
    QSet<QString> excluded; // accounts already tried for this request
};

struct SelectionResult
{
    QString accountId; // empty = none
    QString reason;    // "continuation" | "affinity" | "pin" | "strategy:<name>" (the strategy that decided)
    // Every candidate not chosen, in input order, with why: "excluded", "paused", "reauth_required",
    // "deactivated", "cooldown_until=<ISO>", "rate_limited_until=<ISO>", "quota_exceeded_until=<ISO>",
    // "no_free_slot", or "not_selected" when it was eligible but lost.
    QList<QPair<QString, QString>> skipped;
    // When no account: "previous_response_owner_unavailable", "pinned_account_unavailable",
    // "no_eligible_account".
    QString errorCode;
    // When no account: the earliest time a time-limited account (cooldown, limit reset) becomes usable
    // again, for the 429's reset hint; among the accounts that could have served the request.
    std::optional<qint64> earliestResetMs;
    bool pinFallback = false; // a non-strict pin was not eligible and the strategy chose instead

    bool ok() const { return !accountId.isEmpty(); }
};

// Relative weekly capacity of a plan: plus/team/business/edu 1, prolite 5, pro/enterprise 6.67, free 0.15,
// anything else 1. Case, '-', '_' and spaces are ignored ("Pro-Lite" = "prolite").
double planWeight(const QString &plan);

// Empty when the candidate may serve this request now; else the skip reason (see SelectionResult).
QString ineligibilityReason(const Candidate &candidate, const SelectionRequest &request, qint64 nowMs);

// When a candidate held back only by time (cooldown or a limit whose reset is known) becomes usable;
// nullopt when it is usable now or blocked by something time does not fix (paused, reauth, ...).
std::optional<qint64> availableAgainAtMs(const Candidate &candidate, qint64 nowMs);

// The selection policy (DESIGN "Selection"). Precedence: continuation (its owner or an error, never
// another account), then session affinity while eligible, then the pin (non-strict falls back with
// pinFallback), then the strategy. Randomness only from `rng`, so a seeded generator replays a choice.
SelectionResult selectAccount(const QList<Candidate> &candidates, const SelectionRequest &request, Strategy strategy,
                              qint64 nowMs, QRandomGenerator &rng);

} // namespace sy
