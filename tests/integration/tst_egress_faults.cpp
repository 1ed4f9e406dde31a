// SWITCHYARD_NEEDS_KEYRING: accounts are imported into a real gnome-keyring.
//
// Negative checks (issue 7 point 5) against the real program: each classic failure is planted in the fault
// build (`switchyard-faults`, SWITCHYARD_FAULTS=<name>, util/Faults.h) at the code site it would live in, a
// small run goes through `switchyard-faults serve`, and the independent probe (tests/probe), given the fault
// build's `health --json` as well, goes red for the reason named. The same run through the same fault build
// with no fault switched on is green. (The 1,010-request mixed run of tst_egress_probe is the large green run.)
// The request log and accounts list are read with the normal build's CLI, an observer without faults.
#include "lib/CodexRequests.h"
#include "lib/EgressProbeRunner.h"
#include "lib/FakeEgressProxy.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/ProxyProcess.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <functional>
#include <memory>

using namespace sy::test;
using Kind = FakeEgressProxy::Kind;
using Mode = FakeEgressProxy::Mode;

namespace {

QJsonObject proxyEntry(const FakeEgressProxy *p)
{
    return {{QStringLiteral("name"), p->name()}, {QStringLiteral("url"), p->url()}};
}

QJsonObject poolEntry(const QString &name, const QString &strategy, const QStringList &proxies, int budgetMs,
                      int attempts)
{
    return {{QStringLiteral("name"), name},
            {QStringLiteral("strategy"), strategy},
            {QStringLiteral("proxies"), QJsonArray::fromStringList(proxies)},
            {QStringLiteral("request_budget_ms"), budgetMs},
            {QStringLiteral("max_attempts"), attempts}};
}

struct Scenario
{
    std::function<QJsonObject(FakeEgressFleet &)> config;
    int accounts = 1;
    int turns = 0;
    QString pinStrict; // alias the turns are pinned to, or none
    // The egress section is written broken after the accounts were imported (the valid file for the
    // import is `config` without the broken key).
    QJsonObject brokenEgress;
};

} // namespace

class TestEgressFaults : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    QTemporaryDir m_out;

    struct Run
    {
        ProbeRun probe;
        int healthExit = -1;
        bool served = false;
        int turns = 0;
    };

    Run run(const Scenario &s, const QString &fault)
    {
        Run result;
        FakeEgressFleet fleet;
        const QJsonObject config = s.config(fleet);
        ProxyProcess proxy;
        proxy.setBinary(qEnvironmentVariable("SWITCHYARD_FAULTS_BIN"));
        proxy.setEnv(QStringLiteral("SWITCHYARD_FAULTS"), fault);
        proxy.setConfig(config);
        if (!proxy.addAccounts(s.accounts)) {
            qWarning() << proxy.errorString();
            return result;
        }
        if (!s.pinStrict.isEmpty() &&
            proxy.cli({QStringLiteral("accounts"), QStringLiteral("pin"), s.pinStrict, QStringLiteral("--strict")})
                    .exitCode != 0)
            return result;
        QJsonObject served = config;
        for (auto it = s.brokenEgress.begin(); it != s.brokenEgress.end(); ++it)
            served.insert(it.key(), it.value());
        proxy.setConfig(served);
        result.served = proxy.start(m_fake.baseUrl());
        for (int i = 0; result.served && i < s.turns; ++i, ++result.turns)
            sseRequest("POST", QUrl(proxy.url(QStringLiteral("/backend-api/codex/responses"))), kCodexHeaders,
                       codexBody(QStringLiteral("hello")), 20000);
        if (result.served && proxy.stop() != 0)
            qWarning() << "serve did not stop cleanly";

        // The observers read the log with the valid file; the probe and `health` get the file that was served.
        const auto write = [](const QString &path, const QJsonObject &content) {
            QFile file(path);
            return file.open(QIODevice::WriteOnly | QIODevice::Truncate) &&
                   file.write(QJsonDocument(content).toJson()) > 0;
        };
        const QString servedPath = m_out.path() + QStringLiteral("/served-config.json");
        if (!write(servedPath, served) || !write(proxy.configPath(), config))
            return result;
        ProbeFiles files = collectProbeFiles(proxy, m_fake, fleet, false);
        files.configPath = servedPath;
        const CliResult health =
            proxy.cliOf(qEnvironmentVariable("SWITCHYARD_FAULTS_BIN"),
                        {QStringLiteral("health"), QStringLiteral("--json"), QStringLiteral("--config"), servedPath});
        files.health = ProbeFiles::Health{health.out, health.exitCode};
        result.healthExit = health.exitCode;
        result.probe = runEgressProbe(m_out.path(), files);
        return result;
    }

    // Green with the fault build and no fault; red with the fault, for each reason named.
    void expectCaught(const char *fault, const Scenario &s, const QStringList &reasons, Run *cleanRun = nullptr)
    {
        const Run clean = run(s, QString());
        if (cleanRun)
            *cleanRun = clean;
        QVERIFY2(clean.probe.exitCode == 0,
                 qPrintable(QStringLiteral("without a fault: ") + clean.probe.output.right(3000)));
        const Run faulty = run(s, QLatin1String(fault));
        QVERIFY2(faulty.probe.exitCode == 1,
                 qPrintable(QStringLiteral("with %1 the probe stayed green: ").arg(QLatin1String(fault)) +
                            faulty.probe.output.right(3000)));
        const QString all = faulty.probe.mismatches().join(QLatin1Char('\n'));
        for (const QString &reason : reasons)
            QVERIFY2(all.contains(reason),
                     qPrintable(QStringLiteral("expected \"%1\" among:\n%2").arg(reason, all.left(3000))));
        qInfo().noquote() << fault << "->" << faulty.probe.mismatches().size()
                          << "mismatch(es), first:" << faulty.probe.mismatches().value(0);
    }

