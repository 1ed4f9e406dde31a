#pragma once

#include "util/Clock.h"

#include <QLatin1String>
#include <QSet>
#include <QString>
#include <QStringList>

namespace sy {

// Reason names of a failed request's blocked_by (issue 7, DESIGN.md request log).
namespace blocked {
inline constexpr QLatin1String attemptsExhausted{"attempts_exhausted"};
inline constexpr QLatin1String budgetExhausted{"budget_exhausted"};
inline constexpr QLatin1String noHealthyProxy{"no_healthy_proxy"};
inline constexpr QLatin1String poolUnusable{"pool_unusable"};
inline constexpr QLatin1String proxyUnreachable{"proxy_unreachable"};
inline constexpr QLatin1String upstreamRejected{"upstream_rejected"};
} // namespace blocked

// Attempt outcomes the egress layer adds to the request log's vocabulary.
namespace egress_outcome {
inline constexpr QLatin1String proxyUnreachable{"proxy_unreachable"}; // no tunnel through the egress proxy
inline constexpr QLatin1String egressTimeout{"egress_timeout"};       // the egress budget ran out while connecting
} // namespace egress_outcome

// The blocked_by reason of one failed attempt: a connection that could not be set up through an egress
// proxy is the proxy's (proxy_unreachable), egress_timeout is the budget's, anything else the upstream's.
QString blockedReasonForOutcome(const QString &outcome, bool viaProxy);

// Every distinct reason a request was blocked by; listed sorted.
class BlockedReasons
{
public:
    void add(const QString &reason);
    bool contains(const QString &reason) const { return m_reasons.contains(reason); }
    bool isEmpty() const { return m_reasons.isEmpty(); }
    QStringList sorted() const;

private:
    QSet<QString> m_reasons;
};

// The `egress` budget of one request through one pool: how many attempts it may make and how much time it
// may spend setting up upstream connections through the pool's proxies. Every request gets its own object
// (EgressRequest creates them); what one request spends is never taken from another.
class EgressBudget
{
public:
    EgressBudget(const Clock &clock, int budgetMs, int maxAttempts);

    // Counts an attempt and starts its connection set-up clock.
    void beginAttempt();
    // The attempt's connection is up, or the attempt ended: the set-up clock stops.
    void endSetUp();

    int attempts() const { return m_attempts; }
    int maxAttempts() const { return m_maxAttempts; }
    int budgetMs() const { return m_budgetMs; }
    bool settingUp() const { return m_setUpSinceMs >= 0; }
    // Set-up time spent so far, including a set-up still running.
    qint64 spentMs() const;
    qint64 remainingMs() const;
    bool hasAttemptsLeft() const { return m_attempts < m_maxAttempts; }
    bool hasTimeLeft() const { return remainingMs() > 0; }
    // Clock::monotonicMs() at which the running set-up uses up the budget; -1 when none runs.
    qint64 deadlineMs() const;

private:
    const Clock *m_clock;
    int m_budgetMs;
    int m_maxAttempts;
    int m_attempts = 0;
    qint64 m_spentMs = 0;
    qint64 m_setUpSinceMs = -1;
};

} // namespace sy
