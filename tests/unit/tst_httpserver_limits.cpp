// Abuse limits of the downstream server (docs/SECURITY.md "Abuse limits"): heads that never finish (slowloris)
// and silent connections time out, header count and size are bounded (431), connections per client address are
// bounded (503), bodies beyond the limit get 413. The header timer never cuts a long stream or an idle
// keep-alive connection.
#include "http/HttpServer.h"
#include "lib/RawHttpClient.h"

#include <QNetworkInterface>
#include <QPointer>
#include <QTest>
#include <QTimer>

#include <memory>

using namespace sy;
using sy::test::RawHttpClient;
using sy::test::RawResponse;

namespace {

QString errorCode(const RawResponse &r)
{
    return r.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("code")).toString();
}

// An IPv4 address of this machine that is not loopback, or null when it has none.
QHostAddress nonLoopbackAddress()
{
    for (const QHostAddress &a : QNetworkInterface::allAddresses()) {
        if (a.protocol() == QAbstractSocket::IPv4Protocol && !a.isLoopback() && !a.isLinkLocal())
            return a;
    }
    return {};
}

} // namespace

class TestHttpServerLimits : public QObject
{
    Q_OBJECT

    HttpServer *m_server = nullptr;
    int m_handled = 0;

    void handler(HttpRequestPtr request, HttpResponse *response)
    {
        ++m_handled;
        if (request->path != QLatin1String("/stream")) {
            response->sendFull(200, "text/plain", "ok " + QByteArray::number(request->headers.size()));
            return;
        }
        // 15 events 100 ms apart: the whole stream outlasts the header timeout several times.
        response->beginStream(200, "text/event-stream");
        auto *timer = new QTimer(response);
        auto sent = std::make_shared<int>(0);
        QPointer<HttpResponse> out(response);
        connect(timer, &QTimer::timeout, response, [out, timer, sent] {
            if (!out)
                return;
            out->write("data: " + QByteArray::number(++*sent) + "\n\n");
            if (*sent == 15) {
                timer->stop();
                out->end();
            }
        });
        timer->start(100);
    }

    RawResponse roundTrip(RawHttpClient &client, const QByteArray &bytes, int timeoutMs = 5000)
    {
        client.send(bytes);
        const std::optional<RawResponse> r = client.readResponse(timeoutMs);
        return r ? *r : RawResponse();
    }

private slots:
    void init()
    {
        m_handled = 0;
        m_server = new HttpServer(this);
        m_server->setHandler([this](HttpRequestPtr r, HttpResponse *s) { handler(std::move(r), s); });
        m_server->setLingerMs(200);
        QVERIFY(m_server->listen(QHostAddress::LocalHost, 0));
    }

    void cleanup()
    {
        delete m_server;
        m_server = nullptr;
    }

    // A head trickled one header line every 100 ms never completes: 408 when the header timeout ends, although
    // every line arrives well within the (30 s) request timeout.
    void slowlorisHeadTimesOut()
    {
        m_server->setHeaderTimeoutMs(600);
        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        client.send("GET /slow HTTP/1.1\r\nHost: x\r\n");
        QTimer trickle;
        int lines = 0;
        connect(&trickle, &QTimer::timeout, this, [&] {
            if (client.isConnected())
                client.send("X-Slow-" + QByteArray::number(++lines) + ": 1\r\n");
        });
        trickle.start(100);
        const std::optional<RawResponse> r = client.readResponse(15000);
        trickle.stop();
        QVERIFY(r);
        QCOMPARE(r->status, 408);
        QCOMPARE(errorCode(*r), QStringLiteral("request_header_timeout"));
        QCOMPARE(r->header("content-type"), QByteArray("application/json"));
        QVERIFY(client.waitForDisconnected(5000));
        QVERIFY(lines >= 2);
        QCOMPARE(m_handled, 0);
    }

    // A connection that never sends a byte is closed after the header timeout, without a response.
    void silentConnectionIsClosed()
    {
        m_server->setHeaderTimeoutMs(300);
        m_server->setIdleTimeoutMs(120000);
        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        QVERIFY(client.waitForDisconnected(10000));
        QCOMPARE(client.bytesReceived(), 0);
        QTRY_COMPARE_WITH_TIMEOUT(m_server->connectionCount(), 0, 5000);
    }

