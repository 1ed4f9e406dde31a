// Egress configuration (issue 7 point 1): proxies, pools, default pool and account bindings are read
// strictly from the JSON config file; every mistake names the file, the key and the problem, and nothing
// is ever replaced by a default.
#include "config/Config.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>
#include <functional>

using namespace sy;

namespace {

QJsonObject proxy(const QString &name, const QString &url)
{
    return {{QStringLiteral("name"), name}, {QStringLiteral("url"), url}};
}

QJsonObject pool(const QString &name, const QString &strategy, const QStringList &proxies, int budget = 500,
                 int attempts = 3)
{
    return {{QStringLiteral("name"), name},
            {QStringLiteral("strategy"), strategy},
            {QStringLiteral("proxies"), QJsonArray::fromStringList(proxies)},
            {QStringLiteral("request_budget_ms"), budget},
            {QStringLiteral("max_attempts"), attempts}};
}

QJsonObject validConfig()
{
    QJsonObject secured = proxy(QStringLiteral("corp"), QStringLiteral("http://proxy.example:3128"));
    secured.insert(QStringLiteral("has_credentials"), true);
    QJsonObject random = pool(QStringLiteral("spread"), QStringLiteral("random"), {QStringLiteral("s5")});
    random.insert(QStringLiteral("seed"), 42);
    return {
        {QStringLiteral("egress_proxies"),
         QJsonArray{secured, proxy(QStringLiteral("s5"), QStringLiteral("socks5://10.0.0.2:1080")),
                    proxy(QStringLiteral("s5h"), QStringLiteral("socks5h://[::1]:1081"))}},
        {QStringLiteral("egress_pools"),
         QJsonArray{pool(QStringLiteral("main"), QStringLiteral("round_robin"),
                         {QStringLiteral("corp"), QStringLiteral("s5"), QStringLiteral("s5h")}),
                    pool(QStringLiteral("backup"), QStringLiteral("ordered"), {QStringLiteral("s5h")}, 800, 1),
                    random}},
        {QStringLiteral("egress_default_pool"), QStringLiteral("main")},
        {QStringLiteral("egress_account_bindings"), QJsonObject{{QStringLiteral("work"), QStringLiteral("backup")},
                                                                {QStringLiteral("acc_123"), QStringLiteral("spread")}}},
    };
}

} // namespace

class TestEgressConfig : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;

    ConfigResult load(const QJsonObject &file)
    {
        const QString path = m_dir.path() + QStringLiteral("/config.json");
        QFile f(path);
        f.open(QIODevice::WriteOnly | QIODevice::Truncate);
        f.write(QJsonDocument(file).toJson());
        f.close();
        ConfigOverrides o;
        o.configFile = path;
        return loadConfig(o, {{QStringLiteral("HOME"), m_dir.path()}});
    }

