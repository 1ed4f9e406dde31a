// SWITCHYARD_NEEDS_KEYRING: accounts and egress credentials live in a real gnome-keyring.
//
// Egress scenarios through a real `switchyard serve` (issue 7 points 1-3), each checked by the independent
// probe: a concurrent batch where every request has its own egress budget; fail-closed accounts whose pool
// has no healthy proxy; credentials from the keychain (pool_unusable without them); and the health
// command's exit codes (0, 2 for each kind of problem, 3 for a broken or missing configuration).
#include "accounts/KeychainSecretStore.h"
#include "lib/CodexRequests.h"
#include "lib/EgressProbeRunner.h"
#include "lib/FakeEgressProxy.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/ProxyProcess.h"
#include "store/AccountRepository.h"
#include "store/Database.h"
#include "store/RequestLogRepository.h"
#include "upstream/egress/EgressConfig.h"
#include "upstream/egress/EgressCredentials.h"

#include <QDateTime>
#include <QFile>
#include <QJsonArray>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <memory>
#include <vector>

using namespace sy;
using namespace sy::test;
using Kind = FakeEgressProxy::Kind;
using Mode = FakeEgressProxy::Mode;

namespace {

QJsonObject proxyEntry(const FakeEgressProxy *p, bool credentials = false)
{
    QJsonObject o{{QStringLiteral("name"), p->name()}, {QStringLiteral("url"), p->url()}};
    if (credentials)
        o.insert(QStringLiteral("has_credentials"), true);
    return o;
}

QJsonObject pool(const QString &name, const QString &strategy, const QStringList &proxies, int budgetMs, int attempts)
{
    return {{QStringLiteral("name"), name},
            {QStringLiteral("strategy"), strategy},
            {QStringLiteral("proxies"), QJsonArray::fromStringList(proxies)},
            {QStringLiteral("request_budget_ms"), budgetMs},
            {QStringLiteral("max_attempts"), attempts}};
}

SseResult turn(const ProxyProcess &proxy)
{
    return sseRequest("POST", QUrl(proxy.url(QStringLiteral("/backend-api/codex/responses"))), kCodexHeaders,
                      codexBody(QStringLiteral("hello")), 20000);
}

QJsonObject criterion(const QJsonDocument &health, const QString &name)
{
    for (const QJsonValue &c : health.object().value(QLatin1String("criteria")).toArray()) {
        if (c.toObject().value(QLatin1String("name")).toString() == name)
            return c.toObject();
    }
    return {};
}

QStringList strings(const QJsonValue &array)
{
    QStringList out;
    for (const QJsonValue &v : array.toArray())
        out << v.toString();
    return out;
}

} // namespace

class TestEgressScenarios : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    std::unique_ptr<FakeEgressFleet> m_fleetOwner; // a fresh one per scenario: records start empty
    QTemporaryDir m_out;

    FakeEgressFleet &fleet() { return *m_fleetOwner; }

    std::unique_ptr<ProxyProcess> instance(const QJsonObject &config, int accounts)
    {
        auto p = std::make_unique<ProxyProcess>();
        p->setConfig(config);
        if (!p->addAccounts(accounts))
            qWarning() << p->errorString();
        return p;
    }

    void expectProbeGreen(const ProxyProcess &proxy, bool withHealth, int expectedHealthExit)
    {
        const ProbeFiles files = collectProbeFiles(proxy, m_fake, fleet(), withHealth);
        const ProbeRun probe = runEgressProbe(m_out.path(), files);
        QVERIFY2(probe.exitCode == 0, qPrintable(probe.output));
        if (withHealth)
            QVERIFY2(files.health->exitCode == expectedHealthExit, files.health->output.constData());
    }

