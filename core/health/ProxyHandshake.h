#pragma once

#include "health/HealthCriteria.h"
#include "upstream/egress/EgressConfig.h"

#include <QHash>
#include <QObject>
#include <functional>

class QTcpSocket;

namespace sy {

// The health check's own probe of egress proxies, deliberately not the gateway's code path: a plain TCP
// socket speaking the HTTP CONNECT or SOCKS5 handshake itself (RFC 1928/1929; a SOCKS5 target name is
// resolved here for socks5:// and sent as a name for socks5h://) to open a tunnel to the upstream's host
// and port. Reached = the proxy answered the tunnel request with success within the timeout.
class ProxyHandshake : public QObject
{
    Q_OBJECT

public:
    struct Credentials
    {
        QString user;
        QString password;
    };

    ProxyHandshake(const QString &targetHost, quint16 targetPort, int timeoutMs, QObject *parent = nullptr);

    // Probes every proxy in parallel; `done` once with a result per proxy name.
    void run(const QList<EgressProxySpec> &proxies, const QHash<QString, Credentials> &credentials,
             std::function<void(QHash<QString, ProxyProbeResult>)> done);
    // Blocking form for the command line (runs a local event loop).
    QHash<QString, ProxyProbeResult> runAndWait(const QList<EgressProxySpec> &proxies,
                                                const QHash<QString, Credentials> &credentials);

private:
    class Session;

    QString m_host;
    quint16 m_port;
    int m_timeoutMs;
};

} // namespace sy
