// The front door's Host and Origin rules (docs/SECURITY.md "Local-server attacks"): DNS-rebinding Hosts,
// cross-site Origins, preflights and browser no-cors requests are refused; every real client capture in
// tests/data/client-captures passes.
#include "TestSupport.h"
#include "api/FrontDoor.h"
#include "config/Config.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

using namespace sy;

namespace {

HttpRequest request(const QByteArray &method, const HttpHeaderList &headers)
{
    HttpRequest r;
    r.method = method;
    r.path = QStringLiteral("/v1/responses");
    r.headers = headers;
    return r;
}

QByteArray codeOf(const FrontDoor &door, const HttpRequest &r)
{
    const std::optional<FrontDoorRefusal> refusal = door.check(r);
    return refusal ? QByteArray::number(refusal->status) + ' ' + refusal->code : QByteArray("ok");
}

} // namespace

class TestFrontDoor : public QObject
{
    Q_OBJECT

private slots:
    void splitsHostValues_data()
    {
        QTest::addColumn<QByteArray>("value");
        QTest::addColumn<bool>("valid");
        QTest::addColumn<QByteArray>("name");
        QTest::addColumn<int>("port");
        QTest::newRow("name") << QByteArray("LocalHost") << true << QByteArray("localhost") << -1;
        QTest::newRow("name:port") << QByteArray("127.0.0.1:2455") << true << QByteArray("127.0.0.1") << 2455;
        QTest::newRow("fqdn dot") << QByteArray("localhost.:80") << true << QByteArray("localhost") << 80;
        QTest::newRow("v6") << QByteArray("[::1]:2455") << true << QByteArray("::1") << 2455;
        QTest::newRow("v6 no port") << QByteArray("[::1]") << true << QByteArray("::1") << -1;
        QTest::newRow("bare v6") << QByteArray("::1") << false << QByteArray() << 0;
        QTest::newRow("empty") << QByteArray("") << false << QByteArray() << 0;
        QTest::newRow("empty port") << QByteArray("localhost:") << false << QByteArray() << 0;
        QTest::newRow("big port") << QByteArray("localhost:65536") << false << QByteArray() << 0;
        QTest::newRow("userinfo") << QByteArray("a@localhost") << false << QByteArray() << 0;
        QTest::newRow("space") << QByteArray("local host") << false << QByteArray() << 0;
        QTest::newRow("v6 junk") << QByteArray("[::1]x") << false << QByteArray() << 0;
    }

    void splitsHostValues()
    {
        QFETCH(QByteArray, value);
        QFETCH(bool, valid);
        QFETCH(QByteArray, name);
        QFETCH(int, port);
        QByteArray gotName;
        int gotPort = 0;
        QCOMPARE(splitHostPort(value, &gotName, &gotPort), valid);
        if (valid) {
            QCOMPARE(gotName, name);
            QCOMPARE(gotPort, port);
        }
    }

