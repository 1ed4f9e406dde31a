// SWITCHYARD_NEEDS_KEYRING: the keychain row keeps the tokens in a real gnome-keyring (ctest runs this file
// inside tools/with-keyring.sh, with a throwaway HOME); the database row must leave that keyring empty.
//
// Secrets at rest (issue 3 point 7) for a session that also logs in and refreshes, once per secret backend
// (keychain; SWITCHYARD_SECRET_BACKEND=database with a 0600 key file): an import, a browser login against
// the fake authorization server (an HTTP client as the browser), serve with a proactive refresh of the
// login's short-lived access token, a 401 that is repaired by a refresh, a refresh the server refuses, an
// upstream 500, the CLI's reports, a graceful stop and a crash. Every secret of the session is then looked
// for everywhere it must not be: the imported tokens, every token the fake server issued (at the code
// exchange and at each refresh), the authorization code and the PKCE verifier. tst_secrets_at_rest covers
// the request and error paths in more depth; both share tests/support/lib/SecretScan.
#include "accounts/AuthTokens.h"
#include "accounts/DatabaseSecretStore.h"
#include "accounts/SecretCipher.h"
#include "fake_oauth/FakeOAuthProcess.h"
#include "lib/CodexRequests.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/SecretScan.h"

#include <QDeadlineTimer>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QProcess>
#include <QRegularExpression>
#include <QTest>
#include <QThread>
#include <QUrlQuery>
#include <csignal>

using namespace sy;
using namespace sy::test;

#define QVERIFY_B(cond, message) QVERIFY2(cond, QByteArray(message).constData())

namespace {

QByteArray secretTool(const QStringList &args)
{
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(QStringLiteral("secret-tool"), args);
    if (!p.waitForFinished(10000)) {
        p.kill();
        p.waitForFinished();
        return "<secret-tool hung>";
    }
    return p.readAllStandardOutput();
}

// The keychain users ("account/<id>") Switchyard has items for.
QStringList keychainUsers()
{
    const QByteArray text = secretTool(
        {QStringLiteral("search"), QStringLiteral("--all"), QStringLiteral("server"), QStringLiteral("switchyard")});
    QStringList users;
    const QRegularExpression re(QStringLiteral("attribute\\.user\\s*=\\s*(\\S+)"));
    for (auto it = re.globalMatch(QString::fromUtf8(text)); it.hasNext();)
        users << it.next().captured(1);
    users.sort();
    return users;
}

QJsonObject identityOf(const FakeAccount &a)
{
    return {{QStringLiteral("email"), a.email},
            {QStringLiteral("chatgpt_account_id"), a.chatgptAccountId},
            {QStringLiteral("chatgpt_user_id"), a.userId},
            {QStringLiteral("chatgpt_plan_type"), a.plan}};
}

struct Login
{
    int exitCode = -1;
    QString accountId;
    BrowserVisit visit;
    QByteArray output;
};

// `accounts login` as the user runs it, with an HTTP client as the browser that visits the printed URL.
Login runLogin(ScanSession &s, const QString &alias)
{
    Login r;
    const QStringList args{QStringLiteral("accounts"), QStringLiteral("login"), QStringLiteral("--alias"), alias};
    QProcess p;
    s.prepare(p);
    p.start(qEnvironmentVariable("SWITCHYARD_BIN"), args);
    QUrl url;
    QDeadlineTimer deadline(15000);
    while (url.isEmpty() && !deadline.hasExpired()) {
        while (p.canReadLine()) {
            const QByteArray line = p.readLine();
            r.output += line;
            if (line.startsWith("http://"))
                url = QUrl::fromEncoded(line.trimmed(), QUrl::StrictMode);
        }
        if (url.isEmpty() && !p.waitForReadyRead(200) && p.state() == QProcess::NotRunning)
            break;
    }
    if (!url.isEmpty())
        r.visit = visitAsBrowser(url);
    if (p.waitForFinished(30000)) {
        r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    } else {
        p.kill();
        p.waitForFinished();
    }
    r.output += p.readAllStandardOutput() + p.readAllStandardError();
    s.recordCli(args, r.output);
    r.accountId = QRegularExpression(QStringLiteral("logged in: added (acc_[0-9a-f]+)"))
                      .match(QString::fromUtf8(r.output))
                      .captured(1);
    return r;
}

} // namespace

