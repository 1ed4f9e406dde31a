#pragma once

#include <QHash>
#include <QList>
#include <QObject>
#include <QTimer>

namespace sy {

class UpstreamConnection;

// Idle keep-alive upstream connections, grouped by UpstreamEndpoint::key(). Busy connections belong to their
// call, not to the pool, so there is no limit on how many run at once per host. A connection comes back
// only after a response was read completely on it and both sides allowed keep-alive; one that closes,
// receives anything or stays idle for idleTimeoutMs() while pooled is dropped.
class ConnectionPool : public QObject
{
    Q_OBJECT

public:
    explicit ConnectionPool(QObject *parent = nullptr);
    ~ConnectionPool() override;

    // The most recently used reusable connection for key, now owned by the caller (reparent it), or null.
    UpstreamConnection *take(const QString &key);
    void release(UpstreamConnection *connection);

    int idleCount() const;
    int idleTimeoutMs() const { return m_idleTimeoutMs; }
    void setIdleTimeoutMs(int ms);

private:
    void drop(UpstreamConnection *connection);
    void detach(UpstreamConnection *connection);
    void sweep();

    QHash<QString, QList<UpstreamConnection *>> m_idle;
    QTimer m_sweepTimer;
    int m_idleTimeoutMs = 30 * 1000;
};

} // namespace sy
