// Egress transport (issue 7 point 1): attempts go through HTTP CONNECT, SOCKS5 (name resolved here) and SOCKS5
// with remote DNS, with credentials from the keychain; pooled connections are never shared between egress
// proxies; the egress budget stops a connection set-up that outlives it. Checked against the fake proxies'
// own records of what they carried.
#include "config/Config.h"
#include "lib/FakeEgressProxy.h"
#include "lib/UpstreamRecorder.h"
#include "upstream/UpstreamClient.h"
#include "upstream/egress/EgressPool.h"
#include "upstream/egress/EgressRequest.h"
#include "upstream/egress/EgressSelector.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTest>

using namespace sy;
using namespace sy::test;
using Kind = FakeEgressProxy::Kind;
using Mode = FakeEgressProxy::Mode;
using Outcome = UpstreamCall::Outcome;

namespace {

// Answers every HTTP/1.1 request with 200 "{}" and keeps the connection open; counts connections.
class AutoResponder : public QObject
{
public:
    explicit AutoResponder(const QHostAddress &address)
    {
        connect(&m_server, &QTcpServer::newConnection, this, [this] {
            while (QTcpSocket *s = m_server.nextPendingConnection()) {
                ++connections;
                connect(s, &QTcpSocket::readyRead, this, [this, s] { serve(s); });
                connect(s, &QTcpSocket::disconnected, s, &QObject::deleteLater);
            }
        });
        m_server.listen(address);
    }
    quint16 port() const { return m_server.serverPort(); }
    int connections = 0;
    int requests = 0;

private:
    void serve(QTcpSocket *s)
    {
        QByteArray &buf = m_buffers[s];
        buf += s->readAll();
        for (;;) {
            const qsizetype end = buf.indexOf("\r\n\r\n");
            if (end < 0)
                return;
            qint64 length = 0;
            for (const QByteArray &line : buf.left(end).split('\n')) {
                if (line.toLower().startsWith("content-length:"))
                    length = line.mid(15).trimmed().toLongLong();
            }
            if (buf.size() < end + 4 + length)
                return;
            buf.remove(0, end + 4 + length);
            ++requests;
            s->write("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
        }
    }

    QTcpServer m_server;
    QHash<QTcpSocket *, QByteArray> m_buffers;
};

UpstreamRequest request(const QUrl &url, const QByteArray &requestId, const QString &egressName,
                        const QNetworkProxy &proxy)
{
    UpstreamRequest r;
    r.method = "POST";
    r.url = url;
    r.headers = {{"Content-Type", "application/json"}, {"x-request-id", requestId}};
    r.body = R"({"model":"gpt-5"})";
    if (!egressName.isEmpty())
        r.egress = UpstreamEgress{egressName, proxy};
    return r;
}

QNetworkProxy networkProxy(const FakeEgressProxy *fake, EgressProxyType type, const QString &user = {},
                           const QString &password = {})
{
    EgressProxySpec spec;
    spec.type = type;
    spec.host = QStringLiteral("127.0.0.1");
    spec.port = fake->port();
    QNetworkProxy p = EgressProxyState::networkProxy(spec);
    p.setUser(user);
    p.setPassword(password);
    return p;
}

QJsonArray connectionsOf(const FakeEgressProxy *p)
{
    return p->record().value(QLatin1String("connections")).toArray();
}

QStringList carried(const FakeEgressProxy *p)
{
    QStringList out;
    for (const QJsonValue &c : connectionsOf(p)) {
        for (const QJsonValue &r : c.toObject().value(QLatin1String("requests")).toArray())
            out << r.toString();
    }
    return out;
}

} // namespace

class TestEgressTransport : public QObject
{
    Q_OBJECT

    FakeEgressFleet m_fleet;

