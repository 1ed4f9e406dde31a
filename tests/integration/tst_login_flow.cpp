// The browser login (issue 3 point 2) in process: OAuthLogin against the fake authorization server
// (tests/support/fake_oauth), with an HTTP client standing in for the browser.
#include "accounts/IdToken.h"
#include "accounts/OAuthLogin.h"
#include "fake_oauth/FakeOAuthProcess.h"

#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTest>
#include <QUrlQuery>
#include <memory>

using namespace sy;
using namespace sy::test;

namespace {

int countRequests(const QJsonArray &log, const QString &path)
{
    int n = 0;
    for (const QJsonValue &v : log)
        n += v.toObject().value(QLatin1String("path")).toString() == path ? 1 : 0;
    return n;
}

bool reachable(const QHostAddress &address, quint16 port)
{
    QTcpSocket socket;
    socket.connectToHost(address, port);
    return socket.waitForConnected(2000);
}

} // namespace

class TestLoginFlow : public QObject
{
    Q_OBJECT

private:
    FakeOAuthProcess m_fake;
    QList<AuthTokens> m_completed;

    std::unique_ptr<OAuthLogin> makeLogin(int timeoutMs = 20000, quint16 port = 0)
    {
        OAuthLoginOptions options;
        options.issuer = QUrl(m_fake.issuer());
        options.callbackPort = port;
        options.timeoutMs = timeoutMs;
        auto login = std::make_unique<OAuthLogin>(options);
        login->setCompleter([this](const AuthTokens &tokens) -> std::pair<bool, QString> {
            m_completed.append(tokens);
            return {true, QStringLiteral("stored for the test")};
        });
        return login;
    }

private slots:
    void initTestCase() { QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString())); }

    void init()
    {
        QVERIFY2(m_fake.reset(), qPrintable(m_fake.errorString()));
        m_completed.clear();
    }

    void successOverBothLoopbacks_data()
    {
        QTest::addColumn<QString>("host");
        QTest::newRow("127.0.0.1") << QStringLiteral("127.0.0.1");
        QTest::newRow("::1") << QStringLiteral("::1");
        QTest::newRow("localhost") << QString(); // as redirected: the resolver picks
    }

    void successOverBothLoopbacks()
    {
        QFETCH(QString, host);
        QVERIFY(m_fake.configure({{QStringLiteral("identity"),
                                   QJsonObject{{QStringLiteral("email"), QStringLiteral("flow@example.com")},
                                               {QStringLiteral("chatgpt_account_id"), QStringLiteral("acct_flow")},
                                               {QStringLiteral("chatgpt_user_id"), QStringLiteral("user-flow")},
                                               {QStringLiteral("chatgpt_plan_type"), QStringLiteral("pro")}}}}));
        auto login = makeLogin();
        QSignalSpy started(login.get(), &OAuthLogin::started);
        QSignalSpy finished(login.get(), &OAuthLogin::finished);
        QUrl opened;
        login->setBrowserOpener([&opened](const QUrl &url) {
            opened = url;
            return true;
        });
        QVERIFY2(login->start(), qPrintable(login->result().message));
        QCOMPARE(started.count(), 1);
        QCOMPARE(opened, login->authorizeUrl());
        QVERIFY(login->callbackPort() != 0);
        QCOMPARE(login->redirectUri(), QStringLiteral("http://localhost:%1/auth/callback").arg(login->callbackPort()));
        QVERIFY(reachable(QHostAddress::LocalHost, login->callbackPort()));
        QVERIFY(reachable(QHostAddress::LocalHostIPv6, login->callbackPort()));

        const BrowserVisit visit = visitAsBrowser(login->authorizeUrl(), host);
        QCOMPARE(visit.authorize.status, 302);
        QCOMPARE(visit.page.status, 200);
        QVERIFY2(visit.page.body.contains("You can close this window"), visit.page.body.constData());
        QVERIFY(visit.page.body.contains("stored for the test"));
        QVERIFY(visit.page.header("content-type").startsWith("text/html"));

        QVERIFY(finished.wait(5000));
        QCOMPARE(finished.count(), 1);
        const OAuthLoginResult &result = login->result();
        QVERIFY2(result.ok(), qPrintable(result.message));
        QCOMPARE(result.detail, QStringLiteral("stored for the test"));
        QVERIFY(result.tokens.isComplete());
        QCOMPARE(m_completed.size(), 1);
        QCOMPARE(m_completed.first(), result.tokens);
        QString error;
        const IdTokenClaims claims = parseIdToken(result.tokens.idToken, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(claims.email, QStringLiteral("flow@example.com"));
        QCOMPARE(claims.chatgptAccountId, QStringLiteral("acct_flow"));
        QCOMPARE(claims.planType, QStringLiteral("pro"));
        QVERIFY(jwtExpiryMs(result.tokens.accessToken).has_value());
        QVERIFY(!result.message.contains(result.tokens.accessToken));

        // The fake saw one authorize and one form-encoded code exchange with the right verifier.
        const QJsonArray log = m_fake.log();
        QCOMPARE(countRequests(log, QStringLiteral("/oauth/authorize")), 1);
        QCOMPARE(countRequests(log, QStringLiteral("/oauth/token")), 1);
        const QJsonObject exchange = log.last().toObject();
        QCOMPARE(exchange.value(QLatin1String("grant_type")).toString(), QStringLiteral("authorization_code"));
        QCOMPARE(exchange.value(QLatin1String("body_format")).toString(), QStringLiteral("form"));
        QCOMPARE(exchange.value(QLatin1String("status")).toInt(), 200);

        // Done: the callback server no longer listens.
        QVERIFY(!reachable(QHostAddress::LocalHost, login->callbackPort()));
    }

    void authorizeUrlIsWhatTheIssuerExpects()
    {
        auto login = makeLogin();
        QVERIFY(login->start());
        const QUrlQuery q(login->authorizeUrl());
        QCOMPARE(login->authorizeUrl().path(), QStringLiteral("/oauth/authorize"));
        QCOMPARE(q.queryItemValue(QStringLiteral("client_id")), QStringLiteral("app_EMoamEEZ73f0CkXaXp7hrann"));
        QCOMPARE(q.queryItemValue(QStringLiteral("code_challenge_method")), QStringLiteral("S256"));
        QCOMPARE(q.queryItemValue(QStringLiteral("state")).size(), 43);
        // Each login has its own state and challenge.
        auto other = makeLogin();
        QVERIFY(other->start());
        const QUrlQuery q2(other->authorizeUrl());
        QVERIFY(q.queryItemValue(QStringLiteral("state")) != q2.queryItemValue(QStringLiteral("state")));
        QVERIFY(q.queryItemValue(QStringLiteral("code_challenge")) !=
                q2.queryItemValue(QStringLiteral("code_challenge")));
        QVERIFY(login->callbackPort() != other->callbackPort());
    }

    void deniedConsent()
    {
        QVERIFY(m_fake.configure({{QStringLiteral("deny"), true}}));
        auto login = makeLogin();
        QSignalSpy finished(login.get(), &OAuthLogin::finished);
        QVERIFY(login->start());
        const BrowserVisit visit = visitAsBrowser(login->authorizeUrl(), QStringLiteral("127.0.0.1"));
        QVERIFY(QUrlQuery(visit.callback).queryItemValue(QStringLiteral("error")) == QLatin1String("access_denied"));
        QCOMPARE(visit.page.status, 400);
        QVERIFY2(visit.page.body.contains("denied"), visit.page.body.constData());
        QVERIFY(finished.wait(5000));
        QCOMPARE(login->result().error, OAuthLoginError::Denied);
        QVERIFY2(login->result().message.contains(QLatin1String("denied")), qPrintable(login->result().message));
        QVERIFY(!login->result().tokens.isComplete());
        QVERIFY(m_completed.isEmpty());
        QCOMPARE(countRequests(m_fake.log(), QStringLiteral("/oauth/token")), 0);
    }

    void wrongStateIsRejectedBeforeAnyExchange()
    {
        QVERIFY(m_fake.configure({{QStringLiteral("wrong_state"), true}}));
        auto login = makeLogin();
        QSignalSpy finished(login.get(), &OAuthLogin::finished);
        QVERIFY(login->start());
        const BrowserVisit visit = visitAsBrowser(login->authorizeUrl(), QStringLiteral("::1"));
        QVERIFY(!QUrlQuery(visit.callback).queryItemValue(QStringLiteral("code")).isEmpty());
        QCOMPARE(visit.page.status, 400);
        QVERIFY(visit.page.body.contains("state mismatch"));
        QVERIFY(finished.wait(5000));
        QCOMPARE(login->result().error, OAuthLoginError::StateMismatch);
        QVERIFY2(login->result().message.contains(QLatin1String("state")), qPrintable(login->result().message));
        QVERIFY(m_completed.isEmpty());
        // The code was never redeemed: a forged callback cannot make us log into someone else's account.
        QCOMPARE(countRequests(m_fake.log(), QStringLiteral("/oauth/token")), 0);
    }

    void tokenEndpointError()
    {
        QVERIFY(m_fake.configure({{QStringLiteral("token_error"),
                                   QJsonObject{{QStringLiteral("status"), 503},
                                               {QStringLiteral("error"), QStringLiteral("temporarily_unavailable")},
                                               {QStringLiteral("error_description"), QStringLiteral("try later")}}}}));
        auto login = makeLogin();
        QSignalSpy finished(login.get(), &OAuthLogin::finished);
        QVERIFY(login->start());
        const BrowserVisit visit = visitAsBrowser(login->authorizeUrl(), QStringLiteral("127.0.0.1"));
        QCOMPARE(visit.page.status, 400);
        QVERIFY(visit.page.body.contains("could not be exchanged"));
        QVERIFY(finished.wait(5000));
        QCOMPARE(login->result().error, OAuthLoginError::TokenEndpoint);
        const QString message = login->result().message;
        QVERIFY2(message.contains(QLatin1String("HTTP 503")) &&
                     message.contains(QLatin1String("temporarily_unavailable")),
                 qPrintable(message));
        QVERIFY(m_completed.isEmpty());
    }

    void tokenEndpointUnreachable()
    {
        // A port bound but not listening: a connection to it is refused, and while the socket holds it nothing
        // else can take it (a port freed again could go to the login's own callback server or to a test running
        // beside this one, which then answered the token request with a 404).
        QTcpSocket holder;
        QVERIFY(holder.bind(QHostAddress::LocalHost, 0));
        const quint16 deadPort = holder.localPort();
        QVERIFY(deadPort != 0);
        OAuthLoginOptions options;
        options.issuer = QUrl(QStringLiteral("http://127.0.0.1:%1").arg(deadPort));
        options.callbackPort = 0;
        OAuthLogin login(options);
        QSignalSpy finished(&login, &OAuthLogin::finished);
        QVERIFY(login.start());
        // Stand in for the authorization server: send the browser straight to the callback with our state.
        const QString state = QUrlQuery(login.authorizeUrl()).queryItemValue(QStringLiteral("state"));
        const HttpResult page =
            httpRequest("GET", QUrl(QStringLiteral("http://127.0.0.1:%1/auth/callback?code=abc&state=%2")
                                        .arg(login.callbackPort())
                                        .arg(state)));
        QCOMPARE(page.status, 400);
        QVERIFY(finished.wait(5000));
        QCOMPARE(login.result().error, OAuthLoginError::TokenEndpoint);
        QVERIFY2(login.result().message.contains(QLatin1String("could not be reached")),
                 qPrintable(login.result().message));
    }

    void completerFailure()
    {
        auto login = makeLogin();
        login->setCompleter([](const AuthTokens &) -> std::pair<bool, QString> {
            return {false, QStringLiteral("no secure keychain")};
        });
        QSignalSpy finished(login.get(), &OAuthLogin::finished);
        QVERIFY(login->start());
        const BrowserVisit visit = visitAsBrowser(login->authorizeUrl(), QStringLiteral("127.0.0.1"));
        QCOMPARE(visit.page.status, 400);
        QVERIFY(visit.page.body.contains("no secure keychain"));
        QVERIFY(finished.wait(5000));
        QCOMPARE(login->result().error, OAuthLoginError::SaveFailed);
        QVERIFY(login->result().message.contains(QLatin1String("no secure keychain")));
        QVERIFY(!login->result().tokens.isComplete());
    }

    void timeout()
    {
        auto login = makeLogin(400);
        QSignalSpy finished(login.get(), &OAuthLogin::finished);
        QVERIFY(login->start());
        const quint16 port = login->callbackPort();
        QVERIFY(finished.wait(5000));
        QCOMPARE(login->result().error, OAuthLoginError::Timeout);
        QVERIFY2(login->result().message.contains(QLatin1String("within")), qPrintable(login->result().message));
        // A browser arriving late finds nobody listening.
        const BrowserVisit visit = visitAsBrowser(login->authorizeUrl(), QStringLiteral("127.0.0.1"), 3000);
        QCOMPARE(visit.authorize.status, 302);
        QCOMPARE(visit.page.status, 0);
        QVERIFY(!reachable(QHostAddress::LocalHost, port));
        QVERIFY(m_completed.isEmpty());
        QCOMPARE(finished.count(), 1);
    }

    void cancel()
    {
        auto login = makeLogin();
        QSignalSpy finished(login.get(), &OAuthLogin::finished);
        QVERIFY(login->start());
        login->cancel();
        QVERIFY(finished.wait(2000));
        QCOMPARE(login->result().error, OAuthLoginError::Cancelled);
        login->cancel(); // idempotent
        QTest::qWait(50);
        QCOMPARE(finished.count(), 1);
    }

    void portInUse_data()
    {
        QTest::addColumn<bool>("ipv6");
        QTest::newRow("127.0.0.1 taken") << false;
        QTest::newRow("::1 taken") << true;
    }

    void portInUse()
    {
        QFETCH(bool, ipv6);
        QTcpServer squatter; // stands in for Codex CLI's own login server
        QVERIFY(squatter.listen(ipv6 ? QHostAddress::LocalHostIPv6 : QHostAddress::LocalHost, 0));
        auto login = makeLogin(20000, squatter.serverPort());
        QSignalSpy finished(login.get(), &OAuthLogin::finished);
        QVERIFY(!login->start());
        QCOMPARE(login->result().error, OAuthLoginError::PortInUse);
        const QString message = login->result().message;
        QVERIFY2(message.contains(QString::number(squatter.serverPort())), qPrintable(message));
        QVERIFY2(message.contains(QLatin1String("Codex")), qPrintable(message));
        QVERIFY2(message.contains(ipv6 ? QLatin1String("::1") : QLatin1String("127.0.0.1")), qPrintable(message));
        QVERIFY(!login->isRunning());
        QTest::qWait(50);
        QCOMPARE(finished.count(), 0);
        // Nothing of ours is left listening on the other loopback.
        QVERIFY(!reachable(ipv6 ? QHostAddress::LocalHost : QHostAddress::LocalHostIPv6, squatter.serverPort()));
    }

    void strayRequestsDoNotEndTheLogin()
    {
        QVERIFY(m_fake.configure({{QStringLiteral("token_delay_ms"), 600}}));
        auto login = makeLogin();
        QSignalSpy finished(login.get(), &OAuthLogin::finished);
        QVERIFY(login->start());
        const QString base = QStringLiteral("http://127.0.0.1:%1").arg(login->callbackPort());
        QCOMPARE(httpRequest("GET", QUrl(base + QStringLiteral("/favicon.ico"))).status, 404);
        QCOMPARE(httpRequest("POST", QUrl(base + QStringLiteral("/auth/callback")), {}, "{}").status, 405);
        QVERIFY(login->isRunning());

        // The real callback, held by a slow token endpoint; a second tab meanwhile gets a 409.
        const HttpResult authorize = httpRequest("GET", login->authorizeUrl());
        QCOMPARE(authorize.status, 302);
        QUrl callback = QUrl::fromEncoded(authorize.header("location"));
        callback.setHost(QStringLiteral("127.0.0.1"));
        QNetworkAccessManager manager;
        QNetworkRequest request(callback);
        QNetworkReply *first = manager.get(request);
        QTRY_VERIFY_WITH_TIMEOUT(countRequests(m_fake.log(), QStringLiteral("/oauth/token")) == 1, 5000);
        const HttpResult second = httpRequest("GET", callback);
        QCOMPARE(second.status, 409);
        QTRY_VERIFY_WITH_TIMEOUT(first->isFinished(), 5000);
        QCOMPARE(first->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt(), 200);
        delete first;
        QVERIFY(finished.count() == 1 || finished.wait(5000));
        QVERIFY2(login->result().ok(), qPrintable(login->result().message));
        QCOMPARE(m_completed.size(), 1);
    }
};

QTEST_GUILESS_MAIN(TestLoginFlow)
#include "tst_login_flow.moc"