    void hostRulesOnLoopback_data()
    {
        QTest::addColumn<QByteArray>("host");
        QTest::addColumn<QByteArray>("expected");
        QTest::newRow("127.0.0.1:port") << QByteArray("127.0.0.1:2455") << QByteArray("ok");
        QTest::newRow("localhost:port") << QByteArray("localhost:2455") << QByteArray("ok");
        QTest::newRow("LOCALHOST:port") << QByteArray("LOCALHOST:2455") << QByteArray("ok");
        QTest::newRow("[::1]:port") << QByteArray("[::1]:2455") << QByteArray("ok");
        QTest::newRow("no port") << QByteArray("127.0.0.1") << QByteArray("ok");
        QTest::newRow("rebinding") << QByteArray("evil.example:2455") << QByteArray("421 host_not_allowed");
        QTest::newRow("rebinding no port") << QByteArray("evil.example") << QByteArray("421 host_not_allowed");
        QTest::newRow("subdomain of localhost")
            << QByteArray("localhost.evil.example:2455") << QByteArray("421 host_not_allowed");
        QTest::newRow("other port") << QByteArray("127.0.0.1:2456") << QByteArray("421 host_not_allowed");
        QTest::newRow("lan literal") << QByteArray("192.0.2.7:2455") << QByteArray("421 host_not_allowed");
        QTest::newRow("0.0.0.0") << QByteArray("0.0.0.0:2455") << QByteArray("421 host_not_allowed");
        QTest::newRow("garbage") << QByteArray("::::") << QByteArray("421 host_not_allowed");
        QTest::newRow("allowed name") << QByteArray("switchyard.lan:2455") << QByteArray("ok");
        QTest::newRow("allowed name, no port") << QByteArray("switchyard.lan") << QByteArray("ok");
        QTest::newRow("allowed name, other port") << QByteArray("switchyard.lan:81") << QByteArray("421 host_not_allowed");
        QTest::newRow("allowed name:port") << QByteArray("front.lan:8443") << QByteArray("ok");
        QTest::newRow("allowed name:port, own port") << QByteArray("front.lan:2455") << QByteArray("421 host_not_allowed");
    }

    void hostRulesOnLoopback()
    {
        QFETCH(QByteArray, host);
        QFETCH(QByteArray, expected);
        const FrontDoor door(QHostAddress::LocalHost, 2455,
                             {QStringLiteral("switchyard.lan"), QStringLiteral("front.lan:8443")}, {});
        QCOMPARE(codeOf(door, request("POST", {{"host", host}})), expected);
    }

    void hostMustBeThereOnce()
    {
        const FrontDoor door(QHostAddress::LocalHost, 2455, {}, {});
        QCOMPARE(codeOf(door, request("GET", {})), QByteArray("421 host_not_allowed"));
        QCOMPARE(codeOf(door, request("GET", {{"host", "127.0.0.1:2455"}, {"host", "127.0.0.1:2455"}})),
                 QByteArray("421 host_not_allowed"));
    }

    void hostRulesOnOtherAddresses()
    {
        // A specific LAN address: that literal and the loopback names; not another machine's literal.
        const FrontDoor lan(QHostAddress(QStringLiteral("192.0.2.2")), 2455, {}, {});
        QVERIFY(lan.hostAllowed("192.0.2.2:2455"));
        QVERIFY(lan.hostAllowed("localhost:2455"));
        QVERIFY(!lan.hostAllowed("192.0.2.3:2455"));
        QVERIFY(!lan.hostAllowed("box.example:2455"));
        // Every address: any IP literal (rebinding needs a DNS name), still no foreign name.
        const FrontDoor any(QHostAddress::AnyIPv4, 2455, {}, {});
        QVERIFY(any.hostAllowed("192.0.2.3:2455"));
        QVERIFY(any.hostAllowed("[fd00::2]:2455"));
        QVERIFY(!any.hostAllowed("box.example:2455"));
        QVERIFY(!any.hostAllowed("192.0.2.3:2456"));
        const FrontDoor any6(QHostAddress::Any, 2455, {QStringLiteral("box.example")}, {});
        QVERIFY(any6.hostAllowed("box.example:2455"));
    }