    // Runs one call to completion and returns its outcome.
    Outcome run(UpstreamClient &client, const UpstreamRequest &r, QString *egress = nullptr)
    {
        UpstreamCall *call = client.start(r);
        if (egress)
            *egress = call->egressName();
        UpstreamRecorder rec(call);
        if (!QTest::qWaitFor([&rec] { return !rec.outcomes.isEmpty(); }, 10000)) {
            call->abort(); // finished() reaches the recorder before it goes away
            return Outcome::Aborted;
        }
        return rec.outcomes.first();
    }

private slots:
    void initTestCase()
    {
        QVERIFY(m_fleet.add(QStringLiteral("http"), Kind::HttpConnect));
        QVERIFY(m_fleet.add(QStringLiteral("socks"), Kind::Socks5));
        QVERIFY(m_fleet.add(QStringLiteral("http-auth"), Kind::HttpConnect, Mode::Healthy, 0, QStringLiteral("alice"),
                            QStringLiteral("pw-http")));
        QVERIFY(m_fleet.add(QStringLiteral("socks-auth"), Kind::Socks5, Mode::Healthy, 0, QStringLiteral("bob"),
                            QStringLiteral("pw-socks")));
        QVERIFY(m_fleet.add(QStringLiteral("slow"), Kind::Socks5, Mode::Slow, 600));
        QVERIFY(m_fleet.add(QStringLiteral("down"), Kind::HttpConnect, Mode::Down));
    }

    void connectTunnelCarriesTheRequest()
    {
        AutoResponder upstream(QHostAddress::LocalHost);
        UpstreamClient client;
        const FakeEgressProxy *p = m_fleet.proxy(QStringLiteral("http"));
        QString egress;
        const QUrl url(QStringLiteral("http://127.0.0.1:%1/codex/responses").arg(upstream.port()));
        QCOMPARE(
            run(client,
                request(url, "req_connect_1", QStringLiteral("http"), networkProxy(p, EgressProxyType::HttpConnect)),
                &egress),
            Outcome::Completed);
        QCOMPARE(egress, QStringLiteral("http"));
        const QJsonObject c = connectionsOf(p).last().toObject();
        QCOMPARE(c.value(QLatin1String("outcome")).toString(), QStringLiteral("tunnel"));
        QCOMPARE(c.value(QLatin1String("target_host")).toString(), QStringLiteral("127.0.0.1"));
        QCOMPARE(c.value(QLatin1String("target_port")).toInt(), int(upstream.port()));
        QCOMPARE(c.value(QLatin1String("requests")).toArray(), QJsonArray{QStringLiteral("req_connect_1")});
        QVERIFY(c.value(QLatin1String("bytes_up")).toInt() > 0 && c.value(QLatin1String("bytes_down")).toInt() > 0);
    }

    void socks5ResolvesHereAndSocks5hAtTheProxy()
    {
        AutoResponder upstream(QHostAddress::Any); // "localhost" may resolve to either family
        UpstreamClient client;
        const FakeEgressProxy *p = m_fleet.proxy(QStringLiteral("socks"));
        const QUrl url(QStringLiteral("http://localhost:%1/codex/responses").arg(upstream.port()));
        QCOMPARE(
            run(client, request(url, "req_local_dns", QStringLiteral("s5"), networkProxy(p, EgressProxyType::Socks5))),
            Outcome::Completed);
        QJsonObject c = connectionsOf(p).last().toObject();
        QVERIFY2(c.value(QLatin1String("address_type")).toString().startsWith(QLatin1String("ipv")),
                 qPrintable(c.value(QLatin1String("address_type")).toString()));
        QVERIFY(c.value(QLatin1String("target_host")).toString() != QLatin1String("localhost"));

        QCOMPARE(run(client, request(url, "req_remote_dns", QStringLiteral("s5h"),
                                     networkProxy(p, EgressProxyType::Socks5RemoteDns))),
                 Outcome::Completed);
        c = connectionsOf(p).last().toObject();
        QCOMPARE(c.value(QLatin1String("address_type")).toString(), QStringLiteral("domain"));
        QCOMPARE(c.value(QLatin1String("target_host")).toString(), QStringLiteral("localhost"));
        QCOMPARE(c.value(QLatin1String("requests")).toArray(), QJsonArray{QStringLiteral("req_remote_dns")});
    }

