// UpstreamClient's transport: HTTP/1.1 response framing, TLS (verified against a test CA, ALPN http/1.1) and
// egress proxies (HTTP CONNECT and SOCKS5), against in-process servers.
#include "lib/RawHttpServer.h"
#include "lib/UpstreamRecorder.h"
#include "upstream/UpstreamClient.h"

#include <QFile>
#include <QNetworkProxy>
#include <QProcess>
#include <QSslCertificate>
#include <QSslKey>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <QtEndian>

using sy::UpstreamClient;
using sy::UpstreamRequest;
using sy::test::RawHttpServer;
using Recorder = sy::test::UpstreamRecorder;
using Outcome = sy::UpstreamCall::Outcome;

namespace {

const QByteArray jsonHead = "Content-Type: application/json\r\n";

UpstreamRequest post(const QUrl &url)
{
    UpstreamRequest request;
    request.method = "POST";
    request.url = url;
    request.headers = {{"Authorization", "Bearer secret-token-xyz"}, {"Content-Type", "application/json"}};
    request.body = R"({"model":"gpt-5"})";
    return request;
}

// A minimal egress proxy: HTTP CONNECT or SOCKS5 (no authentication), then bytes are piped both ways.
class TunnelProxy : public QObject
{
public:
    enum class Mode
    {
        HttpConnect,
        Socks5
    };

    explicit TunnelProxy(Mode mode) : m_mode(mode)
    {
        connect(&m_server, &QTcpServer::newConnection, this, [this] {
            while (QTcpSocket *client = m_server.nextPendingConnection())
                serve(client);
        });
        QVERIFY(m_server.listen(QHostAddress::LocalHost));
    }

    QNetworkProxy proxy() const
    {
        return QNetworkProxy(m_mode == Mode::Socks5 ? QNetworkProxy::Socks5Proxy : QNetworkProxy::HttpProxy,
                             QStringLiteral("127.0.0.1"), m_server.serverPort());
    }

    QStringList targets; // "host:port" per tunnel, in order

private:
    void serve(QTcpSocket *client)
    {
        auto *buffer = new QByteArray;
        connect(client, &QObject::destroyed, this, [buffer] { delete buffer; });
        connect(client, &QTcpSocket::disconnected, client, &QObject::deleteLater);
        connect(client, &QTcpSocket::readyRead, this, [this, client, buffer] {
            *buffer += client->readAll();
            if (m_mode == Mode::HttpConnect) {
                const qsizetype end = buffer->indexOf("\r\n\r\n");
                if (end < 0)
                    return;
                const QList<QByteArray> line = buffer->first(buffer->indexOf("\r\n")).split(' ');
                const QByteArray authority = line.value(1);
                const qsizetype colon = authority.lastIndexOf(':');
                open(client, QString::fromLatin1(authority.first(colon)), authority.sliced(colon + 1).toUShort(),
                     "HTTP/1.1 200 Connection established\r\n\r\n");
            } else if (buffer->size() == 3 && buffer->startsWith("\x05\x01\x00")) {
                client->write(QByteArray("\x05\x00", 2)); // version 5, no authentication
                buffer->clear();
                return;
            } else if (buffer->size() >= 5) {
                const auto type = quint8(buffer->at(3));
                QString host;
                qsizetype at = 4;
                if (type == 1) {
                    host = QHostAddress(qFromBigEndian<quint32>(buffer->constData() + 4)).toString();
                    at += 4;
                } else if (type == 3) {
                    const int length = quint8(buffer->at(4));
                    host = QString::fromLatin1(buffer->mid(5, length));
                    at += 1 + length;
                }
                if (host.isEmpty() || buffer->size() < at + 2)
                    return;
                const quint16 port = qFromBigEndian<quint16>(buffer->constData() + at);
                open(client, host, port, QByteArray("\x05\x00\x00\x01\x00\x00\x00\x00\x00\x00", 10));
            } else {
                return;
            }
            disconnect(client, &QTcpSocket::readyRead, this, nullptr);
        });
    }

    void open(QTcpSocket *client, const QString &host, quint16 port, const QByteArray &reply)
    {
        targets << QStringLiteral("%1:%2").arg(host).arg(port);
        auto *upstream = new QTcpSocket(client);
        connect(upstream, &QTcpSocket::connected, client, [client, reply] { client->write(reply); });
        connect(upstream, &QTcpSocket::readyRead, client, [client, upstream] { client->write(upstream->readAll()); });
        connect(client, &QTcpSocket::readyRead, upstream, [client, upstream] { upstream->write(client->readAll()); });
        connect(upstream, &QTcpSocket::disconnected, client, [client] { client->disconnectFromHost(); });
        connect(client, &QTcpSocket::disconnected, upstream, [upstream] { upstream->disconnectFromHost(); });
        upstream->connectToHost(host, port);
    }