private slots:
    void initTestCase() { QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString())); }

    // The proxy that was picked is not the proxy that was recorded.
    void recordedProxyIsNotTheCarrier()
    {
        Scenario s;
        s.config = [](FakeEgressFleet &f) {
            const auto *a = f.add(QStringLiteral("h1"), Kind::HttpConnect);
            const auto *b = f.add(QStringLiteral("h2"), Kind::Socks5);
            return QJsonObject{{QStringLiteral("egress_proxies"), QJsonArray{proxyEntry(a), proxyEntry(b)}},
                               {QStringLiteral("egress_pools"),
                                QJsonArray{poolEntry(QStringLiteral("rr"), QStringLiteral("round_robin"),
                                                     {QStringLiteral("h1"), QStringLiteral("h2")}, 2000, 2)}},
                               {QStringLiteral("egress_default_pool"), QStringLiteral("rr")}};
        };
        s.accounts = 2;
        s.turns = 12;
        expectCaught("egress-record-wrong-proxy", s, {QStringLiteral("its own record does not show it carrying")});
    }

    // A budget meant per request shared by the batch: later requests fail for no reason of their own.
    void budgetSharedByTheBatch()
    {
        Scenario s;
        s.config = [](FakeEgressFleet &f) {
            const auto *ok = f.add(QStringLiteral("ok"), Kind::HttpConnect);
            return QJsonObject{{QStringLiteral("egress_proxies"), QJsonArray{proxyEntry(ok)}},
                               {QStringLiteral("egress_pools"),
                                QJsonArray{poolEntry(QStringLiteral("batch"), QStringLiteral("ordered"),
                                                     {QStringLiteral("ok")}, 2000, 2)}},
                               {QStringLiteral("egress_default_pool"), QStringLiteral("batch")}};
        };
        s.turns = 6;
        expectCaught("egress-shared-budget", s,
                     {QStringLiteral("blocked_by includes attempts_exhausted: nothing this request met explains it")});
    }

    // Only the first failure reason is kept.
    void onlyTheFirstReasonKept()
    {
        Scenario s;
        s.config = [](FakeEgressFleet &f) {
            const auto *d1 = f.add(QStringLiteral("d1"), Kind::HttpConnect, Mode::Down);
            const auto *d2 = f.add(QStringLiteral("d2"), Kind::Socks5, Mode::Down);
            const auto *ok = f.add(QStringLiteral("ok"), Kind::HttpConnect);
            return QJsonObject{
                {QStringLiteral("egress_proxies"), QJsonArray{proxyEntry(d1), proxyEntry(d2), proxyEntry(ok)}},
                {QStringLiteral("egress_pools"),
                 QJsonArray{poolEntry(QStringLiteral("rr"), QStringLiteral("round_robin"),
                                      {QStringLiteral("d1"), QStringLiteral("d2"), QStringLiteral("ok")}, 2000, 2)}},
                {QStringLiteral("egress_default_pool"), QStringLiteral("rr")}};
        };
        s.turns = 9;
        expectCaught("egress-first-reason-only", s, {QStringLiteral("expected it to include attempts_exhausted")});
    }

    // Pool health derived from "a candidate exists" instead of from healthy proxies (gateway and health).
    void healthFromCandidates()
    {
        Scenario s;
        s.config = [](FakeEgressFleet &f) {
            const auto *d1 = f.add(QStringLiteral("d1"), Kind::HttpConnect, Mode::Down);
            const auto *d2 = f.add(QStringLiteral("d2"), Kind::Socks5, Mode::Down);
            const auto *ok = f.add(QStringLiteral("ok"), Kind::HttpConnect);
            return QJsonObject{
                {QStringLiteral("egress_proxies"), QJsonArray{proxyEntry(d1), proxyEntry(d2), proxyEntry(ok)}},
                {QStringLiteral("egress_pools"),
                 QJsonArray{
                     poolEntry(QStringLiteral("dead"), QStringLiteral("ordered"),
                               {QStringLiteral("d1"), QStringLiteral("d2")}, 2000, 2),
                     poolEntry(QStringLiteral("live"), QStringLiteral("ordered"), {QStringLiteral("ok")}, 2000, 2)}},
                {QStringLiteral("egress_account_bindings"),
                 QJsonObject{{QStringLiteral("acct1"), QStringLiteral("dead")},
                             {QStringLiteral("acct2"), QStringLiteral("live")}}}};
        };
        s.accounts = 2;
        s.turns = 3;
        s.pinStrict = QStringLiteral("acct1");
        expectCaught(
            "egress-health-from-candidates", s,
            {QStringLiteral("which has no healthy proxy"), QStringLiteral("health: pool dead: expected unhealthy")});
    }

    // A health check with an empty criteria table that is always green.
    void emptyCriteriaTable()
    {
        Scenario s;
        s.config = [](FakeEgressFleet &f) {
            const auto *ok = f.add(QStringLiteral("ok"), Kind::HttpConnect);
            return QJsonObject{
                {QStringLiteral("egress_proxies"), QJsonArray{proxyEntry(ok)}},
                {QStringLiteral("egress_pools"), QJsonArray{poolEntry(QStringLiteral("p"), QStringLiteral("ordered"),
                                                                      {QStringLiteral("ok")}, 2000, 2)}},
                {QStringLiteral("egress_default_pool"), QStringLiteral("p")}};
        };
        s.turns = 2;
        expectCaught("health-empty-criteria", s, {QStringLiteral("expected a non-empty criteria table")});
    }

    // Exit code 0 no matter what.
    void exitZeroNoMatterWhat()
    {
        Scenario s;
        s.config = [](FakeEgressFleet &f) {
            const auto *down = f.add(QStringLiteral("down"), Kind::Socks5, Mode::Down);
            const auto *ok = f.add(QStringLiteral("ok"), Kind::HttpConnect);
            return QJsonObject{
                {QStringLiteral("egress_proxies"), QJsonArray{proxyEntry(down), proxyEntry(ok)}},
                {QStringLiteral("egress_pools"),
                 QJsonArray{
                     poolEntry(QStringLiteral("dead"), QStringLiteral("ordered"), {QStringLiteral("down")}, 2000, 1),
                     poolEntry(QStringLiteral("live"), QStringLiteral("ordered"), {QStringLiteral("ok")}, 2000, 1)}},
                {QStringLiteral("egress_default_pool"), QStringLiteral("live")}};
        };
        s.turns = 2;
        expectCaught("health-exit-zero", s, {QStringLiteral("expected exit 2, found 0")});
    }

    // A broken configuration silently replaced by defaults (here: the egress section dropped, traffic direct).
    // Without the fault `serve` refuses to start and `health` exits 3.
    void brokenConfigReplacedByDefaults()
    {
        Scenario s;
        s.config = [](FakeEgressFleet &f) {
            const auto *ok = f.add(QStringLiteral("ok"), Kind::HttpConnect);
            return QJsonObject{
                {QStringLiteral("egress_proxies"), QJsonArray{proxyEntry(ok)}},
                {QStringLiteral("egress_pools"), QJsonArray{poolEntry(QStringLiteral("p"), QStringLiteral("ordered"),
                                                                      {QStringLiteral("ok")}, 2000, 2)}},
                {QStringLiteral("egress_account_bindings"),
                 QJsonObject{{QStringLiteral("acct1"), QStringLiteral("p")}}}};
        };
        s.turns = 4;
        s.brokenEgress = {{QStringLiteral("egress_pools"),
                           QJsonArray{poolEntry(QStringLiteral("p"), QStringLiteral("ordered"),
                                                {QStringLiteral("ok"), QStringLiteral("typo")}, 2000, 2)}}};
        Run clean;
        expectCaught("egress-config-defaults", s,
                     {QStringLiteral("went direct: expected a proxy of pool p"), QStringLiteral("expected exit 3")},
                     &clean);
        QVERIFY(!clean.served);
        QCOMPARE(clean.healthExit, 3);
    }
};

QTEST_GUILESS_MAIN(TestEgressFaults)
#include "tst_egress_faults.moc"