    void originRules_data()
    {
        QTest::addColumn<HttpHeaderList>("extra");
        QTest::addColumn<QByteArray>("expected");
        QTest::newRow("cross-site origin") << HttpHeaderList{{"origin", "http://evil.example"}}
                                           << QByteArray("403 origin_not_allowed");
        QTest::newRow("rebound origin") << HttpHeaderList{{"origin", "http://evil.example:2455"}}
                                        << QByteArray("403 origin_not_allowed");
        QTest::newRow("null origin") << HttpHeaderList{{"origin", "null"}} << QByteArray("403 origin_not_allowed");
        QTest::newRow("https localhost other port") << HttpHeaderList{{"origin", "https://localhost:3000"}}
                                                    << QByteArray("403 origin_not_allowed");
        QTest::newRow("own origin") << HttpHeaderList{{"origin", "http://127.0.0.1:2455"}} << QByteArray("ok");
        QTest::newRow("own origin localhost") << HttpHeaderList{{"origin", "http://localhost:2455"}} << QByteArray("ok");
        QTest::newRow("own host, port 80") << HttpHeaderList{{"origin", "http://localhost"}}
                                           << QByteArray("403 origin_not_allowed");
        QTest::newRow("allowed origin") << HttpHeaderList{{"origin", "http://LOCALHOST:3000"}} << QByteArray("ok");
        QTest::newRow("one of two bad") << HttpHeaderList{{"origin", "http://localhost:3000"}, {"origin", "null"}}
                                        << QByteArray("403 origin_not_allowed");
        QTest::newRow("no-cors cross-site") << HttpHeaderList{{"sec-fetch-site", "cross-site"}}
                                            << QByteArray("403 origin_not_allowed");
        QTest::newRow("no-cors same-site") << HttpHeaderList{{"sec-fetch-site", "same-site"}}
                                           << QByteArray("403 origin_not_allowed");
        QTest::newRow("sec-fetch none") << HttpHeaderList{{"sec-fetch-site", "none"}} << QByteArray("ok");
        QTest::newRow("node fetch") << HttpHeaderList{{"sec-fetch-mode", "cors"}} << QByteArray("ok");
        QTest::newRow("allowed origin, cross-site")
            << HttpHeaderList{{"origin", "http://localhost:3000"}, {"sec-fetch-site", "same-site"}} << QByteArray("ok");
    }

    void originRules()
    {
        QFETCH(HttpHeaderList, extra);
        QFETCH(QByteArray, expected);
        const FrontDoor door(QHostAddress::LocalHost, 2455, {}, {QStringLiteral("http://localhost:3000")});
        HttpHeaderList headers{{"host", "127.0.0.1:2455"}};
        headers += extra;
        QCOMPARE(codeOf(door, request("POST", headers)), expected);
    }

    void preflightIsRefused()
    {
        const FrontDoor door(QHostAddress::LocalHost, 2455, {}, {QStringLiteral("http://localhost:3000")});
        const HttpHeaderList preflight{{"host", "127.0.0.1:2455"},
                                       {"origin", "http://localhost:3000"},
                                       {"access-control-request-method", "POST"}};
        QCOMPARE(codeOf(door, request("OPTIONS", preflight)), QByteArray("403 cors_preflight_refused"));
        QCOMPARE(codeOf(door, request("OPTIONS", {{"host", "127.0.0.1:2455"}})), QByteArray("403 cors_preflight_refused"));
        // The Host check comes first: a rebound preflight is a misdirected request.
        QCOMPARE(codeOf(door, request("OPTIONS", {{"host", "evil.example:2455"}})), QByteArray("421 host_not_allowed"));
    }

