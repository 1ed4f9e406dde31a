// The health check's criteria (issue 7 point 3): a non-empty table; each criterion holds on a clean setup and
// fails on its own kind of problem; exit 0 only when every criterion holds, 2 otherwise.
#include "config/Config.h"
#include "health/HealthCriteria.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QTest>

using namespace sy;

namespace {

Config egressConfig()
{
    Config c;
    for (const QString &n : {QStringLiteral("p1"), QStringLiteral("p2"), QStringLiteral("p3")}) {
        EgressProxySpec p;
        p.name = n;
        p.host = QStringLiteral("127.0.0.1");
        p.port = 1000;
        c.egress.proxies.append(p);
    }
    EgressPoolSpec a;
    a.name = QStringLiteral("a");
    a.strategy = EgressStrategy::RoundRobin;
    a.proxies = {QStringLiteral("p1"), QStringLiteral("p2")};
    a.requestBudgetMs = 500;
    a.maxAttempts = 2;
    EgressPoolSpec b = a;
    b.name = QStringLiteral("b");
    b.proxies = {QStringLiteral("p3")};
    c.egress.pools = {a, b};
    c.egress.accountBindings = {{QStringLiteral("one"), QStringLiteral("a")}};
    c.egress.defaultPool = QStringLiteral("b");
    return c;
}

AccountRecord account(const QString &id, const QString &alias)
{
    AccountRecord a;
    a.id = id;
    a.alias = alias;
    a.chatgptAccountId = QStringLiteral("cg-") + id;
    return a;
}

RequestLogRecord row(const QString &id, const QString &status, QList<RequestAttempt> attempts, QStringList blocked,
                     const QString &account = QStringLiteral("acc_1"), qint64 tokens = 10)
{
    RequestLogRecord r;
    r.requestId = id;
    r.startedAtMs = 1000;
    r.status = status;
    r.accountId = account;
    r.attempts = attempts;
    r.blockedBy = blocked;
    r.tokens.total = tokens;
    r.tokens.input = tokens;
    return r;
}

const HealthCriterion *find(const HealthReport &r, const QString &name)
{
    for (const HealthCriterion &c : r.criteria) {
        if (c.name == name)
            return &c;
    }
    return nullptr;
}

} // namespace

class TestHealthCriteria : public QObject
{
    Q_OBJECT

    Config m_config = egressConfig();

    // A clean setup: every criterion holds.
    HealthInputs clean()
    {
        HealthInputs in;
        in.config = &m_config;
        in.storeOk = true;
        in.accounts = {account(QStringLiteral("acc_1"), QStringLiteral("one")),
                       account(QStringLiteral("acc_2"), QStringLiteral("two"))};
        in.probes = {{QStringLiteral("p1"), {false, QStringLiteral("refused"), 1}},
                     {QStringLiteral("p2"), {true, QStringLiteral("ok"), 2}},
                     {QStringLiteral("p3"), {true, QStringLiteral("ok"), 2}}};
        in.recentRows = {row(QStringLiteral("r1"), QStringLiteral("completed"),
                             {{QStringLiteral("acc_1"), QStringLiteral("p1"), QStringLiteral("proxy_unreachable"), 1},
                              {QStringLiteral("acc_1"), QStringLiteral("p2"), QStringLiteral("completed"), 20}},
                             {}),
                         row(QStringLiteral("r2"), QStringLiteral("failed"),
                             {{QStringLiteral("acc_2"), QStringLiteral("p3"), QStringLiteral("rate_limited"), 5}},
                             {QStringLiteral("attempts_exhausted"), QStringLiteral("upstream_rejected")},
                             QStringLiteral("acc_2"), 0)};
        in.allRows = in.recentRows;
        in.aggregates = {{QStringLiteral("acc_1"), {1, 10, 0, 0, 0, 10}},
                         {QStringLiteral("acc_2"), {1, 0, 0, 0, 0, 0}}};
        return in;
    }

private slots:
    void cleanSetupIsGreenWithAFullTable()
    {
        const HealthReport r = evaluateHealth(clean());
        QStringList names;
        for (const HealthCriterion &c : r.criteria) {
            names << c.name;
            QVERIFY2(c.ok, qPrintable(c.name + QStringLiteral(": ") + c.detail));
        }
        QCOMPARE(names, QStringList({QStringLiteral("config"), QStringLiteral("egress_pool:a"),
                                     QStringLiteral("egress_pool:b"), QStringLiteral("accounts"),
                                     QStringLiteral("account:one"), QStringLiteral("account:two"),
                                     QStringLiteral("requests"), QStringLiteral("aggregates")}));
        QCOMPARE(r.exitCode(), 0);
        QCOMPARE(r.toJson().value(QLatin1String("exit_code")).toInt(), 0);
        QCOMPARE(r.toJson().value(QLatin1String("criteria")).toArray().size(), 8);
    }

