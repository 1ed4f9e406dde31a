// Egress selection (issue 7 points 1-2): strategies, one budget object per request, blocked_by reasons, and
// pool health from real probes through the proxies (never from "a candidate exists").
#include "ManualClock.h"
#include "config/Config.h"
#include "lib/FakeEgressProxy.h"
#include "lib/MemorySecretStore.h"
#include "upstream/egress/EgressCredentials.h"
#include "upstream/egress/EgressRequest.h"
#include "upstream/egress/EgressSelector.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTest>

using namespace sy;
using namespace sy::test;
using Kind = FakeEgressProxy::Kind;
using Mode = FakeEgressProxy::Mode;

namespace {

EgressPoolSpec poolSpec(const QString &name, EgressStrategy strategy, const QStringList &proxies, int budgetMs = 1000,
                        int attempts = 3)
{
    EgressPoolSpec p;
    p.name = name;
    p.strategy = strategy;
    p.proxies = proxies;
    p.requestBudgetMs = budgetMs;
    p.maxAttempts = attempts;
    return p;
}

EgressProxySpec proxySpec(const QString &name, const FakeEgressProxy *fake, bool remoteDns = false)
{
    EgressProxySpec s;
    s.name = name;
    s.type = fake->kind() == Kind::HttpConnect
                 ? EgressProxyType::HttpConnect
                 : (remoteDns ? EgressProxyType::Socks5RemoteDns : EgressProxyType::Socks5);
    s.host = QStringLiteral("127.0.0.1");
    s.port = fake->port();
    return s;
}

EgressProxyState state(const QString &name, EgressProxyState::Health health)
{
    EgressProxyState s;
    s.spec.name = name;
    s.health = health;
    return s;
}

QStringList walk(EgressPool &pool, const QList<int> &attemptIndexes)
{
    QStringList out;
    for (int i : attemptIndexes)
        out << pool.spec().proxies.at(pool.pick(i));
    return out;
}

} // namespace

class TestEgressSelection : public QObject
{
    Q_OBJECT

    FakeEgressFleet m_fleet;
    QTcpServer m_upstream; // probes only need a tunnel to it

    // A selector over the fleet's proxies a, b, c (healthy, down, healthy unless told), started (first probe
    // round done).
    std::unique_ptr<EgressSelector> selector(Config &config, SecretStore *secrets = nullptr)
    {
        config.upstreamUrl = QUrl(QStringLiteral("http://127.0.0.1:%1/backend-api").arg(m_upstream.serverPort()));
        config.budgets.connectS = 2;
        auto s = std::make_unique<EgressSelector>(config, SystemClock::instance(), secrets);
        bool ready = false;
        s->start([&ready] { ready = true; });
        if (!QTest::qWaitFor([&ready] { return ready; }, 5000))
            return nullptr;
        return s;
    }

private slots:
    void initTestCase()
    {
        QVERIFY(m_upstream.listen(QHostAddress::LocalHost));
        // Probe connections are accepted and dropped.
        connect(&m_upstream, &QTcpServer::newConnection, this, [this] {
            while (QTcpSocket *s = m_upstream.nextPendingConnection())
                s->deleteLater();
        });
        QVERIFY(m_fleet.add(QStringLiteral("a"), Kind::HttpConnect));
        QVERIFY(m_fleet.add(QStringLiteral("b"), Kind::Socks5, Mode::Down));
        QVERIFY(m_fleet.add(QStringLiteral("c"), Kind::Socks5));
        QVERIFY(m_fleet.add(QStringLiteral("d"), Kind::HttpConnect, Mode::Down));
        QVERIFY(m_fleet.add(QStringLiteral("auth"), Kind::Socks5, Mode::Healthy, 0, QStringLiteral("user"),
                            QStringLiteral("s3cret")));
    }

    void roundRobinHasOneCursorPerPoolAcrossRequests()
    {
        EgressPool p(poolSpec(QStringLiteral("p"), EgressStrategy::RoundRobin,
                              {QStringLiteral("x"), QStringLiteral("y"), QStringLiteral("z")}));
        EgressPool q(
            poolSpec(QStringLiteral("q"), EgressStrategy::RoundRobin, {QStringLiteral("x"), QStringLiteral("y")}));
        // Attempt indexes within a request do not matter: every attempt advances the pool's cursor.
        QCOMPARE(walk(p, {0, 1, 0}), QStringList({QStringLiteral("x"), QStringLiteral("y"), QStringLiteral("z")}));
        QCOMPARE(walk(q, {0}), QStringList({QStringLiteral("x")}));
        QCOMPARE(walk(p, {0, 0}), QStringList({QStringLiteral("x"), QStringLiteral("y")}));
        QCOMPARE(walk(q, {0, 1}), QStringList({QStringLiteral("y"), QStringLiteral("x")}));
        QCOMPARE(p.cursor(), quint64(5));
    }

