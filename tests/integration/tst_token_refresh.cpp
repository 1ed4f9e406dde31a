// SWITCHYARD_NEEDS_KEYRING: accounts are imported into a real gnome-keyring.
//
// Token refresh through a running `switchyard serve` (issue 3 point 4) against the fake upstream and the fake
// OAuth server: a 401 leads to one refresh and a retry on the same account with the new access token; a
// refused refresh moves the account to reauth_required and the turn fails over; an access token about to
// expire is refreshed without any traffic and the keychain then holds the rotated tokens; concurrent 401s on
// one account share a single refresh; a request sent early with the token a refresh then replaced is not the
// one dispatched.
#include "fake_oauth/FakeOAuthProcess.h"
#include "lib/CodexRequests.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/HttpTestClient.h"
#include "lib/ProxyProcess.h"
#include "lib/RawHttpClient.h"

#include <QDateTime>
#include <QDeadlineTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QScopeGuard>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <memory>

using namespace sy;
using namespace sy::test;

namespace {

QString base64Url(const QByteArray &bytes)
{
    return QString::fromLatin1(bytes.toBase64(QByteArray::Base64UrlEncoding | QByteArray::OmitTrailingEquals));
}

QString jwt(const QJsonObject &payload)
{
    return base64Url(R"({"alg":"none","typ":"JWT"})") + QLatin1Char('.') +
           base64Url(QJsonDocument(payload).toJson(QJsonDocument::Compact)) + QStringLiteral(".sig");
}

// Like makeFakeAccount, but the access token expires `expiresInS` seconds from now.
FakeAccount makeShortLivedAccount(const QString &dir, const QString &alias, qint64 expiresInS)
{
    FakeAccount a;
    const QString salt = QString::number(QDateTime::currentMSecsSinceEpoch(), 16);
    a.alias = alias;
    a.chatgptAccountId = QStringLiteral("cgpt-short-") + salt;
    a.userId = QStringLiteral("user-short");
    a.email = QStringLiteral("short@example.test");
    a.plan = QStringLiteral("plus");
    const qint64 now = QDateTime::currentSecsSinceEpoch();
    const QJsonObject auth{{QStringLiteral("chatgpt_account_id"), a.chatgptAccountId},
                           {QStringLiteral("chatgpt_plan_type"), a.plan},
                           {QStringLiteral("chatgpt_user_id"), a.userId}};
    a.accessToken = jwt({{QStringLiteral("sub"), a.userId},
                         {QStringLiteral("exp"), now + expiresInS},
                         {QStringLiteral("https://api.openai.com/auth"), auth},
                         {QStringLiteral("nonce"), salt}});
    const QString idToken = jwt({{QStringLiteral("sub"), a.userId},
                                 {QStringLiteral("email"), a.email},
                                 {QStringLiteral("exp"), now + 10 * 24 * 3600},
                                 {QStringLiteral("https://api.openai.com/auth"), auth}});
    a.refreshToken = QStringLiteral("rt_fake_short_") + salt;
    const QJsonObject file{{QStringLiteral("OPENAI_API_KEY"), QJsonValue()},
                           {QStringLiteral("tokens"), QJsonObject{{QStringLiteral("id_token"), idToken},
                                                                  {QStringLiteral("access_token"), a.accessToken},
                                                                  {QStringLiteral("refresh_token"), a.refreshToken},
                                                                  {QStringLiteral("account_id"), a.chatgptAccountId}}},
                           {QStringLiteral("last_refresh"), QDateTime::currentDateTimeUtc().toString(Qt::ISODate)}};
    a.file = dir + QStringLiteral("/auth-short.json");
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

// The tokens the keychain holds for an account ({} when none).
QJsonObject keychainTokens(const QString &accountId)
{
    QProcess p;
    p.start(QStringLiteral("secret-tool"), {QStringLiteral("lookup"), QStringLiteral("server"),
                                            QStringLiteral("switchyard"), QStringLiteral("user"),
                                            QStringLiteral("account/") + accountId});
    if (!p.waitForFinished(10000)) {
        p.kill();
        p.waitForFinished();
        return {};
    }
    return QJsonDocument::fromJson(p.readAllStandardOutput()).object();
}

} // namespace

class TestTokenRefresh : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    FakeOAuthProcess m_oauth;
    std::unique_ptr<ProxyProcess> m_proxy;

