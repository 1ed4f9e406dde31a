// SWITCHYARD_NEEDS_KEYRING: accounts are imported into a real gnome-keyring.
//
// Token refresh of an account bound to an egress pool (issue 7 point 1, fail closed): the refresh goes through
// a proxy of the account's pool (HTTP CONNECT and SOCKS5 with remote DNS), which the fake proxies' own
// records show, never directly to the token endpoint. With every proxy of the pool down the fake OAuth server
// receives nothing at all, the refresh reports no_healthy_proxy, the account stays active, and once a proxy of
// the pool is back the refresh is made through it.
#include "fake_oauth/FakeOAuthProcess.h"
#include "lib/CodexRequests.h"
#include "lib/FakeEgressProxy.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/HttpTestClient.h"
#include "lib/ProxyProcess.h"

#include <QDateTime>
#include <QDeadlineTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QTcpServer>
#include <QTest>
#include <QThread>
#include <functional>
#include <memory>

using namespace sy;
using namespace sy::test;
using Kind = FakeEgressProxy::Kind;
using Mode = FakeEgressProxy::Mode;

namespace {

QString base64Url(const QByteArray &bytes)
{
    return QString::fromLatin1(bytes.toBase64(QByteArray::Base64UrlEncoding | QByteArray::OmitTrailingEquals));
}

QString jwt(const QJsonObject &payload)
{
    return base64Url("{\"alg\":\"none\",\"typ\":\"JWT\"}") + QLatin1Char('.') +
           base64Url(QJsonDocument(payload).toJson(QJsonDocument::Compact)) + QStringLiteral(".sig");
}

// An auth.json whose access token expires in two minutes: serve refreshes it at once, without any traffic.
FakeAccount writeExpiringAccount(const QString &dir, const QString &alias)
{
    FakeAccount a;
    const QString salt = alias + QString::number(QDateTime::currentMSecsSinceEpoch(), 16);
    a.alias = alias;
    a.chatgptAccountId = QStringLiteral("cgpt-egress-") + salt;
    a.userId = QStringLiteral("user-") + alias;
    a.email = alias + QStringLiteral("@example.test");
    a.plan = QStringLiteral("plus");
    const qint64 now = QDateTime::currentSecsSinceEpoch();
    const QJsonObject auth{{QStringLiteral("chatgpt_account_id"), a.chatgptAccountId},
                           {QStringLiteral("chatgpt_plan_type"), a.plan},
                           {QStringLiteral("chatgpt_user_id"), a.userId}};
    a.accessToken = jwt({{QStringLiteral("sub"), a.userId},
                         {QStringLiteral("exp"), now + 120},
                         {QStringLiteral("https://api.openai.com/auth"), auth},
                         {QStringLiteral("nonce"), salt}});
    const QString idToken = jwt({{QStringLiteral("sub"), a.userId},
                                 {QStringLiteral("email"), a.email},
                                 {QStringLiteral("exp"), now + 10 * 24 * 3600},
                                 {QStringLiteral("https://api.openai.com/auth"), auth}});
    a.refreshToken = QStringLiteral("rt_fake_egress_") + salt;
    const QJsonObject file{{QStringLiteral("OPENAI_API_KEY"), QJsonValue()},
                           {QStringLiteral("tokens"), QJsonObject{{QStringLiteral("id_token"), idToken},
                                                                  {QStringLiteral("access_token"), a.accessToken},
                                                                  {QStringLiteral("refresh_token"), a.refreshToken},
                                                                  {QStringLiteral("account_id"), a.chatgptAccountId}}},
                           {QStringLiteral("last_refresh"), QDateTime::currentDateTimeUtc().toString(Qt::ISODate)}};
    a.file = dir + QStringLiteral("/auth-") + alias + QStringLiteral(".json");
    QFile f(a.file);
    if (f.open(QIODevice::WriteOnly))
        f.write(QJsonDocument(file).toJson());
    return a;
}

QJsonObject identityOf(const FakeAccount &a)
{
    return {{QStringLiteral("email"), a.email},
            {QStringLiteral("chatgpt_account_id"), a.chatgptAccountId},
            {QStringLiteral("chatgpt_user_id"), a.userId},
            {QStringLiteral("chatgpt_plan_type"), a.plan}};
}

QJsonObject proxyEntry(const FakeEgressProxy *p, bool remoteDns = false)
{
    return {{QStringLiteral("name"), p->name()}, {QStringLiteral("url"), p->url(remoteDns)}};
}

QJsonObject pool(const QString &name, const QString &strategy, const QStringList &proxies)
{
    return {{QStringLiteral("name"), name},
            {QStringLiteral("strategy"), strategy},
            {QStringLiteral("proxies"), QJsonArray::fromStringList(proxies)},
            {QStringLiteral("request_budget_ms"), 3000},
            {QStringLiteral("max_attempts"), 2}};
}

bool waitFor(const std::function<bool()> &condition, int timeoutMs)
{
    QDeadlineTimer deadline(timeoutMs);
    while (!deadline.hasExpired()) {
        if (condition())
            return true;
        QThread::msleep(200);
    }
    return condition();
}

} // namespace

