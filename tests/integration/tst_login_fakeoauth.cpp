// The fake authorization server itself (tests/support/fake_oauth): later login and refresh tests rely on it
// rejecting what the real one rejects, so its checks are tested here.
#include "accounts/IdToken.h"
#include "accounts/OAuthProtocol.h"
#include "accounts/Pkce.h"
#include "fake_oauth/FakeOAuthProcess.h"

#include <QTest>
#include <QUrlQuery>

using namespace sy;
using namespace sy::test;

namespace {

const QString kClient = QString::fromLatin1(oauth::kCodexClientId);
const QString kRedirect = oauth::redirectUriFor(1455);

HttpResult postForm(const QUrl &url, const QByteArray &form)
{
    return httpRequest("POST", url, {{"content-type", "application/x-www-form-urlencoded"}}, form);
}

} // namespace

class TestFakeOAuth : public QObject
{
    Q_OBJECT

private:
    FakeOAuthProcess m_fake;

    QUrl authorize(const QString &challenge, const QString &state = QStringLiteral("st"))
    {
        return oauth::authorizeUrl(QUrl(m_fake.issuer()), {kClient, kRedirect, challenge, state});
    }

    // Runs authorize and returns the code it redirected with (empty on failure).
    QString codeFor(const QString &challenge)
    {
        const HttpResult r = httpRequest("GET", authorize(challenge));
        if (r.status != 302)
            return {};
        return QUrlQuery(QUrl::fromEncoded(r.header("location"))).queryItemValue(QStringLiteral("code"));
    }

    HttpResult exchange(const QString &code, const QString &verifier, const QString &redirect = kRedirect)
    {
        return postForm(m_fake.url(QStringLiteral("/oauth/token")),
                        oauth::authorizationCodeForm(kClient, code, verifier, redirect));
    }