    void configKeysAreValidated()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("config.json"));
        auto load = [&](const QByteArray &json) {
            QFile f(path);
            if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
                qFatal("cannot write %s", qPrintable(path));
            f.write(json);
            f.close();
            ConfigOverrides o;
            o.configFile = path;
            return loadConfig(o, {{QStringLiteral("HOME"), dir.path()}});
        };
        ConfigResult r = load("{}");
        QVERIFY2(r.ok(), qPrintable(r.error));
        QCOMPARE(r.config.headerTimeoutS, 10);
        QCOMPARE(r.config.maxHeaderKb, 32);
        QCOMPARE(r.config.maxHeaders, 100);
        QCOMPARE(r.config.maxConnectionsPerClient, 64);
        QVERIFY(!r.config.requireApiKey);
        QVERIFY(r.config.allowedHosts.isEmpty());

        r = load("{\"allowed_hosts\": [\"switchyard.lan\", \"[::1]:8080\", \"10.0.0.5\"], "
                 "\"allowed_origins\": [\"http://localhost:3000\", \"vscode-webview://abc\"], "
                 "\"require_api_key\": true, \"header_timeout_s\": 2, \"max_header_kb\": 16, "
                 "\"max_headers\": 50, \"max_connections_per_client\": 8}");
        QVERIFY2(r.ok(), qPrintable(r.error));
        QCOMPARE(r.config.allowedHosts.size(), 3);
        QCOMPARE(r.config.allowedOrigins.size(), 2);
        QVERIFY(r.config.requireApiKey);
        QCOMPARE(r.config.headerTimeoutS, 2);
        QCOMPARE(r.config.maxHeaderKb, 16);
        QCOMPARE(r.config.maxHeaders, 50);
        QCOMPARE(r.config.maxConnectionsPerClient, 8);

        const QList<QPair<QByteArray, const char *>> bad{
            {"{\"allowed_hosts\": \"switchyard.lan\"}", "allowed_hosts"},
            {"{\"allowed_hosts\": [\"http://x/\"]}", "allowed_hosts"},
            {"{\"allowed_hosts\": [\"a b\"]}", "allowed_hosts"},
            {"{\"allowed_hosts\": [\"x:70000\"]}", "allowed_hosts"},
            {"{\"allowed_hosts\": [3]}", "allowed_hosts"},
            {"{\"allowed_origins\": [\"http://localhost:3000/\"]}", "allowed_origins"},
            {"{\"allowed_origins\": [\"localhost:3000\"]}", "allowed_origins"},
            {"{\"allowed_origins\": [\"http://a/path\"]}", "allowed_origins"},
            {"{\"require_api_key\": \"yes\"}", "require_api_key"},
            {"{\"header_timeout_s\": 0}", "header_timeout_s"},
            {"{\"max_header_kb\": 65}", "max_header_kb"},
            {"{\"max_headers\": 7}", "max_headers"},
            {"{\"max_connections_per_client\": 0}", "max_connections_per_client"},
        };
        for (const auto &[json, key] : bad) {
            r = load(json);
            QVERIFY2(!r.ok(), json.constData());
            QVERIFY2(r.error.contains(QLatin1String(key)), qPrintable(r.error));
        }
    }

    // Every request the real clients made (Codex CLI, OpenCode, the openai SDK) passes on the port it was sent to.
    void realClientCapturesPass()
    {
        const QStringList files =
            QDir(test::testDataDir() + QStringLiteral("/client-captures")).entryList({QStringLiteral("*.json")});
        QVERIFY(files.size() >= 10);
        int checked = 0;
        for (const QString &file : files) {
            const QJsonArray entries =
                QJsonDocument::fromJson(test::readTestData(QStringLiteral("client-captures/") + file)).array();
            QVERIFY2(!entries.isEmpty(), qPrintable(file));
            for (const QJsonValue &v : entries) {
                const QJsonObject e = v.toObject();
                HttpRequest r;
                r.method = e.value(QLatin1String("method")).toString().toLatin1();
                r.path = e.value(QLatin1String("url")).toString();
                const QJsonObject headers = e.value(QLatin1String("headers")).toObject();
                for (auto it = headers.begin(); it != headers.end(); ++it)
                    r.headers.append({it.key().toLatin1(), it.value().toString().toLatin1()});
                QByteArray name;
                int port = -1;
                QVERIFY(splitHostPort(r.header("host"), &name, &port));
                const FrontDoor door(QHostAddress::LocalHost, quint16(port), {}, {});
                QVERIFY2(!door.check(r), qPrintable(file + QLatin1Char(' ') + r.path));
                // The same request, rebound to a foreign name, is refused.
                for (HttpHeader &h : r.headers) {
                    if (h.first == "host")
                        h.second = "evil.example:" + QByteArray::number(port);
                }
                QVERIFY(door.check(r));
                ++checked;
            }
        }
        QVERIFY(checked >= 20);
    }
};

QTEST_GUILESS_MAIN(TestFrontDoor)
#include "tst_front_door.moc"
