// SWITCHYARD_NEEDS_KEYRING: logins store their tokens in a real gnome-keyring (ctest runs this file inside
// tools/with-keyring.sh, a private D-Bus session with a throwaway HOME).
//
// `switchyard accounts login` as a real process (issue 3 point 2) against the fake authorization server,
// with an HTTP client as the browser: the printed URL is visited, the 302 followed to the CLI's callback
// server, and the account checked in `accounts list --json` and in the keychain. Failures (denied consent,
// wrong state, token endpoint error, port in use, timeout, no keychain) must exit non-zero with a clear
// message and store nothing. Tokens must appear nowhere but in the keychain.
#include "accounts/AuthTokens.h"
#include "accounts/IdToken.h"
#include "fake_oauth/FakeOAuthProcess.h"
#include "lib/FakeEgressProxy.h"

#include <QDirIterator>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTest>
#include <QUrlQuery>

using namespace sy;
using namespace sy::test;

#define QVERIFY_B(cond, message) QVERIFY2(cond, QByteArray(message).constData())

namespace {

QByteArray secretTool(const QStringList &args, bool merged = false)
{
    QProcess p;
    if (merged)
        p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(QStringLiteral("secret-tool"), args);
    if (!p.waitForFinished(10000)) {
        p.kill();
        p.waitForFinished();
        return "<secret-tool hung>";
    }
    return p.readAllStandardOutput();
}

QByteArray keychainLookup(const QString &accountId)
{
    return secretTool({QStringLiteral("lookup"), QStringLiteral("server"), QStringLiteral("switchyard"),
                       QStringLiteral("user"), QStringLiteral("account/") + accountId});
}

QStringList keychainUsers()
{
    const QByteArray text = secretTool(
        {QStringLiteral("search"), QStringLiteral("--all"), QStringLiteral("server"), QStringLiteral("switchyard")},
        true);
    QStringList users;
    const QRegularExpression re(QStringLiteral("attribute\\.user\\s*=\\s*(\\S+)"));
    for (auto it = re.globalMatch(QString::fromUtf8(text)); it.hasNext();)
        users << it.next().captured(1);
    users.sort();
    return users;
}

// Every token string and each JWT's signature part on its own.
QList<QByteArray> secretsOf(const AuthTokens &t)
{
    QList<QByteArray> s{t.accessToken.toUtf8(), t.refreshToken.toUtf8(), t.idToken.toUtf8()};
    for (const QString &jwt : {t.accessToken, t.idToken}) {
        const QStringList parts = jwt.split(QLatin1Char('.'));
        if (parts.size() == 3 && parts.at(2).size() >= 8)
            s << parts.at(2).toUtf8();
    }
    return s;
}

QByteArray leakInFiles(const QString &dir, const AuthTokens &tokens)
{
    QDirIterator it(dir, QDir::Files | QDir::Hidden | QDir::System | QDir::NoSymLinks, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        QFile f(it.next());
        if (!f.open(QIODevice::ReadOnly))
            continue;
        const QByteArray bytes = f.readAll();
        for (const QByteArray &secret : secretsOf(tokens)) {
            if (bytes.contains(secret))
                return f.fileName().toUtf8() + ": " + secret.left(12) + "...";
        }
    }
    return {};
}

// One `switchyard` process with its own data dir, talking to the fake issuer.
class Cli
{
public:
    explicit Cli(const QString &root, const QString &issuer) : m_root(root), m_issuer(issuer)
    {
        QFile f(m_root + QStringLiteral("/config.json"));
        if (f.open(QIODevice::WriteOnly))
            f.write("{}\n");
    }

    void writeConfig(const QJsonObject &config)
    {
        QFile f(m_root + QStringLiteral("/config.json"));
        if (f.open(QIODevice::WriteOnly))
            f.write(QJsonDocument(config).toJson());
    }

