// EgressPost: a POST whose body carries a single-use credential (token refresh, login code exchange) along an
// egress route. Real fake proxies (HTTP CONNECT, SOCKS5 that refuses the handshake) on their own thread, a real
// HTTP server standing for the token endpoint. The next proxy is tried only while none of the body went out,
// each proxy has its hop time to take it (a refusing SOCKS5 proxy otherwise holds the call until the transfer
// timeout), and a body that went out is never sent a second time.
#include "http/HttpResponse.h"
#include "http/HttpServer.h"
#include "lib/FakeEgressProxy.h"
#include "upstream/egress/EgressPost.h"

#include <QDeadlineTimer>
#include <QNetworkReply>
#include <QTest>
#include <memory>
#include <optional>

using namespace sy;
using namespace sy::test;
using Kind = FakeEgressProxy::Kind;
using Mode = FakeEgressProxy::Mode;

class TestEgressPost : public QObject
{
    Q_OBJECT

    struct Seen
    {
        QByteArray path;
        QByteArray body;
    };

    HttpServer *m_server = nullptr;
    QList<Seen> m_seen;
    bool m_dropAfterReading = false; // the endpoint reads the request and closes without an answer
    std::unique_ptr<FakeEgressFleet> m_fleet;
    EgressNetworks *m_networks = nullptr;

    QNetworkRequest tokenRequest() const
    {
        QNetworkRequest r(QUrl(QStringLiteral("http://127.0.0.1:%1/oauth/token").arg(m_server->serverPort())));
        r.setHeader(QNetworkRequest::ContentTypeHeader, QByteArrayLiteral("application/json"));
        r.setTransferTimeout(120 * 1000); // far longer than any wait below: a stalled hop must not end by it
        return r;
    }

    static EgressRoute route(const QList<FakeEgressProxy *> &proxies)
    {
        EgressRoute r;
        r.kind = EgressRoute::Kind::Proxies;
        r.pool = QStringLiteral("p");
        for (FakeEgressProxy *p : proxies) {
            const bool socks = p->kind() == Kind::Socks5;
            r.hops.append({p->name(), QNetworkProxy(socks ? QNetworkProxy::Socks5Proxy : QNetworkProxy::HttpProxy,
                                                    QStringLiteral("127.0.0.1"), p->port())});
        }
        return r;
    }

    // Sends `body` and waits for done (at most 30 s); nullopt when done never came.
    std::optional<EgressPostResult> post(const EgressRoute &r, int hopTimeoutMs, const QByteArray &body = "secret=1")
    {
        std::optional<EgressPostResult> result;
        auto *p = new EgressPost(m_networks, tokenRequest(), body, r, hopTimeoutMs, QStringLiteral("test call"),
                                 [&result](const EgressPostResult &got) { result = got; });
        p->start();
        QDeadlineTimer deadline(30000);
        while (!result && !deadline.hasExpired())
            QTest::qWait(10);
        return result;
    }

    std::pair<int, int> carried(FakeEgressProxy *p) const { return p->carriedTo(m_server->serverPort()); }

    static int connections(FakeEgressProxy *p) { return p->connectionCount(); }

private slots:
    void init()
    {
        m_seen.clear();
        m_dropAfterReading = false;
        m_server = new HttpServer(this);
        QVERIFY(m_server->listen(QHostAddress::LocalHost, 0));
        m_server->setHandler([this](HttpRequestPtr request, HttpResponse *response) {
            m_seen.append({request->path.toUtf8(), request->body});
            if (m_dropAfterReading) {
                response->abortConnection();
                return;
            }
            response->sendFull(200, QByteArrayLiteral("application/json"), QByteArrayLiteral("{\"ok\":true}"));
        });
        m_fleet = std::make_unique<FakeEgressFleet>();
        m_networks = new EgressNetworks(this);
    }

    void cleanup()
    {
        delete m_networks;
        m_networks = nullptr;
        m_fleet.reset();
        delete m_server;
        m_server = nullptr;
    }

    void directRouteGoesDirect()
    {
        FakeEgressProxy *unused = m_fleet->add(QStringLiteral("unused"), Kind::HttpConnect);
        QVERIFY(unused);
        const auto result = post(EgressRoute(), 1000);
        QVERIFY(result);
        QCOMPARE(result->httpStatus, 200);
        QCOMPARE(result->body, QByteArray("{\"ok\":true}"));
        QVERIFY(!result->noTunnel);
        QVERIFY(result->lastHop.isEmpty());
        QCOMPARE(m_seen.size(), 1);
        QCOMPARE(m_seen.at(0).body, QByteArray("secret=1"));
        QCOMPARE(connections(unused), 0);
    }