    HttpResult refresh(const QString &refreshToken)
    {
        const QJsonObject body{{QStringLiteral("grant_type"), QStringLiteral("refresh_token")},
                               {QStringLiteral("client_id"), kClient},
                               {QStringLiteral("refresh_token"), refreshToken},
                               {QStringLiteral("scope"), QStringLiteral("openid profile email")}};
        return httpRequest("POST", m_fake.url(QStringLiteral("/oauth/token")), {},
                           QJsonDocument(body).toJson(QJsonDocument::Compact));
    }

private slots:
    void initTestCase() { QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString())); }
    void init() { QVERIFY(m_fake.reset()); }

    void authorizeRedirectsWithCodeAndState()
    {
        const PkcePair pkce = generatePkce();
        const HttpResult r = httpRequest("GET", authorize(pkce.challenge, QStringLiteral("s-1")));
        QCOMPARE(r.status, 302);
        const QUrl location = QUrl::fromEncoded(r.header("location"));
        QCOMPARE(location.toString(QUrl::RemoveQuery), kRedirect);
        const QUrlQuery q(location);
        QCOMPARE(q.queryItemValue(QStringLiteral("state")), QStringLiteral("s-1"));
        QVERIFY(!q.queryItemValue(QStringLiteral("code")).isEmpty());
    }

    void authorizeRejectsBadParameters_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<QString>("value");
        QTest::addColumn<QString>("error");
        QTest::newRow("client") << "client_id"
                                << "app_other"
                                << "invalid_client";
        QTest::newRow("redirect host") << "redirect_uri"
                                       << "http://evil.example:1455/auth/callback"
                                       << "invalid_request";
        QTest::newRow("redirect path") << "redirect_uri"
                                       << "http://localhost:1455/other"
                                       << "invalid_request";
        QTest::newRow("method plain") << "code_challenge_method"
                                      << "plain"
                                      << "invalid_request";
        QTest::newRow("no challenge") << "code_challenge"
                                      << ""
                                      << "invalid_request";
        QTest::newRow("no state") << "state"
                                  << ""
                                  << "invalid_request";
        QTest::newRow("scope") << "scope"
                               << "openid profile email"
                               << "invalid_scope";
        QTest::newRow("response type") << "response_type"
                                       << "token"
                                       << "unsupported_response_type";
        QTest::newRow("simplified flow") << "codex_cli_simplified_flow"
                                         << "false"
                                         << "invalid_request";
    }

    void authorizeRejectsBadParameters()
    {
        QFETCH(QString, key);
        QFETCH(QString, value);
        QFETCH(QString, error);
        QUrl url = authorize(generatePkce().challenge);
        QUrlQuery q(url);
        q.removeAllQueryItems(key);
        if (!value.isEmpty())
            q.addQueryItem(key, QString::fromLatin1(QUrl::toPercentEncoding(value)));
        url.setQuery(q);
        const HttpResult r = httpRequest("GET", url);
        QCOMPARE(r.status, 400);
        QCOMPARE(r.json().value(QLatin1String("error")).toString(), error);
    }

    void denyByControlOrQueryFlag()
    {
        QUrl url = authorize(generatePkce().challenge);
        QUrlQuery q(url);
        q.addQueryItem(QStringLiteral("fake_deny"), QStringLiteral("true"));
        url.setQuery(q);
        HttpResult r = httpRequest("GET", url);
        QCOMPARE(r.status, 302);
        QUrlQuery back(QUrl::fromEncoded(r.header("location")));
        QCOMPARE(back.queryItemValue(QStringLiteral("error")), QStringLiteral("access_denied"));
        QCOMPARE(back.queryItemValue(QStringLiteral("state")), QStringLiteral("st"));
        QVERIFY(!back.hasQueryItem(QStringLiteral("code")));

        QVERIFY(m_fake.configure({{QStringLiteral("deny"), true}}));
        r = httpRequest("GET", authorize(generatePkce().challenge));
        QCOMPARE(QUrlQuery(QUrl::fromEncoded(r.header("location"))).queryItemValue(QStringLiteral("error")),
                 QStringLiteral("access_denied"));
    }

    void codeExchangeChecksVerifierAndIsSingleUse()
    {
        const PkcePair pkce = generatePkce();
        const QString code = codeFor(pkce.challenge);
        QVERIFY(!code.isEmpty());
        // Another verifier (an attacker holding only the code) is refused, and does not burn the code.
        HttpResult r = exchange(code, generatePkce().verifier);
        QCOMPARE(r.status, 400);
        QCOMPARE(r.json().value(QLatin1String("error")).toString(), QStringLiteral("invalid_grant"));
        r = exchange(code, pkce.verifier, oauth::redirectUriFor(1456));
        QCOMPARE(r.status, 400);

        r = exchange(code, pkce.verifier);
        QCOMPARE(r.status, 200);
        const oauth::TokenResponse tokens = oauth::parseTokenResponse(r.status, r.body);
        QVERIFY2(tokens.ok, qPrintable(tokens.message));
        QString error;
        const IdTokenClaims claims = parseIdToken(tokens.tokens.idToken, &error);
        QVERIFY(error.isEmpty());
        QCOMPARE(claims.email, QStringLiteral("fake.user@example.com"));
        QCOMPARE(claims.chatgptAccountId, QStringLiteral("acct_fake_1"));
        QCOMPARE(claims.userId, QStringLiteral("user-fake-1"));
        QCOMPARE(claims.planType, QStringLiteral("plus"));
        QVERIFY(claims.expiresAtMs.has_value());
        const std::optional<qint64> accessExp = jwtExpiryMs(tokens.tokens.accessToken);
        QVERIFY(accessExp && *accessExp > QDateTime::currentMSecsSinceEpoch());

        r = exchange(code, pkce.verifier);
        QCOMPARE(r.status, 400);
        QCOMPARE(r.json().value(QLatin1String("error")).toString(), QStringLiteral("invalid_grant"));
    }

    void refreshTokensRotateAndAreSingleUse()
    {
        const PkcePair pkce = generatePkce();
        HttpResult r = exchange(codeFor(pkce.challenge), pkce.verifier);
        const QString first = r.json().value(QLatin1String("refresh_token")).toString();
        QVERIFY(!first.isEmpty());

        r = refresh(first);
        QCOMPARE(r.status, 200);
        const QString second = r.json().value(QLatin1String("refresh_token")).toString();
        QVERIFY(!second.isEmpty() && second != first);
        QVERIFY(!r.json().value(QLatin1String("access_token")).toString().isEmpty());
        QVERIFY(!r.json().value(QLatin1String("id_token")).toString().isEmpty());

        r = refresh(first);
        QCOMPARE(r.status, 400);
        QCOMPARE(r.json().value(QLatin1String("error")).toString(), QStringLiteral("invalid_grant"));
        QCOMPARE(r.json().value(QLatin1String("error_description")).toString(), QStringLiteral("refresh_token_reused"));

        r = refresh(QStringLiteral("rt_never_issued"));
        QCOMPARE(r.status, 400);
        QCOMPARE(r.json().value(QLatin1String("error_description")).toString(),
                 QStringLiteral("refresh_token_invalidated"));

        QCOMPARE(refresh(second).status, 200);

        const QJsonArray log = m_fake.log();
        QCOMPARE(log.size(), 6); // authorize, exchange, 4 refreshes
        const QJsonObject last = log.last().toObject();
        QCOMPARE(last.value(QLatin1String("grant_type")).toString(), QStringLiteral("refresh_token"));
        QCOMPARE(last.value(QLatin1String("body_format")).toString(), QStringLiteral("json"));
        QCOMPARE(last.value(QLatin1String("refresh_token")).toString(), second);
    }

    void seededRefreshTokenCarriesItsIdentity()
    {
        QVERIFY(m_fake.addRefreshToken(QStringLiteral("rt_seeded"),
                                       {{QStringLiteral("email"), QStringLiteral("seed@example.com")},
                                        {QStringLiteral("chatgpt_account_id"), QStringLiteral("acct_seed")}}));
        const HttpResult r = refresh(QStringLiteral("rt_seeded"));
        QCOMPARE(r.status, 200);
        QString error;
        const IdTokenClaims claims = parseIdToken(r.json().value(QLatin1String("id_token")).toString(), &error);
        QCOMPARE(claims.email, QStringLiteral("seed@example.com"));
        QCOMPARE(claims.chatgptAccountId, QStringLiteral("acct_seed"));
        QCOMPARE(refresh(QStringLiteral("rt_seeded")).status, 400);
    }

    void configuredTokenError()
    {
        QVERIFY(m_fake.configure(
            {{QStringLiteral("token_error"),
              QJsonObject{{QStringLiteral("status"), 500}, {QStringLiteral("error"), QStringLiteral("boom")}}}}));
        const PkcePair pkce = generatePkce();
        const HttpResult r = exchange(codeFor(pkce.challenge), pkce.verifier);
        QCOMPARE(r.status, 500);
        QCOMPARE(r.json().value(QLatin1String("error")).toString(), QStringLiteral("boom"));
        QVERIFY(m_fake.configure({{QStringLiteral("token_error"), QJsonValue()}}));
        const PkcePair again = generatePkce();
        QCOMPARE(exchange(codeFor(again.challenge), again.verifier).status, 200);
    }
};

QTEST_GUILESS_MAIN(TestFakeOAuth)
#include "tst_login_fakeoauth.moc"
