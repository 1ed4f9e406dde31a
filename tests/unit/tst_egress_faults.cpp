// Negative checks (issue 7 point 5): each classic failure is planted with a test-only fault switch and the
// independent probe goes red; without the switch the same run is green. The egress and health sources are
// compiled into this test with SWITCHYARD_FAULT_INJECTION (the shipped program has no switches at all).
// clang-format off
#define SWITCHYARD_FAULT_INJECTION 1
// The sources with fault switches, compiled here with the switches in (they replace switchyard_core's copies).
#include "health/HealthCriteria.cpp"
#include "health/HealthReport.cpp"
#include "upstream/egress/EgressBudget.cpp"
#include "upstream/egress/EgressConfig.cpp"
#include "upstream/egress/EgressPool.cpp"
#include "upstream/egress/EgressRequest.cpp"
#include "upstream/egress/EgressSelector.cpp"
// clang-format on

#include "config/Config.h"
#include "health/ProxyHandshake.h"
#include "lib/EgressProbeRunner.h"
#include "lib/EgressRunHarness.h"
#include "lib/FakeEgressProxy.h"
#include "lib/FakeUpstreamProcess.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTemporaryDir>
#include <QTest>
#include <functional>
#include <memory>

using namespace sy;
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

const QList<HarnessAccount> kAccounts{
    {QStringLiteral("acc_one"), QStringLiteral("one"), QStringLiteral("cg-fault-one"), QStringLiteral("tok-one")},
    {QStringLiteral("acc_two"), QStringLiteral("two"), QStringLiteral("cg-fault-two"), QStringLiteral("tok-two")}};

} // namespace

class TestEgressFaults : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    QTemporaryDir m_dir;
    std::unique_ptr<FakeEgressFleet> m_fleet;
    QString m_configPath;
    ConfigResult m_loaded;

    // A fresh fleet, and the config file `build` writes for it, loaded by the (switchable) config code.
    void configure(const std::function<QJsonObject(FakeEgressFleet &)> &build)
    {
        m_fleet = std::make_unique<FakeEgressFleet>();
        const QJsonObject file = build(*m_fleet);
        m_configPath = m_dir.path() + QStringLiteral("/config.json");
        QFile f(m_configPath);
        QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
        f.write(QJsonDocument(file).toJson());
        f.close();
        ConfigOverrides o;
        o.configFile = m_configPath;
        m_loaded = loadConfig(
            o, {{QStringLiteral("HOME"), m_dir.path()}, {QStringLiteral("SWITCHYARD_UPSTREAM_URL"), m_fake.baseUrl()}});
    }

    // The health report over the loaded configuration, with live probes of its proxies.
    ProbeFiles::Health health()
    {
        if (!m_loaded.ok())
            return {QByteArray(), 3}; // what main() does: exit 3 before any criterion
        HealthInputs in;
        in.config = &m_loaded.config;
        in.storeOk = true;
        for (const HarnessAccount &a : kAccounts) {
            AccountRecord r;
            r.id = a.id;
            r.alias = a.alias;
            r.chatgptAccountId = a.chatgptAccountId;
            in.accounts.append(r);
        }
        ProxyHandshake probe(m_loaded.config.upstreamUrl.host(), quint16(m_loaded.config.upstreamUrl.port()), 2000);
        in.probes = probe.runAndWait(m_loaded.config.egress.proxies, {});
        const HealthReport report = evaluateHealth(in);
        return {QJsonDocument(report.toJson()).toJson(), report.exitCode()};
    }

    // Runs requests through the egress layer and hands everything to the independent probe.
    ProbeRun probeRun(int count, int concurrency, bool freshConnections, bool withHealth)
    {
        ProbeFiles files;
        files.configPath = m_configPath;
        if (m_loaded.ok()) {
            EgressRunHarness harness(m_loaded.config, kAccounts);
            if (!harness.start())
                return {};
            if (!harness.run(count, concurrency, freshConnections))
                return {};
            files.requests = harness.requestLog();
        }
        files.upstreamLog = m_fake.log();
        for (const FakeEgressProxy *p : m_fleet->proxies())
            files.proxyRecords.append(p->record());
        QJsonArray accounts;
        for (const HarnessAccount &a : kAccounts)
            accounts.append(QJsonObject{{QStringLiteral("account_id"), a.id},
                                        {QStringLiteral("account_alias"), a.alias},
                                        {QStringLiteral("chatgpt_account_id"), a.chatgptAccountId},
                                        {QStringLiteral("status"), QStringLiteral("active")}});
        files.accounts = accounts;
        if (withHealth)
            files.health = health();
        return runEgressProbe(m_dir.path(), files);
    }

    // Green without the fault, red with it, and red for the reason named.
    void expectCaught(const char *fault, const std::function<QJsonObject(FakeEgressFleet &)> &build, int count,
                      int concurrency, bool fresh, bool withHealth, const QString &reason)
    {
        qunsetenv("SWITCHYARD_FAULT");
        configure(build);
        const ProbeRun clean = probeRun(count, concurrency, fresh, withHealth);
        QVERIFY2(clean.exitCode == 0, qPrintable(QStringLiteral("without the fault: ") + clean.output));

        qputenv("SWITCHYARD_FAULT", fault);
        configure(build);
        const ProbeRun faulty = probeRun(count, concurrency, fresh, withHealth);
        qunsetenv("SWITCHYARD_FAULT");
        QVERIFY2(
            faulty.exitCode == 1,
            qPrintable(QStringLiteral("with %1 the probe stayed green: ").arg(QLatin1String(fault)) + faulty.output));
        const QString all = faulty.mismatches().join(QLatin1Char('\n'));
        QVERIFY2(all.contains(reason), qPrintable(all.left(3000)));
        qInfo().noquote() << fault << "->" << faulty.mismatches().first();
    }