    void orderedFollowsTheRequestsOwnAttempts()
    {
        EgressPool p(
            poolSpec(QStringLiteral("p"), EgressStrategy::Ordered, {QStringLiteral("x"), QStringLiteral("y")}));
        QCOMPARE(walk(p, {0, 1, 2}), QStringList({QStringLiteral("x"), QStringLiteral("y"), QStringLiteral("x")}));
        QCOMPARE(walk(p, {0}), QStringList({QStringLiteral("x")})); // a new request starts at the first again
    }

    void randomIsSeedable()
    {
        EgressPoolSpec spec =
            poolSpec(QStringLiteral("p"), EgressStrategy::Random,
                     {QStringLiteral("x"), QStringLiteral("y"), QStringLiteral("z"), QStringLiteral("w")});
        spec.seed = 7;
        EgressPool a(spec), b(spec);
        QList<int> zeros(200, 0);
        const QStringList first = walk(a, zeros);
        QCOMPARE(walk(b, zeros), first);
        QCOMPARE(QSet<QString>(first.begin(), first.end()).size(), 4); // every member is drawn
        spec.seed = 8;
        EgressPool c(spec);
        QVERIFY(walk(c, zeros) != first);
    }

    void budgetCountsSetUpTimeOfOneRequest()
    {
        ManualClock clock;
        EgressBudget b(clock, 300, 2);
        QVERIFY(b.hasAttemptsLeft() && b.hasTimeLeft());
        b.beginAttempt();
        QCOMPARE(b.deadlineMs(), clock.monotonicMs() + 300);
        clock.advance(120);
        QCOMPARE(b.spentMs(), 120);
        b.endSetUp();
        clock.advance(5000); // time after set-up (waiting for the answer) costs nothing
        QCOMPARE(b.spentMs(), 120);
        b.beginAttempt();
        QCOMPARE(b.deadlineMs(), clock.monotonicMs() + 180);
        clock.advance(180);
        QCOMPARE(b.remainingMs(), 0);
        QVERIFY(!b.hasTimeLeft());
        QVERIFY(!b.hasAttemptsLeft());
        QCOMPARE(b.attempts(), 2);
    }

    void blockedReasonsAreDistinctSortedAndComplete()
    {
        BlockedReasons r;
        r.add(blocked::upstreamRejected);
        r.add(blocked::proxyUnreachable);
        r.add(blocked::upstreamRejected);
        r.add(blocked::attemptsExhausted);
        QCOMPARE(r.sorted(), QStringList({QStringLiteral("attempts_exhausted"), QStringLiteral("proxy_unreachable"),
                                          QStringLiteral("upstream_rejected")}));
        QCOMPARE(blockedReasonForOutcome(QStringLiteral("connect_failed"), true), QStringLiteral("proxy_unreachable"));
        QCOMPARE(blockedReasonForOutcome(QStringLiteral("connect_timeout"), true), QStringLiteral("proxy_unreachable"));
        QCOMPARE(blockedReasonForOutcome(QStringLiteral("connect_failed"), false), QStringLiteral("upstream_rejected"));
        QCOMPARE(blockedReasonForOutcome(QStringLiteral("egress_timeout"), true), QStringLiteral("budget_exhausted"));
        QCOMPARE(blockedReasonForOutcome(QStringLiteral("rate_limited"), true), QStringLiteral("upstream_rejected"));
    }

    void poolHealthNeedsAHealthyMember()
    {
        const EgressPoolSpec spec =
            poolSpec(QStringLiteral("p"), EgressStrategy::Ordered, {QStringLiteral("x"), QStringLiteral("y")});
        using H = EgressProxyState::Health;
        QVERIFY(!EgressPool::isHealthy(
            spec, {state(QStringLiteral("x"), H::Unknown), state(QStringLiteral("y"), H::Unknown)}));
        QVERIFY(!EgressPool::isHealthy(
            spec, {state(QStringLiteral("x"), H::Unhealthy), state(QStringLiteral("y"), H::Unhealthy)}));
        QVERIFY(EgressPool::isHealthy(
            spec, {state(QStringLiteral("x"), H::Unhealthy), state(QStringLiteral("y"), H::Healthy)}));
        // A healthy proxy outside the pool does not make the pool healthy.
        QVERIFY(!EgressPool::isHealthy(
            spec, {state(QStringLiteral("x"), H::Unhealthy), state(QStringLiteral("z"), H::Healthy)}));
    }

