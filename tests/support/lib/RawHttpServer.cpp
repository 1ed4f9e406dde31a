#include "lib/RawHttpServer.h"

#include <QSslServer>
#include <QSslSocket>
#include <QTest>
#include <algorithm>

namespace sy::test {

QByteArray RawHttpServer::Request::header(const QByteArray &name) const
{
    for (const auto &[key, value] : headers) {
        if (key.compare(name, Qt::CaseInsensitive) == 0)
            return value;
    }
    return {};
}

bool RawHttpServer::Request::hasHeader(const QByteArray &name) const
{
    return std::any_of(headers.begin(), headers.end(),
                       [&](const auto &h) { return h.first.compare(name, Qt::CaseInsensitive) == 0; });
}

RawHttpServer::RawHttpServer(const QSslConfiguration &tls, QObject *parent) : QObject(parent), m_tls(!tls.isNull())
{
    if (m_tls) {
        auto *server = new QSslServer;
        server->setSslConfiguration(tls);
        m_server.reset(server);
    } else {
        m_server = std::make_unique<QTcpServer>();
    }
    m_server->setMaxPendingConnections(1000);
    // QSslServer queues a connection only once its handshake is done, after newConnection() has been
    // emitted for the raw socket; pendingConnectionAvailable() fires when it really is there.
    connect(m_server.get(), &QTcpServer::pendingConnectionAvailable, this, &RawHttpServer::accept);
    QVERIFY(m_server->listen(QHostAddress::LocalHost));
}

RawHttpServer::~RawHttpServer()
{
    // The sockets die with the server, after this object's own members: nothing may report back.
    for (const QPointer<QTcpSocket> &socket : std::as_const(m_sockets)) {
        if (socket)
            disconnect(socket, nullptr, this, nullptr);
    }
    m_server.reset();
}

QUrl RawHttpServer::url(const QString &path, const QString &host) const
{
    QUrl u;
    u.setScheme(m_tls ? QStringLiteral("https") : QStringLiteral("http"));
    u.setHost(host);
    u.setPort(m_server->serverPort());
    u.setPath(path);
    return u;
}

QList<QTcpSocket *> RawHttpServer::sockets() const
{
    QList<QTcpSocket *> out;
    for (const QPointer<QTcpSocket> &socket : m_sockets)
        out.append(socket.data());
    return out;
}

void RawHttpServer::writeHead(QTcpSocket *socket, const QByteArray &statusLine, const QByteArray &headers)
{
    socket->write("HTTP/1.1 " + statusLine + "\r\n" + headers + "\r\n");
}

void RawHttpServer::writeChunk(QTcpSocket *socket, const QByteArray &data)
{
    socket->write(QByteArray::number(data.size(), 16) + "\r\n" + data + "\r\n");
}

void RawHttpServer::endChunks(QTcpSocket *socket)
{
    socket->write("0\r\n\r\n");
}

void RawHttpServer::respond(QTcpSocket *socket, const QByteArray &statusLine, const QByteArray &headers,
                            const QByteArray &body)
{
    writeHead(socket, statusLine, headers + "Content-Length: " + QByteArray::number(body.size()) + "\r\n");
    socket->write(body);
}

void RawHttpServer::accept()
{
    while (QTcpSocket *socket = m_server->nextPendingConnection()) {
        ++m_open;
        ++m_accepted;
        m_connectionNumbers.insert(socket, m_accepted);
        m_sockets.append(socket);
        connect(socket, &QTcpSocket::readyRead, this, [this, socket] { parse(socket); });
        connect(socket, &QTcpSocket::disconnected, this, [this, socket] {
            --m_open;
            m_buffers.remove(socket);
            m_connectionNumbers.remove(socket);
            socket->deleteLater();
        });
        if (socket->bytesAvailable() > 0)
            parse(socket);
    }
}

void RawHttpServer::parse(QTcpSocket *socket)
{
    QByteArray &buffer = m_buffers[socket];
    const QByteArray bytes = socket->readAll();
    m_bytesReceived += bytes.size();
    buffer += bytes;
    for (;;) {
        const qsizetype headEnd = buffer.indexOf("\r\n\r\n");
        if (headEnd < 0)
            return;
        Request request;
        request.socket = socket;
        request.connection = m_connectionNumbers.value(socket);
        if (auto *ssl = qobject_cast<QSslSocket *>(socket))
            request.alpn = ssl->sslConfiguration().nextNegotiatedProtocol();
        const QList<QByteArray> lines = buffer.first(headEnd).split('\n');
        const QList<QByteArray> requestLine = lines.value(0).trimmed().split(' ');
        request.method = requestLine.value(0);
        request.path = requestLine.value(1);
        qsizetype contentLength = 0;
        for (qsizetype i = 1; i < lines.size(); ++i) {
            const qsizetype colon = lines[i].indexOf(':');
            const QByteArray name = lines[i].first(std::max<qsizetype>(colon, 0)).trimmed();
            const QByteArray value = lines[i].sliced(colon + 1).trimmed();
            request.headers.append({name, value});
            if (name.compare("content-length", Qt::CaseInsensitive) == 0)
                contentLength = value.toLongLong();
        }
        if (buffer.size() < headEnd + 4 + contentLength)
            return;
        request.body = buffer.mid(headEnd + 4, contentLength);
        buffer.remove(0, headEnd + 4 + contentLength);
        requests.append(request);
    }
}

} // namespace sy::test