    // The header timer stops with the head: a stream five times longer than the timeout arrives whole, and a
    // keep-alive connection idle for longer than the timeout still serves its next request.
    void streamsAndKeepAliveAreNotCut()
    {
        m_server->setHeaderTimeoutMs(300);
        m_server->setIdleTimeoutMs(60000);
        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        const RawResponse stream = roundTrip(client, RawHttpClient::buildRequest("GET", "/stream"), 20000);
        QCOMPARE(stream.status, 200);
        QVERIFY(stream.body.endsWith("data: 15\n\n"));
        QVERIFY(client.isConnected());
        QTest::qWait(900); // idle on keep-alive for three header timeouts
        QVERIFY(client.isConnected());
        const RawResponse next = roundTrip(client, RawHttpClient::buildRequest("GET", "/next"));
        QCOMPARE(next.status, 200);
        QCOMPARE(m_handled, 2);
    }

    void headerCountIsBounded()
    {
        m_server->setMaxHeaderCount(100);
        HttpHeaderList ninetyNine; // + Host = 100
        for (int i = 0; i < 99; ++i)
            ninetyNine.append({"X-H" + QByteArray::number(i), "v"});
        RawHttpClient ok;
        QVERIFY(ok.connectTo(m_server->serverPort()));
        const RawResponse accepted = roundTrip(ok, RawHttpClient::buildRequest("GET", "/many", ninetyNine));
        QCOMPARE(accepted.status, 200);
        QCOMPARE(accepted.body, QByteArray("ok 100"));

        HttpHeaderList hundred = ninetyNine;
        hundred.append(HttpHeader("X-One-Too-Many", "v"));
        RawHttpClient refused;
        QVERIFY(refused.connectTo(m_server->serverPort()));
        const RawResponse r = roundTrip(refused, RawHttpClient::buildRequest("GET", "/many", hundred));
        QCOMPARE(r.status, 431);
        QCOMPARE(errorCode(r), QStringLiteral("too_many_headers"));
        QCOMPARE(r.header("connection"), QByteArray("close"));
        QVERIFY(refused.waitForDisconnected());
        QCOMPARE(m_handled, 1);
    }

    void headerBytesAreBounded()
    {
        m_server->setMaxHeaderBytes(32 * 1024);
        RawHttpClient ok;
        QVERIFY(ok.connectTo(m_server->serverPort()));
        QCOMPARE(roundTrip(ok, RawHttpClient::buildRequest("GET", "/h", {{"X-A", QByteArray(15000, 'a')},
                                                                         {"X-B", QByteArray(15000, 'b')}}))
                     .status,
                 200);
        RawHttpClient refused;
        QVERIFY(refused.connectTo(m_server->serverPort()));
        const RawResponse r = roundTrip(refused, RawHttpClient::buildRequest("GET", "/h", {{"X-A", QByteArray(17000, 'a')},
                                                                                          {"X-B", QByteArray(17000, 'b')}}));
        QCOMPARE(r.status, 431);
        QCOMPARE(errorCode(r), QStringLiteral("headers_too_large"));
        QCOMPARE(m_handled, 1);
    }

    void aHeadLongerThanOneSocketReadIsAccepted()
    {
        // Qt reads at most HttpConnection::kQtReadBufferBytes per wake-up into its buffer: a head of several
        // such reads, in one write, must still be parsed whole, and a request pipelined behind it answered.
        // (libhttp-parser's own limit on a head is 80 KiB.)
        m_server->setMaxHeaderBytes(78 * 1024);
        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        client.send(RawHttpClient::buildRequest("GET", "/h", {{"X-A", QByteArray(36000, 'a')},
                                                             {"X-B", QByteArray(36000, 'b')}}) +
                    RawHttpClient::buildRequest("GET", "/after"));
        const std::optional<RawResponse> first = client.readResponse();
        const std::optional<RawResponse> second = client.readResponse();
        QVERIFY(first);
        QCOMPARE(first->status, 200);
        QVERIFY(second);
        QCOMPARE(second->status, 200);
        QCOMPARE(m_handled, 2);
    }

    // setHeadObserver(): a request's head is seen as soon as it is read, before its body has arrived and before
    // the handler runs; a head that is refused at once (413) is not seen.
    void theHeadObserverSeesAHeadBeforeItsBody()
    {
        QStringList heads;
        m_server->setHeadObserver([&heads](const HttpRequest &head) {
            heads << QString::fromLatin1(head.method) + QLatin1Char(' ') + head.path;
        });
        m_server->setMaxBodyBytes(1024);
        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        client.send("POST /turn HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n01234");
        QTRY_COMPARE(heads, QStringList{QStringLiteral("POST /turn")});
        QCOMPARE(m_handled, 0);
        client.send("56789");
        const std::optional<RawResponse> r = client.readResponse();
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        QCOMPARE(m_handled, 1);

        RawHttpClient refused;
        QVERIFY(refused.connectTo(m_server->serverPort()));
        const RawResponse tooLarge =
            roundTrip(refused, "POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: 2000\r\n\r\n");
        QCOMPARE(tooLarge.status, 413);
        QCOMPARE(heads.size(), 1);
    }