class tst_SecretsAtRestLogin : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    FakeOAuthProcess m_oauth;

    QJsonArray tokenRequests(const QString &grant)
    {
        QJsonArray out;
        for (const QJsonValue &v : m_oauth.log()) {
            if (str(v.toObject(), "path") == QLatin1String("/oauth/token") && str(v.toObject(), "grant_type") == grant)
                out.append(v);
        }
        return out;
    }

    // Every secret the fake authorization server received or handed out so far.
    void collectOAuthSecrets(ScanSession &s)
    {
        for (const QJsonValue &v : m_oauth.log()) {
            const QJsonObject e = v.toObject();
            const QString request = QStringLiteral("OAuth request #%1").arg(e.value(QLatin1String("seq")).toInt());
            s.addSecret(request + QStringLiteral(" authorization code"), str(e, "code"));
            s.addSecret(request + QStringLiteral(" PKCE verifier"), str(e, "code_verifier"));
            s.addSecret(request + QStringLiteral(" presented refresh token"), str(e, "refresh_token"));
            const QJsonObject issued = e.value(QLatin1String("issued")).toObject();
            s.addTokens(request + QStringLiteral(" issued"), str(issued, "access_token"), str(issued, "refresh_token"),
                        str(issued, "id_token"));
        }
    }

    // The refresh request that presented `refreshToken` ({} if none came within the time).
    QJsonObject waitForRefresh(const QString &refreshToken, int timeoutMs = 20000)
    {
        QDeadlineTimer deadline(timeoutMs);
        do {
            for (const QJsonValue &v : tokenRequests(QStringLiteral("refresh_token"))) {
                if (str(v.toObject(), "refresh_token") == refreshToken)
                    return v.toObject();
            }
            QThread::msleep(100);
        } while (!deadline.hasExpired());
        return {};
    }

    QJsonArray upstreamTurns(const QByteArray &requestId)
    {
        QJsonArray out;
        for (const QJsonValue &v : m_fake.log()) {
            const QJsonObject e = v.toObject();
            if (str(e, "path").endsWith(QLatin1String("/codex/responses")) &&
                str(e, "x_request_id").toLatin1() == requestId)
                out.append(e);
        }
        return out;
    }

    QString accountStatus(ScanSession &s, const QString &id)
    {
        const QJsonArray list =
            s.cli({QStringLiteral("accounts"), QStringLiteral("list"), QStringLiteral("--json")}).json().array();
        for (const QJsonValue &v : list) {
            if (str(v.toObject(), "account_id") == id)
                return str(v.toObject(), "status");
        }
        return {};
    }

    SseResult turn(ScanSession &s, const QString &text)
    {
        return sseRequest("POST", s.url(QStringLiteral("/backend-api/codex/responses")), kCodexHeaders,
                          codexBody(text));
    }

    // The tokens the session's secret backend holds for an account now.
    AuthTokens storedTokens(ScanSession &s, const QString &backend, const QString &keyFile, const QString &id)
    {
        AuthTokens tokens;
        QString error;
        if (backend == QLatin1String("keychain")) {
            deserializeTokens(
                secretTool({QStringLiteral("lookup"), QStringLiteral("server"), QStringLiteral("switchyard"),
                            QStringLiteral("user"), QStringLiteral("account/") + id}),
                &tokens, &error);
            return tokens;
        }
        const std::optional<SecretKey> key = SecretKey::fromFile(keyFile, &error);
        if (!key)
            return tokens;
        DatabaseSecretStore store(s.sqlitePath(), *key);
        store.readTokensBlocking(id, &tokens);
        return tokens;
    }

