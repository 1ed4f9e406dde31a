// UpstreamClient's own connection handling: keep-alive reuse, what is never reused, and that a request is
// never sent twice.
#include "lib/RawHttpServer.h"
#include "lib/UpstreamRecorder.h"
#include "upstream/UpstreamClient.h"
#include "upstream/UpstreamConnection.h"

#include <QNetworkProxy>
#include <QPointer>
#include <QSet>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTest>
#include <QThread>
#include <QTimer>
#include <memory>
#include <sys/socket.h>

using sy::UpstreamCall;
using sy::UpstreamClient;
using sy::UpstreamEndpoint;
using sy::UpstreamRequest;
using sy::test::RawHttpServer;
using Recorder = sy::test::UpstreamRecorder;
using Outcome = sy::UpstreamCall::Outcome;

namespace {

const QByteArray jsonHead = "Content-Type: application/json\r\n";
const QByteArray sseHead = "Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n";

UpstreamRequest post(const QUrl &url, const QByteArray &body = R"({"model":"gpt-5"})")
{
    UpstreamRequest request;
    request.method = "POST";
    request.url = url;
    request.headers = {{"Authorization", "Bearer secret-token-xyz"}, {"Content-Type", "application/json"}};
    request.body = body;
    return request;
}

// One complete call: the server answers the request with index `index` with a small JSON body.
void completeCall(RawHttpServer &server, Recorder &rec, qsizetype index)
{
    QTRY_COMPARE(server.requests.size(), index + 1);
    RawHttpServer::respond(server.requests[index].socket, "200 OK", jsonHead, "{}");
    QTRY_COMPARE(rec.outcomes.size(), 1);
    QCOMPARE(rec.outcomes[0], Outcome::Completed);
}

// Closes the server side with a reset instead of an orderly close.
void resetConnection(QTcpSocket *socket)
{
    const linger hard{1, 0};
    QCOMPARE(::setsockopt(int(socket->socketDescriptor()), SOL_SOCKET, SO_LINGER, &hard, sizeof hard), 0);
    socket->abort();
}

} // namespace

class TestUpstreamClientPool : public QObject
{
    Q_OBJECT

private slots:
    void keepAliveConnectionServesTheNextCall();
    void sequentialStreamsShareOneConnection();
    void abortedCallClosesItsConnection();
    void connectionCloseResponseIsNotPooled();
    void trailingBytesAfterResponseAreNotPooled();
    void dropAfterRequestOnReusedConnectionIsNotResent();
    void staleIdleConnectionIsReplacedTransparently();
    void reusedConnectionResetBeforeTheRequestLeftIsReplaced();
    void idleConnectionClosedByServerLeavesThePool();
    void idleConnectionThatReceivesBytesLeavesThePool();
    void idleConnectionsCloseAfterTimeout();
    void requestSentAlwaysPrecedesHeaders();
    void earlyResponseStillReportsRequestSentFirst();
    void writeFailureIsConnectionFailedWithoutRetry();
    void reusedConnectionSendsBeforeTheLoopRuns();
    void poolKeySeparatesEveryPartOfTheRoute();
};

void TestUpstreamClientPool::keepAliveConnectionServesTheNextCall()
{
    RawHttpServer server;
    UpstreamClient client;
    Recorder first(client.start(post(server.url("/a"))));
    completeCall(server, first, 0);
    QCOMPARE(first.connecting, 1);
    QCOMPARE(client.idleConnections(), 1);

    Recorder second(client.start(post(server.url("/b"))));
    completeCall(server, second, 1);
    QCOMPARE(second.connecting, 0); // reuse is not a new connection
    QCOMPARE(second.sent, 1);
    QCOMPARE(second.order, QStringList({"sent", "headers", "body", "finished"}));
    QCOMPARE(server.acceptedConnections(), 1);
    QCOMPARE(server.requests[1].socket, server.requests[0].socket);
    QCOMPARE(server.requests[1].path, QByteArray("/b"));
    QCOMPARE(client.idleConnections(), 1);
}

