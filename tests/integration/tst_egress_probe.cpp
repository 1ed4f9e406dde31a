// SWITCHYARD_NEEDS_KEYRING: accounts are imported into a real gnome-keyring.
//
// Issue 7 point 5: a mixed run of more than 1,000 requests over 3 accounts and 5 egress proxies (2 of them
// down, 1 slow) through a real `switchyard serve`, then the independent probe (tests/probe) recomputes what
// every request should have done from the configuration file, the fake upstream's and the fake proxies'
// own records and the request log, and checks `switchyard health --json`. Both must be green.
#include "lib/CodexRequests.h"
#include "lib/EgressProbeRunner.h"
#include "lib/FakeEgressProxy.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/ProxyProcess.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QSet>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>

using namespace sy::test;
using Kind = FakeEgressProxy::Kind;
using Mode = FakeEgressProxy::Mode;

namespace {

QJsonObject proxyEntry(const QString &name, const QString &url)
{
    return {{QStringLiteral("name"), name}, {QStringLiteral("url"), url}};
}

QJsonObject pool(const QString &name, const QString &strategy, const QStringList &proxies, int budgetMs, int attempts)
{
    return {{QStringLiteral("name"), name},
            {QStringLiteral("strategy"), strategy},
            {QStringLiteral("proxies"), QJsonArray::fromStringList(proxies)},
            {QStringLiteral("request_budget_ms"), budgetMs},
            {QStringLiteral("max_attempts"), attempts}};
}

} // namespace

class TestEgressProbe : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    FakeEgressFleet m_fleet;
    ProxyProcess m_proxy;
    QTemporaryDir m_out;
    QHash<QString, int> m_statuses;
    QSet<QString> m_reasons;

    // One Codex turn; returns the HTTP status.
    int turn()
    {
        const SseResult r = sseRequest("POST", QUrl(m_proxy.url(QStringLiteral("/backend-api/codex/responses"))),
                                       kCodexHeaders, codexBody(QStringLiteral("hello")), 20000);
        return r.status;
    }

    void pin(const QStringList &args)
    {
        const CliResult r = m_proxy.cli(QStringList{QStringLiteral("accounts"), QStringLiteral("pin")} + args);
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QThread::msleep(1300); // the instance notices CLI changes within a second
    }

