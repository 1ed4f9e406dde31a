// SWITCHYARD_NEEDS_KEYRING: accounts are imported into a real gnome-keyring.
//
// A large Codex body on its way upstream while its slot claim is (issue 8, under issue 4's guarantees): it is
// sent all but its last byte while the claim is on its way (Turn::sendEarly) and scanned off the proxy thread
// (RequestScanThread). Whatever the order of the claim's answer and the scan's result, nothing reaches the
// upstream whole before both are in: a body the scan refuses never does, a claim won before the scan ends waits
// for it, and a client that leaves meanwhile leaves no slot held. The fault build's scan-hold keeps the scan's
// result back until the test removes a flag file, so the claim is answered first.
#include "lib/CodexRequests.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/HttpTestClient.h"
#include "lib/ProxyProcess.h"
#include "lib/RawHttpClient.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QScopeGuard>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>
#include <QUuid>

using namespace sy;
using namespace sy::test;

namespace {

QByteArray session()
{
    return QUuid::createUuid().toString(QUuid::WithoutBraces).toLatin1();
}

constexpr int kLargeBody = 1536 * 1024; // above kClaimSoonMaxBodyBytes: claimed before the scan, scanned elsewhere

} // namespace

class TestLargeBodyScan : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    std::unique_ptr<ProxyProcess> m_proxy;
    QTemporaryDir m_dir;

    QString holdFlag() const { return m_dir.filePath(QStringLiteral("scan-hold")); }
    // The scan thread reports back once the flag is gone.
    void releaseScan() { QFile::remove(holdFlag()); }

    QString storeFullFlag() const { return m_dir.filePath(QStringLiteral("store-full")); }

    // `accounts` accounts; `holdScan`: the fault build, whose scan thread holds each result until releaseScan();
    // `storeFull`: its store also fails every row change with SQLITE_FULL while storeFullFlag() exists.
    QString start(bool holdScan, int accounts = 1, bool storeFull = false)
    {
        m_proxy = std::make_unique<ProxyProcess>();
        if (holdScan) {
            const QString faults = qEnvironmentVariable("SWITCHYARD_FAULTS_BIN");
            if (faults.isEmpty())
                return QStringLiteral("run through ctest (SWITCHYARD_FAULTS_BIN)");
            QFile flag(holdFlag());
            if (!flag.open(QIODevice::WriteOnly))
                return QStringLiteral("cannot write %1").arg(holdFlag());
            m_proxy->setBinary(faults);
            m_proxy->setEnv(QStringLiteral("SWITCHYARD_FAULTS"),
                            storeFull ? QStringLiteral("scan-hold,store-full") : QStringLiteral("scan-hold"));
            m_proxy->setEnv(QStringLiteral("SWITCHYARD_FAULT_SCAN_HOLD_FLAG"), holdFlag());
            m_proxy->setEnv(QStringLiteral("SWITCHYARD_FAULT_STORE_FULL_FLAG"), storeFullFlag());
        }
        if (!m_proxy->addAccounts(accounts) || !m_proxy->start(m_fake.baseUrl()))
            return m_proxy->errorString();
        return {};
    }

    QJsonObject status() { return httpRequest("GET", QUrl(m_proxy->url(QStringLiteral("/api/status")))).json(); }

    qint64 turnStagesCount(const char *name)
    {
        return status().value(QLatin1String("turn_stages")).toObject().value(QLatin1String(name)).toInteger(-1);
    }

    // The model booked for each cancelled turn (the client left), oldest first; "-" for none.
    QStringList cancelledModels()
    {
        const QString name = QStringLiteral("tst_large_body_scan_log");
        QStringList models;
        {
            QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name);
            db.setDatabaseName(m_proxy->dataDir() + QStringLiteral("/switchyard.sqlite"));
            db.setConnectOptions(QStringLiteral("QSQLITE_BUSY_TIMEOUT=5000;QSQLITE_OPEN_READONLY"));
            if (db.open()) {
                QSqlQuery q(db);
                if (q.exec(QStringLiteral("SELECT COALESCE(model, '-') FROM request_log WHERE status = 'cancelled' "
                                          "ORDER BY started_at_ms")))
                    while (q.next())
                        models << q.value(0).toString();
                else
                    models << q.lastError().text();
            } else {
                models << db.lastError().text();
            }
            db.close();
        }
        QSqlDatabase::removeDatabase(name);
        return models;
    }

    // The owner slots' epochs summed, and how many are held.
    void slotState(qint64 *epochs, int *held)
    {
        *epochs = 0;
        *held = 0;
        for (const QJsonValue &v : status().value(QLatin1String("slots")).toArray()) {
            *epochs += v.toObject().value(QLatin1String("epoch")).toInteger();
            *held += v.toObject().value(QLatin1String("state")).toString() == QLatin1String("held");
        }
    }

    // Turns the upstream received whole, and the body size and ChatGPT account of the latest.
    int turnsUpstream(qint64 *lastBodySize = nullptr, QString *lastAccount = nullptr)
    {
        int n = 0;
        for (const QJsonValue &v : m_fake.log(true)) {
            if (!v.toObject().value(QLatin1String("path")).toString().endsWith(QLatin1String("/responses")))
                continue;
            ++n;
            if (lastBodySize)
                *lastBodySize = v.toObject().value(QLatin1String("body_size")).toInteger(-1);
            if (lastAccount)
                *lastAccount = v.toObject().value(QLatin1String("chatgpt_account_id")).toString();
        }
        return n;
    }

    // After releaseScan(): the turn's answer is a completed stream, and the upstream got one more request, this
    // body whole. Returns what is wrong (empty when nothing); the answer's request id and the ChatGPT account
    // that served it.
    QString completedWhole(RawHttpClient &client, const QByteArray &body, int upstreamBefore,
                           QByteArray *requestId = nullptr, QString *servedBy = nullptr)
    {
        const std::optional<RawResponse> r = client.readResponse(10000);
        if (!r)
            return QStringLiteral("no answer");
        if (r->status != 200 || !r->body.contains("response.completed"))
            return QStringLiteral("answered %1: %2").arg(r->status).arg(QString::fromUtf8(r->body.left(300)));
        qint64 forwarded = 0;
        const int upstream = turnsUpstream(&forwarded, servedBy);
        if (upstream != upstreamBefore + 1)
            return QStringLiteral("%1 requests reached the upstream, not 1").arg(upstream - upstreamBefore);
        if (forwarded != body.size())
            return QStringLiteral("the upstream got %1 bytes of %2").arg(forwarded).arg(body.size());
        if (requestId)
            *requestId = r->header("x-request-id");
        return {};
    }

    // The account's cooldown as /api/status shows it (null: none).
    QJsonValue cooldownShown(const QString &accountId)
    {
        for (const QJsonValue &v : status().value(QLatin1String("accounts")).toArray()) {
            if (v.toObject().value(QLatin1String("account_id")).toString() == accountId)
                return v.toObject().value(QLatin1String("cooldown_until"));
        }
        return QJsonValue(QJsonValue::Undefined);
    }

    // Puts the account in a cooldown only its durable row knows: meta.change_counter is not bumped, so the
    // proxy's snapshot keeps routing to it until a claim, refused by that row, makes it reload.
    QString coolDownBehindTheSnapshot(const QString &accountId)
    {
        const QString name = QStringLiteral("tst_large_body_scan_cooldown");
        QString error;
        {
            QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name);
            db.setDatabaseName(m_proxy->dataDir() + QStringLiteral("/switchyard.sqlite"));
            db.setConnectOptions(QStringLiteral("QSQLITE_BUSY_TIMEOUT=5000"));
            if (!db.open()) {
                error = db.lastError().text();
            } else {
                QSqlQuery q(db);
                q.prepare(QStringLiteral("UPDATE accounts SET cooldown_until_ms = ? WHERE id = ?"));
                q.addBindValue(QDateTime::currentMSecsSinceEpoch() + 600000);
                q.addBindValue(accountId);
                if (!q.exec())
                    error = q.lastError().text();
                else if (q.numRowsAffected() != 1)
                    error = QStringLiteral("no account row %1").arg(accountId);
            }
            db.close();
        }
        QSqlDatabase::removeDatabase(name);
        return error;
    }

    // A turn whose upstream connection stays open: a large body's early send is written at once, not once a new
    // connection is up. Returns the slot epochs once its slot is free again. With `sessionId`, the session is
    // bound to the account that served it.
    qint64 warmUp(const QByteArray &sessionId = {})
    {
        HttpHeaderList headers = kCodexHeaders;
        if (!sessionId.isEmpty())
            headers.append({"session-id", sessionId});
        const HttpResult warm = httpRequest("POST", QUrl(m_proxy->url(QStringLiteral("/backend-api/codex/responses"))),
                                            headers, codexBody(QStringLiteral("warm")));
        if (warm.status != 200)
            return -1;
        qint64 epochs = 0;
        int held = 1;
        QElapsedTimer waited;
        waited.start();
        while ((slotState(&epochs, &held), held) != 0 && waited.elapsed() < 5000)
            QTest::qWait(10);
        return held == 0 ? epochs : -1;
    }

    std::unique_ptr<RawHttpClient> sendLarge(const QByteArray &body, const QByteArray &sessionId = session())
    {
        auto client = std::make_unique<RawHttpClient>();
        if (!client->connectTo(m_proxy->port()))
            return nullptr;
        client->send(RawHttpClient::buildRequest("POST", "/backend-api/codex/responses",
                                                 {{"content-type", "application/json"}, {"session-id", sessionId}},
                                                 body));
        return client;
    }

    // On a proxy started with its scan held: a warm-up turn, then a large turn whose claim is won while its scan
    // is held. Sets the slot epochs and the upstream's turn count from before it.
    // A proxy started with its scan held, and on it a large turn (its text all `fill`) whose claim was won while
    // its scan is held (claimedWhileScanned()). Null after a failed QVERIFY here.
    std::unique_ptr<RawHttpClient> startWithALargeTurnClaimedWhileScanned(QChar fill, qint64 *before,
                                                                          int *upstreamBefore, bool storeFull = false)
    {
        std::unique_ptr<RawHttpClient> client;
        [&] {
            const QString error = start(true, 1, storeFull);
            QVERIFY2(error.isEmpty(), qPrintable(error));
            client = claimedWhileScanned(codexBody(QString(kLargeBody, fill)), before, upstreamBefore);
            QVERIFY2(client, "no large turn whose claim was won while its scan was held");
        }();
        return client;
    }

    // The status of one more, small Codex turn: the proxy serves on.
    int nextTurnStatus()
    {
        return httpRequest("POST", QUrl(m_proxy->url(QStringLiteral("/backend-api/codex/responses"))), kCodexHeaders,
                           codexBody(QStringLiteral("after")))
            .status;
    }

    std::unique_ptr<RawHttpClient> claimedWhileScanned(const QByteArray &body, qint64 *epochsBefore,
                                                       int *upstreamBefore)
    {
        if ((*epochsBefore = warmUp()) < 0)
            return nullptr;
        *upstreamBefore = turnsUpstream();
        auto client = sendLarge(body);
        qint64 epochs = 0;
        int held = 0;
        QElapsedTimer waited;
        waited.start();
        while (client && (slotState(&epochs, &held), held) != 1 && waited.elapsed() < 5000)
            QTest::qWait(10);
        return held == 1 ? std::move(client) : nullptr;
    }

