// SWITCHYARD_NEEDS_KEYRING: accounts are imported into a real gnome-keyring.
// API keys on a running `switchyard serve` (docs/SECURITY.md "API keys"). Listening on a non-loopback address
// of this machine: no key 401, a valid key (Bearer or x-api-key) 200, a revoked or expired key 401, a key over
// its token limit 429, all with JSON errors, checked on every request (the CLI's changes apply at once). On
// loopback no key is needed unless require_api_key is set. The key never reaches the upstream, the database,
// the logs, `requests --json` or `apikeys list`.
#include "lib/CodexRequests.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/ProxyProcess.h"
#include "lib/RawHttpClient.h"

#include <QDateTime>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkInterface>
#include <QRegularExpression>
#include <QSqlDatabase>
#include <QSqlQuery>
#include <QTest>

using namespace sy;
using namespace sy::test;

namespace {

// A non-loopback IPv4 address of this machine; without one, every address (0.0.0.0), which is not loopback
// either, reached through 127.0.0.1.
struct Listen
{
    QHostAddress bind;
    QHostAddress connect;
};

Listen nonLoopbackListen()
{
    for (const QHostAddress &a : QNetworkInterface::allAddresses()) {
        if (a.protocol() == QAbstractSocket::IPv4Protocol && !a.isLoopback() && !a.isLinkLocal())
            return {a, a};
    }
    return {QHostAddress(QHostAddress::AnyIPv4), QHostAddress(QHostAddress::LocalHost)};
}

QString errorCode(const RawResponse &r)
{
    return r.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("code")).toString();
}

} // namespace

class TestProxyApiKeys : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    ProxyProcess m_proxy;
    Listen m_listen;
    QStringList m_keys; // every key made in this test, for the secrets scan
    QHash<QString, QString> m_ids;

    RawResponse send(const QByteArray &method, const QByteArray &target, const HttpHeaderList &extra,
                     const QByteArray &body = {}, ProxyProcess *proxy = nullptr, const QHostAddress &to = {})
    {
        ProxyProcess *p = proxy ? proxy : &m_proxy;
        const QHostAddress address = to.isNull() ? (proxy ? QHostAddress(QHostAddress::LocalHost) : m_listen.connect) : to;
        RawHttpClient client;
        if (!client.connectTo(p->port(), address))
            return {};
        QByteArray host = address.toString().toLatin1() + ':' + QByteArray::number(p->port());
        QByteArray r = method + ' ' + target + " HTTP/1.1\r\nHost: " + host + "\r\n";
        for (const HttpHeader &h : extra)
            r += h.first + ": " + h.second + "\r\n";
        if (!body.isEmpty())
            r += "Content-Type: application/json\r\nContent-Length: " + QByteArray::number(body.size()) + "\r\n";
        client.send(r + "\r\n" + body);
        const std::optional<RawResponse> response = client.readResponse(30000);
        return response ? *response : RawResponse();
    }

    RawResponse turn(const HttpHeaderList &auth, ProxyProcess *proxy = nullptr)
    {
        return send("POST", "/backend-api/codex/responses", auth, codexBody(QStringLiteral("ECHO: keyed")), proxy);
    }

    // `apikeys create ARGS...`: the key (first line of the output).
    QString createKey(const QStringList &args, ProxyProcess *proxy = nullptr)
    {
        const CliResult r = (proxy ? proxy : &m_proxy)->cli(QStringList{QStringLiteral("apikeys"), QStringLiteral("create")} + args);
        if (r.exitCode != 0)
            return {};
        const QString out = QString::fromUtf8(r.out);
        const QString key = out.section(QLatin1Char('\n'), 0, 0).trimmed();
        m_keys << key;
        m_ids.insert(key, QRegularExpression(QStringLiteral("API key (key_[0-9a-f]{12}) created")).match(out).captured(1));
        return key;
    }

    QJsonObject listed(const QString &id)
    {
        const CliResult r = m_proxy.cli({QStringLiteral("apikeys"), QStringLiteral("list"), QStringLiteral("--json")});
        for (const QJsonValue &v : r.json().array()) {
            if (v.toObject().value(QLatin1String("id")).toString() == id)
                return v.toObject();
        }
        return {};
    }

    QString idOf(const QString &key) const { return m_ids.value(key); }

    static HttpHeaderList bearer(const QString &key) { return {{"Authorization", QByteArray("Bearer " + key.toLatin1())}}; }

