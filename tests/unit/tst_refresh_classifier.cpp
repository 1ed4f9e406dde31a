// Token refresh building blocks (issue 3 point 4): the failure classifier (permanent vs transient vs
// deactivated), the refresh request body, reading a refresh answer (tokens that are not rotated are kept),
// and the durable single-flight claim in refresh_claims (atomic, exclusive until released or expired).
#include "accounts/OAuthProtocol.h"
#include "accounts/TokenRefresher.h"
#include "store/Database.h"
#include "store/RefreshClaimRepository.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

using namespace sy;

Q_DECLARE_METATYPE(sy::RefreshFailure)

namespace {

QByteArray json(const QJsonObject &o)
{
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

const AuthTokens kOld{QStringLiteral("at-old"), QStringLiteral("rt-old"), QStringLiteral("id-old")};

} // namespace

class tst_RefreshClassifier : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;

private slots:
    void classifier_data()
    {
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("error");
        QTest::addColumn<QString>("description");
        QTest::addColumn<RefreshFailure>("expected");
        const auto P = RefreshFailure::Permanent, T = RefreshFailure::Transient, D = RefreshFailure::Deactivated;
        QTest::newRow("invalid_grant") << 400 << "invalid_grant" << "" << P;
        QTest::newRow("reused in description") << 400 << "invalid_grant" << "refresh_token_reused" << P;
        QTest::newRow("expired as error") << 401 << "refresh_token_expired" << "" << P;
        QTest::newRow("invalidated 401") << 401 << "" << "Refresh_Token_Invalidated by the user" << P;
        QTest::newRow("network") << 0 << "" << "" << T;
        QTest::newRow("server error") << 500 << "invalid_grant" << "" << T;
        QTest::newRow("bad gateway") << 502 << "" << "" << T;
        QTest::newRow("rate limited") << 429 << "" << "" << T;
        QTest::newRow("unknown 400") << 400 << "invalid_request" << "missing scope" << T;
        QTest::newRow("403 without code") << 403 << "forbidden" << "" << T;
        QTest::newRow("account_deactivated") << 401 << "account_deactivated" << "" << D;
        QTest::newRow("user_deactivated in description") << 400 << "invalid_grant" << "user_deactivated" << D;
        QTest::newRow("403 deactivated") << 403 << "" << "This account has been deactivated" << D;
    }

    void classifier()
    {
        QFETCH(int, status);
        QFETCH(QString, error);
        QFETCH(QString, description);
        QFETCH(RefreshFailure, expected);
        QCOMPARE(classifyRefreshFailure(status, error, description), expected);
    }

    void requestBodyIsTheCodexJson()
    {
        const QJsonObject o = QJsonDocument::fromJson(refreshRequestBody(QStringLiteral("rt-1"))).object();
        QCOMPARE(o.value(QLatin1String("grant_type")).toString(), QStringLiteral("refresh_token"));
        QCOMPARE(o.value(QLatin1String("client_id")).toString(), QString::fromLatin1(oauth::kCodexClientId));
        QCOMPARE(o.value(QLatin1String("refresh_token")).toString(), QStringLiteral("rt-1"));
        QCOMPARE(o.value(QLatin1String("scope")).toString(), QString::fromLatin1(oauth::kScope));
        QCOMPARE(o.size(), 4);
    }

    void fullRotation()
    {
        const RefreshResult r = parseRefreshResponse(
            200, json({{"access_token", "at-new"}, {"refresh_token", "rt-new"}, {"id_token", "id-new"}}), kOld);
        QVERIFY(r.ok);
        QCOMPARE(r.failure, RefreshFailure::None);
        QCOMPARE(r.tokens, (AuthTokens{QStringLiteral("at-new"), QStringLiteral("rt-new"), QStringLiteral("id-new")}));
    }

    void absentTokensAreKept()
    {
        const RefreshResult r = parseRefreshResponse(200, json({{"access_token", "at-new"}}), kOld);
        QVERIFY(r.ok);
        QCOMPARE(r.tokens, (AuthTokens{QStringLiteral("at-new"), QStringLiteral("rt-old"), QStringLiteral("id-old")}));
    }

    void answerWithoutAccessTokenIsTransient()
    {
        const RefreshResult r = parseRefreshResponse(200, json({{"refresh_token", "rt-new"}}), kOld);
        QVERIFY(!r.ok);
        QCOMPARE(r.failure, RefreshFailure::Transient);
        QVERIFY(r.tokens.accessToken.isEmpty());
        QVERIFY(!r.message.contains(QLatin1String("rt-new")));
    }

    void refusalNamesTheSpecificCode()
    {
        const RefreshResult r = parseRefreshResponse(
            400, json({{"error", "invalid_grant"}, {"error_description", "refresh_token_reused"}}), kOld);
        QVERIFY(!r.ok);
        QCOMPARE(r.failure, RefreshFailure::Permanent);
        QCOMPARE(r.error, QStringLiteral("refresh_token_reused"));
        QVERIFY2(r.message.contains(QLatin1String("400")), qPrintable(r.message));
        QVERIFY(!r.message.contains(QLatin1String("rt-old")));

        const RefreshResult network = parseRefreshResponse(0, {}, kOld, QStringLiteral("Connection refused"));
        QCOMPARE(network.failure, RefreshFailure::Transient);
        QVERIFY2(network.message.contains(QLatin1String("Connection refused")), qPrintable(network.message));
    }

    void claimIsExclusiveUntilReleasedOrExpired()
    {
        Database db;
        QString error;
        QVERIFY2(db.open(m_dir.filePath(QStringLiteral("claims.sqlite")), &error), qPrintable(error));
        RefreshClaimRepository claims(db);
        const QString acc = QStringLiteral("acc_1");

        QVERIFY(claims.claim(acc, QStringLiteral("A"), 1000, 60000, &error));
        QCOMPARE(claims.heldUntil(acc, &error), std::optional<qint64>(61000));
        // Held: another owner cannot take it, not even at the last millisecond of the TTL.
        QVERIFY(!claims.claim(acc, QStringLiteral("B"), 2000, 60000, &error));
        QVERIFY(error.isEmpty());
        QVERIFY(!claims.claim(acc, QStringLiteral("B"), 61000, 60000, &error));
        // Another account is independent.
        QVERIFY(claims.claim(QStringLiteral("acc_2"), QStringLiteral("B"), 2000, 60000, &error));
        // Only the owner releases it.
        QVERIFY(claims.release(acc, QStringLiteral("B"), &error));
        QVERIFY(claims.heldUntil(acc, &error).has_value());
        QVERIFY(claims.release(acc, QStringLiteral("A"), &error));
        QVERIFY(!claims.heldUntil(acc, &error).has_value());
        QVERIFY(claims.claim(acc, QStringLiteral("B"), 3000, 60000, &error));
        // An expired claim (its holder died) is taken over, and the late holder's release leaves it alone.
        QVERIFY(claims.claim(acc, QStringLiteral("C"), 63001, 60000, &error));
        QVERIFY(claims.release(acc, QStringLiteral("B"), &error));
        QCOMPARE(claims.heldUntil(acc, &error), std::optional<qint64>(123001));
        QVERIFY(error.isEmpty());
    }
};

QTEST_GUILESS_MAIN(tst_RefreshClassifier)
#include "tst_refresh_classifier.moc"
