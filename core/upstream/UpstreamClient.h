#pragma once

#include "upstream/UpstreamCall.h"

#include <QList>
#include <QNetworkProxy>
#include <QObject>
#include <QPointer>
#include <QSslConfiguration>

namespace sy {

class ConnectionPool;

// Starts upstream HTTP/1.1 calls on its own keep-alive connection pool (no Qt network access manager: that
// one silently resends a request whose connection closes before the answer, caps connections per host and
// hides connection reuse).
//
// Every call gets an idle pooled connection to the same scheme, host, port and proxy, or a new one; there is
// no limit on connections per host, so concurrency is bounded only by the callers. A connection returns to
// the pool only after a complete response both sides allowed to keep alive, and is closed after
// idleConnectionTimeoutMs() unused. https uses TLS with ALPN "http/1.1", SNI and peer verification against
// the system CAs (or those of setTlsConfiguration()).
//
// Everything lives in the client's thread; use the client from that thread only. Redirects are not
// followed, cookies are neither stored nor sent (accounts must not share them), responses are requested
// uncompressed. Deleting the client deletes its unfinished calls without emitting their finished().
class UpstreamClient : public QObject
{
    Q_OBJECT

public:
    explicit UpstreamClient(QObject *parent = nullptr);
    ~UpstreamClient() override;

    // Never returns null; nothing is emitted before the event loop runs. Header values (Authorization
    // included) are never logged.
    UpstreamCall *start(const UpstreamRequest &request);

    // For calls started from now on (e.g. one client per egress proxy): HTTP CONNECT or SOCKS5, as
    // QTcpSocket supports them; plain-http upstreams are tunnelled through an HTTP proxy as well. The default
    // (QNetworkProxy::DefaultProxy) follows the application proxy.
    void setProxy(const QNetworkProxy &proxy);
    QNetworkProxy proxy() const { return m_proxy; }
    // Base TLS settings for https calls started from now on (e.g. extra CA certificates). ALPN "http/1.1" and
    // peer verification are always enforced on top.
    void setTlsConfiguration(const QSslConfiguration &config) { m_tls = config; }
    QSslConfiguration tlsConfiguration() const { return m_tls; }

    int activeCalls() const;
    // Open keep-alive connections waiting for a call.
    int idleConnections() const;
    int idleConnectionTimeoutMs() const;
    void setIdleConnectionTimeoutMs(int ms);

private:
    friend class UpstreamCall;

    ConnectionPool *m_pool;
    QList<QPointer<UpstreamCall>> m_calls;
    QNetworkProxy m_proxy{QNetworkProxy::DefaultProxy};
    QSslConfiguration m_tls;
};

} // namespace sy