    void credentialsAuthenticateBothKinds()
    {
        AutoResponder upstream(QHostAddress::LocalHost);
        UpstreamClient client;
        const QUrl url(QStringLiteral("http://127.0.0.1:%1/codex/responses").arg(upstream.port()));
        const FakeEgressProxy *h = m_fleet.proxy(QStringLiteral("http-auth"));
        const FakeEgressProxy *s = m_fleet.proxy(QStringLiteral("socks-auth"));
        QCOMPARE(run(client, request(url, "req_auth_http", QStringLiteral("ha"),
                                     networkProxy(h, EgressProxyType::HttpConnect, QStringLiteral("alice"),
                                                  QStringLiteral("pw-http")))),
                 Outcome::Completed);
        QVERIFY(carried(h).contains(QStringLiteral("req_auth_http")));
        QCOMPARE(run(client, request(url, "req_auth_socks", QStringLiteral("sa"),
                                     networkProxy(s, EgressProxyType::Socks5, QStringLiteral("bob"),
                                                  QStringLiteral("pw-socks")))),
                 Outcome::Completed);
        QCOMPARE(connectionsOf(s).last().toObject().value(QLatin1String("user")).toString(), QStringLiteral("bob"));

        // Wrong credentials: no tunnel, and nothing reaches the upstream.
        const int before = upstream.requests;
        QCOMPARE(run(client, request(url, "req_bad_http", QStringLiteral("ha2"),
                                     networkProxy(h, EgressProxyType::HttpConnect, QStringLiteral("alice"),
                                                  QStringLiteral("wrong")))),
                 Outcome::ConnectionFailed);
        QCOMPARE(run(client,
                     request(url, "req_bad_socks", QStringLiteral("sa2"),
                             networkProxy(s, EgressProxyType::Socks5, QStringLiteral("bob"), QStringLiteral("wrong")))),
                 Outcome::ConnectionFailed);
        QCOMPARE(upstream.requests, before);
        QVERIFY(!carried(h).contains(QStringLiteral("req_bad_http")));
    }

    void pooledConnectionsStayWithTheirEgressProxy()
    {
        AutoResponder upstream(QHostAddress::LocalHost);
        UpstreamClient client;
        const QUrl url(QStringLiteral("http://127.0.0.1:%1/codex/responses").arg(upstream.port()));
        const FakeEgressProxy *a = m_fleet.proxy(QStringLiteral("http"));
        const FakeEgressProxy *b = m_fleet.proxy(QStringLiteral("socks"));
        const int aBefore = int(connectionsOf(a).size());
        const int bBefore = int(connectionsOf(b).size());
        QCOMPARE(run(client,
                     request(url, "req_pool_a1", QStringLiteral("A"), networkProxy(a, EgressProxyType::HttpConnect))),
                 Outcome::Completed);
        QCOMPARE(run(client,
                     request(url, "req_pool_a2", QStringLiteral("A"), networkProxy(a, EgressProxyType::HttpConnect))),
                 Outcome::Completed);
        QCOMPARE(client.idleConnections(), 1);
        // A different egress proxy must not be handed A's idle connection.
        QString egress;
        QCOMPARE(run(client, request(url, "req_pool_b1", QStringLiteral("B"), networkProxy(b, EgressProxyType::Socks5)),
                     &egress),
                 Outcome::Completed);
        QCOMPARE(egress, QStringLiteral("B"));
        QCOMPARE(connectionsOf(a).size(), aBefore + 1); // both A requests on one kept-alive tunnel
        QCOMPARE(connectionsOf(a).last().toObject().value(QLatin1String("requests")).toArray(),
                 QJsonArray({QStringLiteral("req_pool_a1"), QStringLiteral("req_pool_a2")}));
        QCOMPARE(connectionsOf(b).size(), bBefore + 1);
        QCOMPARE(connectionsOf(b).last().toObject().value(QLatin1String("requests")).toArray(),
                 QJsonArray{QStringLiteral("req_pool_b1")});
        // Direct goes through neither.
        QCOMPARE(
            run(client, request(url, "req_pool_direct", QString(), QNetworkProxy(QNetworkProxy::NoProxy)), &egress),
            Outcome::Completed);
        QVERIFY(egress.isEmpty());
        QVERIFY(!carried(a).contains(QStringLiteral("req_pool_direct")) &&
                !carried(b).contains(QStringLiteral("req_pool_direct")));
        // Same proxy address under another egress name: still its own connection.
        QCOMPARE(run(client, request(url, "req_pool_a_other", QStringLiteral("A2"),
                                     networkProxy(a, EgressProxyType::HttpConnect))),
                 Outcome::Completed);
        QCOMPARE(connectionsOf(a).size(), aBefore + 2);
    }