    void anEmptyTableIsNeverGreen() { QCOMPARE(HealthReport().exitCode(), 2); }

    void bindingToNoAccountFailsConfig()
    {
        HealthInputs in = clean();
        in.accounts.removeFirst(); // "one" is bound but gone
        const HealthReport r = evaluateHealth(in);
        QVERIFY(!find(r, QStringLiteral("config"))->ok);
        QVERIFY(find(r, QStringLiteral("config"))->detail.contains(QStringLiteral("\"one\" matches 0")));
        QCOMPARE(r.exitCode(), 2);
    }

    void poolWithoutAHealthyProxyFails()
    {
        HealthInputs in = clean();
        in.probes[QStringLiteral("p2")] = {false, QStringLiteral("refused"), 1};
        const HealthReport r = evaluateHealth(in);
        const HealthCriterion *a = find(r, QStringLiteral("egress_pool:a"));
        QVERIFY(!a->ok);
        QCOMPARE(a->facts.value(QLatin1String("healthy_members")).toInt(), 0);
        QVERIFY(find(r, QStringLiteral("egress_pool:b"))->ok);
        QCOMPARE(r.exitCode(), 2);
    }

    void poolWithMissingCredentialsFails()
    {
        HealthInputs in = clean();
        in.credentialProblems.insert(QStringLiteral("p3"), QStringLiteral("no tokens stored"));
        const HealthReport r = evaluateHealth(in);
        QVERIFY(!find(r, QStringLiteral("egress_pool:b"))->ok);
        QVERIFY(find(r, QStringLiteral("egress_pool:b"))->detail.contains(QStringLiteral("unusable")));
        QCOMPARE(r.exitCode(), 2);
    }

    void accountsNeedingTheUserFail()
    {
        for (const QString &status : {QStringLiteral("reauth_required"), QStringLiteral("deactivated")}) {
            HealthInputs in = clean();
            in.accounts[1].status = status;
            const HealthReport r = evaluateHealth(in);
            QVERIFY2(!find(r, QStringLiteral("account:two"))->ok, qPrintable(status));
            QCOMPARE(r.exitCode(), 2);
        }
        HealthInputs limited = clean();
        limited.accounts[1].status = QStringLiteral("rate_limited"); // with no known reset: stuck
        QVERIFY(!find(evaluateHealth(limited), QStringLiteral("account:two"))->ok);
        limited.accounts[1].cooldownUntilMs = 5000; // recovery scheduled: fine
        QVERIFY(find(evaluateHealth(limited), QStringLiteral("account:two"))->ok);
        HealthInputs windows = clean();
        windows.usage[QStringLiteral("acc_2")].primary.usedPercent = 140;
        QVERIFY(!find(evaluateHealth(windows), QStringLiteral("account:two"))->ok);
        HealthInputs none = clean();
        none.accounts.clear();
        none.config = &m_config;
        QVERIFY(!find(evaluateHealth(none), QStringLiteral("accounts"))->ok);
    }

    void requestsInconsistentWithTheConfigurationFail_data()
    {
        QTest::addColumn<int>("mutation");
        QTest::addColumn<QString>("expect");
        QTest::newRow("proxy outside the pool") << 0 << "not in account";
        QTest::newRow("bound account direct") << 1 << "went direct";
        QTest::newRow("blocked_by unsorted") << 2 << "sorted";
        QTest::newRow("reason missing") << 3 << "has no upstream_rejected";
        QTest::newRow("too many attempts") << 4 << "more than 2 attempts";
        QTest::newRow("completed with blocked_by") << 5 << "completed with blocked_by";
        QTest::newRow("unknown reason") << 6 << "unknown blocked_by reason";
        QTest::newRow("failed without reasons") << 7 << "without any blocked_by";
    }

