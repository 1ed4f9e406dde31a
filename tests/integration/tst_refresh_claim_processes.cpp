// Refresh single-flight across processes (issue 3 point 4): replicas sharing one database share the rotating,
// single-use refresh tokens, so only the holder of the durable claim in refresh_claims may refresh. Here the
// test process plays the other replica with the same core classes the product uses (RefreshClaimRepository,
// TokenRefresher, DatabaseSecretStore under SWITCHYARD_SECRET_BACKEND=database) against a real
// `switchyard serve` whose account gets an upstream 401:
//  - while the other replica's claim is live the serving process does not call the token endpoint, and once
//    that replica has stored its rotated tokens and released the claim, the waiting turn goes on with the
//    new access token (no second refresh: the consumed refresh token is never presented again);
//  - a claim whose holder died is taken over when its TTL runs out, and one that already ran out at once.
#include "accounts/AuthTokens.h"
#include "accounts/DatabaseSecretStore.h"
#include "accounts/SecretCipher.h"
#include "accounts/TokenRefresher.h"
#include "fake_oauth/FakeOAuthProcess.h"
#include "lib/CodexRequests.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/ProxyProcess.h"
#include "lib/SecretScan.h"
#include "store/Database.h"
#include "store/RefreshClaimRepository.h"

#include <QDateTime>
#include <QDeadlineTimer>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <memory>
#include <optional>

using namespace sy;
using namespace sy::test;

namespace {

QJsonObject identityOf(const FakeAccount &a)
{
    return {{QStringLiteral("email"), a.email},
            {QStringLiteral("chatgpt_account_id"), a.chatgptAccountId},
            {QStringLiteral("chatgpt_user_id"), a.userId},
            {QStringLiteral("chatgpt_plan_type"), a.plan}};
}

qint64 nowMs()
{
    return QDateTime::currentMSecsSinceEpoch();
}

// A Codex turn run on its own thread, so the test can watch the processes while the turn waits.
class BackgroundTurn
{
public:
    BackgroundTurn(const QUrl &url, const QString &text)
    {
        const QByteArray body = codexBody(text);
        m_thread.reset(
            QThread::create([this, url, body] { m_result = sseRequest("POST", url, kCodexHeaders, body, 60000); }));
        m_thread->start();
    }
    ~BackgroundTurn() { m_thread->wait(); }
    bool finished() const { return m_thread->isFinished(); }
    bool wait(int timeoutMs) { return m_thread->wait(QDeadlineTimer(timeoutMs)); }
    const SseResult &result() const { return m_result; }

private:
    std::unique_ptr<QThread> m_thread;
    SseResult m_result;
};

} // namespace

