#include "ownership/AdmissionGate.h"

#include "util/Faults.h"

namespace sy {

AdmissionGate::AdmissionGate(int maxWaiters, int maxWaitersPerAccount)
    : m_maxWaiters(maxWaiters), m_maxPerAccount(maxWaitersPerAccount)
{
}

void AdmissionGate::setLimits(int maxWaiters, int maxWaitersPerAccount)
{
    m_maxWaiters = maxWaiters;
    m_maxPerAccount = maxWaitersPerAccount;
}

bool AdmissionGate::enqueue(const QString &requestId, const QString &accountId)
{
    auto it = m_entries.find(requestId);
    if (it != m_entries.end() && it->state == State::Queued)
        return true;
    if (m_queued >= m_maxWaiters || (!accountId.isEmpty() && m_perAccount.value(accountId) >= m_maxPerAccount)) {
        ++m_overloaded;
        return false;
    }
    if (it == m_entries.end()) {
        it = m_entries.insert(requestId, Entry{});
        ++m_admitted;
    }
    it->state = State::Queued;
    it->accountId = accountId;
    ++m_queued;
    if (!accountId.isEmpty())
        ++m_perAccount[accountId];
    return true;
}

void AdmissionGate::dequeue(Entry &e)
{
    if (e.state != State::Queued)
        return;
    --m_queued;
    if (!e.accountId.isEmpty() && --m_perAccount[e.accountId] <= 0)
        m_perAccount.remove(e.accountId);
}

void AdmissionGate::hold(const QString &requestId)
{
    auto it = m_entries.find(requestId);
    if (it == m_entries.end())
        return;
    dequeue(*it);
    it->state = State::Holding;
}

void AdmissionGate::finish(const QString &requestId)
{
    auto it = m_entries.find(requestId);
    if (it == m_entries.end())
        return;
    // A waiter that ends while queued must give its place back, or the gate fills with ghosts.
    if (SY_FAULT("lost-waiter") && it->state == State::Queued)
        return;
    dequeue(*it);
    m_entries.erase(it);
    ++m_left;
}

AdmissionGate::State AdmissionGate::state(const QString &requestId) const
{
    return m_entries.value(requestId).state;
}

} // namespace sy
