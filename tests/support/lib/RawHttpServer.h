#pragma once

#include <QByteArray>
#include <QHash>
#include <QList>
#include <QObject>
#include <QPair>
#include <QPointer>
#include <QSslConfiguration>
#include <QTcpServer>
#include <QTcpSocket>
#include <QUrl>
#include <memory>

namespace sy::test {

// A tiny HTTP/1.1 server on 127.0.0.1 whose responses the test writes byte by byte, so a client's handling of
// framing, drops and keep-alive can be driven exactly. With a TLS configuration it is an https server
// (QSslServer; connections appear once the handshake is done).
class RawHttpServer : public QObject
{
    Q_OBJECT

public:
    struct Request
    {
        QTcpSocket *socket = nullptr;
        int connection = 0; // 1-based number of the accepted connection it came on
        QByteArray method;
        QByteArray path;
        QList<QPair<QByteArray, QByteArray>> headers; // in wire order, names as sent
        QByteArray body;
        QByteArray alpn; // negotiated application protocol, https only

        QByteArray header(const QByteArray &name) const;
        bool hasHeader(const QByteArray &name) const;
    };

    explicit RawHttpServer(const QSslConfiguration &tls = QSslConfiguration(), QObject *parent = nullptr);
    ~RawHttpServer() override;

    bool isListening() const { return m_server->isListening(); }
    quint16 port() const { return m_server->serverPort(); }
    // http://127.0.0.1:port/path (https://host:port/path with TLS; give the name the certificate carries).
    QUrl url(const QString &path, const QString &host = QStringLiteral("127.0.0.1")) const;

    int openConnections() const { return m_open; }
    int acceptedConnections() const { return m_accepted; }
    // Complete requests, in arrival order.
    QList<Request> requests;
    // Bytes that arrived on any connection, complete requests or not.
    qint64 bytesReceived() const { return m_bytesReceived; }
    // The socket of every accepted connection, in order (entries are null once closed).
    QList<QTcpSocket *> sockets() const;

    static void writeHead(QTcpSocket *socket, const QByteArray &statusLine, const QByteArray &headers);
    static void writeChunk(QTcpSocket *socket, const QByteArray &data);
    static void endChunks(QTcpSocket *socket);
    static void respond(QTcpSocket *socket, const QByteArray &statusLine, const QByteArray &headers,
                        const QByteArray &body);

private:
    void accept();
    void parse(QTcpSocket *socket);

    std::unique_ptr<QTcpServer> m_server;
    QHash<QTcpSocket *, QByteArray> m_buffers;
    QHash<QTcpSocket *, int> m_connectionNumbers;
    QList<QPointer<QTcpSocket>> m_sockets;
    bool m_tls;
    int m_open = 0;
    int m_accepted = 0;
    qint64 m_bytesReceived = 0;
};

} // namespace sy::test