class TestRefreshClaimProcesses : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    FakeOAuthProcess m_oauth;
    QTemporaryDir m_keys;
    std::unique_ptr<ProxyProcess> m_proxy;

    QString keyFile() const { return m_keys.filePath(QStringLiteral("replicas.key")); }
    QString sqlitePath() const { return m_proxy->dataDir() + QStringLiteral("/switchyard.sqlite"); }

    // One account, tokens in the database; its access token gets 401 upstream until it is replaced.
    QString startProxy()
    {
        m_proxy = std::make_unique<ProxyProcess>();
        m_proxy->setEnv(QStringLiteral("SWITCHYARD_AUTH_URL"), m_oauth.issuer());
        m_proxy->setEnv(QStringLiteral("SWITCHYARD_SECRET_BACKEND"), QStringLiteral("database"));
        m_proxy->setEnv(QStringLiteral("SWITCHYARD_SECRET_KEY_FILE"), keyFile());
        // No keychain: every secret goes through the shared database, as between replicas.
        m_proxy->setEnv(QStringLiteral("DBUS_SESSION_BUS_ADDRESS"), QStringLiteral("unix:path=/nonexistent/bus"));
        if (!m_proxy->addAccounts(1))
            return m_proxy->errorString();
        const FakeAccount &a = m_proxy->accounts().at(0);
        if (!m_oauth.addRefreshToken(a.refreshToken, identityOf(a)))
            return m_oauth.errorString();
        if (!m_proxy->start(m_fake.baseUrl()))
            return m_proxy->errorString();
        if (!m_fake.scriptToken(a.accessToken, {QStringLiteral("401")}, true))
            return m_fake.errorString();
        return {};
    }

    // The other replica's claim operations, on its own connection to the shared database.
    bool claimAs(const QString &owner, const QString &accountId, qint64 ttlMs)
    {
        Database db;
        QString error;
        if (!db.open(sqlitePath(), &error))
            return false;
        return RefreshClaimRepository(db).claim(accountId, owner, nowMs(), ttlMs, &error);
    }

    bool releaseAs(const QString &owner, const QString &accountId)
    {
        Database db;
        QString error;
        return db.open(sqlitePath(), &error) && RefreshClaimRepository(db).release(accountId, owner, &error);
    }

    std::optional<qint64> claimExpiry(const QString &accountId)
    {
        Database db;
        QString error;
        if (!db.open(sqlitePath(), &error, Database::OpenMode::ReadOnly))
            return std::nullopt;
        return RefreshClaimRepository(db).heldUntil(accountId, &error);
    }

    // The other replica's refresh: one request to the token endpoint with the refresh token it holds.
    RefreshResult refreshAsOtherReplica(const QString &accountId, const AuthTokens &current)
    {
        TokenRefresher refresher(QUrl(m_oauth.issuer()));
        RefreshResult result;
        QEventLoop loop;
        refresher.refresh(accountId, current, [&](const RefreshResult &r) {
            result = r;
            loop.quit();
        });
        loop.exec();
        return result;
    }

    std::optional<SecretKey> key()
    {
        QString error;
        return SecretKey::fromFile(keyFile(), &error);
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

    // Waits until the upstream has answered `accessToken` (with the scripted 401).
    bool waitForUpstreamUse(const QString &accessToken, int timeoutMs = 10000)
    {
        QDeadlineTimer deadline(timeoutMs);
        do {
            for (const QJsonValue &v : upstreamTurns()) {
                if (str(v.toObject(), "authorization") == accessToken)
                    return true;
            }
            QThread::msleep(50);
        } while (!deadline.hasExpired());
        return false;
    }

    QString accountStatus(const QString &id)
    {
        const QJsonArray list =
            m_proxy->cli({QStringLiteral("accounts"), QStringLiteral("list"), QStringLiteral("--json")}).json().array();
        for (const QJsonValue &v : list) {
            if (str(v.toObject(), "account_id") == id)
                return str(v.toObject(), "status");
        }
        return {};
    }

    QUrl codexUrl() const { return QUrl(m_proxy->url(QStringLiteral("/backend-api/codex/responses"))); }

private slots:
    void initTestCase()
    {
        QVERIFY2(!qEnvironmentVariableIsEmpty("SWITCHYARD_BIN"), "run through ctest (SWITCHYARD_BIN)");
        QVERIFY(writeSecretKeyFile(keyFile()));
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

    // (a) and (b): the other replica holds the claim; the serving process waits, then adopts its tokens.
    void liveForeignClaimIsWaitedForAndItsTokensAdopted()
    {
        const QString error = startProxy();
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const FakeAccount a = m_proxy->accounts().at(0);
        const QString other = QStringLiteral("other-process");
        QVERIFY(claimAs(other, a.id, 60000));
        const std::optional<qint64> foreignExpiry = claimExpiry(a.id);
        QVERIFY(foreignExpiry);

        QElapsedTimer elapsed;
        elapsed.start();
        BackgroundTurn turn(codexUrl(), QStringLiteral("ECHO: waits for the other replica"));
        QVERIFY(waitForUpstreamUse(a.accessToken));
        // Several of the coordinator's claim polls (every 500 ms) pass: it must keep waiting.
        QThread::msleep(2500);
        QCOMPARE(refreshRequests().size(), 0);
        QVERIFY(!turn.finished());
        QCOMPARE(claimExpiry(a.id), foreignExpiry); // the claim is still the other replica's

        // The other replica refreshes, stores the rotated tokens and only then releases its claim.
        const AuthTokens old{a.accessToken, a.refreshToken, {}};
        const RefreshResult rotated = refreshAsOtherReplica(a.id, old);
        QVERIFY2(rotated.ok, qPrintable(rotated.message));
        QVERIFY(rotated.tokens.refreshToken != a.refreshToken);
        const std::optional<SecretKey> k = key();
        QVERIFY(k);
        {
            DatabaseSecretStore store(sqlitePath(), *k);
            const SecretOutcome written = store.writeTokensBlocking(a.id, rotated.tokens);
            QVERIFY2(written.ok, qPrintable(written.errorText));
        }
        QThread::msleep(1000); // stored but still claimed: no refresh, no retry yet
        QVERIFY(!turn.finished());
        QVERIFY(releaseAs(other, a.id));

        QVERIFY(turn.wait(30000));
        const SseResult &r = turn.result();
        QVERIFY2(r.status == 200, r.body.constData());
        QCOMPARE(r.eventTypes().value(r.events.size() - 1), QByteArray("response.completed"));
        QVERIFY(elapsed.elapsed() >= 3500);
        const QJsonArray turns = upstreamTurns(r.header("x-request-id"));
        QCOMPARE(turns.size(), 2);
        QCOMPARE(str(turns.at(0).toObject(), "authorization"), a.accessToken);
        QCOMPARE(str(turns.at(1).toObject(), "authorization"), rotated.tokens.accessToken);

        // The only refresh was the other replica's: the serving process adopted its tokens.
        const QJsonArray refreshes = refreshRequests();
        QCOMPARE(refreshes.size(), 1);
        QCOMPARE(str(refreshes.at(0).toObject(), "refresh_token"), a.refreshToken);
        QVERIFY(!claimExpiry(a.id)); // the serving process released the claim it took to adopt
        QCOMPARE(accountStatus(a.id), QStringLiteral("active"));
        {
            DatabaseSecretStore store(sqlitePath(), *k);
            AuthTokens stored;
            QVERIFY(store.readTokensBlocking(a.id, &stored).ok);
            QCOMPARE(stored, rotated.tokens);
        }
        const SseResult next = sseRequest("POST", codexUrl(), kCodexHeaders, codexBody(QStringLiteral("ECHO: next")));
        QCOMPARE(next.status, 200);
        const QJsonArray nextTurns = upstreamTurns(next.header("x-request-id"));
        QCOMPARE(nextTurns.size(), 1);
        QCOMPARE(str(nextTurns.at(0).toObject(), "authorization"), rotated.tokens.accessToken);
        QCOMPARE(refreshRequests().size(), 1);
    }

    // (c) The holder died a few seconds before its claim would expire: the claim is taken over at expiry.
    void deadHoldersClaimIsTakenOverAtExpiry()
    {
        const QString error = startProxy();
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const FakeAccount a = m_proxy->accounts().at(0);
        QVERIFY(claimAs(QStringLiteral("dead-process"), a.id, 6000));
        const std::optional<qint64> expiry = claimExpiry(a.id);
        QVERIFY(expiry);

        BackgroundTurn turn(codexUrl(), QStringLiteral("ECHO: after the dead holder"));
        QVERIFY(waitForUpstreamUse(a.accessToken));
        QThread::msleep(qMax<qint64>(0, qMin<qint64>(1500, *expiry - nowMs() - 1000)));
        QVERIFY(nowMs() < *expiry);
        QCOMPARE(refreshRequests().size(), 0); // still the dead holder's claim

        QVERIFY(turn.wait(30000));
        const qint64 finishedAt = nowMs();
        const SseResult &r = turn.result();
        QVERIFY2(r.status == 200, r.body.constData());
        QVERIFY(finishedAt >= *expiry);
        const QJsonArray refreshes = refreshRequests();
        QCOMPARE(refreshes.size(), 1);
        QCOMPARE(str(refreshes.at(0).toObject(), "refresh_token"), a.refreshToken);
        QCOMPARE(refreshes.at(0).toObject().value(QLatin1String("status")).toInt(), 200);
        const QJsonObject issued = refreshes.at(0).toObject().value(QLatin1String("issued")).toObject();
        const QJsonArray turns = upstreamTurns(r.header("x-request-id"));
        QCOMPARE(turns.size(), 2);
        QCOMPARE(str(turns.at(1).toObject(), "authorization"), str(issued, "access_token"));
        QVERIFY(!claimExpiry(a.id)); // the new holder released it

        // The serving process stored what it got, for the other replicas.
        const std::optional<SecretKey> k = key();
        QVERIFY(k);
        DatabaseSecretStore store(sqlitePath(), *k);
        AuthTokens stored;
        QVERIFY(store.readTokensBlocking(a.id, &stored).ok);
        QCOMPARE(stored.accessToken, str(issued, "access_token"));
        QCOMPARE(stored.refreshToken, str(issued, "refresh_token"));
    }

    // A claim that had already run out when the 401 came delays nothing.
    void expiredClaimIsTakenOverAtOnce()
    {
        const QString error = startProxy();
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const FakeAccount a = m_proxy->accounts().at(0);
        QVERIFY(claimAs(QStringLiteral("dead-process"), a.id, -60000));

        const SseResult r = sseRequest("POST", codexUrl(), kCodexHeaders, codexBody(QStringLiteral("ECHO: at once")));
        QVERIFY2(r.status == 200, r.body.constData());
        QVERIFY2(r.elapsedMs < 3000, qPrintable(QString::number(r.elapsedMs)));
        QCOMPARE(refreshRequests().size(), 1);
        QCOMPARE(upstreamTurns(r.header("x-request-id")).size(), 2);
        QVERIFY(!claimExpiry(a.id));
    }
};

QTEST_GUILESS_MAIN(TestRefreshClaimProcesses)
#include "tst_refresh_claim_processes.moc"