private slots:
    void initTestCase()
    {
        QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString()));
        QVERIFY(m_fleet.add(QStringLiteral("p1"), Kind::HttpConnect));
        QVERIFY(m_fleet.add(QStringLiteral("p2"), Kind::Socks5));
        QVERIFY(m_fleet.add(QStringLiteral("p3"), Kind::Socks5, Mode::Slow, 120));
        QVERIFY(m_fleet.add(QStringLiteral("p4"), Kind::HttpConnect, Mode::Down));
        QVERIFY(m_fleet.add(QStringLiteral("p5"), Kind::Socks5, Mode::Down));
        const auto url = [this](const char *name, bool remoteDns = false) {
            return m_fleet.proxy(QLatin1String(name))->url(remoteDns);
        };
        m_proxy.setConfig(QJsonObject{
            {QStringLiteral("egress_proxies"),
             QJsonArray{proxyEntry(QStringLiteral("p1"), url("p1")), proxyEntry(QStringLiteral("p2"), url("p2")),
                        proxyEntry(QStringLiteral("p3"), url("p3", true)), proxyEntry(QStringLiteral("p4"), url("p4")),
                        proxyEntry(QStringLiteral("p5"), url("p5"))}},
            {QStringLiteral("egress_pools"),
             QJsonArray{pool(QStringLiteral("rr"), QStringLiteral("round_robin"),
                             {QStringLiteral("p1"), QStringLiteral("p4"), QStringLiteral("p5"), QStringLiteral("p2")},
                             2000, 2),
                        // The slow proxy never sets up a tunnel within 60 ms (and no other pool leaves one idle
                        // to reuse): every attempt of acct2 through it runs out of egress budget.
                        pool(QStringLiteral("tight"), QStringLiteral("ordered"),
                             {QStringLiteral("p5"), QStringLiteral("p3")}, 60, 3),
                        pool(QStringLiteral("spread"), QStringLiteral("random"),
                             {QStringLiteral("p1"), QStringLiteral("p2")}, 2000, 3)}},
            {QStringLiteral("egress_default_pool"), QStringLiteral("spread")},
            {QStringLiteral("egress_account_bindings"),
             QJsonObject{{QStringLiteral("acct1"), QStringLiteral("rr")},
                         {QStringLiteral("acct2"), QStringLiteral("tight")}}},
        });
        // Leases renewed every 2 s instead of 20: the run crosses dozens of renewals while requests fail over
        // between egress proxies (a renewal once found a failover's next slot released by the release of its
        // previous one, and ended that turn with owner_lost; tst_slot_ledger_failover pins the order down).
        m_proxy.setEnv(QStringLiteral("SWITCHYARD_TEST_LEASE_TTL_S"), QStringLiteral("6"));
        QVERIFY2(m_proxy.addAccounts(3), qPrintable(m_proxy.errorString()));
        QVERIFY2(m_proxy.start(m_fake.baseUrl()), qPrintable(m_proxy.errorString()));
    }

    void mixedRunIsGreenForProbeAndHealth()
    {
        QElapsedTimer clock;
        clock.start();
        int sent = 0;
        const auto run = [&](int n) {
            for (int i = 0; i < n; ++i, ++sent)
                ++m_statuses[QString::number(turn())];
        };
        run(600);                                                   // any account
        pin({QStringLiteral("acct1"), QStringLiteral("--strict")}); // round_robin walks into two dead proxies
        run(150);
        pin({QStringLiteral("acct2"), QStringLiteral("--strict")}); // the egress budget runs out
        run(60);
        pin({QStringLiteral("auto")});
        run(200);
        qInfo() << sent << "requests in" << clock.elapsed() << "ms; HTTP statuses" << m_statuses;
        QVERIFY(sent >= 1000);

        const ProbeFiles files = collectProbeFiles(m_proxy, m_fake, m_fleet, true);
        QCOMPARE(files.requests.size(), sent);
        const ProbeRun probe = runEgressProbe(m_out.path(), files);
        qInfo().noquote() << probe.output.right(3000);
        QVERIFY2(probe.exitCode == 0, qPrintable(probe.mismatches().mid(0, 20).join(QLatin1Char('\n'))));
        QVERIFY2(files.health->exitCode == 0, files.health->output.constData());

        // The run was mixed: every kind of outcome the probe recomputed actually happened.
        QHash<QString, int> outcomes;
        for (const QJsonValue &v : files.requests) {
            const QJsonObject row = v.toObject();
            for (const QJsonValue &b : row.value(QLatin1String("blocked_by")).toArray())
                m_reasons.insert(b.toString());
            for (const QJsonValue &a : row.value(QLatin1String("attempts")).toArray())
                ++outcomes[a.toObject().value(QLatin1String("outcome")).toString()];
        }
        qInfo() << "attempt outcomes" << outcomes << "blocked_by reasons" << m_reasons;
        QVERIFY(m_statuses.value(QStringLiteral("200")) > 700);
        QVERIFY(m_statuses.value(QStringLiteral("502")) + m_statuses.value(QStringLiteral("504")) > 50);
        QVERIFY(outcomes.value(QStringLiteral("proxy_unreachable")) > 100);
        QVERIFY(outcomes.value(QStringLiteral("egress_timeout")) > 60);
        for (const char *reason : {"attempts_exhausted", "budget_exhausted", "proxy_unreachable"})
            QVERIFY2(m_reasons.contains(QLatin1String(reason)), reason);
        // The down proxies carried nothing; the healthy and slow ones carried what the log says.
        for (const char *down : {"p4", "p5"}) {
            for (const QJsonValue &c :
                 m_fleet.proxy(QLatin1String(down))->record().value(QLatin1String("connections")).toArray())
                QCOMPARE(c.toObject().value(QLatin1String("requests")).toArray().size(), 0);
        }
    }

    void cleanupTestCase() { QCOMPARE(m_proxy.stop(), 0); }
};

QTEST_GUILESS_MAIN(TestEgressProbe)
#include "tst_egress_probe.moc"