private slots:
    void validConfigurationIsReadCompletely()
    {
        const ConfigResult r = load(validConfig());
        QVERIFY2(r.ok(), qPrintable(r.error));
        const EgressSettings &e = r.config.egress;
        QCOMPARE(e.proxies.size(), 3);
        QCOMPARE(e.proxies.at(0).type, EgressProxyType::HttpConnect);
        QCOMPARE(e.proxies.at(0).host, QStringLiteral("proxy.example"));
        QCOMPARE(e.proxies.at(0).port, quint16(3128));
        QVERIFY(e.proxies.at(0).hasCredentials);
        QCOMPARE(e.proxies.at(1).type, EgressProxyType::Socks5);
        QVERIFY(!e.proxies.at(1).hasCredentials);
        QCOMPARE(e.proxies.at(2).type, EgressProxyType::Socks5RemoteDns);
        QCOMPARE(e.proxies.at(2).host, QStringLiteral("::1"));
        QCOMPARE(e.pools.size(), 3);
        QCOMPARE(e.pool(QStringLiteral("main"))->strategy, EgressStrategy::RoundRobin);
        QCOMPARE(e.pool(QStringLiteral("main"))->proxies,
                 QStringList({QStringLiteral("corp"), QStringLiteral("s5"), QStringLiteral("s5h")}));
        QCOMPARE(e.pool(QStringLiteral("backup"))->strategy, EgressStrategy::Ordered);
        QCOMPARE(e.pool(QStringLiteral("backup"))->requestBudgetMs, 800);
        QCOMPARE(e.pool(QStringLiteral("backup"))->maxAttempts, 1);
        QCOMPARE(e.pool(QStringLiteral("spread"))->seed, std::optional<quint64>(42));
        QCOMPARE(e.defaultPool, QStringLiteral("main"));
    }

    void accountsFindTheirPool()
    {
        const ConfigResult r = load(validConfig());
        QVERIFY(r.ok());
        const EgressSettings &e = r.config.egress;
        // Internal id first, then alias, then the default pool.
        QCOMPARE(e.poolForAccount(QStringLiteral("acc_123"), QStringLiteral("work")), QStringLiteral("spread"));
        QCOMPARE(e.poolForAccount(QStringLiteral("acc_999"), QStringLiteral("work")), QStringLiteral("backup"));
        QCOMPARE(e.poolForAccount(QStringLiteral("acc_999"), std::nullopt), QStringLiteral("main"));
        EgressSettings noDefault = e;
        noDefault.defaultPool.clear();
        QCOMPARE(noDefault.poolForAccount(QStringLiteral("acc_999"), QStringLiteral("other")), QString());
    }

    void noEgressKeysMeansDirect()
    {
        const ConfigResult r = load({{QStringLiteral("gate_wait_s"), 5}});
        QVERIFY2(r.ok(), qPrintable(r.error));
        QVERIFY(r.config.egress.isEmpty());
        QCOMPARE(r.config.egress.poolForAccount(QStringLiteral("acc_1"), QStringLiteral("a")), QString());
    }

    void everyMistakeIsNamed_data()
    {
        QTest::addColumn<QString>("path"); // JSON pointer-ish path into validConfig() to replace
        QTest::addColumn<QJsonValue>("value");
        QTest::addColumn<QString>("key");     // the key the message must name
        QTest::addColumn<QString>("problem"); // and a word of the problem

        QTest::newRow("proxies not an array") << "egress_proxies" << QJsonValue(QStringLiteral("x")) << "egress_proxies"
                                              << "array";
        QTest::newRow("unknown proxy key")
            << "egress_proxies/1/password" << QJsonValue(QStringLiteral("x")) << "egress_proxies[1].password"
            << "not a known setting";
        QTest::newRow("bad scheme") << "egress_proxies/1/url" << QJsonValue(QStringLiteral("https://h:1"))
                                    << "egress_proxies[1].url"
                                    << "scheme";
        QTest::newRow("credentials in url")
            << "egress_proxies/1/url" << QJsonValue(QStringLiteral("socks5://u:p@h:1")) << "egress_proxies[1].url"
            << "keychain";
        QTest::newRow("no port") << "egress_proxies/1/url" << QJsonValue(QStringLiteral("socks5://h"))
                                 << "egress_proxies[1].url"
                                 << "port";
        QTest::newRow("bad name") << "egress_proxies/1/name" << QJsonValue(QStringLiteral("has space"))
                                  << "egress_proxies[1].name"
                                  << "letters";
        QTest::newRow("duplicate proxy") << "egress_proxies/1/name" << QJsonValue(QStringLiteral("corp"))
                                         << "egress_proxies[1].name"
                                         << "repeats";
        QTest::newRow("has_credentials type")
            << "egress_proxies/1/has_credentials" << QJsonValue(1) << "egress_proxies[1].has_credentials"
            << "true or false";
        QTest::newRow("unknown member") << "egress_pools/0/proxies/1" << QJsonValue(QStringLiteral("nope"))
                                        << "egress_pools[0].proxies[1]"
                                        << "unknown egress proxy";
        QTest::newRow("repeated member") << "egress_pools/0/proxies/1" << QJsonValue(QStringLiteral("corp"))
                                         << "egress_pools[0].proxies[1]"
                                         << "repeats";
        QTest::newRow("empty pool") << "egress_pools/0/proxies" << QJsonValue(QJsonArray()) << "egress_pools[0].proxies"
                                    << "non-empty";
        QTest::newRow("bad strategy") << "egress_pools/0/strategy" << QJsonValue(QStringLiteral("fastest"))
                                      << "egress_pools[0].strategy"
                                      << "round_robin";
        QTest::newRow("fractional budget")
            << "egress_pools/0/request_budget_ms" << QJsonValue(1.5) << "egress_pools[0].request_budget_ms"
            << "whole number";
        QTest::newRow("zero budget") << "egress_pools/0/request_budget_ms" << QJsonValue(0)
                                     << "egress_pools[0].request_budget_ms"
                                     << "outside";
        QTest::newRow("budget as text") << "egress_pools/0/request_budget_ms" << QJsonValue(QStringLiteral("500"))
                                        << "egress_pools[0].request_budget_ms"
                                        << "whole number";
        QTest::newRow("zero attempts") << "egress_pools/0/max_attempts" << QJsonValue(0)
                                       << "egress_pools[0].max_attempts"
                                       << "outside";
        QTest::newRow("seed without random") << "egress_pools/0/seed" << QJsonValue(1) << "egress_pools[0].seed"
                                             << "random";
        QTest::newRow("unknown pool key") << "egress_pools/0/fallback" << QJsonValue(true) << "egress_pools[0].fallback"
                                          << "not a known setting";
        QTest::newRow("unknown default pool")
            << "egress_default_pool" << QJsonValue(QStringLiteral("nope")) << "egress_default_pool"
            << "unknown pool";
        QTest::newRow("default pool type") << "egress_default_pool" << QJsonValue(3) << "egress_default_pool"
                                           << "name of a pool";
        QTest::newRow("binding to unknown pool")
            << "egress_account_bindings/work" << QJsonValue(QStringLiteral("x")) << "egress_account_bindings.work"
            << "unknown pool";
        QTest::newRow("bindings type") << "egress_account_bindings" << QJsonValue(QJsonArray())
                                       << "egress_account_bindings"
                                       << "object";
    }

    void everyMistakeIsNamed()
    {
        QFETCH(QString, path);
        QFETCH(QJsonValue, value);
        QFETCH(QString, key);
        QFETCH(QString, problem);
        // Replace the value at `path` (objects by key, arrays by index).
        const QStringList parts = path.split(QLatin1Char('/'));
        std::function<QJsonValue(const QJsonValue &, int)> put = [&](const QJsonValue &node, int i) -> QJsonValue {
            if (i == parts.size())
                return value;
            if (node.isArray()) {
                QJsonArray a = node.toArray();
                const int index = parts.at(i).toInt();
                a[index] = put(a.at(index), i + 1);
                return a;
            }
            QJsonObject o = node.toObject();
            o[parts.at(i)] = put(o.value(parts.at(i)), i + 1);
            return o;
        };
        const ConfigResult r = load(put(validConfig(), 0).toObject());
        QVERIFY2(!r.ok(), "a broken egress configuration must not load");
        QVERIFY2(r.error.contains(m_dir.path() + QStringLiteral("/config.json")), qPrintable(r.error));
        QVERIFY2(r.error.contains(QLatin1Char('"') + key + QLatin1Char('"')), qPrintable(r.error));
        QVERIFY2(r.error.contains(problem), qPrintable(r.error));
        QVERIFY2(r.config.egress.isEmpty(), "no half-read egress settings");
    }

    // Fuzzing found (tests/fuzz/regressions/config_loader/whole-number-beyond-qint64): a whole number beyond
    // qint64 was converted to qint64 before its range was checked, undefined behaviour that also printed a
    // made-up value in the message.
    void hugeNumbersAreRefusedByValue_data()
    {
        QTest::addColumn<QJsonObject>("file");
        QTest::addColumn<QString>("shown");
        QTest::newRow("slots 1e118") << QJsonObject{{QStringLiteral("slots_per_account"), 1e118}}
                                     << "is 1e+118, outside";
        QTest::newRow("drain -1e19") << QJsonObject{{QStringLiteral("drain_s"), -1e19}} << "is -1e+19, outside";
        QJsonObject egress = validConfig();
        QJsonArray pools = egress.value(QStringLiteral("egress_pools")).toArray();
        QJsonObject first = pools.at(0).toObject();
        first.insert(QStringLiteral("request_budget_ms"), 1e300);
        pools[0] = first;
        egress.insert(QStringLiteral("egress_pools"), pools);
        QTest::newRow("egress budget 1e300") << egress << "is 1e+300, outside";
    }

    void hugeNumbersAreRefusedByValue()
    {
        QFETCH(QJsonObject, file);
        QFETCH(QString, shown);
        const ConfigResult r = load(file);
        QVERIFY2(!r.ok(), "an out-of-range number must not load");
        QVERIFY2(r.error.contains(shown), qPrintable(r.error));
    }

    void budgetLongerThanRequestTotalIsRefused()
    {
        QJsonObject c = validConfig();
        c.insert(QStringLiteral("request_total_s"), 2);
        c.insert(QStringLiteral("gate_wait_s"), 1);
        c.insert(QStringLiteral("connect_s"), 1);
        const ConfigResult r = load(c); // "backup" has request_budget_ms 800, "main" 500: fine
        QVERIFY2(r.ok(), qPrintable(r.error));
        QJsonArray pools = c.value(QStringLiteral("egress_pools")).toArray();
        QJsonObject first = pools.at(0).toObject();
        first.insert(QStringLiteral("request_budget_ms"), 2001);
        pools[0] = first;
        c.insert(QStringLiteral("egress_pools"), pools);
        const ConfigResult bad = load(c);
        QVERIFY(!bad.ok());
        QVERIFY2(bad.error.contains(QStringLiteral("request_budget_ms")) &&
                     bad.error.contains(QStringLiteral("request_total_s")),
                 qPrintable(bad.error));
    }

    void missingExplicitFileIsAnErrorNotDefaults()
    {
        ConfigOverrides o;
        o.configFile = m_dir.path() + QStringLiteral("/absent.json");
        const ConfigResult r = loadConfig(o, {{QStringLiteral("HOME"), m_dir.path()}});
        QVERIFY(!r.ok());
        QVERIFY(r.error.contains(QStringLiteral("does not exist")));
    }

    void secretKeyAndNames()
    {
        QCOMPARE(egressSecretKey(QStringLiteral("corp")), QStringLiteral("egress:corp"));
        QCOMPARE(egressProxyTypeName(EgressProxyType::Socks5RemoteDns), QStringLiteral("socks5h"));
        QCOMPARE(egressStrategyName(EgressStrategy::Ordered), QStringLiteral("ordered"));
    }
};

QTEST_GUILESS_MAIN(TestEgressConfig)
#include "tst_egress_config.moc"