void TestUpstreamClientPool::sequentialStreamsShareOneConnection()
{
    RawHttpServer server;
    UpstreamClient client;
    for (int i = 0; i < 5; ++i) {
        Recorder rec(client.start(post(server.url("/s"))));
        QTRY_COMPARE(server.requests.size(), i + 1);
        QTcpSocket *socket = server.requests[i].socket;
        RawHttpServer::writeHead(socket, "200 OK", sseHead);
        RawHttpServer::writeChunk(socket, "event: response.completed\ndata: {\"n\":" + QByteArray::number(i) + "}\n\n");
        RawHttpServer::endChunks(socket);
        QTRY_COMPARE(rec.outcomes.size(), 1);
        QCOMPARE(rec.outcomes[0], Outcome::Completed);
        QCOMPARE(rec.events.size(), 1);
        QCOMPARE(rec.connecting, i == 0 ? 1 : 0);
    }
    QCOMPARE(server.acceptedConnections(), 1);
}

void TestUpstreamClientPool::abortedCallClosesItsConnection()
{
    RawHttpServer server;
    UpstreamClient client;
    Recorder first(client.start(post(server.url("/a"))));
    QTRY_COMPARE(server.requests.size(), 1);
    QTcpSocket *socket = server.requests[0].socket;
    QSignalSpy closed(socket, &QTcpSocket::disconnected);
    RawHttpServer::writeHead(socket, "200 OK", sseHead);
    RawHttpServer::writeChunk(socket, "data: 1\n\n");
    QTRY_COMPARE(first.events.size(), 1);
    first.call->abort();
    QCOMPARE(client.idleConnections(), 0);
    QVERIFY(closed.wait(5000));

    Recorder second(client.start(post(server.url("/b"))));
    completeCall(server, second, 1);
    QCOMPARE(second.connecting, 1);
    QCOMPARE(server.acceptedConnections(), 2);
    // By number: the first connection's socket object is deleted once it closes, so the second one may be
    // allocated at the same address.
    QCOMPARE(server.requests[0].connection, 1);
    QCOMPARE(server.requests[1].connection, 2);
}

void TestUpstreamClientPool::connectionCloseResponseIsNotPooled()
{
    RawHttpServer server;
    UpstreamClient client;
    Recorder first(client.start(post(server.url("/a"))));
    QTRY_COMPARE(server.requests.size(), 1);
    RawHttpServer::respond(server.requests[0].socket, "200 OK", jsonHead + "Connection: close\r\n", "{}");
    QTRY_COMPARE(first.outcomes.size(), 1);
    QCOMPARE(first.outcomes[0], Outcome::Completed);
    QCOMPARE(client.idleConnections(), 0);
    QTRY_COMPARE(server.openConnections(), 0); // the client closed it
}

void TestUpstreamClientPool::trailingBytesAfterResponseAreNotPooled()
{
    RawHttpServer server;
    UpstreamClient client;
    Recorder first(client.start(post(server.url("/a"))));
    QTRY_COMPARE(server.requests.size(), 1);
    // A response longer than its Content-Length says: the connection's framing can no longer be trusted.
    RawHttpServer::respond(server.requests[0].socket, "200 OK", jsonHead, "{}");
    server.requests[0].socket->write("garbage");
    QTRY_COMPARE(first.outcomes.size(), 1);
    QCOMPARE(first.outcomes[0], Outcome::Completed);
    QCOMPARE(first.body, QByteArray("{}"));
    QTRY_COMPARE(server.openConnections(), 0);
    QCOMPARE(client.idleConnections(), 0);
}

void TestUpstreamClientPool::dropAfterRequestOnReusedConnectionIsNotResent()
{
    // The case Qt's network access manager resends silently: a reused connection that closes after the
    // request went out and before any response byte.
    RawHttpServer server;
    UpstreamClient client;
    Recorder first(client.start(post(server.url("/a"))));
    completeCall(server, first, 0);
    Recorder second(client.start(post(server.url("/b"))));
    QTRY_COMPARE(server.requests.size(), 2);
    QTRY_COMPARE(second.sent, 1);
    server.requests[1].socket->disconnectFromHost();
    QTRY_COMPARE(second.outcomes.size(), 1);
    QCOMPARE(second.outcomes[0], Outcome::ConnectionLost);
    QCOMPARE(second.status, -1);
    QTest::qWait(300);
    QCOMPARE(server.requests.size(), 2);
    QCOMPARE(server.acceptedConnections(), 1);
    QCOMPARE(second.connecting, 0);
}