    QString newProxy(int accounts, const QJsonObject &config = {})
    {
        m_proxy = std::make_unique<ProxyProcess>();
        m_proxy->setEnv(QStringLiteral("SWITCHYARD_AUTH_URL"), m_oauth.issuer());
        if (!config.isEmpty())
            m_proxy->setConfig(config);
        if (!m_proxy->addAccounts(accounts)) // also writes the config file the CLI needs
            return m_proxy->errorString();
        return {};
    }

    bool registerRefreshTokens()
    {
        for (const FakeAccount &a : m_proxy->accounts()) {
            if (!m_oauth.addRefreshToken(a.refreshToken, identityOf(a)))
                return false;
        }
        return true;
    }

    bool pin(const FakeAccount &a)
    {
        return m_proxy->cli({QStringLiteral("accounts"), QStringLiteral("pin"), a.id}).exitCode == 0;
    }

    QUrl codexUrl() const { return QUrl(m_proxy->url(QStringLiteral("/backend-api/codex/responses"))); }
    SseResult codexTurn(const QString &text) { return sseRequest("POST", codexUrl(), kCodexHeaders, codexBody(text)); }

    QJsonArray upstreamTurns(const QByteArray &requestId = {})
    {
        QJsonArray out;
        for (const QJsonValue &v : m_fake.log()) {
            const QJsonObject e = v.toObject();
            if (str(e, "path").endsWith(QLatin1String("/codex/responses")) &&
                (requestId.isEmpty() || str(e, "x_request_id").toLatin1() == requestId))
                out.append(e);
        }
        return out;
    }

    QJsonArray refreshRequests()
    {
        QJsonArray out;
        for (const QJsonValue &v : m_oauth.log()) {
            if (str(v.toObject(), "grant_type") == QLatin1String("refresh_token"))
                out.append(v);
        }
        return out;
    }

