#include "http/HttpServer.h"

#include "http/HttpConnection.h"
#include "http/WriteCoalescer.h"
#include "util/Clock.h"
#include "util/EpollEventDispatcher.h"

#include <QTcpServer>
#include <QTcpSocket>

namespace sy {

struct HttpServer::Config : HttpServerConfig
{
};

HttpServer::HttpServer(QObject *parent)
    : QObject(parent), m_config(std::make_unique<Config>()), m_tcp(new QTcpServer(this))
{
    m_config->clock = &SystemClock::instance();
    // Created before any connection, so it is deleted before them too; connections hold it by QPointer.
    m_config->coalescer = new WriteCoalescer(this);
    // Bursts of many simultaneous clients (parallel agents) must not overflow the kernel's accept queue.
    m_tcp->setListenBacklogSize(512);
    m_tcp->setMaxPendingConnections(1024);
    connect(m_tcp, &QTcpServer::newConnection, this, &HttpServer::onNewConnection);
}

HttpServer::~HttpServer()
{
    close();
    // Connections are children; disconnect first so their teardown cannot call back into a dying server,
    // then tell unfinished responses their client is gone so handlers can cancel upstream work.
    for (HttpConnection *c : std::as_const(m_connections))
        disconnect(c, nullptr, this, nullptr);
    m_perClient.clear();
    m_clientOf.clear();
    const QSet<HttpConnection *> connections = std::exchange(m_connections, {});
    for (HttpConnection *c : connections)
        c->abort();
}

bool HttpServer::listen(const QHostAddress &address, quint16 port)
{
    if (!m_tcp->listen(address, port))
        return false;
    // A new client's first request waits on the accept: first in a pass (EpollEventDispatcher).
    EpollEventDispatcher::setSocketPriority(m_tcp->socketDescriptor(), true);
    return true;
}

bool HttpServer::isListening() const
{
    return m_tcp->isListening();
}

quint16 HttpServer::serverPort() const
{
    return m_tcp->serverPort();
}

QHostAddress HttpServer::serverAddress() const
{
    return m_tcp->serverAddress();
}

QString HttpServer::errorString() const
{
    return m_tcp->errorString();
}

QAbstractSocket::SocketError HttpServer::serverError() const
{
    return m_tcp->serverError();
}

void HttpServer::close()
{
    EpollEventDispatcher::setSocketPriority(m_tcp->socketDescriptor(), false);
    m_tcp->close();
}

void HttpServer::closeAllConnections()
{
    const QSet<HttpConnection *> connections = m_connections;
    for (HttpConnection *c : connections)
        c->abort();
}

void HttpServer::setHandler(Handler handler)
{
    m_handler = std::move(handler);
}

void HttpServer::setHeadObserver(HeadObserver observer)
{
    m_config->headObserver = std::move(observer);
}

void HttpServer::setMaxBodyBytes(qint64 bytes)
{
    m_config->maxBodyBytes = qMax<qint64>(0, bytes);
}

void HttpServer::setMaxHeaderBytes(qint64 bytes)
{
    m_config->maxHeaderBytes = qMax<qint64>(256, bytes);
}

void HttpServer::setIdleTimeoutMs(int ms)
{
    m_config->idleTimeoutMs = qMax(0, ms);
}

void HttpServer::setRequestTimeoutMs(int ms)
{
    m_config->requestTimeoutMs = qMax(0, ms);
}

void HttpServer::setHeaderTimeoutMs(int ms)
{
    m_config->headerTimeoutMs = qMax(0, ms);
}

void HttpServer::setMaxHeaderCount(int count)
{
    m_config->maxHeaderCount = qMax(1, count);
}

void HttpServer::setMaxConnectionsPerClient(int max, bool includeLoopback)
{
    m_maxPerClient = qMax(0, max);
    m_limitLoopback = includeLoopback;
}

void HttpServer::setLingerMs(int ms)
{
    m_config->lingerMs = qMax(0, ms);
}

void HttpServer::setWatermarks(qint64 lowBytes, qint64 highBytes)
{
    m_config->lowWatermark = qMax<qint64>(0, lowBytes);
    m_config->highWatermark = qMax(m_config->lowWatermark, highBytes);
}

void HttpServer::setClock(const Clock *clock)
{
    m_config->clock = clock ? clock : &SystemClock::instance();
}

qint64 HttpServer::maxBodyBytes() const
{
    return m_config->maxBodyBytes;
}

qint64 HttpServer::maxHeaderBytes() const
{
    return m_config->maxHeaderBytes;
}

void HttpServer::onNewConnection()
{
    while (QTcpSocket *socket = m_tcp->nextPendingConnection()) {
        // Streamed events must leave at once instead of waiting for Nagle's algorithm.
        socket->setSocketOption(QAbstractSocket::LowDelayOption, 1);
        socket->setSocketOption(QAbstractSocket::KeepAliveOption, 1);
        const quint64 id = ++m_nextConnectionId;
        auto *connection = new HttpConnection(
            socket, id, *m_config, [this](HttpRequestPtr r, HttpResponse *s) { dispatch(std::move(r), s); }, this);
        m_connections.insert(connection);
        connect(connection, &HttpConnection::closed, this, [this](HttpConnection *c) {
            forgetConnection(c);
            emit connectionClosed(c->id());
        });
        emit connectionOpened(id);

        QHostAddress peer = socket->peerAddress();
        bool mapped = false;
        const quint32 v4 = peer.toIPv4Address(&mapped);
        if (mapped)
            peer = QHostAddress(v4); // ::ffff:a.b.c.d on a dual-stack socket is the IPv4 client a.b.c.d
        if (m_maxPerClient > 0 && (m_limitLoopback || !peer.isLoopback())) {
            const QByteArray client = peer.toString().toLatin1();
            int &open = m_perClient[client];
            if (open >= m_maxPerClient) {
                // Refused connections are not counted: they close on their own within the linger time.
                connection->refuse(503, "server_error", "too_many_connections",
                                   QStringLiteral("too many open connections from this address (at most %1)")
                                       .arg(m_maxPerClient));
                continue;
            }
            ++open;
            m_clientOf.insert(connection, client);
        }
    }
}

void HttpServer::forgetConnection(HttpConnection *connection)
{
    m_connections.remove(connection);
    const auto it = m_clientOf.find(connection);
    if (it == m_clientOf.end())
        return;
    const auto count = m_perClient.find(it.value());
    if (count != m_perClient.end() && --count.value() <= 0)
        m_perClient.erase(count);
    m_clientOf.erase(it);
}

void HttpServer::dispatch(HttpRequestPtr request, HttpResponse *response)
{
    if (!m_handler) {
        response->sendJsonError(404, "invalid_request_error", "not_found", QStringLiteral("no handler"));
        return;
    }
    m_handler(std::move(request), response);
}

} // namespace sy