    QProcessEnvironment environment(const QHash<QString, QString> &set, const QStringList &unset) const
    {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        for (const QString &k : env.keys()) {
            if (k.startsWith(QLatin1String("SWITCHYARD_")) && k != QLatin1String("SWITCHYARD_BIN"))
                env.remove(k);
        }
        env.insert(QStringLiteral("SWITCHYARD_DATA_DIR"), m_root + QStringLiteral("/data"));
        env.insert(QStringLiteral("SWITCHYARD_CONFIG"), m_root + QStringLiteral("/config.json"));
        env.insert(QStringLiteral("SWITCHYARD_UPSTREAM_URL"), QStringLiteral("http://127.0.0.1:9/backend-api"));
        env.insert(QStringLiteral("SWITCHYARD_AUTH_URL"), m_issuer);
        env.insert(QStringLiteral("SWITCHYARD_NO_BROWSER"), QStringLiteral("1"));
        env.insert(QStringLiteral("SWITCHYARD_OAUTH_CALLBACK_PORT"), QStringLiteral("0"));
        env.insert(QStringLiteral("SWITCHYARD_LOGIN_TIMEOUT_S"), QStringLiteral("30"));
        for (auto it = set.begin(); it != set.end(); ++it)
            env.insert(it.key(), it.value());
        for (const QString &k : unset)
            env.remove(k);
        return env;
    }

    void start(const QStringList &args, const QHash<QString, QString> &set = {}, const QStringList &unset = {})
    {
        m_out.clear();
        m_err.clear();
        m_process.setProcessEnvironment(environment(set, unset));
        m_timer.start();
        m_process.start(qEnvironmentVariable("SWITCHYARD_BIN"), args);
    }

    // The authorize URL the CLI printed (empty if it exited or printed none within the time).
    QUrl waitForUrl(int timeoutMs = 15000)
    {
        QElapsedTimer t;
        t.start();
        while (t.elapsed() < timeoutMs) {
            while (m_process.canReadLine()) {
                const QByteArray line = m_process.readLine();
                m_out += line;
                if (line.startsWith("http://") || line.startsWith("https://"))
                    return QUrl::fromEncoded(line.trimmed(), QUrl::StrictMode);
            }
            if (m_process.state() == QProcess::NotRunning)
                return {};
            m_process.waitForReadyRead(200);
        }
        return {};
    }

    // Exit code (-1: did not exit in time or crashed).
    int waitForExit(int timeoutMs = 30000)
    {
        if (!m_process.waitForFinished(timeoutMs)) {
            m_process.kill();
            m_process.waitForFinished();
            m_elapsedMs = m_timer.elapsed();
            collect();
            return -1;
        }
        m_elapsedMs = m_timer.elapsed();
        collect();
        return m_process.exitStatus() == QProcess::NormalExit ? m_process.exitCode() : -1;
    }

    int run(const QStringList &args, const QHash<QString, QString> &set = {}, const QStringList &unset = {})
    {
        start(args, set, unset);
        return waitForExit();
    }

    QByteArray out() const { return m_out; }
    QByteArray err() const { return m_err; }
    QByteArray both() const { return m_out + "\n--- stderr ---\n" + m_err; }
    qint64 elapsedMs() const { return m_elapsedMs; }
    QByteArray transcript() const { return m_transcript; }

    QJsonArray list()
    {
        run({QStringLiteral("accounts"), QStringLiteral("list"), QStringLiteral("--json")});
        return QJsonDocument::fromJson(m_out).array();
    }

private:
    void collect()
    {
        m_out += m_process.readAllStandardOutput();
        m_err += m_process.readAllStandardError();
        m_transcript += m_out + '\n' + m_err + '\n';
    }

    QString m_root;
    QString m_issuer;
    QProcess m_process;
    QElapsedTimer m_timer;
    QByteArray m_out;
    QByteArray m_err;
    QByteArray m_transcript;
    qint64 m_elapsedMs = 0;
};

const QStringList kLogin{QStringLiteral("accounts"), QStringLiteral("login")};

} // namespace

class TestLoginCli : public QObject
{
    Q_OBJECT

private:
    FakeOAuthProcess m_fake;

