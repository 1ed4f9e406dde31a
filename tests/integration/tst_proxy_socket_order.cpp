// SWITCHYARD_NEEDS_KEYRING: accounts are imported into a real gnome-keyring.
//
// The sockets a client's first byte waits on are marked on the proxy thread's epoll dispatcher, so that each
// pass of its loop handles them first and a long pass looks for them again between its other sockets
// (EpollEventDispatcher::setSocketPriority, bench/HISTORY.md "What changed"). The dispatcher's own tests check
// the ordering; this one checks, through `switchyard serve` and /api/status (`socket_order.marked`), that the
// proxy marks what it should and clears the marks again: the listening socket, every client connection while
// it is open, and an upstream socket from the request's send until the first event of its event stream is
// forwarded (an answer that is not an event stream stays marked until it is complete).
#include "lib/FakeUpstreamProcess.h"
#include "lib/ProxyProcess.h"
#include "lib/RawHttpClient.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>
#include <memory>
#include <vector>

using namespace sy;
using namespace sy::test;

class TestProxySocketOrder : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    ProxyProcess m_proxy;
    RawHttpClient m_status; // one keep-alive connection for every status read: itself one marked socket

    // socket_order.marked now, -1 when the status cannot be read.
    qint64 marked()
    {
        m_status.send(RawHttpClient::buildRequest("GET", "/api/status"));
        const std::optional<RawResponse> r = m_status.readResponse(5000);
        if (!r || r->status != 200)
            return -1;
        const QJsonObject order =
            QJsonDocument::fromJson(r->body).object().value(QLatin1String("socket_order")).toObject();
        return order.value(QLatin1String("marked")).toInteger(-1);
    }

private slots:
    void initTestCase()
    {
        // serve inherits this environment: no marks, or not on the epoll dispatcher, means nothing to count.
        if (qEnvironmentVariable("SWITCHYARD_SOCKET_PRIORITY") == QLatin1String("off") ||
            qEnvironmentVariable("SWITCHYARD_EVENT_DISPATCHER") == QLatin1String("qt"))
            QSKIP("socket marks are off in this environment");
        QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString()));
        QVERIFY2(m_proxy.addAccounts(1), qPrintable(m_proxy.errorString()));
        QVERIFY2(m_proxy.start(m_fake.baseUrl()), qPrintable(m_proxy.errorString()));
        QVERIFY(m_status.connectTo(m_proxy.port()));
    }

    void cleanupTestCase() { m_proxy.stop(); }

    void listeningSocketAndEachClientConnection()
    {
        // Nothing else talks to this proxy: the listening socket and the status connection.
        QCOMPARE(marked(), qint64(2));
        {
            std::vector<std::unique_ptr<RawHttpClient>> idle;
            for (int i = 0; i < 3; ++i) {
                idle.push_back(std::make_unique<RawHttpClient>());
                QVERIFY(idle.back()->connectTo(m_proxy.port()));
            }
            QTRY_COMPARE(marked(), qint64(5));
        }
        // A closed connection leaves the set of marked sockets.
        QTRY_COMPARE(marked(), qint64(2));
    }

    void anUpstreamSocketUntilItsFirstEvent()
    {
        // The upstream holds its answer for 3 s (meanwhile the turn's upstream socket is marked too), then sends
        // an event every 300 ms: the stream is still open when its first event has been forwarded.
        QVERIFY(
            m_fake.script(m_proxy.accounts().at(0).chatgptAccountId, {QStringLiteral("delay_first:3000+slow:300")}));
        const QByteArray body = QJsonDocument(QJsonObject{{QStringLiteral("model"), QStringLiteral("gpt-5-codex")},
                                                          {QStringLiteral("stream"), true},
                                                          {QStringLiteral("input"), QStringLiteral("ECHO: marked")}})
                                    .toJson(QJsonDocument::Compact);
        RawHttpClient c;
        QVERIFY(c.connectTo(m_proxy.port()));
        c.send(RawHttpClient::buildRequest("POST", "/backend-api/codex/responses",
                                           {{"content-type", "application/json"}, {"accept", "text/event-stream"}},
                                           body));
        // The status connection, the listening socket, this client and its upstream socket.
        QTRY_COMPARE_WITH_TIMEOUT(marked(), qint64(4), 2500);
        QVERIFY(c.waitForBody(1, 10000));
        // The mark went when the first event was forwarded, before the client could read it.
        QCOMPARE(marked(), qint64(3));
        QVERIFY(!c.partial().body.contains("response.completed")); // still streaming
        QVERIFY(c.waitForBodyContaining("response.completed", 30000));
        QCOMPARE(marked(), qint64(3)); // the upstream connection went back to the pool unmarked
    }
};

QTEST_GUILESS_MAIN(TestProxySocketOrder)
#include "tst_proxy_socket_order.moc"