    Mode m_mode;
    QTcpServer m_server;
};

} // namespace

class TestUpstreamClientTransport : public QObject
{
    Q_OBJECT

private slots:
    void initTestCase();
    void responseFraming_data();
    void responseFraming();
    void httpsOverVerifiedTlsWithAlpn();
    void untrustedCertificateIsConnectionFailed();
    void hostNameMismatchIsConnectionFailed();
    void tlsIdleConnectionClosedByServerIsReplaced();
    void egressProxyCarriesTheCall_data();
    void egressProxyCarriesTheCall();

private:
    QSslConfiguration serverTls() const;
    QSslConfiguration clientTls() const;

    QTemporaryDir m_dir;
    QSslCertificate m_cert;
    QSslKey m_key;
};

void TestUpstreamClientTransport::initTestCase()
{
    QVERIFY(m_dir.isValid());
    const QString cert = m_dir.filePath(QStringLiteral("cert.pem")), key = m_dir.filePath(QStringLiteral("key.pem"));
    QProcess openssl;
    openssl.start(QStringLiteral("openssl"),
                  {"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout",
                   key, "-out", cert, "-days", "2", "-subj", "/CN=localhost", "-addext",
                   "subjectAltName=DNS:localhost"});
    if (!openssl.waitForStarted())
        QSKIP("openssl is not installed");
    QVERIFY(openssl.waitForFinished(30000));
    QCOMPARE(openssl.exitCode(), 0);
    const QList<QSslCertificate> certs = QSslCertificate::fromPath(cert);
    QCOMPARE(certs.size(), 1);
    m_cert = certs.first();
    QFile keyFile(key);
    QVERIFY(keyFile.open(QIODevice::ReadOnly));
    m_key = QSslKey(keyFile.readAll(), QSsl::Ec);
    QVERIFY(!m_key.isNull());
}