    // The first member accepts TCP and refuses the SOCKS5 handshake. Qt keeps retrying such a proxy without an
    // answer; the hop time ends that, and the next member carries the one request.
    void refusingProxyGivesWayToTheNextWithinItsHopTime()
    {
        FakeEgressProxy *down = m_fleet->add(QStringLiteral("down"), Kind::Socks5, Mode::Down);
        FakeEgressProxy *up = m_fleet->add(QStringLiteral("up"), Kind::HttpConnect);
        QVERIFY(down && up);
        const auto result = post(route({down, up}), 1000);
        QVERIFY(result);
        QCOMPARE(result->httpStatus, 200);
        QCOMPARE(result->lastHop, QStringLiteral("up"));
        QVERIFY(!result->noTunnel);
        QVERIFY(connections(down) >= 1); // it was tried first
        QCOMPARE(carried(down), std::pair(0, 0));
        QCOMPARE(carried(up), std::pair(1, 1));
        QCOMPARE(m_seen.size(), 1);
        QCOMPARE(m_seen.at(0).path, QByteArray("/oauth/token"));
    }

    // No member sets up a tunnel: the call ends as "no tunnel", naming the last member, and the endpoint saw
    // nothing (never direct instead).
    void noMemberTakesItAndNothingGoesDirect()
    {
        FakeEgressProxy *down = m_fleet->add(QStringLiteral("down"), Kind::Socks5, Mode::Down);
        FakeEgressProxy *closed = m_fleet->add(QStringLiteral("closed"), Kind::HttpConnect, Mode::Down);
        QVERIFY(down && closed);
        const auto result = post(route({down, closed}), 1000);
        QVERIFY(result);
        QCOMPARE(result->httpStatus, 0);
        QVERIFY(result->noTunnel);
        QCOMPARE(result->lastHop, QStringLiteral("closed"));
        QVERIFY(!result->networkError.isEmpty());
        QVERIFY(connections(down) >= 1);
        QVERIFY(connections(closed) >= 1);
        QCOMPARE(m_seen.size(), 0);
    }

    // The body went out through the first member and the answer never came: the credential may have been used,
    // so the second member is not tried.
    void aBodyThatWentOutIsNeverSentAgain()
    {
        m_dropAfterReading = true;
        FakeEgressProxy *first = m_fleet->add(QStringLiteral("first"), Kind::HttpConnect);
        FakeEgressProxy *second = m_fleet->add(QStringLiteral("second"), Kind::HttpConnect);
        QVERIFY(first && second);
        const auto result = post(route({first, second}), 1000);
        QVERIFY(result);
        QCOMPARE(result->httpStatus, 0);
        QVERIFY(!result->noTunnel);
        QCOMPARE(result->lastHop, QStringLiteral("first"));
        QCOMPARE(m_seen.size(), 1);
        QCOMPARE(carried(first), std::pair(1, 1));
        QCOMPARE(connections(second), 0);
    }

    // The same without proxies: a refresh that goes direct is not sent again either.
    void aDirectBodyThatWentOutIsNeverSentAgain()
    {
        m_dropAfterReading = true;
        const auto result = post(EgressRoute(), 1000);
        QVERIFY(result);
        QCOMPARE(result->httpStatus, 0);
        QVERIFY(!result->noTunnel);
        QVERIFY(!result->networkError.isEmpty());
        QCOMPARE(m_seen.size(), 1);
    }

    // abort() while a hop is still trying: done never runs, and no later hop is tried.
    void abortEndsItWithoutAnAnswer()
    {
        FakeEgressProxy *down = m_fleet->add(QStringLiteral("down"), Kind::Socks5, Mode::Down);
        FakeEgressProxy *up = m_fleet->add(QStringLiteral("up"), Kind::HttpConnect);
        QVERIFY(down && up);
        bool called = false;
        QPointer<EgressPost> p =
            new EgressPost(m_networks, tokenRequest(), "secret=1", route({down, up}), 1000, QStringLiteral("test call"),
                           [&called](const EgressPostResult &) { called = true; });
        p->start();
        QTRY_VERIFY(connections(down) >= 1);
        p->abort();
        QTRY_VERIFY(p.isNull()); // it deletes itself
        QTest::qWait(1500);      // past the hop time: a live call would have moved on to `up` by now
        QVERIFY(!called);
        QCOMPARE(connections(up), 0);
        QCOMPARE(m_seen.size(), 0);
    }
};

QTEST_GUILESS_MAIN(TestEgressPost)
#include "tst_egress_post.moc"