private slots:
    void initTestCase()
    {
        QVERIFY2(!qEnvironmentVariableIsEmpty("SWITCHYARD_BIN"), "run through ctest (SWITCHYARD_BIN)");
        QVERIFY2(!qEnvironmentVariableIsEmpty("DBUS_SESSION_BUS_ADDRESS"), "run through tools/with-keyring.sh");
        QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString()));
        QVERIFY2(m_oauth.start(), qPrintable(m_oauth.errorString()));
    }

    void init()
    {
        QVERIFY(m_fake.reset());
        QVERIFY(m_oauth.reset());
        for (const QString &user : keychainUsers())
            secretTool({QStringLiteral("clear"), QStringLiteral("server"), QStringLiteral("switchyard"),
                        QStringLiteral("user"), user});
        QCOMPARE(keychainUsers(), QStringList());
    }

    void sessionWithLoginAndRefreshLeavesNoSecretAtRest_data()
    {
        QTest::addColumn<QString>("backend");
        QTest::newRow("keychain") << QStringLiteral("keychain");
        QTest::newRow("database") << QStringLiteral("database");
    }

    void sessionWithLoginAndRefreshLeavesNoSecretAtRest()
    {
        QFETCH(QString, backend);
        ScanSession s;
        s.setUpstream(m_fake.baseUrl());
        s.setEnv(QStringLiteral("SWITCHYARD_AUTH_URL"), m_oauth.issuer());
        s.setEnv(QStringLiteral("SWITCHYARD_NO_BROWSER"), QStringLiteral("1"));
        s.setEnv(QStringLiteral("SWITCHYARD_OAUTH_CALLBACK_PORT"), QStringLiteral("0"));
        s.setEnv(QStringLiteral("SWITCHYARD_LOGIN_TIMEOUT_S"), QStringLiteral("30"));
        const QString keyFile = s.root() + QStringLiteral("/secret.key");
        if (backend == QLatin1String("database")) {
            QVERIFY(writeSecretKeyFile(keyFile));
            s.setEnv(QStringLiteral("SWITCHYARD_SECRET_BACKEND"), QStringLiteral("database"));
            s.setEnv(QStringLiteral("SWITCHYARD_SECRET_KEY_FILE"), keyFile);
        }
        QByteArray browserPages;

        // Phase 1: import an account whose refresh token the fake server accepts once.
        QVERIFY_B(s.importAccounts(1), s.cliOutput());
        const FakeAccount imported = s.accounts().at(0);
        QVERIFY(!imported.id.isEmpty());
        QVERIFY(m_oauth.addRefreshToken(imported.refreshToken, identityOf(imported)));

        // Phase 2: a browser login of another person, with a two-minute access token (serve refreshes it).
        QVERIFY(m_oauth.configure({{QStringLiteral("identity"),
                                    QJsonObject{{QStringLiteral("email"), QStringLiteral("web@example.test")},
                                                {QStringLiteral("chatgpt_account_id"), QStringLiteral("acct_web")},
                                                {QStringLiteral("chatgpt_user_id"), QStringLiteral("user-web")},
                                                {QStringLiteral("chatgpt_plan_type"), QStringLiteral("pro")}}},
                                   {QStringLiteral("access_ttl_s"), 120}}));
        const Login login = runLogin(s, QStringLiteral("web"));
        QVERIFY_B(login.exitCode == 0 && !login.accountId.isEmpty(), login.output);
        QCOMPARE(login.visit.page.status, 200);
        // What the browser was shown (the callback URL carries the code by design; the pages must not).
        browserPages += login.visit.authorize.body + login.visit.page.body;
        const QJsonArray exchanges = tokenRequests(QStringLiteral("authorization_code"));
        QCOMPARE(exchanges.size(), 1);
        const QJsonObject exchange = exchanges.at(0).toObject();
        QCOMPARE(exchange.value(QLatin1String("status")).toInt(), 200);
        // The code the browser carried to the callback is the one exchanged, with the PKCE verifier.
        QCOMPARE(str(exchange, "code"),
                 QUrlQuery(login.visit.callback).queryItemValue(QStringLiteral("code"), QUrl::FullyDecoded));
        QVERIFY(str(exchange, "code_verifier").size() >= 43);
        const QJsonObject loginIssued = exchange.value(QLatin1String("issued")).toObject();
        QVERIFY(!str(loginIssued, "refresh_token").isEmpty());
        collectOAuthSecrets(s);
        s.cli({QStringLiteral("accounts"), QStringLiteral("list")});
        // Tokens issued from now on live an hour: the refreshes below are the only ones.
        QVERIFY(m_oauth.configure({{QStringLiteral("access_ttl_s"), 3600}}));

        // Phase 3: serve refreshes the login's expiring tokens without traffic; a turn uses the new token.
        QString error;
        QVERIFY2(s.startServe(&error), qPrintable(error));
        const QJsonObject proactive = waitForRefresh(str(loginIssued, "refresh_token"));
        QCOMPARE(proactive.value(QLatin1String("status")).toInt(), 200);
        const QJsonObject loginRefreshed = proactive.value(QLatin1String("issued")).toObject();
        collectOAuthSecrets(s);
        QVERIFY(s.pin(login.accountId));
        SseResult r = turn(s, QStringLiteral("ECHO: logged in"));
        QVERIFY_B(r.status == 200, r.body);
        QJsonArray turns = upstreamTurns(r.header("x-request-id"));
        QCOMPARE(turns.size(), 1);
        QCOMPARE(str(turns.at(0).toObject(), "authorization"), str(loginRefreshed, "access_token"));

        // Phase 4: a 401 on the imported account is repaired by one refresh and a retry with the new token.
        QVERIFY(s.pin(imported.id));
        QVERIFY(m_fake.scriptToken(imported.accessToken, {QStringLiteral("401")}, true));
        r = turn(s, QStringLiteral("ECHO: after a 401"));
        QVERIFY_B(r.status == 200, r.body);
        const QJsonObject repaired = waitForRefresh(imported.refreshToken);
        QCOMPARE(repaired.value(QLatin1String("status")).toInt(), 200);
        const QJsonObject importedRefreshed = repaired.value(QLatin1String("issued")).toObject();
        turns = upstreamTurns(r.header("x-request-id"));
        QCOMPARE(turns.size(), 2);
        QCOMPARE(str(turns.at(0).toObject(), "authorization"), imported.accessToken);
        QCOMPARE(str(turns.at(1).toObject(), "authorization"), str(importedRefreshed, "access_token"));
        collectOAuthSecrets(s);

        // Phase 5a: a 401 on the login account whose refresh the server refuses: reauth_required, failover.
        QVERIFY(s.pin(login.accountId));
        QVERIFY(m_fake.scriptToken(str(loginRefreshed, "access_token"), {QStringLiteral("401")}, true));
        QVERIFY(m_oauth.configure(
            {{QStringLiteral("token_error"),
              QJsonObject{{QStringLiteral("status"), 400},
                          {QStringLiteral("error"), QStringLiteral("invalid_grant")},
                          {QStringLiteral("error_description"), QStringLiteral("refresh_token_reused")}}}}));
        r = turn(s, QStringLiteral("ECHO: refused refresh"));
        QVERIFY_B(r.status == 200, r.body);
        const QJsonObject refused = waitForRefresh(str(loginRefreshed, "refresh_token"));
        QCOMPARE(refused.value(QLatin1String("status")).toInt(), 400);
        QVERIFY(m_oauth.configure({{QStringLiteral("token_error"), QJsonValue()}}));
        QDeadlineTimer deadline(10000);
        while (accountStatus(s, login.accountId) != QLatin1String("reauth_required") && !deadline.hasExpired())
            QThread::msleep(100);
        QCOMPARE(accountStatus(s, login.accountId), QStringLiteral("reauth_required"));

        // Phase 5b: an upstream 500 on the only active account reaches the client.
        QVERIFY(m_fake.script(imported.chatgptAccountId, {QStringLiteral("500")}));
        r = turn(s, QStringLiteral("ECHO: into a 500"));
        QVERIFY_B(r.status >= 400, r.body);

        // Phase 6: the CLI's reports while the instance runs.
        for (const QStringList &args :
             {QStringList{QStringLiteral("accounts"), QStringLiteral("list")},
              QStringList{QStringLiteral("accounts"), QStringLiteral("list"), QStringLiteral("--json")},
              QStringList{QStringLiteral("usage"), QStringLiteral("--json")},
              QStringList{QStringLiteral("requests"), QStringLiteral("--json")},
              QStringList{QStringLiteral("status"), QStringLiteral("--listen"), s.listen()},
              QStringList{QStringLiteral("status"), QStringLiteral("--json"), QStringLiteral("--listen"),
                          s.listen()}}) {
            const CliResult c = s.cli(args);
            QVERIFY_B(c.exitCode == 0, args.join(QLatin1Char(' ')).toUtf8() + ": " + c.err);
        }

        // The database, WAL and shared memory while the instance holds them open.
        collectOAuthSecrets(s);
        QStringList scanned;
        QStringList hits = scanDir(s.dataDir(), s.needles(), &scanned);
        QVERIFY2(hits.isEmpty(), qPrintable(hits.join(QLatin1Char('\n'))));
        for (const QString &suffix : {QString(), QStringLiteral("-wal"), QStringLiteral("-shm")})
            QVERIFY2(scanned.contains(s.sqlitePath() + suffix), qPrintable(scanned.join(QLatin1Char(' '))));

        // Phase 7: a graceful stop, then a run that crashes with core dumps allowed.
        int exitCode = -1;
        QCOMPARE(s.stopServe(SIGTERM, &exitCode), QProcess::NormalExit);
        QCOMPARE(exitCode, 0);
        QVERIFY2(s.startServe(&error), qPrintable(error));
        turn(s, QStringLiteral("ECHO: before the crash"));
        QCOMPARE(s.stopServe(SIGSEGV, &exitCode), QProcess::CrashExit);
        s.cli({QStringLiteral("accounts"), QStringLiteral("list"), QStringLiteral("--json")});

        // The scan.
        collectOAuthSecrets(s);
        scanned.clear();
        hits = scanDir(s.dataDir(), s.needles(), &scanned);
        hits += scanDir(s.crashDir(), s.needles(), &scanned);
        for (const QString &path : scanned)
            QVERIFY2(!QFileInfo(path).fileName().startsWith(QLatin1String("core")), qPrintable(path));
        hits += findNeedles(s.serveOutput(), s.needles(), QStringLiteral("serve stdout/stderr"));
        hits += findNeedles(s.cliOutput(), s.needles(), QStringLiteral("CLI output"));
        hits += findNeedles(browserPages, s.needles(), QStringLiteral("browser"));
        // With the keychain, HOME holds its storage (where the tokens belong); the database backend must
        // not have written there either, so then all of HOME is scanned.
        const QString keyrings =
            qEnvironmentVariable("XDG_DATA_HOME", QDir::homePath() + QStringLiteral("/.local/share")) +
            QStringLiteral("/keyrings");
        hits += scanDir(QDir::homePath(), s.needles(), &scanned,
                        backend == QLatin1String("keychain") ? keyrings : QString());
        QVERIFY2(hits.isEmpty(), qPrintable(hits.join(QLatin1Char('\n'))));
        QVERIFY2(s.serveOutput().contains("sy."), "debug logging was not on, the scan of the logs proves little");

        // The needles are the session's real secrets: one code exchange and three refreshes were seen,
        // every bearer the upstream saw is a needle, and the backend holds the newest tokens of each account.
        QCOMPARE(tokenRequests(QStringLiteral("authorization_code")).size(), 1);
        QCOMPARE(tokenRequests(QStringLiteral("refresh_token")).size(), 3);
        int bearers = 0;
        for (const QJsonValue &v : m_fake.log()) {
            const QString bearer = str(v.toObject(), "authorization");
            if (bearer.isEmpty())
                continue;
            ++bearers;
            QVERIFY2(s.hasSecret(bearer), qPrintable(str(v.toObject(), "path")));
        }
        QVERIFY(bearers >= 5);
        const AuthTokens importedNow = storedTokens(s, backend, keyFile, imported.id);
        QCOMPARE(importedNow.refreshToken, str(importedRefreshed, "refresh_token"));
        QCOMPARE(importedNow.accessToken, str(importedRefreshed, "access_token"));
        const AuthTokens loginNow = storedTokens(s, backend, keyFile, login.accountId);
        QCOMPARE(loginNow.refreshToken, str(loginRefreshed, "refresh_token"));
        QVERIFY(s.hasSecret(loginNow.idToken) && s.hasSecret(importedNow.idToken));
        const QStringList expectedUsers =
            backend == QLatin1String("keychain")
                ? QStringList{QStringLiteral("account/") + imported.id, QStringLiteral("account/") + login.accountId}
                : QStringList();
        QStringList sortedUsers = expectedUsers;
        sortedUsers.sort();
        QCOMPARE(keychainUsers(), sortedUsers);
        QVERIFY(s.needles().size() >= 5 * 3 + 2);
    }
};

QTEST_GUILESS_MAIN(tst_SecretsAtRestLogin)
#include "tst_secrets_at_rest_login.moc"