void TestUpstreamClientPool::staleIdleConnectionIsReplacedTransparently()
{
    RawHttpServer server;
    UpstreamClient client;
    Recorder first(client.start(post(server.url("/a"))));
    completeCall(server, first, 0);
    QCOMPARE(client.idleConnections(), 1);
    // The server gives up on the idle connection; the client's event loop has not seen it yet when the next
    // call picks a connection (the kernel has).
    server.requests[0].socket->disconnectFromHost();
    QThread::msleep(50);
    Recorder second(client.start(post(server.url("/b"))));
    completeCall(server, second, 1);
    QCOMPARE(second.connecting, 1);
    QCOMPARE(server.acceptedConnections(), 2);
    QCOMPARE(server.requests.size(), 2);
    QCOMPARE(server.requests[1].connection, 2);
    QCOMPARE(server.requests[1].path, QByteArray("/b"));
}

void TestUpstreamClientPool::reusedConnectionResetBeforeTheRequestLeftIsReplaced()
{
    // The upstream reset the pooled connection while it sat idle, and Qt has not noticed yet. The call
    // that takes it must find out before any byte of its request reached the upstream (the pool's check,
    // or the send itself failing: a plain connection hands the request to the kernel at once) and carry the
    // request on a new connection.
    RawHttpServer server;
    UpstreamClient client;
    Recorder first(client.start(post(server.url("/a"))));
    completeCall(server, first, 0);
    resetConnection(server.requests[0].socket);
    QThread::msleep(50); // the reset reaches the client's kernel, not (yet) Qt
    QCOMPARE(client.idleConnections(), 1);
    Recorder second(client.start(post(server.url("/b"))));
    completeCall(server, second, 1);
    QCOMPARE(second.connecting, 1);
    QCOMPARE(second.order, QStringList({"connecting", "sent", "headers", "body", "finished"}));
    QCOMPARE(server.acceptedConnections(), 2);
    QCOMPARE(server.requests.size(), 2);
    QCOMPARE(server.requests[1].connection, 2);
}

void TestUpstreamClientPool::idleConnectionClosedByServerLeavesThePool()
{
    RawHttpServer server;
    UpstreamClient client;
    Recorder first(client.start(post(server.url("/a"))));
    completeCall(server, first, 0);
    QCOMPARE(client.idleConnections(), 1);
    server.requests[0].socket->disconnectFromHost();
    QTRY_COMPARE(client.idleConnections(), 0);
    Recorder second(client.start(post(server.url("/b"))));
    completeCall(server, second, 1);
    QCOMPARE(second.connecting, 1);
    QCOMPARE(server.requests.size(), 2);
}

void TestUpstreamClientPool::idleConnectionThatReceivesBytesLeavesThePool()
{
    // While pooled nothing may arrive: a byte means the upstream is done with the connection (or confused), so
    // the pool drops it at once. The call that used it reads no more from it once it finished.
    RawHttpServer server;
    UpstreamClient client;
    Recorder first(client.start(post(server.url("/a"))));
    completeCall(server, first, 0);
    QCOMPARE(client.idleConnections(), 1);
    server.requests[0].socket->write("HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n");
    server.requests[0].socket->flush();
    QTRY_COMPARE(client.idleConnections(), 0);
    QCOMPARE(first.outcomes.size(), 1); // nothing more reached the finished call
    Recorder second(client.start(post(server.url("/b"))));
    completeCall(server, second, 1);
    QCOMPARE(second.connecting, 1);
    QCOMPARE(server.acceptedConnections(), 2);
}

