// SWITCHYARD_NEEDS_KEYRING: accounts are imported into a real gnome-keyring.
//
// A running `serve` follows edits of its configuration file made by another process (DESIGN.md "Configuration
// file"): hot keys apply from the next turn without a restart (turns in flight keep their budgets), a broken
// file leaves the last good configuration in force and is reported in /api/status until it is repaired, and a
// restart-only key is listed as such instead of being ignored.
#include "lib/FakeUpstreamProcess.h"
#include "lib/HttpTestClient.h"
#include "lib/ProxyProcess.h"
#include "lib/RawHttpClient.h"

#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>
#include <cstdio>
#include <memory>

using namespace sy;
using namespace sy::test;

namespace {

const char *const kCodex = "/backend-api/codex/responses";

QByteArray compact(const QJsonObject &o)
{
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

QByteArray responsesBody(const QString &text)
{
    const QJsonObject content{{QStringLiteral("type"), QStringLiteral("input_text")}, {QStringLiteral("text"), text}};
    const QJsonObject message{{QStringLiteral("type"), QStringLiteral("message")},
                              {QStringLiteral("role"), QStringLiteral("user")},
                              {QStringLiteral("content"), QJsonArray{content}}};
    return compact({{QStringLiteral("model"), QStringLiteral("gpt-5-codex")},
                    {QStringLiteral("stream"), true},
                    {QStringLiteral("store"), false},
                    {QStringLiteral("input"), QJsonArray{message}}});
}

std::unique_ptr<RawHttpClient> post(const ProxyProcess &proxy, const QString &text)
{
    auto client = std::make_unique<RawHttpClient>();
    if (!client->connectTo(proxy.port()))
        return nullptr;
    client->send(RawHttpClient::buildRequest(
        "POST", kCodex, {{"content-type", "application/json"}, {"authorization", "Bearer client-key"}},
        responsesBody(text)));
    return client;
}

QString str(const QJsonObject &o, const char *key)
{
    return o.value(QLatin1String(key)).toString();
}

QJsonObject status(const ProxyProcess &proxy)
{
    return httpRequest("GET", QUrl(proxy.url(QStringLiteral("/api/status")))).json();
}

QJsonObject configStatus(const ProxyProcess &proxy)
{
    return status(proxy).value(QLatin1String("config")).toObject();
}

int accountSlots(const QJsonObject &status)
{
    return status.value(QLatin1String("accounts")).toArray().first().toObject().value(QLatin1String("slots")).toInt();
}

int gateMaxWaiters(const QJsonObject &status)
{
    return status.value(QLatin1String("gate")).toObject().value(QLatin1String("max_waiters")).toInt();
}

QStringList restartRequired(const QJsonObject &status)
{
    QStringList keys;
    for (const QJsonValue &v :
         status.value(QLatin1String("config")).toObject().value(QLatin1String("restart_required")).toArray())
        keys << v.toString();
    return keys;
}

// The file as tests write it: background usage polling stays off (tests count upstream requests).
QByteArray configText(QJsonObject settings)
{
    settings.insert(QStringLiteral("usage_poll_interval_s"), 0);
    return QJsonDocument(settings).toJson();
}

bool writeInPlace(const QString &path, const QByteArray &content)
{
    QFile f(path);
    return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(content) == content.size();
}

// An editor's or the Settings page's atomic save: a new file renamed over the old one.
bool replaceByRename(const QString &path, const QByteArray &content)
{
    const QString temp = path + QStringLiteral(".new");
    return writeInPlace(temp, content) &&
           std::rename(QFile::encodeName(temp).constData(), QFile::encodeName(path).constData()) == 0;
}

QJsonArray upstreamRequestsFor(FakeUpstreamProcess &fake, const QString &chatgptAccountId)
{
    QJsonArray out;
    for (const QJsonValue &v : fake.log()) {
        const QJsonObject e = v.toObject();
        if (str(e, "chatgpt_account_id") == chatgptAccountId && str(e, "path").endsWith(QLatin1String("/responses")))
            out.append(e);
    }
    return out;
}

} // namespace

class TestConfigReload : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;