    void requestsInconsistentWithTheConfigurationFail()
    {
        QFETCH(int, mutation);
        QFETCH(QString, expect);
        HealthInputs in = clean();
        RequestLogRecord &r1 = in.recentRows[0];
        RequestLogRecord &r2 = in.recentRows[1];
        switch (mutation) {
        case 0:
            r1.attempts[1].egressProxy = QStringLiteral("p3");
            break;
        case 1:
            r1.attempts[1].egressProxy = std::nullopt;
            break;
        case 2:
            r2.blockedBy = {QStringLiteral("upstream_rejected"), QStringLiteral("attempts_exhausted")};
            break;
        case 3:
            r2.blockedBy = {QStringLiteral("attempts_exhausted")};
            break;
        case 4:
            r1.attempts.prepend(
                {QStringLiteral("acc_1"), QStringLiteral("p1"), QStringLiteral("proxy_unreachable"), 1});
            break;
        case 5:
            r1.blockedBy = {QStringLiteral("proxy_unreachable")};
            break;
        case 6:
            r2.blockedBy << QStringLiteral("zz_unknown");
            break;
        case 7:
            r2.blockedBy.clear();
            break;
        }
        const HealthReport r = evaluateHealth(in);
        const HealthCriterion *c = find(r, QStringLiteral("requests"));
        QVERIFY2(!c->ok, qPrintable(expect));
        const QString problems = QString::fromUtf8(QJsonDocument(c->facts).toJson());
        QVERIFY2(problems.contains(expect), qPrintable(problems));
        QCOMPARE(r.exitCode(), 2);
    }

    void rowsOlderThanTheConfigurationAreNotJudgedByIt()
    {
        HealthInputs in = clean();
        in.recentRows[0].attempts[1].egressProxy = std::nullopt; // went direct under an older configuration
        in.configSinceMs = 2000;
        QVERIFY(find(evaluateHealth(in), QStringLiteral("requests"))->ok);
    }

    void aggregatesMustEqualTheSumOfRows()
    {
        HealthInputs in = clean();
        in.aggregates[QStringLiteral("acc_1")].total = 11;
        const HealthReport r = evaluateHealth(in);
        QVERIFY(!find(r, QStringLiteral("aggregates"))->ok);
        QCOMPARE(r.exitCode(), 2);
        HealthInputs missing = clean();
        missing.aggregates.remove(QStringLiteral("acc_2"));
        QVERIFY(!find(evaluateHealth(missing), QStringLiteral("aggregates"))->ok);
    }

    void anUnreadableStoreIsAProblemNotGreen()
    {
        HealthInputs in = clean();
        in.storeOk = false;
        in.storeProblem = QStringLiteral("disk I/O error");
        in.accounts.clear();
        const HealthReport r = evaluateHealth(in);
        QVERIFY(!find(r, QStringLiteral("requests"))->ok);
        QVERIFY(!find(r, QStringLiteral("aggregates"))->ok);
        QVERIFY(find(r, QStringLiteral("requests"))->detail.contains(QStringLiteral("unavailable")));
        QCOMPARE(r.exitCode(), 2);
    }

    void aStoreTheRunningInstanceCannotWriteIsAProblem()
    {
        // Everything reads fine (a full disk still reads), but the running instance reports no writes.
        HealthInputs in = clean();
        QCOMPARE(evaluateHealth(in).exitCode(), 0);
        QVERIFY(!find(evaluateHealth(in), QStringLiteral("store")));
        in.liveStoreProblem = QStringLiteral("disk full (database or disk is full)");
        const HealthReport r = evaluateHealth(in);
        const HealthCriterion *store = find(r, QStringLiteral("store"));
        QVERIFY(store);
        QVERIFY(!store->ok);
        QCOMPARE(store->detail, QStringLiteral("store unavailable: disk full (database or disk is full)"));
        QCOMPARE(r.exitCode(), 2);
        QVERIFY(r.toText().contains(QStringLiteral("store unavailable: disk full")));
    }
};

QTEST_GUILESS_MAIN(TestHealthCriteria)
#include "tst_health_criteria.moc"