private slots:
    void initTestCase() { QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString())); }

    void init() { QVERIFY(m_fake.reset()); }

    void cleanup()
    {
        releaseScan();
        QFile::remove(storeFullFlag());
        if (m_proxy)
            m_proxy->stop();
        m_proxy.reset();
    }

    // A Codex turn whose session-id comes in its headers has its slot claimed before its body is scanned
    // (Turn::claimBeforeScan). A body that then fails the scan is answered 400 and the claim settled with the
    // turn: the slot's epoch moved once (the claim happened) and no slot stays held. A large body is also sent
    // upstream while it is scanned, all but its last byte (Turn::sendEarly): refused by the scan, that request is
    // given up before it is complete. Red when the byte is not held back (the upstream logs a complete request).
    // The last row has the claim answered before the scan's result: it waits for it, and is settled with the turn.
    void aBodyRefusedAfterItsEarlyClaimLeavesNoSlotHeld_data()
    {
        QTest::addColumn<int>("padding");
        QTest::addColumn<bool>("holdScan");
        QTest::newRow("small body") << 0 << false;
        QTest::newRow("1.5 MiB body, sent while it is scanned") << kLargeBody << false;
        QTest::newRow("1.5 MiB body, its claim answered before the scan") << kLargeBody << true;
    }

    void aBodyRefusedAfterItsEarlyClaimLeavesNoSlotHeld()
    {
        QFETCH(int, padding);
        QFETCH(bool, holdScan);
        const QString error = start(holdScan);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        qint64 before = 0;
        int held = 0;
        slotState(&before, &held);
        QCOMPARE(held, 0);
        if (padding > 0)
            QVERIFY((before = warmUp()) >= 0);
        const int upstreamBefore = turnsUpstream();
        const qint64 earlyBefore = turnStagesCount("early_sends");
        const qint64 scansBefore = turnStagesCount("scans_elsewhere");
        const auto client =
            sendLarge("{\"model\": \"gpt-5-codex\", \"pad\": \"" + QByteArray(padding, 'p') + "\", \"input\": [}");
        QVERIFY(client);
        if (holdScan) {
            qint64 epochs = 0;
            QTRY_VERIFY_WITH_TIMEOUT((slotState(&epochs, &held), held == 1), 5000); // answered: it waits
            QCOMPARE(turnsUpstream(), upstreamBefore);
            releaseScan();
        }
        const std::optional<RawResponse> r = client->readResponse(10000);
        QVERIFY(r);
        QCOMPARE(r->status, 400);
        // The path this row is about was taken.
        QCOMPARE(turnStagesCount("early_sends") - earlyBefore, padding > 0 ? 1 : 0);
        QCOMPARE(turnStagesCount("scans_elsewhere") - scansBefore, padding > 0 ? 1 : 0);
        const QJsonObject body = QJsonDocument::fromJson(r->body).object();
        QCOMPARE(body.value(QLatin1String("error")).toObject().value(QLatin1String("code")).toString(),
                 QStringLiteral("invalid_json"));
        qint64 after = 0;
        QTRY_VERIFY_WITH_TIMEOUT((slotState(&after, &held), held == 0 && after == before + 1), 5000);
        QCOMPARE(turnsUpstream(), upstreamBefore); // nothing reached the upstream
    }

    // A claim won while its body is still scanned waits for the scan: the slot is held, the body all but its
    // last byte upstream, and the upstream has no whole request until the scan passed it; then that early call
    // is the dispatch, and the body arrives byte for byte. Red when the claim's answer does not wait for the scan
    // (the dispatch would send an unscanned turn's request at once).
    void aClaimWonWhileItsBodyIsScannedWaitsForTheScan()
    {
        const QString error = start(true);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const qint64 earlyBefore = turnStagesCount("early_sends");
        const qint64 sentEarlyBefore = turnStagesCount("dispatches_sent_early");
        const QByteArray body = codexBody(QString(kLargeBody, QLatin1Char('x')));
        qint64 before = 0;
        int upstreamBefore = 0;
        const auto client = claimedWhileScanned(body, &before, &upstreamBefore);
        QVERIFY2(client, "no large turn whose claim was won while its scan was held");
        qint64 epochs = 0;
        int held = 0;
        // The warm-up turn's (any body goes early) and this one's.
        QCOMPARE(turnStagesCount("early_sends") - earlyBefore, 2);
        QCOMPARE(turnsUpstream(), upstreamBefore);
        QTest::qWait(200); // time for a dispatch that did not wait
        QCOMPARE(turnsUpstream(), upstreamBefore);
        QCOMPARE(client->partial().status, 0); // no answer yet either
        releaseScan();

        const QString answered = completedWhole(*client, body, upstreamBefore);
        QVERIFY2(answered.isEmpty(), qPrintable(answered));
        QCOMPARE(turnStagesCount("dispatches_sent_early") - sentEarlyBefore, 2); // the early calls went on
        // The scan thread keeps the parser it used for the next large body, and /api/status shows it.
        const QJsonObject scanPool =
            status().value(QLatin1String("large_buffers")).toObject().value(QLatin1String("scan_thread")).toObject();
        QCOMPARE(scanPool.value(QLatin1String("objects")).toInt(-1), 1);
        QVERIFY(scanPool.value(QLatin1String("kept_bytes")).toInteger() >= body.size());
        QTRY_VERIFY_WITH_TIMEOUT((slotState(&epochs, &held), held == 0 && epochs == before + 1), 5000);
    }

    // A claim refused while its body is scanned (the account's durable row is cooling down; the snapshot that
    // routed the session there did not know) is answered after the scan, like a claim won meanwhile: the client
    // has no answer and the upstream no request until the scan is back. Then the turn routes again, without
    // that account, and the other one serves it. The body went early once to each claimed account, never again
    // to the refused one. Red when a refused claim's answer does not wait for the scan (the other account's slot
    // is claimed during the scan), or when the end of the scan sends the body early again to the refused account
    // (three early sends).
    void aClaimRefusedWhileItsBodyIsScannedRoutesAgainAfterTheScan()
    {
        const QString error = start(true, 2);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const QByteArray sessionId = session();
        QVERIFY(warmUp(sessionId) >= 0);
        QString boundChatgpt;
        const int upstreamBefore = turnsUpstream(nullptr, &boundChatgpt);
        const FakeAccount *bound = m_proxy->accountByChatgptId(boundChatgpt);
        QVERIFY2(bound, qPrintable(QStringLiteral("no account behind %1").arg(boundChatgpt)));
        const QString coolError = coolDownBehindTheSnapshot(bound->id);
        QVERIFY2(coolError.isEmpty(), qPrintable(coolError));
        QVERIFY(cooldownShown(bound->id).isNull()); // the snapshot does not know
        const qint64 earlyBefore = turnStagesCount("early_sends");

        const QByteArray body = codexBody(QString(kLargeBody, QLatin1Char('z')));
        const auto client = sendLarge(body, sessionId);
        QVERIFY(client);
        // Refused: the snapshot reloaded and shows the cooldown, while the scan is still held.
        QTRY_VERIFY_WITH_TIMEOUT(cooldownShown(bound->id).isString(), 5000);
        QTest::qWait(200); // time for a turn that did not wait to claim the other account
        qint64 epochs = 0;
        int held = -1;
        slotState(&epochs, &held);
        QCOMPARE(held, 0); // the refused claim holds nothing, and no other claim went out
        QCOMPARE(client->partial().status, 0);
        QCOMPARE(turnsUpstream(), upstreamBefore);
        QCOMPARE(turnStagesCount("early_sends") - earlyBefore, 1);
        releaseScan();

        QByteArray requestId;
        QString servedBy;
        const QString answered = completedWhole(*client, body, upstreamBefore, &requestId, &servedBy);
        QVERIFY2(answered.isEmpty(), qPrintable(answered));
        QVERIFY2(servedBy != boundChatgpt, "served by the account whose claim was refused");
        QCOMPARE(turnStagesCount("early_sends") - earlyBefore, 2);
        const QJsonObject row = m_proxy->waitForRequest(QString::fromLatin1(requestId));
        QCOMPARE(row.value(QLatin1String("status")).toString(), QStringLiteral("completed"));
        QCOMPARE(row.value(QLatin1String("chatgpt_account_id")).toString(), servedBy);
    }

    // A client that leaves while its body is scanned (its claim won meanwhile) ends its turn at once: the slot
    // is released, the early call aborted, and the scan's late result changes nothing but the booked row's
    // model; the proxy serves on. (The turn is gone by then: the scan answers through the scan thread's object.
    // Turn::onScanned's check of a turn settled but not yet deleted is reached in the next test.)
    void aClientLeavingWhileItsBodyIsScannedLeavesNoSlotHeld()
    {
        qint64 before = 0;
        int upstreamBefore = 0;
        auto client = startWithALargeTurnClaimedWhileScanned(QLatin1Char('y'), &before, &upstreamBefore);
        QVERIFY(client);
        qint64 epochs = 0;
        int held = 0;
        client->socket()->abort();
        client.reset();
        QTRY_VERIFY_WITH_TIMEOUT((slotState(&epochs, &held), held == 0 && epochs == before + 1), 5000);
        // Booked before the scan told its model; the turn is gone by the time the scan answers, and the answer
        // fills the model in all the same (red when Turn::start's scan answers through the turn).
        QTRY_COMPARE_WITH_TIMEOUT(cancelledModels(), QStringList{QStringLiteral("-")}, 5000);
        const qint64 scansBefore = turnStagesCount("scans_done");
        releaseScan();
        QTRY_COMPARE_WITH_TIMEOUT(turnStagesCount("scans_done"), scansBefore + 1, 5000); // its result is back
        QTRY_COMPARE_WITH_TIMEOUT(cancelledModels(), QStringList{QStringLiteral("gpt-5-codex")}, 5000);
        QTest::qWait(100);
        QCOMPARE(turnsUpstream(), upstreamBefore);
        QVERIFY(m_proxy->isRunning());
        QCOMPARE(nextTurnStatus(), 200);
    }

    // The same, with the turn still there when its scan answers: its settlement waits for the database's write
    // lock, held here, so the turn is settled but not yet deleted. Turn::onScanned must then do nothing: the turn
    // stays "settling" (not "routing" again), no request goes upstream, the slot is released once. Red (the
    // stage) without its check of a settled turn; route() checks too, so nothing would be claimed or sent.
    void aScanAnsweringASettledTurnChangesNothing()
    {
        qint64 before = 0;
        int upstreamBefore = 0;
        auto client = startWithALargeTurnClaimedWhileScanned(QLatin1Char('z'), &before, &upstreamBefore);
        QVERIFY(client);
        const qint64 scansBefore = turnStagesCount("scans_done");
        // The one turn in flight's stage (/api/status is answered from memory: the store thread is not asked).
        auto onlyStage = [this] {
            const QJsonArray turns = status().value(QLatin1String("in_flight")).toArray();
            return turns.size() == 1 ? turns.at(0).toObject().value(QLatin1String("stage")).toString()
                                     : QStringLiteral("%1 turns in flight").arg(turns.size());
        };
        const QString name = QStringLiteral("tst_large_body_scan_lock");
        const auto forget = qScopeGuard([&] { QSqlDatabase::removeDatabase(name); });
        {
            QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name);
            db.setDatabaseName(m_proxy->dataDir() + QStringLiteral("/switchyard.sqlite"));
            QVERIFY2(db.open(), qPrintable(db.lastError().text()));
            QSqlQuery lock(db);
            QVERIFY2(lock.exec(QStringLiteral("BEGIN IMMEDIATE")), qPrintable(lock.lastError().text()));
            bool locked = true;
            const auto unlock = qScopeGuard([&] { // a failed check below must not leave the proxy locked out
                if (locked)
                    lock.exec(QStringLiteral("ROLLBACK"));
            });
            client->socket()->abort();
            client.reset();
            // The proxy sees the client leave and settles the turn: the settlement waits for the lock. All of this
            // stays well inside the proxy's busy_timeout (5 s).
            QTRY_COMPARE_WITH_TIMEOUT(onlyStage(), QStringLiteral("settling"), 1500);
            releaseScan();
            // The scan thread looks at its flag every 5 ms: its result reaches the turn, settled and still there.
            QTRY_COMPARE_WITH_TIMEOUT(turnStagesCount("scans_done"), scansBefore + 1, 2000);
            QTest::qWait(50);
            QCOMPARE(onlyStage(), QStringLiteral("settling"));
            QVERIFY2(lock.exec(QStringLiteral("ROLLBACK")), qPrintable(lock.lastError().text()));
            locked = false; // its settlement commits now
        }
        qint64 epochs = 0;
        int held = 0;
        QTRY_VERIFY_WITH_TIMEOUT((slotState(&epochs, &held), held == 0 && epochs == before + 1), 5000);
        // Its row, booked without a model, gets the one the scan found (red without Turn::onScanned's fill).
        QTRY_COMPARE_WITH_TIMEOUT(cancelledModels(), QStringList{QStringLiteral("gpt-5-codex")}, 5000);
        QTest::qWait(100);
        QCOMPARE(turnsUpstream(), upstreamBefore);
        QVERIFY(m_proxy->isRunning());
        QCOMPARE(nextTurnStatus(), 200);
        QTRY_VERIFY_WITH_TIMEOUT((slotState(&epochs, &held), held == 0 && epochs == before + 2), 5000);
    }

    // The same during a store outage: the turn's row and settlement wait in memory, and so does the model the scan
    // finds meanwhile; when the store takes writes again the row is written, then the model. Red when the model's
    // write is not kept through the outage (it failed and was only logged). The fault fails every UPDATE, also one
    // that matches no row, so here the fill always waits behind the row; a fill that runs before its row (as an
    // UPDATE matching nothing may on a really full disk) is unit.tst_turn_log's.
    void aScanAnsweringDuringAStoreOutageStillFillsTheModel()
    {
        qint64 before = 0;
        int upstreamBefore = 0;
        auto client = startWithALargeTurnClaimedWhileScanned(QLatin1Char('w'), &before, &upstreamBefore, true);
        QVERIFY(client);
        {
            QFile flag(storeFullFlag());
            QVERIFY(flag.open(QIODevice::WriteOnly));
        }
        client->socket()->abort();
        client.reset();
        // The settlement failed on the full store and waits in memory.
        QTRY_VERIFY_WITH_TIMEOUT(status().value(QLatin1String("store_pending_writes")).toInt() >= 1, 5000);
        QCOMPARE(status().value(QLatin1String("store_writable")).toBool(), false);
        const qint64 scansBefore = turnStagesCount("scans_done");
        const int pendingBefore = status().value(QLatin1String("store_pending_writes")).toInt();
        QCOMPARE(pendingBefore, 1); // the turn's row and settlement, one job
        releaseScan();
        QTRY_COMPARE_WITH_TIMEOUT(turnStagesCount("scans_done"), scansBefore + 1, 5000);
        // The model's write failed too, and waits behind the row.
        QTRY_COMPARE_WITH_TIMEOUT(status().value(QLatin1String("store_pending_writes")).toInt(), pendingBefore + 1,
                                  5000);
        QVERIFY(QFile::remove(storeFullFlag()));
        QTRY_COMPARE_WITH_TIMEOUT(status().value(QLatin1String("store_writable")).toBool(), true, 10000);
        QTRY_COMPARE_WITH_TIMEOUT(status().value(QLatin1String("store_pending_writes")).toInt(), 0, 5000);
        QTRY_COMPARE_WITH_TIMEOUT(cancelledModels(), QStringList{QStringLiteral("gpt-5-codex")}, 5000);
        QCOMPARE(status().value(QLatin1String("store_lost_writes")).toInteger(), 0);
        qint64 epochs = 0;
        int held = 0;
        QTRY_VERIFY_WITH_TIMEOUT((slotState(&epochs, &held), held == 0 && epochs == before + 1), 5000);
        QCOMPARE(turnsUpstream(), upstreamBefore);
        QCOMPARE(nextTurnStatus(), 200);
    }
};

QTEST_GUILESS_MAIN(TestLargeBodyScan)
#include "tst_large_body_scan.moc"
