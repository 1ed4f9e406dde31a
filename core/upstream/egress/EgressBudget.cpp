#include "upstream/egress/EgressBudget.h"

#include "util/Faults.h"

#include <algorithm>

namespace sy {

QString blockedReasonForOutcome(const QString &outcome, bool viaProxy)
{
    if (outcome == egress_outcome::egressTimeout)
        return blocked::budgetExhausted;
    if (outcome == egress_outcome::proxyUnreachable)
        return blocked::proxyUnreachable;
    // Through a proxy a connection that never came up (refused, handshake, or no tunnel in time) says
    // nothing about the upstream.
    if (viaProxy && (outcome == QLatin1String("connect_failed") || outcome == QLatin1String("connect_timeout")))
        return blocked::proxyUnreachable;
    return blocked::upstreamRejected;
}

void BlockedReasons::add(const QString &reason)
{
    if (SY_FAULT("egress-first-reason-only") && !m_reasons.isEmpty())
        return; // the planted failure (fault build only): only the first reason is kept
    m_reasons.insert(reason);
}

QStringList BlockedReasons::sorted() const
{
    QStringList out = m_reasons.values();
    std::sort(out.begin(), out.end());
    return out;
}

EgressBudget::EgressBudget(const Clock &clock, int budgetMs, int maxAttempts)
    : m_clock(&clock), m_budgetMs(budgetMs), m_maxAttempts(maxAttempts)
{
}

void EgressBudget::beginAttempt()
{
    endSetUp();
    ++m_attempts;
    m_setUpSinceMs = m_clock->monotonicMs();
}

void EgressBudget::endSetUp()
{
    if (m_setUpSinceMs < 0)
        return;
    m_spentMs += m_clock->monotonicMs() - m_setUpSinceMs;
    m_setUpSinceMs = -1;
}

qint64 EgressBudget::spentMs() const
{
    return m_spentMs + (m_setUpSinceMs >= 0 ? m_clock->monotonicMs() - m_setUpSinceMs : 0);
}

qint64 EgressBudget::remainingMs() const
{
    return std::max<qint64>(0, m_budgetMs - spentMs());
}

qint64 EgressBudget::deadlineMs() const
{
    if (m_setUpSinceMs < 0)
        return -1;
    return m_setUpSinceMs + std::max<qint64>(0, m_budgetMs - m_spentMs);
}

} // namespace sy
