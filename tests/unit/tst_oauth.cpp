// PKCE, the authorize URL, callback parsing and token answers of the browser login (issue 3 point 2).
#include "accounts/AuthTokens.h"
#include "accounts/LoginStorage.h"
#include "accounts/OAuthProtocol.h"
#include "accounts/Pkce.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QSet>
#include <QTest>
#include <QUrlQuery>

using namespace sy;

namespace {

QString jwt(const QJsonObject &payload)
{
    const auto part = [](const QJsonObject &o) {
        return QJsonDocument(o)
            .toJson(QJsonDocument::Compact)
            .toBase64(QByteArray::Base64UrlEncoding | QByteArray::OmitTrailingEquals);
    };
    return QString::fromLatin1(part({{QStringLiteral("alg"), QStringLiteral("none")}}) + '.' + part(payload) + ".sig");
}

QJsonObject authClaim(const QString &account, const QString &user, const QString &plan)
{
    QJsonObject auth{{QStringLiteral("chatgpt_user_id"), user}, {QStringLiteral("chatgpt_plan_type"), plan}};
    if (!account.isEmpty())
        auth.insert(QStringLiteral("chatgpt_account_id"), account);
    return auth;
}

} // namespace

class TestOAuth : public QObject
{
    Q_OBJECT

private slots:
    void pkceRfc7636Vector()
    {
        // RFC 7636 appendix B.
        QCOMPARE(pkceChallengeS256(QStringLiteral("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk")),
                 QStringLiteral("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"));
    }

    void pkceGeneratedPairs()
    {
        QSet<QString> verifiers;
        for (int i = 0; i < 50; ++i) {
            const PkcePair p = generatePkce();
            QVERIFY2(isPkceShaped(p.verifier), qPrintable(p.verifier));
            QVERIFY(isPkceShaped(p.challenge));
            QCOMPARE(p.challenge.size(), 43); // a SHA-256 digest in unpadded base64url
            QCOMPARE(p.challenge, pkceChallengeS256(p.verifier));
            verifiers.insert(p.verifier);
        }
        QCOMPARE(verifiers.size(), 50);
        const QString state = randomUrlSafeToken(32);
        QCOMPARE(state.size(), 43);
        QVERIFY(isPkceShaped(state));
        QVERIFY(state != randomUrlSafeToken(32));
    }

    void pkceShape()
    {
        QVERIFY(!isPkceShaped(QString(42, QLatin1Char('a'))));
        QVERIFY(isPkceShaped(QString(43, QLatin1Char('a'))));
        QVERIFY(isPkceShaped(QString(128, QLatin1Char('~'))));
        QVERIFY(!isPkceShaped(QString(129, QLatin1Char('a'))));
        QVERIFY(!isPkceShaped(QString(50, QLatin1Char('a')) + QLatin1Char('+')));
        QVERIFY(!isPkceShaped(QString(50, QLatin1Char('a')) + QLatin1Char('=')));
    }

    void authorizeUrl()
    {
        const QUrl url = oauth::authorizeUrl(QUrl(QStringLiteral("https://auth.openai.com")),
                                             {QString::fromLatin1(oauth::kCodexClientId), oauth::redirectUriFor(1455),
                                              QStringLiteral("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"),
                                              QStringLiteral("st+ate/with=odd&chars")});
        QCOMPARE(url.scheme(), QStringLiteral("https"));
        QCOMPARE(url.host(), QStringLiteral("auth.openai.com"));
        QCOMPARE(url.path(), QStringLiteral("/oauth/authorize"));
        const QUrlQuery q(url);
        const auto v = [&q](const char *k) { return q.queryItemValue(QLatin1String(k), QUrl::FullyDecoded); };
        QCOMPARE(v("response_type"), QStringLiteral("code"));
        QCOMPARE(v("client_id"), QStringLiteral("app_EMoamEEZ73f0CkXaXp7hrann"));
        QCOMPARE(v("redirect_uri"), QStringLiteral("http://localhost:1455/auth/callback"));
        QCOMPARE(v("scope"), QStringLiteral("openid profile email offline_access"));
        QCOMPARE(v("code_challenge"), QStringLiteral("E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"));
        QCOMPARE(v("code_challenge_method"), QStringLiteral("S256"));
        QCOMPARE(v("id_token_add_organizations"), QStringLiteral("true"));
        QCOMPARE(v("codex_cli_simplified_flow"), QStringLiteral("true"));
        QCOMPARE(v("state"), QStringLiteral("st+ate/with=odd&chars"));
        QCOMPARE(q.queryItems().size(), 9);
        // Every reserved character of a value is percent-encoded on the wire ('+' would read as a space).
        const QByteArray wire = url.toEncoded();
        QVERIFY2(wire.contains("redirect_uri=http%3A%2F%2Flocalhost%3A1455%2Fauth%2Fcallback"), wire.constData());
        QVERIFY2(wire.contains("state=st%2Bate%2Fwith%3Dodd%26chars"), wire.constData());
        QVERIFY2(wire.contains("scope=openid%20profile%20email%20offline_access"), wire.constData());
    }

