#pragma once

#include <QNetworkProxy>
#include <QObject>
#include <QString>
#include <functional>

class QTcpSocket;

namespace sy {

// Probes egress proxies the way traffic uses them: a TCP connection to the upstream's host and port through
// the proxy (HTTP CONNECT or SOCKS5 handshake, credentials included), closed as soon as the tunnel is up.
// A proxy is healthy when the tunnel came up within the timeout.
class EgressProber : public QObject
{
    Q_OBJECT

public:
    struct Target
    {
        QString name;
        QNetworkProxy proxy;
    };
    using Result = std::function<void(const QString &name, bool healthy, const QString &detail)>;

    EgressProber(const QString &upstreamHost, quint16 upstreamPort, int timeoutMs, QObject *parent = nullptr);

    // Probes every target in parallel; `result` once per target, then `done` once.
    // A round still running is abandoned (its results are dropped) when a new one starts.
    void probe(const QList<Target> &targets, Result result, std::function<void()> done);
    bool isProbing() const { return m_pending > 0; }

private:
    void finishOne(QTcpSocket *socket, quint64 round, const QString &name, bool healthy, const QString &detail);

    QString m_host;
    quint16 m_port;
    int m_timeoutMs;
    quint64 m_round = 0;
    int m_pending = 0;
    Result m_result;
    std::function<void()> m_done;
};

} // namespace sy