class TestEgressRefresh : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    FakeOAuthProcess m_oauth;
    std::unique_ptr<FakeEgressFleet> m_fleet;
    std::unique_ptr<ProxyProcess> m_proxy;
    QHash<QString, FakeAccount> m_accounts; // by alias

    // A serve instance with `config` and one expiring account per alias, their refresh tokens known to the
    // fake OAuth server.
    QString setUp(const QJsonObject &config, const QStringList &aliases)
    {
        m_proxy = std::make_unique<ProxyProcess>();
        m_proxy->setEnv(QStringLiteral("SWITCHYARD_AUTH_URL"), m_oauth.issuer());
        m_proxy->setConfig(config);
        if (!m_proxy->addAccounts(0)) // writes the config file the CLI needs
            return m_proxy->errorString();
        for (const QString &alias : aliases) {
            const FakeAccount a = writeExpiringAccount(QFileInfo(m_proxy->configPath()).absolutePath(), alias);
            m_accounts.insert(alias, a);
            const CliResult imported = m_proxy->cli(
                {QStringLiteral("accounts"), QStringLiteral("import"), a.file, QStringLiteral("--alias"), alias});
            if (imported.exitCode != 0)
                return QString::fromUtf8(imported.err);
            if (!m_oauth.addRefreshToken(a.refreshToken, identityOf(a)))
                return m_oauth.errorString();
        }
        return {};
    }

    // Usage polls the fake upstream received for an account.
    int usagePolls(const QString &alias)
    {
        int n = 0;
        for (const QJsonValue &v : m_fake.log()) {
            const QJsonObject e = v.toObject();
            n += str(e, "path").endsWith(QLatin1String("/wham/usage")) &&
                         str(e, "chatgpt_account_id") == m_accounts.value(alias).chatgptAccountId
                     ? 1
                     : 0;
        }
        return n;
    }

    // Requests without an x-request-id (usage polls) a fake proxy carried to the fake upstream.
    int carriedToUpstream(const QString &proxy) const
    {
        int n = 0;
        for (const QJsonValue &c : m_fleet->proxy(proxy)->record().value(QLatin1String("connections")).toArray()) {
            const QJsonObject o = c.toObject();
            if (o.value(QLatin1String("target_port")).toInt() != QUrl(m_fake.baseUrl()).port())
                continue;
            for (const QJsonValue &id : o.value(QLatin1String("requests")).toArray())
                n += id.toString() == QLatin1String("(none)") ? 1 : 0;
        }
        return n;
    }

    int refreshRequests()
    {
        int n = 0;
        for (const QJsonValue &v : m_oauth.log())
            n += str(v.toObject(), "grant_type") == QLatin1String("refresh_token") ? 1 : 0;
        return n;
    }

    // Requests a fake proxy carried inside tunnels to the fake OAuth server (refreshes carry no x-request-id).
    int carriedToOAuth(const QString &proxy) const
    {
        int n = 0;
        for (const QJsonValue &c : m_fleet->proxy(proxy)->record().value(QLatin1String("connections")).toArray()) {
            const QJsonObject o = c.toObject();
            if (o.value(QLatin1String("target_port")).toInt() == m_oauth.port())
                n += int(o.value(QLatin1String("requests")).toArray().size());
        }
        return n;
    }

    QJsonObject liveAccount(const QString &alias) const
    {
        const HttpResult r = httpRequest("GET", QUrl(m_proxy->url(QStringLiteral("/api/status"))));
        for (const QJsonValue &v : r.jsonDocument().object().value(QLatin1String("accounts")).toArray()) {
            if (str(v.toObject(), "account_alias") == alias)
                return v.toObject();
        }
        return {};
    }

    QString storedStatus(const QString &alias) const
    {
        const QJsonArray list =
            m_proxy->cli({QStringLiteral("accounts"), QStringLiteral("list"), QStringLiteral("--json")}).json().array();
        for (const QJsonValue &v : list) {
            if (str(v.toObject(), "alias") == alias || str(v.toObject(), "account_alias") == alias)
                return str(v.toObject(), "status");
        }
        return {};
    }