    void endpointKeepsIssuerPrefix()
    {
        QCOMPARE(oauth::endpointUrl(QUrl(QStringLiteral("http://127.0.0.1:9/")), QStringLiteral("/oauth/token")),
                 QUrl(QStringLiteral("http://127.0.0.1:9/oauth/token")));
        QCOMPARE(oauth::endpointUrl(QUrl(QStringLiteral("http://h/idp/?x=1")), QStringLiteral("/oauth/token")),
                 QUrl(QStringLiteral("http://h/idp/oauth/token")));
        QCOMPARE(oauth::redirectUriFor(40123), QStringLiteral("http://localhost:40123/auth/callback"));
    }

    void callbackParsing_data()
    {
        QTest::addColumn<QString>("query");
        QTest::addColumn<int>("kind");
        QTest::addColumn<QString>("code");
        QTest::addColumn<QString>("error");
        using K = oauth::CallbackParams::Kind;
        QTest::newRow("code") << "code=ac_1%2B2&state=S1" << int(K::Code) << "ac_1+2"
                              << "";
        QTest::newRow("denied") << "error=access_denied&error_description=no+way&state=S1" << int(K::Denied) << ""
                                << "access_denied";
        QTest::newRow("other error") << "error=server_error&state=S1" << int(K::ProviderError) << ""
                                     << "server_error";
        QTest::newRow("wrong state") << "code=ac_1&state=S2" << int(K::StateMismatch) << ""
                                     << "";
        QTest::newRow("no state") << "code=ac_1" << int(K::StateMismatch) << ""
                                  << "";
        QTest::newRow("error with wrong state") << "error=access_denied&state=S2" << int(K::StateMismatch) << ""
                                                << "";
        QTest::newRow("state prefix") << "code=ac_1&state=S" << int(K::StateMismatch) << ""
                                      << "";
        QTest::newRow("no code") << "state=S1" << int(K::Malformed) << ""
                                 << "";
        QTest::newRow("empty code") << "code=&state=S1" << int(K::Malformed) << ""
                                    << "";
    }

    void callbackParsing()
    {
        QFETCH(QString, query);
        QFETCH(int, kind);
        QFETCH(QString, code);
        QFETCH(QString, error);
        const oauth::CallbackParams p = oauth::parseCallback(QUrlQuery(query), QStringLiteral("S1"));
        QCOMPARE(int(p.kind), kind);
        QCOMPARE(p.code, code);
        QCOMPARE(p.error, error);
    }

    void callbackNeedsExpectedState()
    {
        // An empty expected state must never match an empty or missing one.
        QCOMPARE(oauth::parseCallback(QUrlQuery(QStringLiteral("code=x&state=")), QString()).kind,
                 oauth::CallbackParams::Kind::StateMismatch);
    }

    void formEncoding()
    {
        QCOMPARE(oauth::formEncode({{QStringLiteral("a b"), QStringLiteral("1+2=3&4/5")}}),
                 QByteArray("a%20b=1%2B2%3D3%264%2F5"));
        const QByteArray form = oauth::authorizationCodeForm(QStringLiteral("cid"), QStringLiteral("c+d"),
                                                             QStringLiteral("v-_.~"), oauth::redirectUriFor(1455));
        QCOMPARE(form, QByteArray("grant_type=authorization_code&client_id=cid&code=c%2Bd&code_verifier=v-_.~&"
                                  "redirect_uri=http%3A%2F%2Flocalhost%3A1455%2Fauth%2Fcallback"));
    }

    void tokenResponseSuccess()
    {
        const QByteArray body = R"({"access_token":"at1","refresh_token":"rt1","id_token":"it1","expires_in":3600})";
        const oauth::TokenResponse r = oauth::parseTokenResponse(200, body);
        QVERIFY(r.ok);
        QCOMPARE(r.tokens.accessToken, QStringLiteral("at1"));
        QCOMPARE(r.tokens.refreshToken, QStringLiteral("rt1"));
        QCOMPARE(r.tokens.idToken, QStringLiteral("it1"));
    }