private slots:
    void initTestCase() { QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString())); }

    void cleanup() { qunsetenv("SWITCHYARD_FAULT"); }

    // The proxy that was picked is not the proxy that was recorded.
    void pickedProxyNotRecordedIsCaught()
    {
        expectCaught(
            fault::recordWrongProxy,
            [](FakeEgressFleet &f) {
                const auto *a = f.add(QStringLiteral("h1"), Kind::HttpConnect);
                const auto *b = f.add(QStringLiteral("h2"), Kind::Socks5);
                return QJsonObject{{QStringLiteral("egress_proxies"), QJsonArray{proxyEntry(a), proxyEntry(b)}},
                                   {QStringLiteral("egress_pools"),
                                    QJsonArray{poolEntry(QStringLiteral("rr"), QStringLiteral("round_robin"),
                                                         {QStringLiteral("h1"), QStringLiteral("h2")}, 2000, 2)}},
                                   {QStringLiteral("egress_default_pool"), QStringLiteral("rr")}};
            },
            20, 1, false, false, QStringLiteral("its own record does not show it carrying"));
    }

    // A budget meant per request shared by the batch: later requests fail for no reason of their own.
    void sharedBudgetIsCaught()
    {
        expectCaught(
            fault::sharedBudget,
            [](FakeEgressFleet &f) {
                const auto *slow = f.add(QStringLiteral("slow"), Kind::Socks5, Mode::Slow, 120);
                return QJsonObject{{QStringLiteral("egress_proxies"), QJsonArray{proxyEntry(slow)}},
                                   {QStringLiteral("egress_pools"),
                                    QJsonArray{poolEntry(QStringLiteral("batch"), QStringLiteral("ordered"),
                                                         {QStringLiteral("slow")}, 400, 50)}},
                                   {QStringLiteral("egress_default_pool"), QStringLiteral("batch")}};
            },
            8, 1, true, false, QStringLiteral("(per-request budget)"));
    }

    // Only the first failure reason is kept.
    void firstReasonOnlyIsCaught()
    {
        expectCaught(
            fault::firstReasonOnly,
            [](FakeEgressFleet &f) {
                const auto *d1 = f.add(QStringLiteral("d1"), Kind::HttpConnect, Mode::Down);
                const auto *d2 = f.add(QStringLiteral("d2"), Kind::Socks5, Mode::Down);
                const auto *ok = f.add(QStringLiteral("ok"), Kind::HttpConnect);
                return QJsonObject{
                    {QStringLiteral("egress_proxies"), QJsonArray{proxyEntry(d1), proxyEntry(d2), proxyEntry(ok)}},
                    {QStringLiteral("egress_pools"),
                     QJsonArray{poolEntry(QStringLiteral("rr"), QStringLiteral("round_robin"),
                                          {QStringLiteral("d1"), QStringLiteral("d2"), QStringLiteral("ok")}, 2000,
                                          2)}},
                    {QStringLiteral("egress_default_pool"), QStringLiteral("rr")}};
            },
            9, 1, false, false, QStringLiteral("expected it to include attempts_exhausted"));
    }

    // Pool health derived from "a candidate exists" instead of from healthy proxies (gateway and health).
    void healthFromCandidatesIsCaught()
    {
        const auto build = [](FakeEgressFleet &f) {
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
                 QJsonObject{{QStringLiteral("one"), QStringLiteral("dead")},
                             {QStringLiteral("two"), QStringLiteral("live")}}}};
        };
        expectCaught(fault::healthFromCandidates, build, 6, 1, false, false,
                     QStringLiteral("which has no healthy proxy"));
        expectCaught(fault::healthFromCandidates, build, 2, 1, false, true,
                     QStringLiteral("health: pool dead: expected unhealthy"));
    }

    // A health check with an empty criteria table that is always green.
    void emptyCriteriaTableIsCaught()
    {
        expectCaught(
            fault::emptyCriteria,
            [](FakeEgressFleet &f) {
                const auto *ok = f.add(QStringLiteral("ok"), Kind::HttpConnect);
                return QJsonObject{{QStringLiteral("egress_proxies"), QJsonArray{proxyEntry(ok)}},
                                   {QStringLiteral("egress_pools"),
                                    QJsonArray{poolEntry(QStringLiteral("p"), QStringLiteral("ordered"),
                                                         {QStringLiteral("ok")}, 2000, 2)}},
                                   {QStringLiteral("egress_default_pool"), QStringLiteral("p")}};
            },
            2, 1, false, true, QStringLiteral("expected a non-empty criteria table"));
    }

    // Exit code 0 no matter what.
    void exitZeroNoMatterWhatIsCaught()
    {
        expectCaught(
            fault::exitZero,
            [](FakeEgressFleet &f) {
                const auto *down = f.add(QStringLiteral("down"), Kind::Socks5, Mode::Down);
                const auto *ok = f.add(QStringLiteral("ok"), Kind::HttpConnect);
                return QJsonObject{{QStringLiteral("egress_proxies"), QJsonArray{proxyEntry(down), proxyEntry(ok)}},
                                   {QStringLiteral("egress_pools"),
                                    QJsonArray{poolEntry(QStringLiteral("dead"), QStringLiteral("ordered"),
                                                         {QStringLiteral("down")}, 2000, 1),
                                               poolEntry(QStringLiteral("live"), QStringLiteral("ordered"),
                                                         {QStringLiteral("ok")}, 2000, 1)}},
                                   {QStringLiteral("egress_default_pool"), QStringLiteral("live")}};
            },
            2, 1, false, true, QStringLiteral("expected exit 2, found 0"));
    }

    // A broken configuration silently replaced by defaults (here: egress dropped, traffic goes direct).
    void brokenConfigReplacedByDefaultsIsCaught()
    {
        const auto build = [](FakeEgressFleet &f) {
            const auto *ok = f.add(QStringLiteral("ok"), Kind::HttpConnect);
            return QJsonObject{
                {QStringLiteral("egress_proxies"), QJsonArray{proxyEntry(ok)}},
                {QStringLiteral("egress_pools"),
                 QJsonArray{poolEntry(QStringLiteral("p"), QStringLiteral("ordered"),
                                      {QStringLiteral("ok"), QStringLiteral("typo")}, 2000, 2)}},
                {QStringLiteral("egress_account_bindings"), QJsonObject{{QStringLiteral("one"), QStringLiteral("p")}}}};
        };
        expectCaught(fault::configDefaults, build, 4, 1, false, false,
                     QStringLiteral("went direct: expected a proxy of pool p"));
        expectCaught(fault::configDefaults, build, 0, 1, false, true, QStringLiteral("expected exit 3"));
    }
};

QTEST_GUILESS_MAIN(TestEgressFaults)
#include "tst_egress_faults.moc"