    // A login that must fail after the browser visit: exit 1, the reason on stderr, nothing stored.
    void expectFailedVisit(const QByteArray &expectedInMessage, int expectedPageStatus)
    {
        QTemporaryDir dir;
        Cli cli(dir.path(), m_fake.issuer());
        cli.start(kLogin);
        const QUrl url = cli.waitForUrl();
        QVERIFY_B(url.isValid() && !url.isEmpty(), cli.both());
        const BrowserVisit visit = visitAsBrowser(url);
        QCOMPARE(visit.page.status, expectedPageStatus);
        QCOMPARE(cli.waitForExit(), 1);
        QVERIFY_B(cli.err().contains(expectedInMessage), cli.both());
        QVERIFY_B(!cli.out().contains("logged in"), cli.both());
        QVERIFY(cli.list().isEmpty());
        QCOMPARE(keychainUsers(), QStringList());
    }

private slots:
    void initTestCase()
    {
        QVERIFY(!qEnvironmentVariableIsEmpty("DBUS_SESSION_BUS_ADDRESS")); // inside with-keyring.sh
        QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString()));
    }

    void init()
    {
        QVERIFY(m_fake.reset());
        // Each test starts with an empty keychain.
        for (const QString &user : keychainUsers())
            secretTool({QStringLiteral("clear"), QStringLiteral("server"), QStringLiteral("switchyard"),
                        QStringLiteral("user"), user});
        QCOMPARE(keychainUsers(), QStringList());
    }

    void loginAddsAccountAndKeepsTokensInKeychain()
    {
        QVERIFY(m_fake.configure({{QStringLiteral("identity"),
                                   QJsonObject{{QStringLiteral("email"), QStringLiteral("cli@example.com")},
                                               {QStringLiteral("chatgpt_account_id"), QStringLiteral("acct_cli")},
                                               {QStringLiteral("chatgpt_user_id"), QStringLiteral("user-cli")},
                                               {QStringLiteral("chatgpt_plan_type"), QStringLiteral("pro")}}},
                                  {QStringLiteral("access_ttl_s"), 7200}}));
        QTemporaryDir dir;
        Cli cli(dir.path(), m_fake.issuer());
        cli.start(
            {QStringLiteral("accounts"), QStringLiteral("login"), QStringLiteral("--alias"), QStringLiteral("work")});
        const QUrl url = cli.waitForUrl();
        QVERIFY_B(url.isValid() && !url.isEmpty(), cli.both());
        QCOMPARE(url.port(), int(m_fake.port()));
        QCOMPARE(url.path(), QStringLiteral("/oauth/authorize"));
        const QUrl redirect(QUrlQuery(url).queryItemValue(QStringLiteral("redirect_uri"), QUrl::FullyDecoded));
        QCOMPARE(redirect.host(), QStringLiteral("localhost"));
        QVERIFY(redirect.port() > 0);

        const BrowserVisit visit = visitAsBrowser(url); // "localhost", as a browser would
        QCOMPARE(visit.authorize.status, 302);
        QCOMPARE(visit.page.status, 200);
        QVERIFY_B(visit.page.body.contains("You can close this window"), visit.page.body);
        QVERIFY_B(visit.page.body.contains("cli@example.com"), visit.page.body);

        QCOMPARE(cli.waitForExit(), 0);
        QVERIFY_B(cli.out().contains("logged in: added acc_"), cli.both());
        QVERIFY_B(cli.out().contains("cli@example.com") && cli.out().contains("pro"), cli.both());

        const QJsonArray accounts = cli.list();
        QCOMPARE(accounts.size(), 1);
        const QJsonObject a = accounts.first().toObject();
        const QString id = a.value(QLatin1String("account_id")).toString();
        QCOMPARE(a.value(QLatin1String("email")).toString(), QStringLiteral("cli@example.com"));
        QCOMPARE(a.value(QLatin1String("plan")).toString(), QStringLiteral("pro"));
        QCOMPARE(a.value(QLatin1String("chatgpt_account_id")).toString(), QStringLiteral("acct_cli"));
        QCOMPARE(a.value(QLatin1String("account_alias")).toString(), QStringLiteral("work"));
        QCOMPARE(a.value(QLatin1String("status")).toString(), QStringLiteral("active"));
        const QDateTime expires =
            QDateTime::fromString(a.value(QLatin1String("token_expires_at")).toString(), Qt::ISODate);
        QVERIFY2(expires.isValid(), qPrintable(a.value(QLatin1String("token_expires_at")).toString()));
        const qint64 ahead = QDateTime::currentSecsSinceEpoch() - expires.toSecsSinceEpoch();
        QVERIFY2(ahead > -7300 && ahead < -7000, qPrintable(QString::number(ahead))); // the access token's exp

        // The keychain holds the three tokens the fake issued for this identity.
        const QByteArray blob = keychainLookup(id);
        AuthTokens tokens;
        QString error;
        QVERIFY_B(deserializeTokens(blob, &tokens, &error), error.toUtf8() + " / " + QByteArray::number(blob.size()));
        QVERIFY(tokens.isComplete());
        QVERIFY(tokens.refreshToken.startsWith(QLatin1String("rt_fake_")));
        QCOMPARE(parseIdToken(tokens.idToken, &error).email, QStringLiteral("cli@example.com"));
        QCOMPARE(keychainUsers(), QStringList{QStringLiteral("account/") + id});

        // ... and nothing else does: not the CLI's output, not the data dir.
        for (const QByteArray &secret : secretsOf(tokens))
            QVERIFY_B(!cli.transcript().contains(secret), "a token was printed: " + secret.left(12));
        const QByteArray leak = leakInFiles(dir.path(), tokens);
        QVERIFY_B(leak.isEmpty(), leak);

        // A second login of the same person updates the account (fresh tokens), it does not add one.
        cli.start(kLogin);
        const QUrl again = cli.waitForUrl();
        QVERIFY_B(!again.isEmpty(), cli.both());
        QCOMPARE(visitAsBrowser(again).page.status, 200);
        QCOMPARE(cli.waitForExit(), 0);
        QVERIFY_B(cli.out().contains(QByteArray("logged in: updated " + id.toUtf8())), cli.both());
        QCOMPARE(cli.list().size(), 1);
        AuthTokens rotated;
        QVERIFY(deserializeTokens(keychainLookup(id), &rotated, &error));
        QVERIFY(rotated.isComplete());
        QVERIFY(rotated.refreshToken != tokens.refreshToken);
    }

    // Issue 7 (fail closed): the code exchange of a login for an alias bound to an egress pool goes through that
    // pool's proxies in order (the one that refuses first, then the next), never directly; when none sets up
    // a tunnel, the login fails and the issuer never sees the code.
    void poolBoundAliasExchangesTheCodeThroughItsPool()
    {
        FakeEgressFleet fleet;
        FakeEgressProxy *down =
            fleet.add(QStringLiteral("down"), FakeEgressProxy::Kind::Socks5, FakeEgressProxy::Mode::Down);
        FakeEgressProxy *up = fleet.add(QStringLiteral("up"), FakeEgressProxy::Kind::HttpConnect);
        QVERIFY(down && up);
        const auto pool = [](const QStringList &members) {
            return QJsonObject{{QStringLiteral("name"), QStringLiteral("via")},
                               {QStringLiteral("strategy"), QStringLiteral("ordered")},
                               {QStringLiteral("proxies"), QJsonArray::fromStringList(members)},
                               {QStringLiteral("request_budget_ms"), 5000},
                               {QStringLiteral("max_attempts"), 2}};
        };
        const QJsonArray proxies{
            QJsonObject{{QStringLiteral("name"), QStringLiteral("down")}, {QStringLiteral("url"), down->url()}},
            QJsonObject{{QStringLiteral("name"), QStringLiteral("up")}, {QStringLiteral("url"), up->url()}}};
        const auto config = [&](const QStringList &members) {
            return QJsonObject{{QStringLiteral("connect_s"), 2}, // how long the refusing proxy may stall the exchange
                               {QStringLiteral("egress_proxies"), proxies},
                               {QStringLiteral("egress_pools"), QJsonArray{pool(members)}},
                               {QStringLiteral("egress_account_bindings"),
                                QJsonObject{{QStringLiteral("work"), QStringLiteral("via")}}}};
        };
        const auto carried = [this](FakeEgressProxy *p) { return p->carriedTo(m_fake.port()); };
        const QStringList login{kLogin + QStringList{QStringLiteral("--alias"), QStringLiteral("work")}};

        QTemporaryDir dir;
        Cli cli(dir.path(), m_fake.issuer());
        cli.writeConfig(config({QStringLiteral("down"), QStringLiteral("up")}));
        cli.start(login);
        const QUrl url = cli.waitForUrl();
        QVERIFY_B(!url.isEmpty(), cli.both());
        const BrowserVisit visit = visitAsBrowser(url);
        const int pageStatus = visit.page.status;
        const int exitCode = cli.waitForExit();
        QVERIFY_B(exitCode == 0, cli.both());
        QCOMPARE(pageStatus, 200);
        QVERIFY_B(cli.out().contains("goes through egress pool \"via\"") && cli.out().contains("logged in: added"),
                  cli.both());
        QVERIFY(down->connectionCount() >= 1); // tried first, refused
        QCOMPARE(carried(down), std::pair(0, 0));
        QCOMPARE(carried(up), std::pair(1, 1)); // the one POST /oauth/token, through a tunnel to the issuer
        QCOMPARE(cli.list().size(), 1);

        // No member can set up a tunnel: the login fails and the code never reaches the issuer directly.
        QVERIFY(m_fake.reset());
        cli.writeConfig(config({QStringLiteral("down")}));
        cli.start(login);
        const QUrl again = cli.waitForUrl();
        QVERIFY_B(!again.isEmpty(), cli.both());
        QCOMPARE(visitAsBrowser(again).page.status, 400);
        QCOMPARE(cli.waitForExit(), 1);
        QVERIFY_B(cli.err().contains("could set up a tunnel") && cli.err().contains("not sent directly"), cli.both());
        for (const QJsonValue &entry : m_fake.log())
            QVERIFY_B(entry.toObject().value(QLatin1String("path")).toString() != QLatin1String("/oauth/token"),
                      QJsonDocument(entry.toObject()).toJson());
        QCOMPARE(carried(up), std::pair(1, 1));

        // The pool cannot be used at all (its proxy needs credentials the keychain does not hold): the login is
        // refused before any browser would open, and the proxy and the issuer see nothing.
        QVERIFY(m_fake.reset());
        QJsonObject locked = config({QStringLiteral("up")});
        locked.insert(QStringLiteral("egress_proxies"),
                      QJsonArray{QJsonObject{{QStringLiteral("name"), QStringLiteral("up")},
                                             {QStringLiteral("url"), up->url()},
                                             {QStringLiteral("has_credentials"), true}}});
        cli.writeConfig(locked);
        cli.start(login);
        QVERIFY(cli.waitForUrl(5000).isEmpty()); // no authorize URL: the login never started
        QVERIFY(cli.waitForExit() != 0);
        QVERIFY_B(cli.err().contains("cannot carry the code exchange") && cli.err().contains("pool_unusable"),
                  cli.both());
        QCOMPARE(m_fake.log().size(), 0);
        QCOMPARE(carried(up), std::pair(1, 1));
        QCOMPARE(cli.list().size(), 1);
    }

    void deniedConsent()
    {
        QVERIFY(m_fake.configure({{QStringLiteral("deny"), true}}));
        expectFailedVisit("denied", 400);
    }

    void wrongState()
    {
        QVERIFY(m_fake.configure({{QStringLiteral("wrong_state"), true}}));
        expectFailedVisit("state", 400);
    }

    void tokenEndpointError()
    {
        QVERIFY(
            m_fake.configure({{QStringLiteral("token_error"),
                               QJsonObject{{QStringLiteral("status"), 400},
                                           {QStringLiteral("error"), QStringLiteral("invalid_grant")},
                                           {QStringLiteral("error_description"), QStringLiteral("code expired")}}}}));
        expectFailedVisit("token endpoint refused the code exchange (HTTP 400, invalid_grant: code expired)", 400);
    }

    void portInUse()
    {
        QTcpServer squatter; // Codex CLI's own login server, for instance
        QVERIFY(squatter.listen(QHostAddress::LocalHost, 0));
        const QString port = QString::number(squatter.serverPort());
        QTemporaryDir dir;
        Cli cli(dir.path(), m_fake.issuer());
        QCOMPARE(cli.run(kLogin, {{QStringLiteral("SWITCHYARD_OAUTH_CALLBACK_PORT"), port}}), 1);
        QVERIFY_B(cli.err().contains(QByteArray("port " + port.toUtf8() + " on 127.0.0.1 is already in use")),
                  cli.both());
        QVERIFY_B(cli.err().contains("Codex CLI"), cli.both());
        QVERIFY_B(!cli.out().contains("http"), cli.both()); // no URL for a login that cannot finish
        QVERIFY(m_fake.log().isEmpty());
    }

    void timeout()
    {
        QTemporaryDir dir;
        Cli cli(dir.path(), m_fake.issuer());
        cli.start(kLogin, {{QStringLiteral("SWITCHYARD_LOGIN_TIMEOUT_S"), QStringLiteral("1")}});
        const QUrl url = cli.waitForUrl();
        QVERIFY_B(!url.isEmpty(), cli.both());
        QCOMPARE(cli.waitForExit(), 1);
        QVERIFY_B(cli.err().contains("within 1 s"), cli.both());
        QVERIFY2(cli.elapsedMs() < 10000, qPrintable(QString::number(cli.elapsedMs())));
        QVERIFY(cli.list().isEmpty());
    }

    void badSettings_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("value");
        QTest::newRow("port text") << "SWITCHYARD_OAUTH_CALLBACK_PORT"
                                   << "abc";
        QTest::newRow("port range") << "SWITCHYARD_OAUTH_CALLBACK_PORT"
                                    << "70000";
        QTest::newRow("timeout zero") << "SWITCHYARD_LOGIN_TIMEOUT_S"
                                      << "0";
    }

    void badSettings()
    {
        QFETCH(QString, name);
        QFETCH(QString, value);
        QTemporaryDir dir;
        Cli cli(dir.path(), m_fake.issuer());
        QCOMPARE(cli.run(kLogin, {{name, value}}), 3);
        QVERIFY_B(cli.err().contains(name.toUtf8()), cli.both());
    }

    void badArguments()
    {
        QTemporaryDir dir;
        Cli cli(dir.path(), m_fake.issuer());
        QCOMPARE(cli.run({QStringLiteral("accounts"), QStringLiteral("login"), QStringLiteral("extra")}), 1);
        QVERIFY_B(cli.err().contains("no arguments"), cli.both());
        QCOMPARE(cli.run({QStringLiteral("accounts"), QStringLiteral("login"), QStringLiteral("--alias"),
                          QStringLiteral("has space")}),
                 1);
        QVERIFY_B(cli.err().contains("--alias"), cli.both());
        QVERIFY(m_fake.log().isEmpty());
    }

    void noKeychainFailsBeforeTheBrowser()
    {
        QTemporaryDir dir;
        Cli cli(dir.path(), m_fake.issuer());
        const int code = cli.run(
            kLogin, {},
            {QStringLiteral("DBUS_SESSION_BUS_ADDRESS"), QStringLiteral("DISPLAY"), QStringLiteral("WAYLAND_DISPLAY")});
        QCOMPARE(code, 1);
        QVERIFY_B(cli.err().contains("cannot log in"), cli.both());
        QVERIFY_B(!cli.out().contains("http"), cli.both());
    }
};

QTEST_GUILESS_MAIN(TestLoginCli)
#include "tst_login_cli.moc"