private slots:
    void initTestCase()
    {
        QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString()));
        QVERIFY2(m_oauth.start(), qPrintable(m_oauth.errorString()));
    }

    void init()
    {
        QVERIFY(m_oauth.reset());
        m_fleet = std::make_unique<FakeEgressFleet>();
    }

    void cleanup()
    {
        if (m_proxy && QTest::currentTestFailed())
            qWarning().noquote() << "serve stderr:" << QString::fromUtf8(m_proxy->serveStderr()).right(4000);
        if (m_proxy && m_proxy->isRunning())
            QCOMPARE(m_proxy->stop(), 0);
        m_proxy.reset();
    }

    // Each account refreshes through its own pool's proxy: HTTP CONNECT for one, SOCKS5 (remote DNS) for the
    // other. Every refresh the token endpoint saw is one a pool proxy carried; so is every usage poll.
    void refreshGoesThroughThePool()
    {
        QVERIFY(m_fleet->add(QStringLiteral("h"), Kind::HttpConnect));
        QVERIFY(m_fleet->add(QStringLiteral("s"), Kind::Socks5));
        QVERIFY(m_fleet->add(QStringLiteral("unused"), Kind::HttpConnect));
        const QString error =
            setUp({{QStringLiteral("usage_poll_interval_s"), 1},
                   {QStringLiteral("egress_proxies"), QJsonArray{proxyEntry(m_fleet->proxy(QStringLiteral("h"))),
                                                                 proxyEntry(m_fleet->proxy(QStringLiteral("s")), true),
                                                                 proxyEntry(m_fleet->proxy(QStringLiteral("unused")))}},
                   {QStringLiteral("egress_pools"),
                    QJsonArray{pool(QStringLiteral("hp"), QStringLiteral("round_robin"), {QStringLiteral("h")}),
                               pool(QStringLiteral("sp"), QStringLiteral("ordered"), {QStringLiteral("s")}),
                               pool(QStringLiteral("other"), QStringLiteral("ordered"), {QStringLiteral("unused")})}},
                   {QStringLiteral("egress_account_bindings"),
                    QJsonObject{{QStringLiteral("viahttp"), QStringLiteral("hp")},
                                {QStringLiteral("viasocks"), QStringLiteral("sp")}}}},
                  {QStringLiteral("viahttp"), QStringLiteral("viasocks")});
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QVERIFY2(m_proxy->start(m_fake.baseUrl()), qPrintable(m_proxy->errorString()));

        QVERIFY2(waitFor([this] { return refreshRequests() >= 2; }, 30000),
                 qPrintable(QStringLiteral("%1 refreshes").arg(refreshRequests())));
        QVERIFY(waitFor(
            [this] {
                return liveAccount(QStringLiteral("viasocks")).value(QLatin1String("credentials")) ==
                       QStringLiteral("ready");
            },
            5000));
        QThread::msleep(500); // a refresh sent directly would have shown up by now as a third entry
        QCOMPARE(refreshRequests(), 2);
        for (const QJsonValue &v : m_oauth.log())
            QCOMPARE(v.toObject().value(QLatin1String("status")).toInt(), 200);
        // The proxies' own records: one refresh each, through a tunnel to the token endpoint's port.
        QCOMPARE(carriedToOAuth(QStringLiteral("h")), 1);
        QCOMPARE(carriedToOAuth(QStringLiteral("s")), 1);
        QCOMPARE(carriedToOAuth(QStringLiteral("unused")), 0);
        QCOMPARE(carriedToOAuth(QStringLiteral("h")) + carriedToOAuth(QStringLiteral("s")), refreshRequests());
        QCOMPARE(storedStatus(QStringLiteral("viahttp")), QStringLiteral("active"));
        QCOMPARE(storedStatus(QStringLiteral("viasocks")), QStringLiteral("active"));
        QVERIFY(!liveAccount(QStringLiteral("viahttp")).contains(QLatin1String("refresh_blocked")));

        // Usage polls: through the account's pool too, never direct.
        QVERIFY(waitFor(
            [this] {
                return usagePolls(QStringLiteral("viahttp")) >= 2 && usagePolls(QStringLiteral("viasocks")) >= 2;
            },
            20000));
        QCOMPARE(m_proxy->stop(), 0);
        QCOMPARE(carriedToUpstream(QStringLiteral("h")), usagePolls(QStringLiteral("viahttp")));
        QCOMPARE(carriedToUpstream(QStringLiteral("s")), usagePolls(QStringLiteral("viasocks")));
        QCOMPARE(carriedToUpstream(QStringLiteral("unused")), 0);
    }

    // Every proxy of the pool is down: nothing reaches the token endpoint, the refresh reports the egress
    // reason, the account is not sent to reauth_required; when a proxy comes back the refresh goes through it.
    void refreshFailsClosedWithoutAHealthyProxy()
    {
        QVERIFY(m_fleet->add(QStringLiteral("d1"), Kind::HttpConnect, Mode::Down));
        QVERIFY(m_fleet->add(QStringLiteral("d2"), Kind::Socks5, Mode::Down));
        const QString error = setUp(
            {{QStringLiteral("egress_proxies"), QJsonArray{proxyEntry(m_fleet->proxy(QStringLiteral("d1"))),
                                                           proxyEntry(m_fleet->proxy(QStringLiteral("d2")))}},
             {QStringLiteral("egress_pools"), QJsonArray{pool(QStringLiteral("dead"), QStringLiteral("round_robin"),
                                                              {QStringLiteral("d1"), QStringLiteral("d2")})}},
             {QStringLiteral("egress_default_pool"), QStringLiteral("dead")}},
            {QStringLiteral("bound")});
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QVERIFY2(m_proxy->start(m_fake.baseUrl()), qPrintable(m_proxy->errorString()));

        QJsonObject account;
        QVERIFY2(waitFor(
                     [&] {
                         account = liveAccount(QStringLiteral("bound"));
                         return account.contains(QLatin1String("refresh_blocked"));
                     },
                     20000),
                 QJsonDocument(account).toJson().constData());
        const QJsonObject blocked = account.value(QLatin1String("refresh_blocked")).toObject();
        QCOMPARE(str(blocked, "reason"), QStringLiteral("no_healthy_proxy"));
        QVERIFY2(str(blocked, "detail").contains(QLatin1String("dead")), qPrintable(str(blocked, "detail")));
        QVERIFY(m_proxy->serveStderr().contains("no_healthy_proxy"));
        // The token endpoint saw nothing at all, and the account still counts as signed in.
        QCOMPARE(m_oauth.log().size(), 0);
        QCOMPARE(str(account, "status"), QStringLiteral("active"));
        QCOMPARE(storedStatus(QStringLiteral("bound")), QStringLiteral("active"));
        QCOMPARE(carriedToOAuth(QStringLiteral("d1")) + carriedToOAuth(QStringLiteral("d2")), 0);

        // Retried later: once a probe round finds d2 up, the refresh goes out through it.
        m_fleet->proxy(QStringLiteral("d2"))->setMode(Mode::Healthy);
        QVERIFY2(waitFor([this] { return refreshRequests() >= 1; }, 75000), "no refresh after the proxy came back");
        QCOMPARE(refreshRequests(), 1);
        QCOMPARE(carriedToOAuth(QStringLiteral("d2")), 1);
        QCOMPARE(carriedToOAuth(QStringLiteral("d1")), 0);
        QVERIFY(
            waitFor([this] { return !liveAccount(QStringLiteral("bound")).contains(QLatin1String("refresh_blocked")); },
                    10000));
        QCOMPARE(storedStatus(QStringLiteral("bound")), QStringLiteral("active"));
    }

    // A 401 whose refresh the pool cannot carry (its only proxy cannot reach the token endpoint): the turn's
    // blocked_by names the egress reason next to the upstream's refusal, and the account stays signed in.
    void turnReportsTheRefreshEgressReason()
    {
        QVERIFY(m_fleet->add(QStringLiteral("ok"), Kind::HttpConnect));
        QTcpServer closed; // a port nothing listens on once closed
        QVERIFY(closed.listen(QHostAddress::LocalHost));
        const quint16 deadPort = closed.serverPort();
        closed.close();
        m_proxy = std::make_unique<ProxyProcess>();
        m_proxy->setEnv(QStringLiteral("SWITCHYARD_AUTH_URL"), QStringLiteral("http://127.0.0.1:%1").arg(deadPort));
        m_proxy->setConfig(
            {{QStringLiteral("egress_proxies"), QJsonArray{proxyEntry(m_fleet->proxy(QStringLiteral("ok")))}},
             {QStringLiteral("egress_pools"),
              QJsonArray{pool(QStringLiteral("main"), QStringLiteral("ordered"), {QStringLiteral("ok")})}},
             {QStringLiteral("egress_default_pool"), QStringLiteral("main")}});
        QVERIFY2(m_proxy->addAccounts(1), qPrintable(m_proxy->errorString()));
        QVERIFY2(m_proxy->start(m_fake.baseUrl()), qPrintable(m_proxy->errorString()));
        const FakeAccount a = m_proxy->accounts().at(0);
        QVERIFY(m_fake.scriptToken(a.accessToken, {QStringLiteral("401")}, true));

        const SseResult r = sseRequest("POST", QUrl(m_proxy->url(QStringLiteral("/backend-api/codex/responses"))),
                                       kCodexHeaders, codexBody(QStringLiteral("hello")), 20000);
        QVERIFY2(r.status >= 400, r.body.constData());
        const QJsonObject row = m_proxy->waitForRequest(QString::fromLatin1(r.header("x-request-id")));
        QStringList blockedBy;
        for (const QJsonValue &v : row.value(QLatin1String("blocked_by")).toArray())
            blockedBy << v.toString();
        QVERIFY2(blockedBy.contains(QLatin1String("proxy_unreachable")), qPrintable(blockedBy.join(u',')));
        const QJsonObject account = liveAccount(QStringLiteral("acct1"));
        QCOMPARE(str(account.value(QLatin1String("refresh_blocked")).toObject(), "reason"),
                 QStringLiteral("proxy_unreachable"));
        QCOMPARE(storedStatus(QStringLiteral("acct1")), QStringLiteral("active"));
        // The proxy was asked for a tunnel to the token endpoint; nothing went there directly.
        bool asked = false;
        for (const QJsonValue &c :
             m_fleet->proxy(QStringLiteral("ok"))->record().value(QLatin1String("connections")).toArray())
            asked = asked || c.toObject().value(QLatin1String("target_port")).toInt() == deadPort;
        QVERIFY(asked);
    }
};

QTEST_GUILESS_MAIN(TestEgressRefresh)
#include "tst_egress_refresh.moc"