void TestUpstreamClientPool::idleConnectionsCloseAfterTimeout()
{
    RawHttpServer server;
    UpstreamClient client;
    client.setIdleConnectionTimeoutMs(200);
    std::vector<std::unique_ptr<Recorder>> recs;
    for (int i = 0; i < 3; ++i)
        recs.push_back(std::make_unique<Recorder>(client.start(post(server.url("/r")))));
    QTRY_COMPARE(server.requests.size(), 3);
    for (const auto &req : std::as_const(server.requests))
        RawHttpServer::respond(req.socket, "200 OK", jsonHead, "{}");
    for (const auto &rec : recs)
        QTRY_COMPARE(rec->outcomes.size(), 1);
    QCOMPARE(client.idleConnections(), 3);
    QCOMPARE(server.openConnections(), 3);
    QTRY_COMPARE(client.idleConnections(), 0);
    QTRY_COMPARE(server.openConnections(), 0);
    // The pool still works after emptying.
    Recorder again(client.start(post(server.url("/r"))));
    completeCall(server, again, 3);
    QCOMPARE(again.connecting, 1);
}

void TestUpstreamClientPool::requestSentAlwaysPrecedesHeaders()
{
    RawHttpServer server;
    UpstreamClient client;
    // Immediate answers, new and reused connections, many at once.
    int answered = 0;
    QTimer pump;
    connect(&pump, &QTimer::timeout, this, [&] {
        for (; answered < server.requests.size(); ++answered)
            RawHttpServer::respond(server.requests[answered].socket, "200 OK", jsonHead, "{}");
    });
    pump.start(1);
    for (int round = 0; round < 3; ++round) {
        std::vector<std::unique_ptr<Recorder>> recs;
        for (int i = 0; i < 30; ++i)
            recs.push_back(std::make_unique<Recorder>(client.start(post(server.url("/r")))));
        for (const auto &rec : recs) {
            QTRY_COMPARE(rec->outcomes.size(), 1);
            QCOMPARE(rec->outcomes[0], Outcome::Completed);
            QCOMPARE(rec->sent, 1);
            QVERIFY2(rec->order.indexOf("sent") >= 0 && rec->order.indexOf("sent") < rec->order.indexOf("headers"),
                     qPrintable(rec->order.join(',')));
            QCOMPARE(rec->connecting, round == 0 ? 1 : 0);
        }
    }
    QCOMPARE(server.acceptedConnections(), 30);
    QCOMPARE(server.requests.size(), 90);
}

void TestUpstreamClientPool::earlyResponseStillReportsRequestSentFirst()
{
    // The upstream answers (413) while the body is still being written; the head proves the request reached
    // it, so requestSent comes first, and the half-written connection is not reused.
    QTcpServer raw;
    QVERIFY(raw.listen(QHostAddress::LocalHost));
    QPointer<QTcpSocket> serverSide;
    connect(&raw, &QTcpServer::newConnection, this, [&] {
        serverSide = raw.nextPendingConnection();
        connect(serverSide, &QTcpSocket::readyRead, serverSide, [s = serverSide.data()] {
            static const QByteArray answer = "HTTP/1.1 413 Payload Too Large\r\nContent-Length: 2\r\n\r\n{}";
            s->readAll();
            if (s->property("answered").toBool())
                return;
            s->setProperty("answered", true);
            s->write(answer);
        });
    });
    UpstreamClient client;
    const QUrl url(QStringLiteral("http://127.0.0.1:%1/big").arg(raw.serverPort()));
    Recorder rec(client.start(post(url, QByteArray(48 * 1024 * 1024, 'x'))));
    QTRY_COMPARE_WITH_TIMEOUT(rec.outcomes.size(), 1, 20000);
    QCOMPARE(rec.outcomes[0], Outcome::Completed);
    QCOMPARE(rec.status, 413);
    QCOMPARE(rec.body, QByteArray("{}"));
    QCOMPARE(rec.order, QStringList({"connecting", "sent", "headers", "body", "finished"}));
    QCOMPARE(client.idleConnections(), 0);
}