    bool startProxy(ProxyProcess &proxy, const QJsonObject &config, QString *error)
    {
        proxy.setConfig(config);
        if (!proxy.addAccounts(1) || !proxy.start(m_fake.baseUrl())) {
            *error = proxy.errorString();
            return false;
        }
        return true;
    }

private slots:
    void initTestCase() { QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString())); }

    void init() { QVERIFY(m_fake.reset()); }

    // Rewritten in place: strategy, slots_per_account and the gate's bound change in the same process.
    void hotKeysApplyWithoutRestart()
    {
        ProxyProcess proxy;
        QString error;
        QVERIFY2(startProxy(proxy, {{QStringLiteral("slots_per_account"), 2}, {QStringLiteral("gate_max_waiters"), 50}},
                            &error),
                 qPrintable(error));
        const QJsonObject before = status(proxy);
        QCOMPARE(accountSlots(before), 2);
        QCOMPARE(gateMaxWaiters(before), 50);
        QCOMPARE(str(before, "strategy"), QStringLiteral("capacity_weighted"));
        const QJsonObject cfg = before.value(QLatin1String("config")).toObject();
        QCOMPARE(str(cfg, "path"), proxy.configPath());
        QVERIFY(cfg.value(QLatin1String("error")).isNull());
        QCOMPARE(restartRequired(before), QStringList());
        const qint64 pid = proxy.pid();

        QElapsedTimer noticed;
        noticed.start();
        QVERIFY(
            writeInPlace(proxy.configPath(), configText({{QStringLiteral("slots_per_account"), 5},
                                                         {QStringLiteral("strategy"), QStringLiteral("round_robin")},
                                                         {QStringLiteral("gate_max_waiters"), 60}})));
        QTRY_COMPARE_WITH_TIMEOUT(accountSlots(status(proxy)), 5, 15000);
        std::fprintf(stderr, "config reload: in-place edit visible in /api/status after %lld ms\n",
                     qint64(noticed.elapsed()));
        const QJsonObject after = status(proxy);
        QCOMPARE(str(after, "strategy"), QStringLiteral("round_robin"));
        QCOMPARE(gateMaxWaiters(after), 60);
        QCOMPARE(str(after, "started_at"), str(before, "started_at"));
        QVERIFY(str(after.value(QLatin1String("config")).toObject(), "loaded_at") != str(cfg, "loaded_at"));
        QCOMPARE(proxy.pid(), pid);
        QVERIFY(after.value(QLatin1String("config")).toObject().value(QLatin1String("watched")).toBool());

        // The next turn runs with the new settings (and is served).
        auto client = post(proxy, QStringLiteral("ECHO: after the reload"));
        QVERIFY(client);
        const std::optional<RawResponse> r = client->readResponse(15000);
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        QCOMPARE(proxy.stop(), 0);
    }

    // Replaced by a rename: the next turn gets the new budgets, the turn in flight keeps its own.
    void budgetsApplyToTheNextTurnOnly()
    {
        ProxyProcess proxy;
        QString error;
        // Keepalive cadence 10 s x 6 = 60 s: a silent upstream is killed by request_total (12 s).
        QVERIFY2(startProxy(proxy,
                            {{QStringLiteral("request_total_s"), 12},
                             {QStringLiteral("keepalive_interval_s"), 10},
                             {QStringLiteral("keepalive_max"), 6}},
                            &error),
                 qPrintable(error));
        const FakeAccount &acct = proxy.accounts().first();
        QVERIFY(m_fake.script(acct.chatgptAccountId, {QStringLiteral("silent")}, true));
        const QString loadedAt = str(configStatus(proxy), "loaded_at");

        auto first = post(proxy, QStringLiteral("first"));
        QVERIFY(first);
        QTRY_COMPARE_WITH_TIMEOUT(int(upstreamRequestsFor(m_fake, acct.chatgptAccountId).size()), 1, 10000);

        // Cadence 1 s x 2 = 2 s: now pre_response fires long before request_total (60 s).
        QElapsedTimer noticed;
        noticed.start();
        QVERIFY(replaceByRename(proxy.configPath(), configText({{QStringLiteral("request_total_s"), 60},
                                                                {QStringLiteral("keepalive_interval_s"), 1},
                                                                {QStringLiteral("keepalive_max"), 2}})));
        QTRY_VERIFY_WITH_TIMEOUT(str(configStatus(proxy), "loaded_at") != loadedAt, 15000);
        std::fprintf(stderr, "config reload: atomic replace applied after %lld ms\n", qint64(noticed.elapsed()));
        QVERIFY(configStatus(proxy).value(QLatin1String("error")).isNull());

        auto second = post(proxy, QStringLiteral("second"));
        QVERIFY(second);
        const std::optional<RawResponse> r2 = second->readResponse(30000);
        QVERIFY(r2);
        QCOMPARE(r2->status, 504);
        const QJsonObject row2 = proxy.waitForRequest(QString::fromLatin1(r2->header("x-request-id")));
        QCOMPARE(str(row2, "kill_stage"), QStringLiteral("pre_response"));

        const std::optional<RawResponse> r1 = first->readResponse(30000);
        QVERIFY(r1);
        QCOMPARE(r1->status, 504);
        const QJsonObject row1 = proxy.waitForRequest(QString::fromLatin1(r1->header("x-request-id")));
        QCOMPARE(str(row1, "kill_stage"), QStringLiteral("request_total"));
        const qint64 total =
            row1.value(QLatin1String("latency_ms")).toObject().value(QLatin1String("total")).toInteger();
        QVERIFY2(total >= 11900, compact(row1).constData());
        QCOMPARE(proxy.stop(), 0);
    }

    // A broken file keeps the last good configuration in force, says so in /api/status and in the log (once),
    // and clears when repaired; a deleted named file is broken too.
    void brokenFileKeepsServingOnTheLastGoodOne()
    {
        ProxyProcess proxy;
        QString error;
        QVERIFY2(startProxy(proxy, {{QStringLiteral("slots_per_account"), 2}}, &error), qPrintable(error));
        QCOMPARE(accountSlots(status(proxy)), 2);

        QVERIFY(writeInPlace(proxy.configPath(),
                             configText({{QStringLiteral("slots_per_account"), QStringLiteral("many")}})));
        QTRY_VERIFY_WITH_TIMEOUT(!configStatus(proxy).value(QLatin1String("error")).isNull(), 15000);
        const QString problem = str(configStatus(proxy), "error");
        QVERIFY2(problem.contains(proxy.configPath()) && problem.contains(QLatin1String("slots_per_account")),
                 qPrintable(problem));
        QCOMPARE(accountSlots(status(proxy)), 2); // never the default (4)

        auto client = post(proxy, QStringLiteral("ECHO: still serving"));
        QVERIFY(client);
        const std::optional<RawResponse> r = client->readResponse(15000);
        QVERIFY(r);
        QCOMPARE(r->status, 200);

        // Several poll periods later the problem has been logged once, not once a second.
        QTest::qWait(2500);
        QCOMPARE(int(proxy.serveStderr().count("configuration not applied")), 1);

        QVERIFY(QFile::remove(proxy.configPath()));
        QTRY_VERIFY_WITH_TIMEOUT(str(configStatus(proxy), "error").contains(QLatin1String("does not exist")), 15000);
        QCOMPARE(accountSlots(status(proxy)), 2);

        QVERIFY(writeInPlace(proxy.configPath(), configText({{QStringLiteral("slots_per_account"), 3}})));
        QTRY_COMPARE_WITH_TIMEOUT(accountSlots(status(proxy)), 3, 15000);
        QVERIFY(configStatus(proxy).value(QLatin1String("error")).isNull());
        QVERIFY(proxy.serveStderr().contains("is valid again"));
        QCOMPARE(proxy.stop(), 0);
    }

    // A restart-only key is listed, not silently ignored; the hot keys of the same edit apply.
    void restartOnlyKeyIsReported()
    {
        ProxyProcess proxy;
        QString error;
        QVERIFY2(startProxy(proxy, {}, &error), qPrintable(error));
        QCOMPARE(restartRequired(status(proxy)), QStringList());

        const QJsonArray proxies{QJsonObject{{QStringLiteral("name"), QStringLiteral("spare")},
                                             {QStringLiteral("url"), QStringLiteral("http://127.0.0.1:9")}}};
        QVERIFY(replaceByRename(proxy.configPath(), configText({{QStringLiteral("egress_proxies"), proxies},
                                                                {QStringLiteral("slots_per_account"), 3}})));
        QTRY_COMPARE_WITH_TIMEOUT(restartRequired(status(proxy)), QStringList{QStringLiteral("egress_proxies")}, 15000);
        const QJsonObject s = status(proxy);
        QCOMPARE(accountSlots(s), 3);
        QVERIFY(s.value(QLatin1String("config")).toObject().value(QLatin1String("error")).isNull());
        // Still running with the egress settings it started with (none).
        QCOMPARE(s.value(QLatin1String("egress")).toObject().value(QLatin1String("proxies")).toArray().size(), 0);
        QVERIFY(proxy.serveStderr().contains("egress_proxies"));
        const CliResult cli = proxy.cli(
            {QStringLiteral("status"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:%1").arg(proxy.port())});
        QCOMPARE(cli.exitCode, 0);
        QVERIFY2(cli.out.contains("applies after a restart: egress_proxies"), cli.out.constData());

        // Back to what is running: nothing waits for a restart any more.
        QVERIFY(replaceByRename(proxy.configPath(), configText({{QStringLiteral("slots_per_account"), 3}})));
        QTRY_COMPARE_WITH_TIMEOUT(restartRequired(status(proxy)), QStringList(), 15000);
        QCOMPARE(proxy.stop(), 0);
    }
};

QTEST_GUILESS_MAIN(TestConfigReload)
#include "tst_config_reload.moc"