    QJsonObject accountJson(const QString &id)
    {
        const QJsonArray list =
            m_proxy->cli({QStringLiteral("accounts"), QStringLiteral("list"), QStringLiteral("--json")}).json().array();
        for (const QJsonValue &v : list) {
            if (str(v.toObject(), "id") == id || str(v.toObject(), "account_id") == id)
                return v.toObject();
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
        QVERIFY(m_fake.reset());
        QVERIFY(m_oauth.reset());
    }

    void cleanup()
    {
        if (m_proxy && QTest::currentTestFailed())
            qWarning().noquote() << "serve stderr:" << QString::fromUtf8(m_proxy->serveStderr());
        m_proxy.reset();
    }

    // (a) A 401 refreshes once and the turn is retried on the same account with the new access token.
    void unauthorizedRefreshesAndRetriesSameAccount()
    {
        QString error = newProxy(2);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QVERIFY(registerRefreshTokens());
        const FakeAccount a = m_proxy->accounts().at(0);
        QVERIFY(pin(a));
        QVERIFY2(m_proxy->start(m_fake.baseUrl()), qPrintable(m_proxy->errorString()));
        QVERIFY(m_fake.scriptToken(a.accessToken, {QStringLiteral("401")}, true));

        const SseResult r = codexTurn(QStringLiteral("ECHO: refreshed"));
        QVERIFY2(r.status == 200, r.body.constData());
        QCOMPARE(r.eventTypes().value(r.events.size() - 1), QByteArray("response.completed"));

        const QJsonArray turns = upstreamTurns(r.header("x-request-id"));
        QCOMPARE(turns.size(), 2);
        const QJsonObject first = turns.at(0).toObject(), second = turns.at(1).toObject();
        QCOMPARE(str(first, "chatgpt_account_id"), a.chatgptAccountId);
        QCOMPARE(str(second, "chatgpt_account_id"), a.chatgptAccountId);
        QCOMPARE(str(first, "authorization"), a.accessToken);
        QVERIFY(!str(second, "authorization").isEmpty());
        QVERIFY(str(second, "authorization") != a.accessToken);

        const QJsonArray refreshes = refreshRequests();
        QCOMPARE(refreshes.size(), 1);
        QCOMPARE(str(refreshes.at(0).toObject(), "refresh_token"), a.refreshToken);
        QCOMPARE(refreshes.at(0).toObject().value(QLatin1String("status")).toInt(), 200);
        QCOMPARE(str(refreshes.at(0).toObject(), "body_format"), QStringLiteral("json"));

        // The rotated tokens are in the keychain, and the next turn uses the new token at once.
        QDeadlineTimer deadline(10000);
        QJsonObject stored;
        while (!deadline.hasExpired()) {
            stored = keychainTokens(a.id);
            if (str(stored, "access_token") == str(second, "authorization"))
                break;
            QThread::msleep(100);
        }
        QCOMPARE(str(stored, "access_token"), str(second, "authorization"));
        QVERIFY(!str(stored, "refresh_token").isEmpty());
        QVERIFY(str(stored, "refresh_token") != a.refreshToken);
        const SseResult next = codexTurn(QStringLiteral("ECHO: again"));
        QCOMPARE(next.status, 200);
        QCOMPARE(upstreamTurns(next.header("x-request-id")).size(), 1);
        QCOMPARE(refreshRequests().size(), 1);
    }

    // (b) A refused refresh: reauth_required with a reason, and the turn fails over to the other account.
    void permanentFailureRequiresReauthAndFailsOver()
    {
        QString error = newProxy(2);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const FakeAccount a = m_proxy->accounts().at(0), b = m_proxy->accounts().at(1);
        // Only b's refresh token is known to the server: a's refresh is refused (refresh_token_invalidated).
        QVERIFY(m_oauth.addRefreshToken(b.refreshToken, identityOf(b)));
        QVERIFY(pin(a));
        QVERIFY2(m_proxy->start(m_fake.baseUrl()), qPrintable(m_proxy->errorString()));
        QVERIFY(m_fake.scriptToken(a.accessToken, {QStringLiteral("401")}, true));

        const SseResult r = codexTurn(QStringLiteral("ECHO: failed over"));
        QVERIFY2(r.status == 200, r.body.constData());
        const QJsonArray turns = upstreamTurns(r.header("x-request-id"));
        QCOMPARE(turns.size(), 2);
        QCOMPARE(str(turns.at(0).toObject(), "chatgpt_account_id"), a.chatgptAccountId);
        QCOMPARE(str(turns.at(1).toObject(), "chatgpt_account_id"), b.chatgptAccountId);
        const QJsonArray refreshes = refreshRequests();
        QCOMPARE(refreshes.size(), 1);
        QCOMPARE(str(refreshes.at(0).toObject(), "error"), QStringLiteral("invalid_grant"));

        QJsonObject account;
        QDeadlineTimer deadline(10000);
        while (!deadline.hasExpired()) {
            account = accountJson(a.id);
            if (str(account, "status") == QLatin1String("reauth_required"))
                break;
            QThread::msleep(100);
        }
        QCOMPARE(str(account, "status"), QStringLiteral("reauth_required"));
        const QString reason = str(account, "status_reason");
        QVERIFY2(reason.contains(QLatin1String("refresh_token_invalidated")), qPrintable(reason));
        QVERIFY2(reason.contains(QLatin1String("accounts login")), qPrintable(reason));
        QVERIFY(!reason.contains(a.refreshToken));
        QCOMPARE(str(accountJson(b.id), "status"), QStringLiteral("active"));

        // The refused account is out of rotation: later turns go to b without another refresh.
        const SseResult next = codexTurn(QStringLiteral("ECHO: next"));
        QCOMPARE(next.status, 200);
        const QJsonArray nextTurns = upstreamTurns(next.header("x-request-id"));
        QCOMPARE(nextTurns.size(), 1);
        QCOMPARE(str(nextTurns.at(0).toObject(), "chatgpt_account_id"), b.chatgptAccountId);
        QCOMPARE(refreshRequests().size(), 1);
    }

    // (c) An access token that expires in two minutes is refreshed without traffic.
    void expiringTokenIsRefreshedProactively()
    {
        QString error = newProxy(0);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const FakeAccount a = makeShortLivedAccount(QFileInfo(m_proxy->configPath()).absolutePath(),
                                                    QStringLiteral("short"), 120);
        const CliResult imported = m_proxy->cli(
            {QStringLiteral("accounts"), QStringLiteral("import"), a.file, QStringLiteral("--alias"), a.alias});
        QVERIFY2(imported.exitCode == 0, imported.err.constData());
        const QString id =
            QRegularExpression(QStringLiteral("(acc_[0-9a-f]+)")).match(QString::fromUtf8(imported.out)).captured(1);
        QVERIFY(!id.isEmpty());
        QCOMPARE(str(keychainTokens(id), "refresh_token"), a.refreshToken);
        QVERIFY(m_oauth.addRefreshToken(a.refreshToken, identityOf(a)));
        QVERIFY2(m_proxy->start(m_fake.baseUrl()), qPrintable(m_proxy->errorString()));

        QJsonObject stored;
        QDeadlineTimer deadline(20000);
        while (!deadline.hasExpired()) {
            stored = keychainTokens(id);
            if (!str(stored, "refresh_token").isEmpty() && str(stored, "refresh_token") != a.refreshToken)
                break;
            QThread::msleep(200);
        }
        QVERIFY2(str(stored, "refresh_token") != a.refreshToken, "the keychain still holds the imported tokens");
        QVERIFY(str(stored, "refresh_token").startsWith(QLatin1String("rt_fake_")));
        QVERIFY(!str(stored, "access_token").isEmpty());
        QVERIFY(str(stored, "access_token") != a.accessToken);
        QVERIFY(!str(stored, "id_token").isEmpty());
        QCOMPARE(upstreamTurns().size(), 0); // no traffic was needed
        const QJsonArray refreshes = refreshRequests();
        QCOMPARE(refreshes.size(), 1);
        QCOMPARE(str(refreshes.at(0).toObject(), "refresh_token"), a.refreshToken);

        // The database knows the new expiry (the fake issues one-hour access tokens) and the refresh time.
        QDeadlineTimer later(5000);
        QJsonObject account;
        while (!later.hasExpired()) {
            account = accountJson(id);
            const qint64 expires = QDateTime::fromString(str(account, "token_expires_at"), Qt::ISODateWithMs)
                                       .toMSecsSinceEpoch();
            if (expires > QDateTime::currentMSecsSinceEpoch() + 30 * 60 * 1000)
                break;
            QThread::msleep(100);
        }
        const qint64 expires =
            QDateTime::fromString(str(account, "token_expires_at"), Qt::ISODateWithMs).toMSecsSinceEpoch();
        QVERIFY2(expires > QDateTime::currentMSecsSinceEpoch() + 30 * 60 * 1000,
                 QJsonDocument(account).toJson().constData());
        // The next turn uses the rotated access token.
        const SseResult r = codexTurn(QStringLiteral("ECHO: after refresh"));
        QCOMPARE(r.status, 200);
        const QJsonArray turns = upstreamTurns(r.header("x-request-id"));
        QCOMPARE(turns.size(), 1);
        QCOMPARE(str(turns.at(0).toObject(), "authorization"), str(stored, "access_token"));
    }

    // A large body is sent upstream with its account's token while its claim is on its way and its body scanned,
    // all but its last byte (Turn::sendEarly). When a refresh replaces that token before the dispatch (here:
    // another turn's 401, while the fault build's scan-hold keeps the scan's result back), that early call is
    // given up and the request sent anew with the new token: the upstream sees it once, never with the old one.
    // Red when the dispatch takes the early call without comparing tokens (the old token's 401, a second
    // refresh round and a retry: two upstream requests for the turn).
    void aTokenRefreshedBeforeTheDispatchIsNotTheOneSentEarly()
    {
        const QString faults = qEnvironmentVariable("SWITCHYARD_FAULTS_BIN");
        QVERIFY2(!faults.isEmpty(), "run through ctest (SWITCHYARD_FAULTS_BIN)");
        QString error = newProxy(1, {{QStringLiteral("slots_per_account"), 4}});
        QVERIFY2(error.isEmpty(), qPrintable(error));
        m_proxy->setBinary(faults);
        QTemporaryDir dir;
        const QString hold = dir.filePath(QStringLiteral("scan-hold"));
        QVERIFY(QFile(hold).open(QIODevice::WriteOnly));
        const auto release = qScopeGuard([&hold] { QFile::remove(hold); });
        m_proxy->setEnv(QStringLiteral("SWITCHYARD_FAULTS"), QStringLiteral("scan-hold"));
        m_proxy->setEnv(QStringLiteral("SWITCHYARD_FAULT_SCAN_HOLD_FLAG"), hold);
        QVERIFY(registerRefreshTokens());
        const FakeAccount a = m_proxy->accounts().at(0);
        QVERIFY2(m_proxy->start(m_fake.baseUrl()), qPrintable(m_proxy->errorString()));
        QVERIFY(m_fake.scriptToken(a.accessToken, {QStringLiteral("401")}, true));
        const auto stagesCount = [this](const char *name) {
            const HttpResult s = httpRequest("GET", QUrl(m_proxy->url(QStringLiteral("/api/status"))));
            return s.json().value(QLatin1String("turn_stages")).toObject().value(QLatin1String(name)).toInteger(-1);
        };

        const QByteArray body = codexBody(QString(1536 * 1024, QLatin1Char('r'))); // above 1 MiB: scanned elsewhere
        RawHttpClient large;
        QVERIFY(large.connectTo(m_proxy->port()));
        large.send(RawHttpClient::buildRequest("POST", "/backend-api/codex/responses",
                                               {{"content-type", "application/json"}, {"session-id", "s-large"}},
                                               body));
        QTRY_COMPARE_WITH_TIMEOUT(stagesCount("early_sends"), qint64(1), 5000); // sent with the old token
        const SseResult other = codexTurn(QStringLiteral("ECHO: refresh now"));
        QVERIFY2(other.status == 200, other.body.constData());
        QCOMPARE(refreshRequests().size(), 1);
        const QJsonArray otherTurns = upstreamTurns(other.header("x-request-id"));
        QCOMPARE(otherTurns.size(), 2); // the 401, then the new token
        const QString newToken = str(otherTurns.at(1).toObject(), "authorization");
        QVERIFY(newToken != a.accessToken);
        QCOMPARE(large.partial().status, 0); // the refresh came before the large turn's dispatch
        // (The other turn's requests went early too, as every body does: only what the large turn adds counts.)
        const qint64 sentEarlyBefore = stagesCount("dispatches_sent_early");
        QFile::remove(hold);

        const std::optional<RawResponse> r = large.readResponse(15000);
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        const QJsonArray turns = upstreamTurns(r->header("x-request-id"));
        QCOMPARE(turns.size(), 1);
        QCOMPARE(str(turns.at(0).toObject(), "authorization"), newToken);
        QCOMPARE(turns.at(0).toObject().value(QLatin1String("body_size")).toInteger(), body.size());
        QCOMPARE(stagesCount("dispatches_sent_early"), sentEarlyBefore); // sent anew
        QCOMPARE(refreshRequests().size(), 1);
    }

    // (d) Five concurrent turns that all get a 401 on one account share exactly one refresh.
    void concurrentUnauthorizedShareOneRefresh()
    {
        QString error = newProxy(1, {{QStringLiteral("slots_per_account"), 8}});
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QVERIFY(registerRefreshTokens());
        // A slow token endpoint, so that every turn's 401 arrives while the refresh is in flight.
        QVERIFY(m_oauth.configure({{QStringLiteral("token_delay_ms"), 1500}}));
        const FakeAccount a = m_proxy->accounts().at(0);
        QVERIFY2(m_proxy->start(m_fake.baseUrl()), qPrintable(m_proxy->errorString()));
        QVERIFY(m_fake.scriptToken(a.accessToken, {QStringLiteral("401")}, true));

        constexpr int kTurns = 5;
        QList<SseResult> results(kTurns);
        QList<QThread *> threads;
        const QUrl url = codexUrl();
        for (int i = 0; i < kTurns; ++i) {
            SseResult *r = &results[i];
            const QByteArray body = codexBody(QStringLiteral("ECHO: concurrent %1").arg(i));
            threads.append(
                QThread::create([r, url, body] { *r = sseRequest("POST", url, kCodexHeaders, body, 30000); }));
            threads.last()->start();
        }
        for (QThread *t : threads) {
            QVERIFY(t->wait(40000));
            delete t;
        }
        QString newToken;
        for (const SseResult &r : results) {
            QVERIFY2(r.status == 200, r.body.constData());
            const QJsonArray turns = upstreamTurns(r.header("x-request-id"));
            QCOMPARE(turns.size(), 2);
            QCOMPARE(str(turns.at(0).toObject(), "authorization"), a.accessToken);
            const QString used = str(turns.at(1).toObject(), "authorization");
            QVERIFY(used != a.accessToken);
            if (newToken.isEmpty())
                newToken = used;
            QCOMPARE(used, newToken); // everyone got the one result
        }
        const QJsonArray refreshes = refreshRequests();
        QCOMPARE(refreshes.size(), 1);
        QCOMPARE(refreshes.at(0).toObject().value(QLatin1String("status")).toInt(), 200);
        QCOMPARE(str(accountJson(a.id), "status"), QStringLiteral("active"));
    }
};

QTEST_GUILESS_MAIN(TestTokenRefresh)
#include "tst_token_refresh.moc"
