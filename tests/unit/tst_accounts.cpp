// Accounts: id_token claims, Codex auth.json import, the token blob, and the SecretStore contract
// (through the in-memory store that other modules' tests use).
#include "TestSupport.h"
#include "accounts/AuthJson.h"
#include "accounts/AuthTokens.h"
#include "accounts/IdToken.h"
#include "lib/MemorySecretStore.h"

#include <QDir>
#include <QElapsedTimer>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QTest>
#include <QThread>

using namespace sy;

namespace {

QString b64url(const QJsonObject &o)
{
    return QString::fromLatin1(QJsonDocument(o)
                                   .toJson(QJsonDocument::Compact)
                                   .toBase64(QByteArray::Base64UrlEncoding | QByteArray::OmitTrailingEquals));
}

QString fakeJwt(const QJsonObject &payload)
{
    return b64url(QJsonObject{{QStringLiteral("alg"), QStringLiteral("none")}}) + QLatin1Char('.') + b64url(payload) +
           QStringLiteral(".c2lnbmF0dXJl");
}

qint64 utcMs(int y, int mo, int d, int h, int mi, int s, int ms)
{
    return QDateTime(QDate(y, mo, d), QTime(h, mi, s, ms), Qt::UTC).toMSecsSinceEpoch();
}

// Every string value in the file (keys excluded), and each dot-separated piece of it (JWT segments).
QStringList secretsIn(const QByteArray &fileText)
{
    QStringList secrets;
    static const QRegularExpression valueRe(QStringLiteral(R"re(:\s*"([^"]*)"?)re"));
    auto it = valueRe.globalMatch(QString::fromUtf8(fileText));
    while (it.hasNext()) {
        const QString value = it.next().captured(1);
        const QStringList pieces = value.split(QLatin1Char('.'));
        for (const QString &p : pieces) {
            if (p.trimmed().size() >= 6)
                secrets << p.trimmed();
        }
    }
    // The one array-only file holds its secret as an array element.
    static const QRegularExpression arrayRe(QStringLiteral(R"re(\["([^"]{6,})"\])re"));
    auto ait = arrayRe.globalMatch(QString::fromUtf8(fileText));
    while (ait.hasNext())
        secrets << ait.next().captured(1);
    return secrets;
}

} // namespace

class tst_Accounts : public QObject
{
    Q_OBJECT

private slots:
    void parseIdTokenReadsClaims()
    {
        const QJsonObject file =
            QJsonDocument::fromJson(test::readTestData(QStringLiteral("auth/personal-alice.json"))).object();
        const QString idToken =
            file.value(QStringLiteral("tokens")).toObject().value(QStringLiteral("id_token")).toString();
        QString error = QStringLiteral("stale");
        const IdTokenClaims claims = parseIdToken(idToken, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(claims.email, QStringLiteral("alice@example.test"));
        QCOMPARE(claims.chatgptAccountId, QStringLiteral("11111111-aaaa-4aaa-8aaa-000000000001"));
        QCOMPARE(claims.planType, QStringLiteral("plus"));
        QCOMPARE(claims.userId, QStringLiteral("user-alice"));
        QCOMPARE(claims.subject, QStringLiteral("auth0|alice"));
        QCOMPARE(claims.expiresAtMs, std::optional<qint64>(utcMs(2030, 1, 1, 0, 0, 0, 0)));
    }

    void parseIdTokenUserIdPrecedence()
    {
        const QString auth = QStringLiteral("https://api.openai.com/auth");
        QString error;
        auto claimsOf = [&](const QJsonObject &authClaim) {
            return parseIdToken(fakeJwt({{QStringLiteral("sub"), QStringLiteral("sub-1")}, {auth, authClaim}}), &error);
        };
        QCOMPARE(claimsOf({{QStringLiteral("chatgpt_user_id"), QStringLiteral("cu")},
                           {QStringLiteral("user_id"), QStringLiteral("u")}})
                     .userId,
                 QStringLiteral("cu"));
        QCOMPARE(claimsOf({{QStringLiteral("user_id"), QStringLiteral("u")}}).userId, QStringLiteral("u"));
        QCOMPARE(claimsOf({}).userId, QStringLiteral("sub-1"));
        QVERIFY(error.isEmpty());
        // Padded base64url payloads are accepted too.
        const QString padded =
            QStringLiteral("e30.") +
            QString::fromLatin1(QByteArray(R"({"sub":"ab"})").toBase64(QByteArray::Base64UrlEncoding)) +
            QStringLiteral(".s");
        QCOMPARE(parseIdToken(padded, &error).subject, QStringLiteral("ab"));
        QVERIFY2(error.isEmpty(), qPrintable(error));
    }

    void parseIdTokenRejectsGarbage_data()
    {
        QTest::addColumn<QString>("jwt");
        QTest::addColumn<QString>("reason");
        QTest::newRow("empty") << QString() << QStringLiteral("three dot-separated parts");
        QTest::newRow("one part") << QStringLiteral("secretsecretsecret")
                                  << QStringLiteral("three dot-separated parts");
        QTest::newRow("two parts") << QStringLiteral("secretsecret.secretsecret")
                                   << QStringLiteral("three dot-separated parts");
        QTest::newRow("four parts") << QStringLiteral("aaaaaaa.bbbbbbb.ccccccc.ddddddd")
                                    << QStringLiteral("three dot-separated parts");
        QTest::newRow("bad base64") << QStringLiteral("aaaaaaa.secret*payload!.ccccccc")
                                    << QStringLiteral("not valid base64url");
        QTest::newRow("not json") << QStringLiteral("aaaaaaa.") +
                                         QString::fromLatin1(
                                             QByteArray("secret plain text").toBase64(QByteArray::Base64UrlEncoding)) +
                                         QStringLiteral(".ccccccc")
                                  << QStringLiteral("not a JSON object");
    }

    void parseIdTokenRejectsGarbage()
    {
        QFETCH(QString, jwt);
        QFETCH(QString, reason);
        QString error;
        const IdTokenClaims claims = parseIdToken(jwt, &error);
        QVERIFY2(error.contains(reason), qPrintable(error));
        QVERIFY(claims.userId.isEmpty() && claims.chatgptAccountId.isEmpty() && !claims.expiresAtMs);
        for (const QString &piece : jwt.split(QLatin1Char('.'), Qt::SkipEmptyParts))
            QVERIFY2(!error.contains(piece), qPrintable(error));
    }

    void jwtExpiry()
    {
        QCOMPARE(jwtExpiryMs(fakeJwt({{QStringLiteral("exp"), 1800000000}})), std::optional<qint64>(1800000000000));
        QCOMPARE(jwtExpiryMs(fakeJwt({{QStringLiteral("sub"), QStringLiteral("x")}})), std::nullopt);
        QCOMPARE(jwtExpiryMs(QStringLiteral("opaque-access-token")), std::nullopt);
        QCOMPARE(jwtExpiryMs(fakeJwt({{QStringLiteral("exp"), QStringLiteral("soon")}})), std::nullopt);
    }

    // Fuzzing found (tests/fuzz/regressions/auth_json/id-token-exp-out-of-range): an "exp" far outside qint64
    // seconds was converted and multiplied anyway, undefined behaviour that yielded a garbage expiry.
    void expOutOfRangeIsNoExpiry_data()
    {
        QTest::addColumn<double>("exp");
        QTest::addColumn<std::optional<qint64>>("expected");
        QTest::newRow("1e300") << 1e300 << std::optional<qint64>();
        QTest::newRow("-1e19") << -1e19 << std::optional<qint64>();
        QTest::newRow("2^63 s") << 9223372036854775808.0 << std::optional<qint64>();
        QTest::newRow("year 10000") << 253402300800.0 << std::optional<qint64>();
        QTest::newRow("year 9999") << 253402300799.0 << std::optional<qint64>(253402300799000);
        QTest::newRow("before 1970") << -86400.0 << std::optional<qint64>(-86400000);
    }

    void expOutOfRangeIsNoExpiry()
    {
        QFETCH(double, exp);
        QFETCH(std::optional<qint64>, expected);
        const QString jwt = fakeJwt({{QStringLiteral("sub"), QStringLiteral("user-1")}, {QStringLiteral("exp"), exp}});
        QString error;
        const IdTokenClaims claims = parseIdToken(jwt, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(claims.expiresAtMs, expected);
        QCOMPARE(jwtExpiryMs(jwt), expected);
    }

    void parseAuthJsonValid_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("accountId");
        QTest::addColumn<QString>("userId");
        QTest::addColumn<QString>("email");
        QTest::addColumn<QString>("plan");
        QTest::addColumn<qint64>("accessExpiry"); // -1: none
        QTest::addColumn<qint64>("lastRefresh");  // -1: none
        const qint64 accessExp = utcMs(2030, 1, 1, 1, 0, 0, 0);
        const qint64 refreshed = utcMs(2026, 11, 29, 10, 0, 0, 123);
        QTest::newRow("personal") << "personal-alice.json"
                                  << "11111111-aaaa-4aaa-8aaa-000000000001"
                                  << "user-alice"
                                  << "alice@example.test"
                                  << "plus" << accessExp << refreshed;
        QTest::newRow("team alice") << "team-alice.json"
                                    << "22222222-bbbb-4bbb-8bbb-000000000002"
                                    << "user-alice"
                                    << "alice@example.test"
                                    << "team" << accessExp << refreshed;
        QTest::newRow("team bob") << "team-bob.json"
                                  << "22222222-bbbb-4bbb-8bbb-000000000002"
                                  << "user-bob"
                                  << "bob@example.test"
                                  << "team" << accessExp << refreshed;
        QTest::newRow("sub only, opaque access token") << "sub-only-carol.json"
                                                       << "33333333-aaaa-4aaa-8aaa-000000000001"
                                                       << "auth0|carol"
                                                       << "carol@example.test"
                                                       << "pro" << qint64(-1) << qint64(-1);
    }

    void parseAuthJsonValid()
    {
        QFETCH(QString, file);
        QFETCH(QString, accountId);
        QFETCH(QString, userId);
        QFETCH(QString, email);
        QFETCH(QString, plan);
        QFETCH(qint64, accessExpiry);
        QFETCH(qint64, lastRefresh);
        const QByteArray text = test::readTestData(QStringLiteral("auth/") + file);
        QString error = QStringLiteral("stale");
        const AuthJsonImport imported = parseAuthJson(text, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(imported.chatgptAccountId, accountId);
        QCOMPARE(imported.userId, userId);
        QCOMPARE(imported.email, email);
        QCOMPARE(imported.plan, plan);
        QCOMPARE(imported.accessTokenExpiresAtMs.value_or(-1), accessExpiry);
        QCOMPARE(imported.lastRefreshMs.value_or(-1), lastRefresh);
        const QJsonObject tokens = QJsonDocument::fromJson(text).object().value(QStringLiteral("tokens")).toObject();
        QCOMPARE(imported.tokens.idToken, tokens.value(QStringLiteral("id_token")).toString());
        QCOMPARE(imported.tokens.accessToken, tokens.value(QStringLiteral("access_token")).toString());
        QCOMPARE(imported.tokens.refreshToken, tokens.value(QStringLiteral("refresh_token")).toString());
        QVERIFY(imported.tokens.isComplete());
    }

    void parseAuthJsonRejectsMalformed_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("reason");
        const QList<QPair<const char *, const char *>> cases = {
            {"truncated.json", "not valid JSON"},
            {"not-an-object.json", "not a JSON object"},
            {"api-key-only.json", "API key, not a ChatGPT login"},
            {"tokens-not-object.json", "\"tokens\" is missing or not an object"},
            {"missing-id-token.json", "tokens.id_token is missing"},
            {"missing-access-token.json", "tokens.access_token is missing"},
            {"missing-refresh-token.json", "tokens.refresh_token is missing"},
            {"access-token-number.json", "tokens.access_token is not a string"},
            {"refresh-token-blank.json", "tokens.refresh_token is empty"},
            {"id-token-not-jwt.json", "id_token is invalid: not a JWT"},
            {"id-token-bad-base64.json", "id_token is invalid: JWT payload is not valid base64url"},
            {"id-token-payload-array.json", "id_token is invalid: JWT payload is not a JSON object"},
            {"account-id-mismatch.json", "does not match the id_token's chatgpt_account_id"},
            {"no-account-id.json", "no ChatGPT account id"},
            {"no-user-id.json", "names no user"},
        };
        QStringList listed;
        for (const auto &c : cases) {
            QTest::newRow(c.first) << QString::fromLatin1(c.first) << QString::fromLatin1(c.second);
            listed << QString::fromLatin1(c.first);
        }
        // A new malformed fixture must come with its expected reason.
        const QStringList present =
            QDir(test::testDataDir() + QStringLiteral("/auth/malformed")).entryList({QStringLiteral("*.json")});
        for (const QString &f : present)
            QVERIFY2(listed.contains(f), qPrintable(QStringLiteral("no expectation for malformed/") + f));
    }

    void parseAuthJsonRejectsMalformed()
    {
        QFETCH(QString, file);
        QFETCH(QString, reason);
        const QByteArray text = test::readTestData(QStringLiteral("auth/malformed/") + file);
        QString error;
        const AuthJsonImport imported = parseAuthJson(text, &error);
        QVERIFY2(error.contains(reason), qPrintable(error));
        QVERIFY(imported.chatgptAccountId.isEmpty());
        QVERIFY(imported.tokens.accessToken.isEmpty() && imported.tokens.refreshToken.isEmpty());
        const QStringList secrets = secretsIn(text);
        QVERIFY(!secrets.isEmpty());
        for (const QString &secret : secrets)
            QVERIFY2(!error.contains(secret), qPrintable(QStringLiteral("error leaks file content: ") + error));
    }

    void tokenBlobRoundTrip()
    {
        const AuthTokens tokens{QStringLiteral("acc.ess"), QStringLiteral("ref\"resh"), QStringLiteral("i.d")};
        const QByteArray blob = serializeTokens(tokens);
        QVERIFY(QJsonDocument::fromJson(blob).isObject());
        AuthTokens back;
        QString error;
        QVERIFY(deserializeTokens(blob, &back, &error));
        QCOMPARE(back, tokens);

        QVERIFY(!deserializeTokens(QByteArray("zqX98765"), &back, &error));
        QVERIFY(!error.isEmpty() && !error.contains(QStringLiteral("zqX")));
        QVERIFY(
            !deserializeTokens(QByteArray(R"({"access_token":"zqA1234","refresh_token":"zqR1234"})"), &back, &error));
        QVERIFY2(error.contains(QStringLiteral("id_token")) && !error.contains(QStringLiteral("zq")),
                 qPrintable(error));
    }

    void memoryStoreAnswersLaterAndRoundTrips()
    {
        test::MemorySecretStore store;
        const AuthTokens tokens{QStringLiteral("a"), QStringLiteral("r"), QStringLiteral("i")};
        bool called = false;
        store.writeTokens(QStringLiteral("acc_1"), tokens, [&](const SecretOutcome &o) { called = o.ok; });
        QVERIFY(!called); // never inside the call
        QTRY_VERIFY(called);

        AuthTokens read;
        SecretOutcome outcome = store.readTokensBlocking(QStringLiteral("acc_1"), &read);
        QVERIFY2(outcome.ok, qPrintable(outcome.errorText));
        QCOMPARE(read, tokens);
        QVERIFY(store.removeTokensBlocking(QStringLiteral("acc_1")).ok);
        outcome = store.readTokensBlocking(QStringLiteral("acc_1"), &read);
        QVERIFY(!outcome.ok);
        QCOMPARE(outcome.error, SecretError::NotFound);
        QCOMPARE(store.calls(), (QStringList{QStringLiteral("write:acc_1"), QStringLiteral("read:acc_1"),
                                             QStringLiteral("remove:acc_1"), QStringLiteral("read:acc_1")}));
    }

    void blockingHelpersReportFailuresAndTimeouts()
    {
        test::MemorySecretStore store;
        store.failWith(SecretError::NoBackend, QStringLiteral("no secure keychain available (test)"));
        SecretOutcome outcome = store.writeTokensBlocking(QStringLiteral("acc_2"), {});
        QCOMPARE(outcome.error, SecretError::NoBackend);
        QCOMPARE(outcome.errorText, QStringLiteral("no secure keychain available (test)"));
        QVERIFY(!store.contains(QStringLiteral("acc_2")));

        store.failWith(SecretError::Timeout);
        QElapsedTimer timer;
        timer.start();
        outcome = store.readTokensBlocking(QStringLiteral("acc_2"), nullptr, 300);
        QCOMPARE(outcome.error, SecretError::Timeout);
        QVERIFY2(outcome.errorText.contains(QStringLiteral("did not answer within 0.3 s")),
                 qPrintable(outcome.errorText));
        QVERIFY(timer.elapsed() >= 290);
        QVERIFY(timer.elapsed() < 5000);
    }

    void blockingHelpersRefuseForeignThread()
    {
        test::MemorySecretStore store;
        SecretOutcome outcome;
        QThread *thread =
            QThread::create([&] { outcome = store.readTokensBlocking(QStringLiteral("acc_3"), nullptr); });
        thread->start();
        QVERIFY(thread->wait(5000));
        delete thread;
        QVERIFY(!outcome.ok);
        QVERIFY2(outcome.errorText.contains(QStringLiteral("thread")), qPrintable(outcome.errorText));
        QVERIFY(store.calls().isEmpty());
    }
};

QTEST_GUILESS_MAIN(tst_Accounts)
#include "tst_accounts.moc"