void TestUpstreamClientPool::writeFailureIsConnectionFailedWithoutRetry()
{
    // The upstream resets the connection while the request is still being written: it never got the whole
    // request, and nothing is tried again.
    QTcpServer raw;
    QVERIFY(raw.listen(QHostAddress::LocalHost));
    int accepted = 0;
    connect(&raw, &QTcpServer::newConnection, this, [&] {
        QTcpSocket *s = raw.nextPendingConnection();
        ++accepted;
        connect(s, &QTcpSocket::readyRead, s, [s] {
            s->abort(); // unread bytes pending: the kernel answers with a reset
            s->deleteLater();
        });
    });
    UpstreamClient client;
    const QUrl url(QStringLiteral("http://127.0.0.1:%1/big").arg(raw.serverPort()));
    Recorder rec(client.start(post(url, QByteArray(48 * 1024 * 1024, 'x'))));
    QTRY_COMPARE_WITH_TIMEOUT(rec.outcomes.size(), 1, 20000);
    QCOMPARE(rec.outcomes[0], Outcome::ConnectionFailed);
    QCOMPARE(rec.sent, 0);
    QVERIFY(!rec.detail.isEmpty());
    QTest::qWait(200);
    QCOMPARE(accepted, 1);
}

void TestUpstreamClientPool::poolKeySeparatesEveryPartOfTheRoute()
{
    // An idle connection is reused only for the same route: each part of the endpoint changes the key, an equal
    // endpoint gives the same key, and the proxy's password never appears in it.
    UpstreamEndpoint base;
    base.host = QStringLiteral("chatgpt.example");
    base.port = 443;
    base.tls = true;
    base.proxy = QNetworkProxy(QNetworkProxy::HttpProxy, QStringLiteral("proxy.example"), 3128, QStringLiteral("bob"),
                               QStringLiteral("s3cret-pass"));
    base.egressName = QStringLiteral("office");
    const QString key = base.key();
    QCOMPARE(UpstreamEndpoint(base).key(), key);
    QVERIFY(!key.contains(QLatin1String("s3cret-pass")));
    QList<UpstreamEndpoint> variants;
    for (int i = 0; i < 9; ++i)
        variants.append(base);
    variants[0].tls = false;
    variants[1].host = QStringLiteral("chatgpt.example2");
    variants[2].port = 8443;
    variants[3].proxy.setType(QNetworkProxy::Socks5Proxy);
    variants[4].proxy.setHostName(QStringLiteral("proxy2.example"));
    variants[5].proxy.setPort(3129);
    variants[6].proxy.setUser(QStringLiteral("alice"));
    variants[7].proxy.setCapabilities(variants[7].proxy.capabilities() ^ QNetworkProxy::HostNameLookupCapability);
    variants[8].egressName = QStringLiteral("home");
    QSet<QString> seen{key};
    for (const UpstreamEndpoint &v : std::as_const(variants)) {
        const QString k = v.key();
        QVERIFY2(!seen.contains(k), qPrintable(k));
        seen.insert(k);
    }
}

QTEST_GUILESS_MAIN(TestUpstreamClientPool)
#include "tst_upstreamclient_pool.moc"

void TestUpstreamClientPool::reusedConnectionSendsBeforeTheLoopRuns()
{
    // The time to first byte's critical path: with an idle connection, start() hands the request to the kernel
    // itself instead of one event-loop pass later; and it emits nothing before the caller connected.
    RawHttpServer server;
    UpstreamClient client;
    Recorder first(client.start(post(server.url("/a"))));
    completeCall(server, first, 0);
    QCOMPARE(client.idleConnections(), 1);
    QTcpSocket *serverSide = server.requests[0].socket;

    Recorder second(client.start(post(server.url("/b"))));
    // Only the server socket is waited on here (a blocking wait, no event loop for the client's side).
    QVERIFY(serverSide->bytesAvailable() > 0 || serverSide->waitForReadyRead(5000));
    QCOMPARE(server.requests.size(), 2);
    QCOMPARE(server.requests[1].path, QByteArray("/b"));
    QCOMPARE(second.sent, 0); // reported from the loop, like every other signal of the call
    completeCall(server, second, 1);
    QCOMPARE(second.connecting, 0);
    QCOMPARE(second.order, QStringList({"sent", "headers", "body", "finished"}));
}