void TestUpstreamClientTransport::responseFraming_data()
{
    QTest::addColumn<QByteArray>("method");
    QTest::addColumn<QByteArray>("response");
    QTest::addColumn<bool>("closeAfter");
    QTest::addColumn<int>("outcome");
    QTest::addColumn<int>("status");
    QTest::addColumn<QByteArray>("body");
    QTest::addColumn<bool>("pooled");
    const int completed = int(Outcome::Completed), lost = int(Outcome::ConnectionLost);
    QTest::newRow("chunked") << QByteArray("POST")
                             << QByteArray("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                           "5\r\n{\"a\":\r\n2\r\n1}\r\n0\r\n\r\n")
                             << false << completed << 200 << QByteArray(R"({"a":1})") << true;
    QTest::newRow("close-delimited") << QByteArray("POST")
                                     << QByteArray("HTTP/1.1 500 Oops\r\nConnection: close\r\n\r\nbroken")
                                     << true << completed << 500 << QByteArray("broken") << false;
    QTest::newRow("interim 100 Continue") << QByteArray("POST")
                                          << QByteArray("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\n"
                                                        "Content-Length: 2\r\n\r\n{}")
                                          << false << completed << 201 << QByteArray("{}") << true;
    QTest::newRow("204") << QByteArray("POST") << QByteArray("HTTP/1.1 204 No Content\r\n\r\n") << false
                         << completed << 204 << QByteArray() << true;
    QTest::newRow("HEAD") << QByteArray("HEAD") << QByteArray("HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n")
                          << false << completed << 200 << QByteArray() << true;
    QTest::newRow("HTTP/1.0") << QByteArray("POST") << QByteArray("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}")
                              << false << completed << 200 << QByteArray("{}") << false;
    QTest::newRow("malformed status line") << QByteArray("POST") << QByteArray("HTTP/1.1 2x0 OK\r\n\r\n") << false
                                           << lost << -1 << QByteArray() << false;
    QTest::newRow("cut inside the head") << QByteArray("POST") << QByteArray("HTTP/1.1 200 OK\r\nContent-Ty") << true
                                         << lost << -1 << QByteArray() << false;
    QTest::newRow("body over maxBodyBytes") << QByteArray("POST")
                                            << QByteArray("HTTP/1.1 200 OK\r\nContent-Length: 40000\r\n\r\n") +
                                                   QByteArray(40000, 'x')
                                            << false << lost << 200 << QByteArray() << false;
}

void TestUpstreamClientTransport::responseFraming()
{
    QFETCH(QByteArray, method);
    QFETCH(QByteArray, response);
    QFETCH(bool, closeAfter);
    QFETCH(int, outcome);
    QFETCH(int, status);
    QFETCH(QByteArray, body);
    QFETCH(bool, pooled);
    RawHttpServer server;
    UpstreamClient client;
    UpstreamRequest request = post(server.url("/f"));
    request.method = method;
    request.maxBodyBytes = 32;
    if (method == "HEAD")
        request.body.clear();
    Recorder rec(client.start(request));
    QTRY_COMPARE(server.requests.size(), 1);
    QCOMPARE(server.requests[0].method, method);
    server.requests[0].socket->write(response);
    if (closeAfter)
        server.requests[0].socket->disconnectFromHost();
    QTRY_COMPARE(rec.outcomes.size(), 1);
    QCOMPARE(int(rec.outcomes[0]), outcome);
    QCOMPARE(rec.status, status);
    QCOMPARE(rec.body, body);
    QCOMPARE(rec.bodies, outcome == int(Outcome::Completed) ? 1 : 0);
    QCOMPARE(rec.order.count(QStringLiteral("headers")), status < 0 ? 0 : 1);
    QVERIFY(outcome == int(Outcome::Completed) || !rec.detail.isEmpty());
    QCOMPARE(client.idleConnections(), pooled ? 1 : 0);
}

QSslConfiguration TestUpstreamClientTransport::serverTls() const
{
    QSslConfiguration config = QSslConfiguration::defaultConfiguration();
    config.setLocalCertificate(m_cert);
    config.setPrivateKey(m_key);
    config.setPeerVerifyMode(QSslSocket::VerifyNone);
    // The server would prefer h2; the client must only ever offer HTTP/1.1.
    config.setAllowedNextProtocols({"h2", "http/1.1"});
    return config;
}

QSslConfiguration TestUpstreamClientTransport::clientTls() const
{
    QSslConfiguration config = QSslConfiguration::defaultConfiguration();
    config.addCaCertificate(m_cert);
    return config;
}

void TestUpstreamClientTransport::httpsOverVerifiedTlsWithAlpn()
{
    RawHttpServer server(serverTls());
    UpstreamClient client;
    client.setTlsConfiguration(clientTls());
    Recorder first(client.start(post(server.url("/backend-api/codex/responses", "localhost"))));
    QTRY_COMPARE_WITH_TIMEOUT(server.requests.size(), 1, 10000);
    const RawHttpServer::Request &req = server.requests[0];
    QCOMPARE(req.alpn, QByteArray("http/1.1"));
    QCOMPARE(req.header("host"), "localhost:" + QByteArray::number(server.port()));
    QCOMPARE(req.body, QByteArray(R"({"model":"gpt-5"})"));
    RawHttpServer::writeHead(req.socket, "200 OK", "Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n");
    RawHttpServer::writeChunk(req.socket, "event: response.created\ndata: {}\n\n");
    QTRY_COMPARE(first.events.size(), 1);
    RawHttpServer::writeChunk(req.socket, "event: response.completed\ndata: {}\n\n");
    RawHttpServer::endChunks(req.socket);
    QTRY_COMPARE(first.outcomes.size(), 1);
    QCOMPARE(first.outcomes[0], Outcome::Completed);
    QCOMPARE(first.events.size(), 2);
    QCOMPARE(first.order.mid(0, 3), QStringList({"connecting", "sent", "headers"}));

    // The TLS connection is kept and reused.
    Recorder second(client.start(post(server.url("/again", "localhost"))));
    QTRY_COMPARE(server.requests.size(), 2);
    RawHttpServer::respond(server.requests[1].socket, "200 OK", jsonHead, "{}");
    QTRY_COMPARE(second.outcomes.size(), 1);
    QCOMPARE(second.outcomes[0], Outcome::Completed);
    QCOMPARE(second.connecting, 0);
    QCOMPARE(server.acceptedConnections(), 1);
}

void TestUpstreamClientTransport::untrustedCertificateIsConnectionFailed()
{
    RawHttpServer server(serverTls());
    UpstreamClient client; // system CAs only
    Recorder rec(client.start(post(server.url("/x", "localhost"))));
    QTRY_COMPARE_WITH_TIMEOUT(rec.outcomes.size(), 1, 10000);
    QCOMPARE(rec.outcomes[0], Outcome::ConnectionFailed);
    QCOMPARE(rec.sent, 0);
    QVERIFY2(rec.detail.contains("certificate", Qt::CaseInsensitive), qPrintable(rec.detail));
    QCOMPARE(server.requests.size(), 0);
}

void TestUpstreamClientTransport::hostNameMismatchIsConnectionFailed()
{
    RawHttpServer server(serverTls());
    UpstreamClient client;
    client.setTlsConfiguration(clientTls());
    // Trusted certificate, but it names "localhost", not the address asked for.
    Recorder rec(client.start(post(server.url("/x", "127.0.0.1"))));
    QTRY_COMPARE_WITH_TIMEOUT(rec.outcomes.size(), 1, 10000);
    QCOMPARE(rec.outcomes[0], Outcome::ConnectionFailed);
    QVERIFY2(rec.detail.contains("host name", Qt::CaseInsensitive), qPrintable(rec.detail));
    QCOMPARE(server.requests.size(), 0);
}

void TestUpstreamClientTransport::tlsIdleConnectionClosedByServerIsReplaced()
{
    // The server closes a pooled TLS connection (close_notify, then FIN) just before the next call picks it,
    // before the client's event loop noticed: the pending bytes give it away and a new connection is used.
    for (int round = 0; round < 3; ++round) {
        RawHttpServer server(serverTls());
        UpstreamClient client;
        client.setTlsConfiguration(clientTls());
        Recorder first(client.start(post(server.url("/a", "localhost"))));
        QTRY_COMPARE_WITH_TIMEOUT(server.requests.size(), 1, 10000);
        RawHttpServer::respond(server.requests[0].socket, "200 OK", jsonHead, "{}");
        QTRY_COMPARE(first.outcomes.size(), 1);
        QCOMPARE(client.idleConnections(), 1);
        server.requests[0].socket->disconnectFromHost();
        server.requests[0].socket->flush();
        QThread::msleep(50);
        Recorder second(client.start(post(server.url("/b", "localhost"))));
        QTRY_COMPARE_WITH_TIMEOUT(server.requests.size(), 2, 10000);
        RawHttpServer::respond(server.requests[1].socket, "200 OK", jsonHead, "{}");
        QTRY_COMPARE(second.outcomes.size(), 1);
        QCOMPARE(second.outcomes[0], Outcome::Completed);
        QCOMPARE(second.connecting, 1);
        QCOMPARE(server.requests[1].connection, 2);
        QCOMPARE(server.acceptedConnections(), 2);
    }
}

void TestUpstreamClientTransport::egressProxyCarriesTheCall_data()
{
    QTest::addColumn<int>("mode");
    QTest::addColumn<bool>("tls");
    QTest::newRow("HTTP CONNECT, http") << int(TunnelProxy::Mode::HttpConnect) << false;
    QTest::newRow("HTTP CONNECT, https") << int(TunnelProxy::Mode::HttpConnect) << true;
    QTest::newRow("SOCKS5, http") << int(TunnelProxy::Mode::Socks5) << false;
    QTest::newRow("SOCKS5, https") << int(TunnelProxy::Mode::Socks5) << true;
}

void TestUpstreamClientTransport::egressProxyCarriesTheCall()
{
    QFETCH(int, mode);
    QFETCH(bool, tls);
    TunnelProxy proxy{TunnelProxy::Mode(mode)};
    RawHttpServer server(tls ? serverTls() : QSslConfiguration());
    const QString host = tls ? QStringLiteral("localhost") : QStringLiteral("127.0.0.1");
    UpstreamClient client;
    client.setTlsConfiguration(clientTls());
    client.setProxy(proxy.proxy());
    for (int i = 0; i < 2; ++i) {
        Recorder rec(client.start(post(server.url("/p", host))));
        QTRY_COMPARE_WITH_TIMEOUT(server.requests.size(), i + 1, 10000);
        RawHttpServer::respond(server.requests[i].socket, "200 OK", jsonHead, "{}");
        QTRY_COMPARE(rec.outcomes.size(), 1);
        QCOMPARE(rec.outcomes[0], Outcome::Completed);
        QCOMPARE(rec.body, QByteArray("{}"));
    }
    // Both calls went through one tunnel: the proxied connection was kept alive and reused.
    QCOMPARE(proxy.targets.size(), 1);
    QVERIFY2(proxy.targets[0].endsWith(QStringLiteral(":%1").arg(server.port())), qPrintable(proxy.targets[0]));
    QCOMPARE(server.acceptedConnections(), 1);

    // Without the proxy the pooled tunnel is not someone else's connection: a direct one is opened.
    client.setProxy(QNetworkProxy(QNetworkProxy::NoProxy));
    Recorder direct(client.start(post(server.url("/d", host))));
    QTRY_COMPARE_WITH_TIMEOUT(server.requests.size(), 3, 10000);
    RawHttpServer::respond(server.requests[2].socket, "200 OK", jsonHead, "{}");
    QTRY_COMPARE(direct.outcomes.size(), 1);
    QCOMPARE(direct.connecting, 1);
    QCOMPARE(proxy.targets.size(), 1);
    QCOMPARE(server.acceptedConnections(), 2);
}

QTEST_GUILESS_MAIN(TestUpstreamClientTransport)
#include "tst_upstreamclient_transport.moc"