    void tokenResponseFailures()
    {
        oauth::TokenResponse r =
            oauth::parseTokenResponse(400, R"({"error":"invalid_grant","error_description":"code expired"})");
        QVERIFY(!r.ok);
        QCOMPARE(r.error, QStringLiteral("invalid_grant"));
        QCOMPARE(r.errorDescription, QStringLiteral("code expired"));
        QVERIFY2(r.message.contains(QLatin1String("HTTP 400")) && r.message.contains(QLatin1String("invalid_grant")) &&
                     r.message.contains(QLatin1String("code expired")),
                 qPrintable(r.message));

        r = oauth::parseTokenResponse(401, R"({"error":{"message":"Bad client","code":"invalid_client"}})");
        QCOMPARE(r.error, QStringLiteral("invalid_client"));
        QVERIFY2(r.message.contains(QLatin1String("Bad client")), qPrintable(r.message));

        r = oauth::parseTokenResponse(502, "<html>bad gateway</html>");
        QVERIFY(!r.ok);
        QVERIFY2(r.message.contains(QLatin1String("HTTP 502")), qPrintable(r.message));

        r = oauth::parseTokenResponse(0, {}, QStringLiteral("Connection refused"));
        QVERIFY(!r.ok);
        QVERIFY2(r.message.contains(QLatin1String("Connection refused")), qPrintable(r.message));

        // A 200 that lacks a token must not pass, and must not echo the tokens it did get.
        r = oauth::parseTokenResponse(200, R"({"access_token":"secret-at","id_token":"secret-it"})");
        QVERIFY(!r.ok);
        QVERIFY(!r.tokens.isComplete());
        QVERIFY2(r.message.contains(QLatin1String("refresh_token")), qPrintable(r.message));
        QVERIFY(!r.message.contains(QLatin1String("secret")));

        r = oauth::parseTokenResponse(200, R"({"access_token":"a","refresh_token":"","id_token":"i"})");
        QVERIFY(!r.ok);
    }

    void identityFromTokens()
    {
        const qint64 exp = 2000000000;
        AuthTokens t;
        t.accessToken = jwt({{QStringLiteral("exp"), exp},
                             {QStringLiteral("https://api.openai.com/auth"), authClaim("acct_9", "u9", "pro")}});
        t.idToken = jwt({{QStringLiteral("email"), QStringLiteral("a@example.com")},
                         {QStringLiteral("exp"), exp - 100},
                         {QStringLiteral("https://api.openai.com/auth"), authClaim("acct_9", "u9", "team")}});
        t.refreshToken = QStringLiteral("rt");
        QString error;
        auto id = identityFromLoginTokens(t, 1234, &error);
        QVERIFY2(id, qPrintable(error));
        QCOMPARE(id->chatgptAccountId, QStringLiteral("acct_9"));
        QCOMPARE(id->userId, QStringLiteral("u9"));
        QCOMPARE(id->email, QStringLiteral("a@example.com"));
        QCOMPARE(id->plan, QStringLiteral("team"));                        // the id_token's plan
        QCOMPARE(id->tokenExpiresAtMs, std::optional<qint64>(exp * 1000)); // the access token's exp
        QCOMPARE(id->lastRefreshMs, std::optional<qint64>(1234));

        // The account id may come from the access token alone.
        t.idToken = jwt({{QStringLiteral("email"), QStringLiteral("a@example.com")},
                         {QStringLiteral("https://api.openai.com/auth"), authClaim({}, "u9", "plus")}});
        id = identityFromLoginTokens(t, 1, &error);
        QVERIFY2(id, qPrintable(error));
        QCOMPARE(id->chatgptAccountId, QStringLiteral("acct_9"));

        // Neither token names a workspace: refused, and the reason holds no token text.
        t.accessToken = jwt({{QStringLiteral("exp"), exp}});
        QVERIFY(!identityFromLoginTokens(t, 1, &error));
        QVERIFY2(error.contains(QLatin1String("chatgpt_account_id")), qPrintable(error));
        QVERIFY(!error.contains(t.accessToken) && !error.contains(t.idToken));

        t.idToken = QStringLiteral("not-a-jwt");
        QVERIFY(!identityFromLoginTokens(t, 1, &error));
        QVERIFY2(error.contains(QLatin1String("id_token")), qPrintable(error));
        QVERIFY(!error.contains(QLatin1String("not-a-jwt")));
    }
};

QTEST_GUILESS_MAIN(TestOAuth)
#include "tst_oauth.moc"
