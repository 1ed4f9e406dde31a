#pragma once

#include <QHash>
#include <QString>

namespace sy {

// The admission gate's books (spec: Inv7GateAccounting). Every turn that has to wait for a slot is entered
// here and is exactly one of: queued (waiting), holding (it got a slot) or terminal (gone from the books).
// Waiters are bounded in all and per account (the account a continuation must wait for); one more is
// refused, and the turn answers 503 proxy_overloaded with Retry-After. Lives on the proxy thread.
class AdmissionGate
{
public:
    enum class State
    {
        None,
        Queued,
        Holding
    };

    AdmissionGate(int maxWaiters, int maxWaitersPerAccount);
    // New bounds (a reloaded configuration) apply to the next enqueue; turns already queued stay queued.
    void setLimits(int maxWaiters, int maxWaitersPerAccount);

    // Queues `requestId` (waiting for `accountId`'s slots, or for any account when empty). False when the
    // gate is full: the caller refuses the turn. Queuing an already queued turn changes nothing.
    bool enqueue(const QString &requestId, const QString &accountId);
    // The waiter got a slot.
    void hold(const QString &requestId);
    // The turn ended (settled, cancelled or timed out): it leaves the books whatever it was.
    void finish(const QString &requestId);

    State state(const QString &requestId) const;
    int queued() const { return m_queued; }
    int queuedFor(const QString &accountId) const { return m_perAccount.value(accountId); }
    qint64 admitted() const { return m_admitted; }
    qint64 left() const { return m_left; }
    qint64 overloaded() const { return m_overloaded; }
    int maxWaiters() const { return m_maxWaiters; }
    int maxWaitersPerAccount() const { return m_maxPerAccount; }

private:
    struct Entry
    {
        State state = State::None;
        QString accountId;
    };
    void dequeue(Entry &e);

    int m_maxWaiters;
    int m_maxPerAccount;
    QHash<QString, Entry> m_entries;
    QHash<QString, int> m_perAccount;
    int m_queued = 0;
    qint64 m_admitted = 0;
    qint64 m_left = 0;
    qint64 m_overloaded = 0;
};

} // namespace sy