    void poolHealthComesFromRealProbes()
    {
        Config config;
        for (const QString &n : {QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c"), QStringLiteral("d")})
            config.egress.proxies.append(proxySpec(n, m_fleet.proxy(n)));
        config.egress.pools = {
            poolSpec(QStringLiteral("mixed"), EgressStrategy::RoundRobin, {QStringLiteral("a"), QStringLiteral("b")}),
            poolSpec(QStringLiteral("dead"), EgressStrategy::Ordered, {QStringLiteral("b"), QStringLiteral("d")})};
        const int connectionsBefore =
            int(m_fleet.proxy(QStringLiteral("b"))->record().value(QLatin1String("connections")).toArray().size());
        auto s = selector(config);
        QVERIFY(s);
        QCOMPARE(s->proxy(QStringLiteral("a"))->health, EgressProxyState::Health::Healthy);
        QCOMPARE(s->proxy(QStringLiteral("b"))->health, EgressProxyState::Health::Unhealthy);
        QCOMPARE(s->proxy(QStringLiteral("c"))->health, EgressProxyState::Health::Healthy);
        QCOMPARE(s->proxy(QStringLiteral("d"))->health, EgressProxyState::Health::Unhealthy);
        QVERIFY(s->poolHealthy(QStringLiteral("mixed")));
        QVERIFY(!s->poolHealthy(QStringLiteral("dead")));
        // The down proxy's own record shows the probe that found it down.
        const QJsonArray b = m_fleet.proxy(QStringLiteral("b"))->record().value(QLatin1String("connections")).toArray();
        QVERIFY(b.size() > connectionsBefore);
        QCOMPARE(b.last().toObject().value(QLatin1String("outcome")).toString(), QStringLiteral("refused"));

        // Health follows the proxies: the dead pool's member comes back, the next probe round sees it.
        m_fleet.proxy(QStringLiteral("d"))->setMode(Mode::Healthy);
        bool done = false;
        s->probeNow([&done] { done = true; });
        QVERIFY(QTest::qWaitFor([&done] { return done; }, 5000));
        QVERIFY(s->poolHealthy(QStringLiteral("dead")));
        m_fleet.proxy(QStringLiteral("d"))->setMode(Mode::Down);
    }

    void eachRequestHasItsOwnBudget()
    {
        Config config;
        config.egress.proxies = {proxySpec(QStringLiteral("a"), m_fleet.proxy(QStringLiteral("a")))};
        config.egress.pools = {poolSpec(QStringLiteral("p"), EgressStrategy::Ordered, {QStringLiteral("a")}, 1000, 2)};
        config.egress.defaultPool = QStringLiteral("p");
        auto s = selector(config);
        QVERIFY(s);
        // Twenty requests in one batch, each using up its attempts: none takes anything from another.
        std::vector<std::unique_ptr<EgressRequest>> batch;
        for (int i = 0; i < 20; ++i) {
            batch.push_back(s->beginRequest());
            for (int k = 0; k < 2; ++k) {
                const EgressDecision d = batch.back()->nextAttempt(QStringLiteral("acc_%1").arg(i), std::nullopt);
                QVERIFY2(d.kind == EgressDecision::Kind::Proxy, qPrintable(d.reason));
                batch.back()->attemptFailed(QStringLiteral("connect_failed"));
            }
        }
        for (const auto &r : batch) {
            QCOMPARE(r->budget(QStringLiteral("p"))->attempts(), 2);
            const EgressDecision third = r->nextAttempt(QStringLiteral("acc"), std::nullopt);
            QCOMPARE(third.kind, EgressDecision::Kind::Refused);
            QCOMPARE(third.reason, QStringLiteral("attempts_exhausted"));
            QCOMPARE(r->blockedBy(),
                     QStringList({QStringLiteral("attempts_exhausted"), QStringLiteral("proxy_unreachable")}));
        }
        auto late = s->beginRequest();
        QCOMPARE(late->nextAttempt(QStringLiteral("acc_late"), std::nullopt).kind, EgressDecision::Kind::Proxy);
        QVERIFY(late != nullptr && batch.front().get() != late.get());
    }

    void refusalsFailClosed()
    {
        Config config;
        for (const QString &n : {QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("d"), QStringLiteral("auth")})
            config.egress.proxies.append(proxySpec(n, m_fleet.proxy(n)));
        config.egress.proxies.last().hasCredentials = true;
        config.egress.pools = {
            poolSpec(QStringLiteral("dead"), EgressStrategy::Ordered, {QStringLiteral("b"), QStringLiteral("d")}),
            poolSpec(QStringLiteral("locked"), EgressStrategy::Ordered, {QStringLiteral("auth")}),
            poolSpec(QStringLiteral("live"), EgressStrategy::Ordered, {QStringLiteral("a")})};
        config.egress.accountBindings = {{QStringLiteral("acc_dead"), QStringLiteral("dead")},
                                         {QStringLiteral("locked-alias"), QStringLiteral("locked")},
                                         {QStringLiteral("acc_live"), QStringLiteral("live")}};
        MemorySecretStore secrets; // holds nothing for "auth"
        auto s = selector(config, &secrets);
        QVERIFY(s);
        QVERIFY(secrets.calls().contains(QStringLiteral("read:egress:auth")));
        auto r = s->beginRequest();
        const EgressDecision dead = r->nextAttempt(QStringLiteral("acc_dead"), std::nullopt);
        QCOMPARE(dead.kind, EgressDecision::Kind::Refused);
        QCOMPARE(dead.reason, QStringLiteral("no_healthy_proxy"));
        const EgressDecision locked = r->nextAttempt(QStringLiteral("acc_x"), QStringLiteral("locked-alias"));
        QCOMPARE(locked.kind, EgressDecision::Kind::Refused);
        QCOMPARE(locked.reason, QStringLiteral("pool_unusable"));
        QVERIFY(!locked.detail.contains(QStringLiteral("s3cret")));
        QCOMPARE(r->nextAttempt(QStringLiteral("acc_free"), std::nullopt).kind, EgressDecision::Kind::Direct);
        const EgressDecision live = r->nextAttempt(QStringLiteral("acc_live"), std::nullopt);
        QCOMPARE(live.kind, EgressDecision::Kind::Proxy);
        QCOMPARE(live.proxyName, QStringLiteral("a"));
        QCOMPARE(live.upstreamEgress()->proxy.port(), m_fleet.proxy(QStringLiteral("a"))->port());
        QCOMPARE(r->blockedBy(), QStringList({QStringLiteral("no_healthy_proxy"), QStringLiteral("pool_unusable")}));
    }

    void credentialsComeFromTheSecretStore()
    {
        Config config;
        config.egress.proxies = {proxySpec(QStringLiteral("auth"), m_fleet.proxy(QStringLiteral("auth")))};
        config.egress.proxies.first().hasCredentials = true;
        config.egress.pools = {poolSpec(QStringLiteral("p"), EgressStrategy::Ordered, {QStringLiteral("auth")})};
        MemorySecretStore secrets;
        secrets.put(egressSecretKey(QStringLiteral("auth")),
                    packEgressCredentials({QStringLiteral("user"), QStringLiteral("s3cret")}));
        auto s = selector(config, &secrets);
        QVERIFY(s);
        QCOMPARE(s->proxy(QStringLiteral("auth"))->health, EgressProxyState::Health::Healthy);
        QVERIFY(s->poolUnusableReason(QStringLiteral("p")).isEmpty());
        const QJsonArray conns =
            m_fleet.proxy(QStringLiteral("auth"))->record().value(QLatin1String("connections")).toArray();
        QCOMPARE(conns.last().toObject().value(QLatin1String("user")).toString(), QStringLiteral("user"));
        // The status view never shows a secret.
        QVERIFY(!QJsonDocument(s->statusJson()).toJson().contains("s3cret"));

        // Wrong credentials: the probe's handshake fails, so the pool is unhealthy.
        MemorySecretStore wrong;
        wrong.put(egressSecretKey(QStringLiteral("auth")),
                  packEgressCredentials({QStringLiteral("user"), QStringLiteral("nope")}));
        auto w = selector(config, &wrong);
        QVERIFY(w);
        QCOMPARE(w->proxy(QStringLiteral("auth"))->health, EgressProxyState::Health::Unhealthy);
        QVERIFY(!w->poolHealthy(QStringLiteral("p")));
    }

    void unconfiguredMeansDirect()
    {
        Config config;
        auto s = selector(config);
        QVERIFY(s);
        QVERIFY(!s->isConfigured());
        EgressRequest r(nullptr, SystemClock::instance());
        QCOMPARE(r.nextAttempt(QStringLiteral("acc"), std::nullopt).kind, EgressDecision::Kind::Direct);
        QCOMPARE(s->beginRequest()->nextAttempt(QStringLiteral("acc"), std::nullopt).kind,
                 EgressDecision::Kind::Direct);
        QCOMPARE(r.attemptFailed(QStringLiteral("connect_failed")), QStringLiteral("connect_failed"));
        QCOMPARE(r.blockedBy(), QStringList({QStringLiteral("upstream_rejected")}));
    }
};

QTEST_GUILESS_MAIN(TestEgressSelection)
#include "tst_egress_selection.moc"