    void downProxyFailsTheConnection()
    {
        AutoResponder upstream(QHostAddress::LocalHost);
        UpstreamClient client;
        const FakeEgressProxy *d = m_fleet.proxy(QStringLiteral("down"));
        const QUrl url(QStringLiteral("http://127.0.0.1:%1/codex/responses").arg(upstream.port()));
        QCOMPARE(
            run(client, request(url, "req_down", QStringLiteral("D"), networkProxy(d, EgressProxyType::HttpConnect))),
            Outcome::ConnectionFailed);
        QCOMPARE(connectionsOf(d).last().toObject().value(QLatin1String("outcome")).toString(),
                 QStringLiteral("refused"));
        QCOMPARE(upstream.requests, 0);
    }

    void egressBudgetStopsASlowSetUp()
    {
        AutoResponder upstream(QHostAddress::LocalHost);
        Config config;
        config.upstreamUrl = QUrl(QStringLiteral("http://127.0.0.1:%1").arg(upstream.port()));
        config.budgets.connectS = 3;
        EgressProxySpec slow;
        slow.name = QStringLiteral("slow");
        slow.type = EgressProxyType::Socks5;
        slow.host = QStringLiteral("127.0.0.1");
        slow.port = m_fleet.proxy(QStringLiteral("slow"))->port();
        config.egress.proxies = {slow};
        EgressPoolSpec pool;
        pool.name = QStringLiteral("p");
        pool.strategy = EgressStrategy::Ordered;
        pool.proxies = {QStringLiteral("slow")};
        pool.requestBudgetMs = 200;
        pool.maxAttempts = 3;
        config.egress.pools = {pool};
        config.egress.defaultPool = QStringLiteral("p");
        EgressSelector selector(config, SystemClock::instance(), nullptr);
        bool ready = false;
        selector.start([&ready] { ready = true; });
        QVERIFY(QTest::qWaitFor([&ready] { return ready; }, 5000));
        QVERIFY(selector.poolHealthy(QStringLiteral("p"))); // slow, but within the probe's time

        UpstreamClient client;
        auto r = selector.beginRequest();
        QSignalSpy exhausted(r.get(), &EgressRequest::budgetExhausted);
        const EgressDecision d = r->nextAttempt(QStringLiteral("acc"), std::nullopt);
        QCOMPARE(d.kind, EgressDecision::Kind::Proxy);
        UpstreamCall *call = client.start(request(config.upstreamUrl, "req_slow", d.proxyName, d.proxy));
        r->watch(call);
        QElapsedTimer t;
        t.start();
        QVERIFY(exhausted.wait(2000));
        QVERIFY2(t.elapsed() >= 150 && t.elapsed() < 550, qPrintable(QString::number(t.elapsed())));
        call->abort();
        QCOMPARE(r->attemptFailed(QStringLiteral("egress_timeout")), QStringLiteral("egress_timeout"));
        QVERIFY(r->budget(QStringLiteral("p"))->spentMs() >= 200);
        const EgressDecision next = r->nextAttempt(QStringLiteral("acc"), std::nullopt);
        QCOMPARE(next.reason, QStringLiteral("budget_exhausted"));
        QCOMPARE(r->blockedBy(), QStringList({QStringLiteral("budget_exhausted")}));
        QCOMPARE(upstream.requests, 0);

        // Another request through the same pool starts with its whole budget.
        auto other = selector.beginRequest();
        QCOMPARE(other->nextAttempt(QStringLiteral("acc"), std::nullopt).kind, EgressDecision::Kind::Proxy);
        QCOMPARE(other->budget(QStringLiteral("p"))->remainingMs() > 150, true);
    }
};

QTEST_GUILESS_MAIN(TestEgressTransport)
#include "tst_egress_transport.moc"