private slots:
    void initTestCase()
    {
        m_listen = nonLoopbackListen();
        qInfo("listening on %s, connecting to %s", qPrintable(m_listen.bind.toString()),
              qPrintable(m_listen.connect.toString()));
        QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString()));
        QVERIFY2(m_proxy.addAccounts(2), qPrintable(m_proxy.errorString()));
        m_proxy.setListen(m_listen.bind.toString() + QStringLiteral(":0"));
        QVERIFY2(m_proxy.start(m_fake.baseUrl()), qPrintable(m_proxy.errorString()));
    }

    void withoutKeysEveryProxyRequestGets401()
    {
        QTRY_VERIFY_WITH_TIMEOUT(m_proxy.serveStderr().contains("none is active"), 10000);
        const int before = m_fake.log().size();
        RawResponse r = turn({});
        QCOMPARE(r.status, 401);
        QCOMPARE(errorCode(r), QStringLiteral("missing_api_key"));
        QCOMPARE(r.header("content-type"), QByteArray("application/json"));
        QVERIFY(r.header("www-authenticate").startsWith("Bearer"));
        // What Codex or the SDK send by default (their own key or a ChatGPT token) is no Switchyard key.
        r = turn({{"Authorization", "Bearer client-key"}});
        QCOMPARE(r.status, 401);
        QCOMPARE(errorCode(r), QStringLiteral("invalid_api_key"));
        QCOMPARE(send("GET", "/v1/models", {}).status, 401);
        QCOMPARE(send("POST", "/v1/chat/completions", {}, "{}").status, 401);
        QCOMPARE(m_fake.log().size(), before);
        // Liveness needs no key; the local API stays loopback-only.
        QCOMPARE(send("GET", "/health/live", {}).status, 200);
        if (!m_listen.connect.isLoopback())
            QCOMPARE(send("GET", "/api/status", {}).status, 403);
    }

    void validKeyIsServedAndNeverForwarded()
    {
        const QString key = createKey({QStringLiteral("--name"), QStringLiteral("ci")});
        QVERIFY(key.startsWith(QLatin1String("sy-")));
        QCOMPARE(key.size(), 46);
        const int before = m_fake.log().size();
        RawResponse r = turn(bearer(key));
        QCOMPARE(r.status, 200);
        QVERIFY(r.body.contains("response.completed"));
        r = turn({{"x-api-key", key.toLatin1()}});
        QCOMPARE(r.status, 200);
        QCOMPARE(send("GET", "/v1/models", bearer(key)).status, 200);
        const QJsonArray log = m_fake.log();
        QCOMPARE(log.size(), before + 3);
        for (int i = before; i < log.size(); ++i) {
            const QByteArray seen = QJsonDocument(log.at(i).toObject()).toJson();
            QVERIFY(!seen.contains(key.toLatin1()));
            const QString upstreamBearer = log.at(i).toObject().value(QLatin1String("authorization")).toString();
            QVERIFY(m_proxy.accountByChatgptId(log.at(i).toObject().value(QLatin1String("chatgpt_account_id")).toString()));
            QVERIFY(upstreamBearer != key);
        }
        QVERIFY(idOf(key).startsWith(QLatin1String("key_")));
        const QJsonObject row = listed(idOf(key));
        QCOMPARE(row.value(QLatin1String("name")).toString(), QStringLiteral("ci"));
        QCOMPARE(row.value(QLatin1String("state")).toString(), QStringLiteral("active"));
        QVERIFY(!row.value(QLatin1String("last_used_at")).isNull());
    }

    void unknownKeyIs401()
    {
        const QString key = createKey({});
        QString wrong = key;
        wrong[10] = wrong.at(10) == QLatin1Char('A') ? QLatin1Char('B') : QLatin1Char('A');
        const RawResponse r = turn(bearer(wrong));
        QCOMPARE(r.status, 401);
        QCOMPARE(errorCode(r), QStringLiteral("invalid_api_key"));
        QCOMPARE(turn(bearer(key)).status, 200);
    }

    void revokedKeyIs401AtOnce()
    {
        const QString key = createKey({QStringLiteral("--name"), QStringLiteral("to-revoke")});
        QCOMPARE(turn(bearer(key)).status, 200);
        const QString id = idOf(key);
        const CliResult revoked = m_proxy.cli({QStringLiteral("apikeys"), QStringLiteral("revoke"), id});
        QCOMPARE(revoked.exitCode, 0);
        const RawResponse r = turn(bearer(key));
        QCOMPARE(r.status, 401);
        QCOMPARE(errorCode(r), QStringLiteral("api_key_revoked"));
        QCOMPARE(listed(id).value(QLatin1String("state")).toString(), QStringLiteral("revoked"));
        const CliResult unknown =
            m_proxy.cli({QStringLiteral("apikeys"), QStringLiteral("revoke"), QStringLiteral("key_000000000000")});
        QCOMPARE(unknown.exitCode, 1);
        QVERIFY(unknown.err.contains("no API key"));
    }

    void expiredKeyIs401()
    {
        const QString key = createKey({QStringLiteral("--expires"), QStringLiteral("1")});
        QCOMPARE(turn(bearer(key)).status, 200);
        const QString id = idOf(key);
        QVERIFY(!listed(id).value(QLatin1String("expires_at")).isNull());
        {
            // A day passes: the stored expiry moves into the past.
            QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("expire"));
            db.setDatabaseName(m_proxy.dataDir() + QStringLiteral("/switchyard.sqlite"));
            QVERIFY(db.open());
            QSqlQuery q(db);
            QVERIFY(q.prepare(QStringLiteral("UPDATE api_keys SET expires_at_ms = ? WHERE id = ?")));
            q.addBindValue(QDateTime::currentMSecsSinceEpoch() - 1000);
            q.addBindValue(id);
            QVERIFY(q.exec());
            QCOMPARE(q.numRowsAffected(), 1);
            db.close();
        }
        QSqlDatabase::removeDatabase(QStringLiteral("expire"));
        const RawResponse r = turn(bearer(key));
        QCOMPARE(r.status, 401);
        QCOMPARE(errorCode(r), QStringLiteral("api_key_expired"));
        QCOMPARE(listed(id).value(QLatin1String("state")).toString(), QStringLiteral("expired"));
    }

    void keyOverItsTokenLimitIs429()
    {
        const QString key = createKey({QStringLiteral("--limit-tokens"), QStringLiteral("1"), QStringLiteral("--limit-window"),
                                       QStringLiteral("5h")});
        QVERIFY(!key.isEmpty());
        const RawResponse first = turn(bearer(key));
        QCOMPARE(first.status, 200);
        const QJsonObject row = m_proxy.waitForRequest(QString::fromLatin1(first.header("x-request-id")));
        QVERIFY(row.value(QLatin1String("tokens")).toObject().value(QLatin1String("total")).toInt() > 1);
        const QString id = idOf(key);
        QTRY_VERIFY_WITH_TIMEOUT(listed(id).value(QLatin1String("tokens_used_in_window")).toInt() > 1, 10000);
        QCOMPARE(listed(id).value(QLatin1String("limit_window")).toString(), QStringLiteral("5h"));
        const RawResponse r = turn(bearer(key));
        QCOMPARE(r.status, 429);
        QCOMPARE(errorCode(r), QStringLiteral("api_key_token_limit"));
        QCOMPARE(r.header("content-type"), QByteArray("application/json"));
        // Another key is not affected.
        const QString other = createKey({});
        QCOMPARE(turn(bearer(other)).status, 200);
    }

    void badCreateOptionsAreRefused()
    {
        for (const QStringList &args : {QStringList{QStringLiteral("--expires"), QStringLiteral("0")},
                                        QStringList{QStringLiteral("--limit-tokens"), QStringLiteral("5")},
                                        QStringList{QStringLiteral("--limit-tokens"), QStringLiteral("5"),
                                                    QStringLiteral("--limit-window"), QStringLiteral("2w")},
                                        QStringList{QStringLiteral("--name"), QString()}}) {
            const CliResult r = m_proxy.cli(QStringList{QStringLiteral("apikeys"), QStringLiteral("create")} + args);
            QVERIFY2(r.exitCode == 1, qPrintable(args.join(QLatin1Char(' '))));
            QVERIFY(!r.err.isEmpty());
            QVERIFY(!r.out.contains("sy-"));
        }
    }

    void loopbackNeedsNoKeyUnlessRequired()
    {
        ProxyProcess open;
        QVERIFY2(open.addAccounts(1), qPrintable(open.errorString()));
        QVERIFY2(open.start(m_fake.baseUrl()), qPrintable(open.errorString()));
        QCOMPARE(turn({{"Authorization", "Bearer client-key"}}, &open).status, 200);
        QCOMPARE(turn({}, &open).status, 200);
        QVERIFY(!open.serveStderr().contains("none is active"));
        QCOMPARE(open.stop(), 0);

        ProxyProcess strict;
        QVERIFY2(strict.addAccounts(1), qPrintable(strict.errorString()));
        strict.setConfig(QJsonObject{{QStringLiteral("require_api_key"), true}});
        QVERIFY2(strict.start(m_fake.baseUrl()), qPrintable(strict.errorString()));
        RawResponse r = turn({{"Authorization", "Bearer client-key"}}, &strict);
        QCOMPARE(r.status, 401);
        QCOMPARE(errorCode(r), QStringLiteral("invalid_api_key"));
        const QString key = createKey({}, &strict);
        QCOMPARE(turn(bearer(key), &strict).status, 200);
        // With keys required a turn's head does not warm the store for its claim (the key check's read comes
        // first). Heads whose bodies are held back leave the store thread idle for a warm-up that never comes.
        for (int attempt = 0; attempt < 3; ++attempt) {
            RawHttpClient held;
            QVERIFY(held.connectTo(strict.port(), QHostAddress(QHostAddress::LocalHost)));
            held.send("POST /backend-api/codex/responses HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " +
                      key.toLatin1() + "\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n");
            QTest::qWait(200);
        }
        const RawResponse status = send("GET", "/api/status", {}, {}, &strict);
        QCOMPARE(status.status, 200);
        QCOMPARE(QJsonDocument::fromJson(status.body).object().value(QLatin1String("store_warm_ups")).toInteger(-1), 0);
        QCOMPARE(strict.stop(), 0);
    }

    // With keys required a turn's head announces its claim to the store (StoreWorker::announceClaim) instead of
    // warming it up: the key check's read wakes the store thread, which then waits awake after it for the claim
    // (that wait is tst_store_warmup's). Whether the claim is then found by that wait or queued before the read
    // even ended is a race of the two threads, so the head's announcement itself is what is counted here.
    void aTurnsHeadAnnouncesItsClaimWhenKeysAreRequired()
    {
        ProxyProcess strict;
        QVERIFY2(strict.addAccounts(1), qPrintable(strict.errorString()));
        strict.setConfig(QJsonObject{{QStringLiteral("require_api_key"), true}});
        QVERIFY2(strict.start(m_fake.baseUrl()), qPrintable(strict.errorString()));
        const QString key = createKey({}, &strict);
        auto status = [this, &strict] {
            return QJsonDocument::fromJson(send("GET", "/api/status", {}, {}, &strict).body).object();
        };
        auto announced = [](const QJsonObject &s) {
            return s.value(QLatin1String("busy_poll"))
                .toObject()
                .value(QLatin1String("store_claims_announced"))
                .toInteger(-1);
        };
        const QJsonObject before = status();
        QVERIFY(announced(before) >= 0);
        for (int i = 0; i < 3; ++i)
            QCOMPARE(turn(bearer(key), &strict).status, 200);
        // A refused key's turn announces too (its head cannot know), and nothing else does.
        QCOMPARE(turn({{"Authorization", "Bearer not-a-key"}}, &strict).status, 401);
        QCOMPARE(send("GET", "/backend-api/codex/models", bearer(key), {}, &strict).status, 200);
        const QJsonObject after = status();
        QCOMPARE(announced(after) - announced(before), 4);
        QCOMPARE(after.value(QLatin1String("store_warm_ups")).toInteger(-1),
                 before.value(QLatin1String("store_warm_ups")).toInteger(-1));
        QCOMPARE(strict.stop(), 0);
    }

    // Last: the keys of every test above never appear where they must not.
    void keysAreNeverStoredOrLogged()
    {
        QVERIFY(m_keys.size() >= 6);
        QByteArray haystack = m_proxy.serveStderr();
        haystack += m_proxy.cli({QStringLiteral("requests"), QStringLiteral("--json"), QStringLiteral("--limit"),
                                 QStringLiteral("1000")})
                        .out;
        haystack += m_proxy.cli({QStringLiteral("apikeys"), QStringLiteral("list"), QStringLiteral("--json")}).out;
        haystack += m_proxy.cli({QStringLiteral("apikeys"), QStringLiteral("list")}).out;
        haystack += QJsonDocument(m_fake.log()).toJson();
        const QString db = m_proxy.dataDir() + QStringLiteral("/switchyard.sqlite");
        for (const QString &suffix : {QString(), QStringLiteral("-wal")}) {
            QFile f(db + suffix);
            if (f.open(QIODevice::ReadOnly))
                haystack += f.readAll();
        }
        QVERIFY(haystack.size() > 10000);
        for (const QString &key : std::as_const(m_keys)) {
            QVERIFY(!key.isEmpty());
            QVERIFY2(!haystack.contains(key.toLatin1()), "an API key was found");
            QVERIFY2(!haystack.contains(key.mid(3, 20).toLatin1()), "a part of an API key was found");
        }
    }
};

QTEST_GUILESS_MAIN(TestProxyApiKeys)
#include "tst_proxy_apikeys.moc"
