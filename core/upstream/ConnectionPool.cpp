#include "upstream/ConnectionPool.h"

#include "upstream/UpstreamConnection.h"

#include <QLoggingCategory>
#include <algorithm>

namespace sy {

Q_DECLARE_LOGGING_CATEGORY(lcUpstream)

ConnectionPool::ConnectionPool(QObject *parent) : QObject(parent)
{
    connect(&m_sweepTimer, &QTimer::timeout, this, &ConnectionPool::sweep);
}

ConnectionPool::~ConnectionPool() = default; // pooled connections are children and close with the pool

UpstreamConnection *ConnectionPool::take(const QString &key)
{
    const auto it = m_idle.find(key);
    if (it == m_idle.end())
        return nullptr;
    QList<UpstreamConnection *> &list = *it;
    UpstreamConnection *found = nullptr;
    // Newest first: the one the upstream is least likely to have given up on.
    while (!list.isEmpty() && !found) {
        UpstreamConnection *candidate = list.takeLast();
        detach(candidate);
        if (candidate->idleMs() < m_idleTimeoutMs && candidate->isReusable()) {
            found = candidate;
        } else {
            qCDebug(lcUpstream) << "upstream connection" << candidate->id() << "went stale while idle";
            candidate->close();
            candidate->deleteLater();
        }
    }
    if (list.isEmpty())
        m_idle.erase(it);
    if (m_idle.isEmpty())
        m_sweepTimer.stop();
    return found;
}

void ConnectionPool::release(UpstreamConnection *connection)
{
    connection->setParent(this);
    connection->markIdle();
    // While pooled nothing may arrive: a byte or a close means the upstream is done with it.
    connect(connection, &UpstreamConnection::readyRead, this, [this, connection] { drop(connection); });
    connect(connection, &UpstreamConnection::closed, this, [this, connection] { drop(connection); });
    m_idle[connection->key()].append(connection);
    if (!m_sweepTimer.isActive())
        m_sweepTimer.start(std::max(10, m_idleTimeoutMs / 4));
}

void ConnectionPool::detach(UpstreamConnection *connection)
{
    disconnect(connection, nullptr, this, nullptr);
}

void ConnectionPool::drop(UpstreamConnection *connection)
{
    const auto it = m_idle.find(connection->key());
    if (it != m_idle.end()) {
        it->removeAll(connection);
        if (it->isEmpty())
            m_idle.erase(it);
    }
    detach(connection);
    connection->close();
    connection->deleteLater();
    if (m_idle.isEmpty())
        m_sweepTimer.stop();
}

void ConnectionPool::sweep()
{
    QList<UpstreamConnection *> expired;
    for (const QList<UpstreamConnection *> &list : std::as_const(m_idle)) {
        for (UpstreamConnection *connection : list) {
            if (connection->idleMs() >= m_idleTimeoutMs)
                expired.append(connection);
        }
    }
    for (UpstreamConnection *connection : std::as_const(expired))
        drop(connection);
}

int ConnectionPool::idleCount() const
{
    int total = 0;
    for (const QList<UpstreamConnection *> &list : m_idle)
        total += int(list.size());
    return total;
}

void ConnectionPool::setIdleTimeoutMs(int ms)
{
    m_idleTimeoutMs = std::max(1, ms);
    if (m_sweepTimer.isActive())
        m_sweepTimer.start(std::max(10, m_idleTimeoutMs / 4));
}

} // namespace sy