private slots:
    void initTestCase() { QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString())); }

    void init()
    {
        m_fleetOwner = std::make_unique<FakeEgressFleet>();
        QVERIFY(fleet().add(QStringLiteral("slow"), Kind::Socks5, Mode::Slow, 150));
        QVERIFY(fleet().add(QStringLiteral("ok"), Kind::HttpConnect));
        QVERIFY(fleet().add(QStringLiteral("d1"), Kind::HttpConnect, Mode::Down));
        QVERIFY(fleet().add(QStringLiteral("d2"), Kind::Socks5, Mode::Down));
        QVERIFY(fleet().add(QStringLiteral("auth"), Kind::HttpConnect, Mode::Healthy, 0, QStringLiteral("alice"),
                            QStringLiteral("pw-egress")));
    }

    // A batch of concurrent requests through a slow proxy: each request pays its own set-up (150 ms of its
    // own 400 ms budget). One budget shared by the batch would run out after two of them.
    void batchGetsOneBudgetPerRequest()
    {
        const int batch = 12;
        auto proxy = instance(
            {{QStringLiteral("slots_per_account"), 16},
             {QStringLiteral("egress_proxies"), QJsonArray{proxyEntry(fleet().proxy(QStringLiteral("slow")))}},
             {QStringLiteral("egress_pools"),
              QJsonArray{pool(QStringLiteral("batch"), QStringLiteral("ordered"), {QStringLiteral("slow")}, 400, 1)}},
             {QStringLiteral("egress_default_pool"), QStringLiteral("batch")}},
            1);
        QVERIFY2(proxy->start(m_fake.baseUrl()), qPrintable(proxy->errorString()));
        const int tunnelsBefore =
            int(fleet().proxy(QStringLiteral("slow"))->record().value(QLatin1String("connections")).toArray().size());
        std::vector<int> statuses(batch, 0);
        QList<QThread *> threads;
        for (int i = 0; i < batch; ++i)
            threads << QThread::create([&statuses, &proxy, i] { statuses[i] = turn(*proxy).status; });
        for (QThread *t : threads)
            t->start();
        for (QThread *t : threads) {
            QVERIFY(t->wait(30000));
            delete t;
        }
        QCOMPARE(QList<int>(statuses.begin(), statuses.end()), QList<int>(batch, 200));
        int opened = 0;
        const QJsonArray tunnels =
            fleet().proxy(QStringLiteral("slow"))->record().value(QLatin1String("connections")).toArray();
        for (int i = tunnelsBefore; i < tunnels.size(); ++i)
            opened += tunnels.at(i).toObject().value(QLatin1String("requests")).toArray().isEmpty() ? 0 : 1;
        QVERIFY2(opened >= 3, qPrintable(QString::number(opened))); // set-ups ran side by side, each paid for
        expectProbeGreen(*proxy, true, 0);
        QCOMPARE(proxy->stop(), 0);
    }

    // Model-list calls are attempts through the pool like turns: they move the round_robin cursor and are
    // logged with their attempts, so the probe's recomputed walk still matches when clients mix them in.
    void modelListsShareTheRoundRobinWalk()
    {
        auto proxy = instance(
            {{QStringLiteral("egress_proxies"), QJsonArray{proxyEntry(fleet().proxy(QStringLiteral("ok"))),
                                                           proxyEntry(fleet().proxy(QStringLiteral("d1"))),
                                                           proxyEntry(fleet().proxy(QStringLiteral("slow")))}},
             {QStringLiteral("egress_pools"),
              QJsonArray{pool(QStringLiteral("rr"), QStringLiteral("round_robin"),
                              {QStringLiteral("ok"), QStringLiteral("d1"), QStringLiteral("slow")}, 2000, 3)}},
             {QStringLiteral("egress_default_pool"), QStringLiteral("rr")}},
            1);
        QVERIFY2(proxy->start(m_fake.baseUrl()), qPrintable(proxy->errorString()));
        QHash<QString, QString> models; // request id -> path
        QString lastTurn;
        for (int i = 0; i < 24; ++i) {
            if (i % 3 == 0) {
                const SseResult r = turn(*proxy);
                QCOMPARE(r.status, 200);
                lastTurn = QString::fromLatin1(r.header("x-request-id"));
                continue;
            }
            const QString path =
                i % 3 == 1 ? QStringLiteral("/backend-api/codex/models") : QStringLiteral("/v1/models");
            const HttpResult r = httpRequest("GET", QUrl(proxy->url(path)), kCodexHeaders);
            QCOMPARE(r.status, 200);
            models.insert(QString::fromLatin1(r.header("x-request-id")), path);
        }
        QCOMPARE(models.size(), 16);
        // A model list's row is written before its answer; a turn's as it settles.
        QVERIFY(!proxy->waitForRequest(lastTurn).isEmpty());
        const ProbeFiles files = collectProbeFiles(*proxy, m_fake, fleet(), false);
        const ProbeRun probe = runEgressProbe(m_out.path(), files);
        QVERIFY2(probe.exitCode == 0, qPrintable(probe.output.right(3000)));
        QVERIFY2(probe.output.contains(QLatin1String("round_robin in order")), qPrintable(probe.output));
        QCOMPARE(files.requests.size(), 24);
        for (const QJsonValue &v : files.requests) {
            const QJsonObject row = v.toObject();
            const QString id = row.value(QLatin1String("request_id")).toString();
            if (!models.contains(id))
                continue;
            QCOMPARE(row.value(QLatin1String("route")).toString(), models.value(id));
            QVERIFY(!row.value(QLatin1String("attempts")).toArray().isEmpty());
            models.remove(id);
        }
        QVERIFY(models.isEmpty());
        QCOMPARE(proxy->stop(), 0);
    }

    // An account bound to a pool without a healthy proxy never goes direct; another account still serves.
    void failClosedWithoutAHealthyProxy()
    {
        auto proxy = instance(
            {{QStringLiteral("egress_proxies"), QJsonArray{proxyEntry(fleet().proxy(QStringLiteral("d1"))),
                                                           proxyEntry(fleet().proxy(QStringLiteral("d2")))}},
             {QStringLiteral("egress_pools"), QJsonArray{pool(QStringLiteral("dead"), QStringLiteral("round_robin"),
                                                              {QStringLiteral("d1"), QStringLiteral("d2")}, 500, 2)}},
             {QStringLiteral("egress_account_bindings"),
              QJsonObject{{QStringLiteral("acct1"), QStringLiteral("dead")}}}},
            2);
        QCOMPARE(proxy
                     ->cli({QStringLiteral("accounts"), QStringLiteral("pin"), QStringLiteral("acct1"),
                            QStringLiteral("--strict")})
                     .exitCode,
                 0);
        QVERIFY2(proxy->start(m_fake.baseUrl()), qPrintable(proxy->errorString()));
        const int upstreamBefore = int(m_fake.log().size());
        for (int i = 0; i < 4; ++i) {
            const SseResult r = turn(*proxy);
            QCOMPARE(r.status, 502);
            const QJsonObject row = proxy->waitForRequest(QString::fromLatin1(r.header("x-request-id")));
            QCOMPARE(strings(row.value(QLatin1String("blocked_by"))), QStringList{QStringLiteral("no_healthy_proxy")});
            QCOMPARE(row.value(QLatin1String("attempts")).toArray().size(), 0);
            QCOMPARE(row.value(QLatin1String("error_code")).toString(), QStringLiteral("no_healthy_proxy"));
        }
        QCOMPARE(int(m_fake.log().size()), upstreamBefore); // nothing went out, not even direct

        QCOMPARE(proxy->cli({QStringLiteral("accounts"), QStringLiteral("pin"), QStringLiteral("auto")}).exitCode, 0);
        QThread::msleep(1300);
        for (int i = 0; i < 4; ++i) {
            const SseResult r = turn(*proxy);
            QCOMPARE(r.status, 200);
            QCOMPARE(r.header("x-switchyard-account"), QByteArray("acct2")); // the unbound account, direct
        }
        const CliResult health = proxy->cli({QStringLiteral("health"), QStringLiteral("--json")});
        QCOMPARE(health.exitCode, 2);
        QVERIFY(!criterion(health.json(), QStringLiteral("egress_pool:dead")).value(QLatin1String("ok")).toBool());
        expectProbeGreen(*proxy, true, 2);
        QCOMPARE(proxy->stop(), 0);
    }

    // Credentials come from the keychain; without them the pool is unusable and its account fails closed.
    void credentialsFromTheKeychain()
    {
        auto proxy = instance(
            {{QStringLiteral("egress_proxies"), QJsonArray{proxyEntry(fleet().proxy(QStringLiteral("auth")), true)}},
             {QStringLiteral("egress_pools"),
              QJsonArray{pool(QStringLiteral("locked"), QStringLiteral("ordered"), {QStringLiteral("auth")}, 1000, 2)}},
             {QStringLiteral("egress_default_pool"), QStringLiteral("locked")}},
            1);
        QVERIFY2(proxy->start(m_fake.baseUrl()), qPrintable(proxy->errorString()));
        SseResult r = turn(*proxy);
        QCOMPARE(r.status, 502);
        QJsonObject row = proxy->waitForRequest(QString::fromLatin1(r.header("x-request-id")));
        QCOMPARE(strings(row.value(QLatin1String("blocked_by"))), QStringList{QStringLiteral("pool_unusable")});
        CliResult health = proxy->cli({QStringLiteral("health"), QStringLiteral("--json")});
        QCOMPARE(health.exitCode, 2);
        QVERIFY(criterion(health.json(), QStringLiteral("egress_pool:locked"))
                    .value(QLatin1String("detail"))
                    .toString()
                    .contains(QStringLiteral("unusable")));
        QCOMPARE(proxy->stop(), 0);

        KeychainSecretStore keychain;
        const SecretOutcome stored =
            keychain.writeTokensBlocking(egressSecretKey(QStringLiteral("auth")),
                                         packEgressCredentials({QStringLiteral("alice"), QStringLiteral("pw-egress")}));
        QVERIFY2(stored.ok, qPrintable(stored.errorText));
        QVERIFY2(proxy->start(m_fake.baseUrl()), qPrintable(proxy->errorString()));
        r = turn(*proxy);
        QCOMPARE(r.status, 200);
        row = proxy->waitForRequest(QString::fromLatin1(r.header("x-request-id")));
        QCOMPARE(row.value(QLatin1String("attempts"))
                     .toArray()
                     .first()
                     .toObject()
                     .value(QLatin1String("egress_proxy"))
                     .toString(),
                 QStringLiteral("auth"));
        const QJsonArray tunnels =
            fleet().proxy(QStringLiteral("auth"))->record().value(QLatin1String("connections")).toArray();
        bool carried = false;
        for (const QJsonValue &t : tunnels) {
            if (t.toObject()
                    .value(QLatin1String("requests"))
                    .toArray()
                    .contains(row.value(QLatin1String("request_id")))) {
                carried = true;
                QCOMPARE(t.toObject().value(QLatin1String("user")).toString(), QStringLiteral("alice"));
            }
        }
        QVERIFY(carried);
        // Never a secret in what the CLI prints.
        health = proxy->cli({QStringLiteral("health"), QStringLiteral("--json")});
        QVERIFY(!health.out.contains("pw-egress") && !health.err.contains("pw-egress"));
        QVERIFY(!proxy->serveStderr().contains("pw-egress"));
        expectProbeGreen(*proxy, true, 0);
        QCOMPARE(proxy->stop(), 0);
        keychain.removeTokensBlocking(egressSecretKey(QStringLiteral("auth")));
    }

    void healthExitCodes()
    {
        const QJsonObject good{
            {QStringLiteral("egress_proxies"), QJsonArray{proxyEntry(fleet().proxy(QStringLiteral("ok")))}},
            {QStringLiteral("egress_pools"),
             QJsonArray{pool(QStringLiteral("main"), QStringLiteral("ordered"), {QStringLiteral("ok")}, 1000, 2)}},
            {QStringLiteral("egress_default_pool"), QStringLiteral("main")}};
        auto proxy = instance(good, 2);
        QVERIFY2(proxy->start(m_fake.baseUrl()), qPrintable(proxy->errorString()));
        QCOMPARE(turn(*proxy).status, 200);
        QCOMPARE(proxy->stop(), 0);
        QCOMPARE(proxy->cli({QStringLiteral("health")}).exitCode, 0);

        const auto writeConfig = [&](const QJsonObject &config) {
            QFile f(proxy->configPath());
            QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
            f.write(QJsonDocument(config).toJson());
        };
        // 3: a broken configuration is named, never replaced by defaults.
        QJsonObject broken = good;
        broken.insert(QStringLiteral("egress_default_pool"), QStringLiteral("nope"));
        writeConfig(broken);
        CliResult r = proxy->cli({QStringLiteral("health"), QStringLiteral("--json")});
        QCOMPARE(r.exitCode, 3);
        QVERIFY2(r.err.contains(proxy->configPath().toUtf8()) && r.err.contains("egress_default_pool"),
                 r.err.constData());
        QVERIFY(r.out.isEmpty());
        writeConfig(QJsonObject{{QStringLiteral("egress_pools"), QStringLiteral("not a list")}});
        QCOMPARE(proxy->cli({QStringLiteral("health")}).exitCode, 3);
        // 3: a configuration named explicitly but missing.
        r = proxy->cli(
            {QStringLiteral("health"), QStringLiteral("--config"), m_out.path() + QStringLiteral("/absent.json")});
        QCOMPARE(r.exitCode, 3);

        // 2: a binding that names no account.
        QJsonObject unbound = good;
        unbound.insert(QStringLiteral("egress_account_bindings"),
                       QJsonObject{{QStringLiteral("ghost"), QStringLiteral("main")}});
        writeConfig(unbound);
        r = proxy->cli({QStringLiteral("health"), QStringLiteral("--json")});
        QCOMPARE(r.exitCode, 2);
        QVERIFY(!criterion(r.json(), QStringLiteral("config")).value(QLatin1String("ok")).toBool());
        writeConfig(good);
        QCOMPARE(proxy->cli({QStringLiteral("health")}).exitCode, 0);

        Database db;
        QString error;
        QVERIFY2(db.open(proxy->dataDir() + QStringLiteral("/switchyard.sqlite"), &error), qPrintable(error));
        // 2: an account that needs the user.
        QVERIFY(AccountRepository(db).setStatus(proxy->accounts().at(1).id, QStringLiteral("reauth_required"),
                                                QStringLiteral("test"), &error));
        r = proxy->cli({QStringLiteral("health"), QStringLiteral("--json")});
        QCOMPARE(r.exitCode, 2);
        QVERIFY(!criterion(r.json(), QStringLiteral("account:acct2")).value(QLatin1String("ok")).toBool());
        QVERIFY(AccountRepository(db).setStatus(proxy->accounts().at(1).id, QStringLiteral("active"), {}, &error));
        QCOMPARE(proxy->cli({QStringLiteral("health")}).exitCode, 0);
        // 2: a logged request that went direct although its account is bound to a pool.
        RequestLogRecord direct;
        direct.requestId = QStringLiteral("req_planted_direct");
        direct.startedAtMs = QDateTime::currentMSecsSinceEpoch();
        direct.route = QStringLiteral("/backend-api/codex/responses");
        direct.accountId = proxy->accounts().at(0).id;
        direct.status = QStringLiteral("completed");
        direct.attempts = {{proxy->accounts().at(0).id, std::nullopt, QStringLiteral("completed"), 5}};
        QVERIFY2(RequestLogRepository(db).insert(direct, &error), qPrintable(error));
        r = proxy->cli({QStringLiteral("health"), QStringLiteral("--json")});
        QCOMPARE(r.exitCode, 2);
        const QJsonObject requests = criterion(r.json(), QStringLiteral("requests"));
        QVERIFY(!requests.value(QLatin1String("ok")).toBool());
        QVERIFY(requests.value(QLatin1String("detail")).toString().contains(QStringLiteral("went direct")));
        // 2: a proxy of the only pool is down.
        fleet().proxy(QStringLiteral("ok"))->setMode(Mode::Down);
        r = proxy->cli({QStringLiteral("health"), QStringLiteral("--json")});
        fleet().proxy(QStringLiteral("ok"))->setMode(Mode::Healthy);
        QCOMPARE(r.exitCode, 2);
        QVERIFY(!criterion(r.json(), QStringLiteral("egress_pool:main")).value(QLatin1String("ok")).toBool());
    }
};

QTEST_GUILESS_MAIN(TestEgressScenarios)
#include "tst_egress_scenarios.moc"