    void bodiesBeyondTheLimitGet413()
    {
        m_server->setMaxBodyBytes(1024 * 1024);
        RawHttpClient declared;
        QVERIFY(declared.connectTo(m_server->serverPort()));
        declared.send("POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: 1048577\r\n\r\n");
        std::optional<RawResponse> r = declared.readResponse();
        QVERIFY(r);
        QCOMPARE(r->status, 413);
        QCOMPARE(errorCode(*r), QStringLiteral("request_too_large"));

        RawHttpClient chunked;
        QVERIFY(chunked.connectTo(m_server->serverPort()));
        chunked.send("POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n");
        const QByteArray chunk = QByteArray::number(64 * 1024, 16) + "\r\n" + QByteArray(64 * 1024, 'z') + "\r\n";
        for (int i = 0; i < 17 && chunked.isConnected(); ++i)
            chunked.send(chunk);
        r = chunked.readResponse();
        QVERIFY(r);
        QCOMPARE(r->status, 413);
        QCOMPARE(errorCode(*r), QStringLiteral("request_too_large"));

        RawHttpClient fits;
        QVERIFY(fits.connectTo(m_server->serverPort()));
        QCOMPARE(roundTrip(fits, RawHttpClient::buildRequest("POST", "/up", {}, QByteArray(1024 * 1024, 'y'))).status,
                 200);
        QCOMPARE(m_handled, 1);
    }

    // Loopback counted on request (the proxy exempts it): the fourth connection gets 503, and a freed place
    // serves again.
    void connectionsPerClientAreBounded()
    {
        m_server->setMaxConnectionsPerClient(3, true);
        std::vector<std::unique_ptr<RawHttpClient>> open;
        for (int i = 0; i < 3; ++i) {
            open.push_back(std::make_unique<RawHttpClient>());
            QVERIFY(open.back()->connectTo(m_server->serverPort()));
            QCOMPARE(roundTrip(*open.back(), RawHttpClient::buildRequest("GET", "/k")).status, 200);
        }
        RawHttpClient fourth;
        QVERIFY(fourth.connectTo(m_server->serverPort()));
        const RawResponse r = roundTrip(fourth, RawHttpClient::buildRequest("GET", "/k"));
        QCOMPARE(r.status, 503);
        QCOMPARE(errorCode(r), QStringLiteral("too_many_connections"));
        QCOMPARE(r.header("content-type"), QByteArray("application/json"));
        QVERIFY(fourth.waitForDisconnected());
        QCOMPARE(m_handled, 3);

        open.front()->socket()->disconnectFromHost();
        QTRY_COMPARE_WITH_TIMEOUT(m_server->connectionCount(), 2, 5000);
        RawHttpClient again;
        QVERIFY(again.connectTo(m_server->serverPort()));
        QCOMPARE(roundTrip(again, RawHttpClient::buildRequest("GET", "/k")).status, 200);
    }

    // By default loopback clients are the user's own processes and are not counted; a client on another
    // address is.
    void loopbackIsExemptByDefault()
    {
        m_server->setMaxConnectionsPerClient(2);
        std::vector<std::unique_ptr<RawHttpClient>> open;
        for (int i = 0; i < 4; ++i) {
            open.push_back(std::make_unique<RawHttpClient>());
            QVERIFY(open.back()->connectTo(m_server->serverPort()));
            QCOMPARE(roundTrip(*open.back(), RawHttpClient::buildRequest("GET", "/k")).status, 200);
        }

        const QHostAddress lan = nonLoopbackAddress();
        QVERIFY2(!lan.isNull(), "this test needs a non-loopback IPv4 address on the machine");
        HttpServer server;
        server.setHandler([this](HttpRequestPtr r, HttpResponse *s) { handler(std::move(r), s); });
        server.setMaxConnectionsPerClient(2);
        QVERIFY(server.listen(lan, 0));
        std::vector<std::unique_ptr<RawHttpClient>> remote;
        for (int i = 0; i < 2; ++i) {
            remote.push_back(std::make_unique<RawHttpClient>());
            QVERIFY(remote.back()->connectTo(server.serverPort(), lan));
            QCOMPARE(roundTrip(*remote.back(), RawHttpClient::buildRequest("GET", "/k")).status, 200);
        }
        RawHttpClient third;
        QVERIFY(third.connectTo(server.serverPort(), lan));
        const RawResponse r = roundTrip(third, RawHttpClient::buildRequest("GET", "/k"));
        QCOMPARE(r.status, 503);
        QCOMPARE(errorCode(r), QStringLiteral("too_many_connections"));
    }
};

QTEST_GUILESS_MAIN(TestHttpServerLimits)
#include "tst_httpserver_limits.moc"
