#pragma once

#include "http/HttpRequest.h"
#include "http/HttpResponse.h"

#include <QAbstractSocket>
#include <QHash>
#include <QHostAddress>
#include <QObject>
#include <QSet>
#include <functional>

class QTcpServer;

namespace sy {

class Clock;
class HttpConnection;

// Downstream HTTP/1.1 server: keep-alive, pipelining (one request handled at a time per connection, in
// order), chunked request bodies, zstd/gzip/deflate request bodies, streaming responses with backpressure
// and client-disconnect detection. Errors the server decides itself (malformed request 400, body too large
// 413, unsupported content-encoding 415, header too large 431, unsupported transfer-encoding 501, request
// timeout 408, too many connections from one client 503) are JSON bodies {"error":{"message","type","code"}} and close the connection.
//
// A client that closes or shuts down its sending side while its response is unfinished counts as gone
// (HttpResponse::clientDisconnected()), like nginx's client-abort detection.
//
// Settings apply to connections accepted after the change. Lives on one thread; not thread-safe.
class HttpServer : public QObject
{
    Q_OBJECT

public:
    // Called once per request, on the server's thread. The handler may answer at once or later; see
    // HttpResponse for the response's lifetime. Without a handler every request gets a 404.
    using Handler = std::function<void(HttpRequestPtr request, HttpResponse *response)>;

    explicit HttpServer(QObject *parent = nullptr);
    // Drops open connections; unfinished responses emit clientDisconnected() before they are deleted.
    ~HttpServer() override;

    bool listen(const QHostAddress &address, quint16 port);
    bool isListening() const;
    quint16 serverPort() const;
    QHostAddress serverAddress() const;
    QString errorString() const;
    QAbstractSocket::SocketError serverError() const;
    // Stops accepting connections; open connections continue.
    void close();
    // Drops every open connection now; unfinished responses emit clientDisconnected().
    void closeAllConnections();
    int connectionCount() const { return int(m_connections.size()); }

    void setHandler(Handler handler);
    // Called on the server's thread as soon as a request's head was read and accepted, before its body is
    // (the handler gets the request once it is complete). For work worth starting early; it must be cheap.
    using HeadObserver = std::function<void(const HttpRequest &head)>;
    void setHeadObserver(HeadObserver observer);

    void setMaxBodyBytes(qint64 bytes);   // wire and decoded size; default 32 MiB
    void setMaxHeaderBytes(qint64 bytes); // request line + headers; default 64 KiB
    void setIdleTimeoutMs(int ms);        // idle keep-alive connection; default 120 s; 0 = never
    void setRequestTimeoutMs(int ms);     // started request must finish its head / keep its body moving; 30 s
    void setHeaderTimeoutMs(int ms);      // head due after its first byte (first head: after accept); 10 s
    void setMaxHeaderCount(int count);    // header fields per request, more get 431; default 100
    // Open connections per client address; one more is answered 503 and closed. 0 (default) = unbounded.
    // Loopback clients are counted only with `includeLoopback`: they are the user's own processes.
    void setMaxConnectionsPerClient(int max, bool includeLoopback = false);
    void setLingerMs(int ms);             // drain unread input before closing; default 2 s
    // Backpressure: congested() above high, drained() when back below low. Default 64 KiB / 256 KiB.
    void setWatermarks(qint64 lowBytes, qint64 highBytes);
    // Source of HttpRequest::receivedAtMs; default SystemClock. The clock must outlive the server.
    void setClock(const Clock *clock);

    qint64 maxBodyBytes() const;
    qint64 maxHeaderBytes() const;

signals:
    void connectionOpened(quint64 connectionId);
    void connectionClosed(quint64 connectionId);

private:
    void onNewConnection();
    void dispatch(HttpRequestPtr request, HttpResponse *response);
    void forgetConnection(HttpConnection *connection);

    struct Config;
    std::unique_ptr<Config> m_config;
    QTcpServer *m_tcp;
    Handler m_handler;
    QSet<HttpConnection *> m_connections;
    int m_maxPerClient = 0;
    bool m_limitLoopback = false;
    QHash<QByteArray, int> m_perClient;            // open connections by client address
    QHash<HttpConnection *, QByteArray> m_clientOf; // the connections counted there
    quint64 m_nextConnectionId = 0;
};

} // namespace sy
