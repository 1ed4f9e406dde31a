// SWITCHYARD_NEEDS_KEYRING: accounts are imported into a real gnome-keyring.
//
// The ownership protocol seen from clients of one running proxy (issue 4, points 1, 2, 3, 4 and 9): owner
// slots in /api/status and `switchyard status --json`, the admission gate's bound, a busy session moving
// while a continuation waits for its owner, a durable pause made by another process, and anchors of another
// session. The two-replica protocol is tst_ownership's.
#include "lib/CodexRequests.h"
#include "lib/DurableStateChecker.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/HttpTestClient.h"
#include "lib/ProxyProcess.h"
#include "lib/RawHttpClient.h"
#include "lib/TestFiles.h"
#include "store/Database.h"
#include "store/SettingsRepository.h"

#include <QDateTime>
#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QSqlError>
#include <QSqlQuery>
#include <QTest>
#include <QUuid>

using namespace sy;
using namespace sy::test;

namespace {

QByteArray v1Body(const QString &input, const QString &previous = {})
{
    QJsonObject body{{QStringLiteral("model"), QStringLiteral("gpt-5")}, {QStringLiteral("input"), input}};
    if (!previous.isEmpty())
        body.insert(QStringLiteral("previous_response_id"), previous);
    return QJsonDocument(body).toJson(QJsonDocument::Compact);
}

QByteArray session()
{
    return QUuid::createUuid().toString(QUuid::WithoutBraces).toLatin1();
}

} // namespace

class TestOwnershipProxy : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    std::unique_ptr<ProxyProcess> m_proxy;

    QString start(int accounts, const QJsonObject &config, const QHash<QString, QString> &env = {},
                  const QString &binary = {})
    {
        m_proxy = std::make_unique<ProxyProcess>();
        if (!binary.isEmpty())
            m_proxy->setBinary(binary);
        for (auto it = env.begin(); it != env.end(); ++it)
            m_proxy->setEnv(it.key(), it.value());
        QJsonObject c = config;
        c.insert(QStringLiteral("strategy"), QStringLiteral("round_robin"));
        m_proxy->setConfig(c);
        if (!m_proxy->addAccounts(accounts))
            return m_proxy->errorString();
        if (!m_proxy->start(m_fake.baseUrl()))
            return m_proxy->errorString();
        return {};
    }

    QJsonObject status()
    {
        const HttpResult r = httpRequest("GET", QUrl(m_proxy->url(QStringLiteral("/api/status"))));
        return r.json();
    }

    // A count of /api/status turn_stages: early_sends (requests sent upstream while their claim was on its way,
    // dispatched or not), dispatches_sent_early (upstream attempts that took over such a request).
    qint64 turnStagesCount(const char *name)
    {
        return status().value(QLatin1String("turn_stages")).toObject().value(QLatin1String(name)).toInteger(-1);
    }

    // A count of the store thread's waits (busy_poll in /api/status), e.g. the claims announced to it by turns'
    // heads (warm-ups included) or the waits awake it began after a unit.
    qint64 storeCount(const char *name)
    {
        return status().value(QLatin1String("busy_poll")).toObject().value(QLatin1String(name)).toInteger(-1);
    }
    qint64 claimsAnnounced() { return storeCount("store_claims_announced"); }

    // A turn sent on its own connection (so several can be in flight at once).
    std::unique_ptr<RawHttpClient> send(const QByteArray &path, const QByteArray &body, const HttpHeaderList &extra)
    {
        auto client = std::make_unique<RawHttpClient>();
        if (!client->connectTo(m_proxy->port()))
            return nullptr;
        HttpHeaderList headers{{"content-type", "application/json"}};
        headers.append(extra);
        client->send(RawHttpClient::buildRequest("POST", path, headers, body));
        return client;
    }

    QString aliasOf(const RawResponse &r) { return QString::fromUtf8(r.header("x-switchyard-account")); }

private slots:
    void initTestCase() { QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString())); }

    void init() { QVERIFY(m_fake.reset()); }

    void cleanup()
    {
        if (m_proxy)
            m_proxy->stop();
        m_proxy.reset();
    }

    // A turn's head makes the idle store thread run the claim's reads before the body has even arrived
    // (StoreWorker::warmUp, counted in /api/status). The store may be busy at that instant (its change poll,
    // usage writes): then the warm-up is rightly dropped, and the head is sent again on a new connection.
    void aTurnsHeadWarmsTheIdleStoreBeforeItsBody()
    {
        QVERIFY2(start(1, {}).isEmpty(), qPrintable(m_proxy->errorString()));
        const qint64 before = status().value(QLatin1String("store_warm_ups")).toInteger(-1);
        QVERIFY(before >= 0);
        const qint64 announcedBefore = claimsAnnounced();
        QVERIFY(announcedBefore >= 0);
        const QByteArray request = RawHttpClient::buildRequest(
            "POST", "/backend-api/codex/responses", {{"content-type", "application/json"}, {"session-id", session()}},
            codexBody(QStringLiteral("warm")));
        const qsizetype headEnd = request.indexOf("\r\n\r\n") + 4;
        std::unique_ptr<RawHttpClient> client;
        bool warmed = false;
        for (int attempt = 0; attempt < 5 && !warmed; ++attempt) {
            client = std::make_unique<RawHttpClient>();
            QVERIFY(client->connectTo(m_proxy->port()));
            client->send(request.left(headEnd));
            QElapsedTimer waited;
            waited.start();
            while (!warmed && waited.elapsed() < 2000) {
                warmed = status().value(QLatin1String("store_warm_ups")).toInteger() > before;
                if (!warmed)
                    QTest::qWait(20);
            }
        }
        QVERIFY2(warmed, "no head of five made the idle store warm up");
        QVERIFY(claimsAnnounced() > announcedBefore);
        client->send(request.mid(headEnd));
        const std::optional<RawResponse> r = client->readResponse(15000);
        QVERIFY(r);
        QCOMPARE(r->status, 200);
    }

    // The head of a body above kClaimSoonMaxBodyBytes (1 MiB) does not warm the store: its claim comes only once
    // the body has arrived, too late for the store thread to be waiting awake for it. (The test above shows that
    // an idle store warms up within 5 heads; these 5 large heads, each given the same time, warm it none.) Nor
    // is its settlement followed by a wait for its client's next claim; a small turn's is.
    void aLargeBodysHeadDoesNotWarmTheStore()
    {
        QVERIFY2(start(1, {}).isEmpty(), qPrintable(m_proxy->errorString()));
        const QByteArray body = codexBody(QString(2 << 20, QLatin1Char('x')));
        const QByteArray request =
            RawHttpClient::buildRequest("POST", "/backend-api/codex/responses",
                                        {{"content-type", "application/json"}, {"session-id", session()}}, body);
        const qsizetype headEnd = request.indexOf("\r\n\r\n") + 4;
        const qint64 before = status().value(QLatin1String("store_warm_ups")).toInteger(-1);
        QVERIFY(before >= 0);
        const qint64 announcedBefore = claimsAnnounced();
        QVERIFY(announcedBefore >= 0);
        std::unique_ptr<RawHttpClient> client;
        for (int attempt = 0; attempt < 5; ++attempt) {
            client = std::make_unique<RawHttpClient>();
            QVERIFY(client->connectTo(m_proxy->port()));
            client->send(request.left(headEnd));
            QTest::qWait(300);
            QCOMPARE(status().value(QLatin1String("store_warm_ups")).toInteger(), before);
            QCOMPARE(claimsAnnounced(), announcedBefore);
        }
        const qint64 waitsBefore = storeCount("store_waits_after_job");
        QVERIFY(waitsBefore >= 0);
        client->send(request.mid(headEnd));
        const std::optional<RawResponse> r = client->readResponse(15000);
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        QTest::qWait(300); // the settlement's unit has ended (the response came from its callback)
        QCOMPARE(storeCount("store_waits_after_job"), waitsBefore);

        const std::unique_ptr<RawHttpClient> small =
            send("/backend-api/codex/responses", codexBody(QStringLiteral("small")), {{"session-id", session()}});
        QVERIFY(small);
        const std::optional<RawResponse> sr = small->readResponse(15000);
        QVERIFY(sr && sr->status == 200);
        QTRY_VERIFY(storeCount("store_waits_after_job") > waitsBefore);
    }

    // /api/status counts what the WAL checkpointer did: after a turn's writes a pass copies the WAL and the idle
    // store thread starts it over ahead of the next write (store/WalCheckpointer.h). With the checkpoints left
    // to the store connection (SWITCHYARD_WAL_CHECKPOINT=store) there is no checkpointer and they stay zero.
    void statusCountsWalCheckpointsAndRestartsAhead_data()
    {
        QTest::addColumn<bool>("checkpointer");
        QTest::newRow("checkpointer") << true;
        QTest::newRow("store checkpoints itself") << false;
    }

    void statusCountsWalCheckpointsAndRestartsAhead()
    {
        QFETCH(bool, checkpointer);
        QHash<QString, QString> env;
        if (!checkpointer)
            env.insert(QStringLiteral("SWITCHYARD_WAL_CHECKPOINT"), QStringLiteral("store"));
        const QString error = start(1, {}, env);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        for (int i = 0; i < 3; ++i) {
            auto turn = send("/backend-api/codex/responses", codexBody(QStringLiteral("wal %1").arg(i)),
                             {{"session-id", session()}});
            QVERIFY(turn);
            const std::optional<RawResponse> r = turn->readResponse(15000);
            QVERIFY(r);
            QCOMPARE(r->status, 200);
        }
        const auto wal = [this] { return status().value(QLatin1String("store_wal")).toObject(); };
        if (checkpointer) {
            QTRY_VERIFY_WITH_TIMEOUT(wal().value(QLatin1String("restarts_ahead")).toInteger() >= 1, 10000);
            const QJsonObject w = wal();
            QVERIFY(w.value(QLatin1String("checkpoint_passes")).toInteger() >= 1);
            QCOMPARE(w.value(QLatin1String("checkpoint_failures")).toInteger(-1), 0);
            QVERIFY(w.value(QLatin1String("backlog_frames")).toInteger(-1) >= 0);
        } else {
            QTest::qWait(1500); // several checkpointer delays (200 ms): a checkpointer would have passed by now
            const QJsonObject w = wal();
            for (const char *key : {"checkpoint_passes", "frames", "restarts_ahead"})
                QCOMPARE(w.value(QLatin1String(key)).toInteger(-1), 0);
        }
    }

    // Point 9: a streaming turn's slot shows its owner replica, epoch and lease; the turn shows its stage and
    // the remaining time of each running budget; the CLI prints the same state.
    void statusShowsOwnerSlotsAndStageBudgets()
    {
        const QString error = start(1, {{QStringLiteral("slots_per_account"), 2}});
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QVERIFY(m_fake.script(m_proxy->accounts().at(0).chatgptAccountId, {QStringLiteral("stall_mid")}));
        auto turn = send("/backend-api/codex/responses", codexBody(QStringLiteral("hold")), {{"session-id", session()}});
        QVERIFY(turn && turn->waitForBodyContaining("response.output_text.delta", 10000));

        const QJsonObject s = status();
        const QString replica = s.value(QLatin1String("replica")).toObject().value(QLatin1String("replica_id")).toString();
        QVERIFY2(replica.startsWith(QLatin1String("rep_")), QJsonDocument(s).toJson().constData());
        QJsonObject held;
        for (const QJsonValue &v : s.value(QLatin1String("slots")).toArray()) {
            if (v.toObject().value(QLatin1String("state")).toString() == QLatin1String("held"))
                held = v.toObject();
        }
        QVERIFY2(!held.isEmpty(), QJsonDocument(s).toJson().constData());
        QCOMPARE(held.value(QLatin1String("owner_replica")).toString(), replica);
        QVERIFY(held.value(QLatin1String("epoch")).toInteger() >= 1);
        const QDateTime lease = QDateTime::fromString(held.value(QLatin1String("lease_expires_at")).toString(), Qt::ISODateWithMs);
        QVERIFY(lease.isValid());
        QVERIFY(lease > QDateTime::currentDateTimeUtc());
        const QJsonObject inFlight = s.value(QLatin1String("in_flight")).toArray().at(0).toObject();
        QCOMPARE(held.value(QLatin1String("request_id")).toString(), inFlight.value(QLatin1String("request_id")).toString());
        QCOMPARE(inFlight.value(QLatin1String("stage")).toString(), QStringLiteral("streaming"));
        const QJsonObject remaining = inFlight.value(QLatin1String("remaining_ms")).toObject();
        QVERIFY2(remaining.contains(QLatin1String("stream_idle")) && remaining.contains(QLatin1String("stream_max")),
                 QJsonDocument(inFlight).toJson().constData());
        QVERIFY(remaining.value(QLatin1String("stream_idle")).toInteger() > 0);

        const CliResult cli = m_proxy->cli({QStringLiteral("status"), QStringLiteral("--json")});
        QCOMPARE(cli.exitCode, 0);
        const QJsonArray cliSlots = cli.json().object().value(QLatin1String("slots")).toArray();
        bool found = false;
        for (const QJsonValue &v : cliSlots)
            found = found || v.toObject().value(QLatin1String("request_id")) == held.value(QLatin1String("request_id"));
        QVERIFY(found);
        const CliResult text = m_proxy->cli({QStringLiteral("status")});
        QVERIFY2(text.out.contains("epoch") && text.out.contains(replica.toUtf8()), text.out.constData());
        QVERIFY(m_fake.dropHeld());
    }

    // Point 4: the gate holds at most gate_max_waiters turns; one more is refused before commit with 503
    // proxy_overloaded and Retry-After, and never reaches the upstream.
    void gateOverflowIsRefusedWithRetryAfter()
    {
        const QString error = start(1, {{QStringLiteral("slots_per_account"), 1},
                                        {QStringLiteral("gate_max_waiters"), 1},
                                        {QStringLiteral("gate_wait_s"), 20}});
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QVERIFY(m_fake.script(m_proxy->accounts().at(0).chatgptAccountId, {QStringLiteral("stall_mid")}));
        auto holder = send("/v1/responses", v1Body(QStringLiteral("holder")), {});
        QTRY_VERIFY_WITH_TIMEOUT(m_fake.stats().value(QLatin1String("active_streams")).toInt() == 1, 10000);
        auto waiter = send("/v1/responses", v1Body(QStringLiteral("ECHO: waiter")), {});
        QTRY_COMPARE_WITH_TIMEOUT(status().value(QLatin1String("gate")).toObject().value(QLatin1String("queued")).toInt(),
                                  1, 10000);
        auto refused = send("/v1/responses", v1Body(QStringLiteral("one too many")), {});
        const auto r = refused->readResponse(10000);
        QVERIFY(r);
        QCOMPARE(r->status, 503);
        QCOMPARE(r->json().value(QLatin1String("error")).toObject().value(QLatin1String("code")).toString(),
                 QStringLiteral("proxy_overloaded"));
        QVERIFY(!r->header("retry-after").isEmpty());
        // The waiter is served once the holder's slot frees.
        QVERIFY(m_fake.dropHeld());
        const auto served = waiter->readResponse(20000);
        QVERIFY(served);
        QCOMPARE(served->status, 200);
        int upstream = 0;
        for (const QJsonValue &v : m_fake.log())
            upstream += v.toObject().value(QLatin1String("x_request_id")).toString().toLatin1() == r->header("x-request-id");
        QCOMPARE(upstream, 0);
        const QJsonObject gate = status().value(QLatin1String("gate")).toObject();
        QCOMPARE(gate.value(QLatin1String("queued")).toInt(), 0);
        QVERIFY(gate.value(QLatin1String("overloaded")).toInt() >= 1);
    }

    // Point 1: with its account's only slot busy, a session's next turn moves to another account, while a
    // continuation of that account's response waits at the gate and is served by its owner.
    void busySessionMovesButContinuationWaitsForItsOwner()
    {
        const QString error = start(2, {{QStringLiteral("slots_per_account"), 1}, {QStringLiteral("gate_wait_s"), 30}});
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const QByteArray s1 = session();
        auto first = send("/v1/responses", v1Body(QStringLiteral("ECHO: first")), {{"session-id", s1}});
        const auto firstDone = first->readResponse(15000);
        QVERIFY(firstDone && firstDone->status == 200);
        const QString owner = aliasOf(*firstDone);
        const QString anchor = firstDone->json().value(QLatin1String("id")).toString();
        QVERIFY(anchor.startsWith(QLatin1String("resp_")));
        const FakeAccount *ownerAccount = nullptr;
        for (const FakeAccount &a : m_proxy->accounts())
            ownerAccount = a.alias == owner ? &a : ownerAccount;
        QVERIFY(ownerAccount);

        QVERIFY(m_fake.script(ownerAccount->chatgptAccountId, {QStringLiteral("stall_mid")}));
        auto busy = send("/backend-api/codex/responses", codexBody(QStringLiteral("busy")), {{"session-id", s1}});
        QVERIFY(busy->waitForBodyContaining("response.output_text.delta", 10000));
        QCOMPARE(aliasOf(busy->partial()), owner);

        auto moved = send("/v1/responses", v1Body(QStringLiteral("ECHO: moved")), {{"session-id", s1}});
        const auto movedDone = moved->readResponse(15000);
        QVERIFY(movedDone && movedDone->status == 200);
        QVERIFY2(aliasOf(*movedDone) != owner, qPrintable(aliasOf(*movedDone)));

        auto continuation = send("/v1/responses", v1Body(QStringLiteral("ECHO: continued"), anchor), {});
        QTRY_COMPARE_WITH_TIMEOUT(status().value(QLatin1String("gate")).toObject().value(QLatin1String("queued")).toInt(),
                                  1, 10000);
        QVERIFY(m_fake.dropHeld());
        const auto continued = continuation->readResponse(20000);
        QVERIFY(continued);
        QCOMPARE(continued->status, 200);
        QCOMPARE(aliasOf(*continued), owner);
        const QJsonObject row = m_proxy->waitForRequest(QString::fromLatin1(continued->header("x-request-id")));
        QVERIFY(row.value(QLatin1String("latency_ms")).toObject().value(QLatin1String("queue")).toInteger() > 0);
    }

    // Point 2: an account paused by another process (the CLI) is never dispatched to, even while this
    // process's snapshot still says active: the claim re-checks the durable row.
    void accountPausedElsewhereIsNeverDispatched()
    {
        const QString error = start(2, {});
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const FakeAccount &paused = m_proxy->accounts().at(0);
        QCOMPARE(m_proxy->cli({QStringLiteral("accounts"), QStringLiteral("pin"), paused.alias}).exitCode, 0);
        QTRY_COMPARE_WITH_TIMEOUT(status().value(QLatin1String("pinned_account_id")).toString(), paused.id, 10000);
        // A body large enough to be sent while its claim is on its way (Turn::sendEarly): the request sent to the
        // paused account is never completed.
        const QString large = QStringLiteral("after pause ") + QString(300 * 1024, QLatin1Char('x'));
        const qint64 earlyBefore = turnStagesCount("early_sends");
        const qint64 earlyDispatchedBefore = turnStagesCount("dispatches_sent_early");
        // Three rounds, and more (up to ten) until one found the snapshot stale, so that the early send to the
        // paused account was made and given up at least once.
        int rounds = 0;
        const auto givenUp = [&] {
            return turnStagesCount("early_sends") - earlyBefore -
                   (turnStagesCount("dispatches_sent_early") - earlyDispatchedBefore);
        };
        for (; rounds < 10 && (rounds < 3 || givenUp() == 0); ++rounds) {
            QCOMPARE(m_proxy->cli({QStringLiteral("accounts"), QStringLiteral("pause"), paused.alias}).exitCode, 0);
            // At once, before the once-a-second poll can have noticed.
            auto turn = send("/v1/responses", v1Body(large), {});
            const auto r = turn->readResponse(15000);
            QVERIFY(r);
            QCOMPARE(r->status, 200);
            QVERIFY2(aliasOf(*r) != paused.alias, "dispatched to a paused account");
            for (const QJsonValue &v : m_fake.log()) {
                const QJsonObject e = v.toObject();
                if (e.value(QLatin1String("x_request_id")).toString().toLatin1() == r->header("x-request-id"))
                    QVERIFY(e.value(QLatin1String("chatgpt_account_id")).toString() != paused.chatgptAccountId);
            }
            QCOMPARE(m_proxy->cli({QStringLiteral("accounts"), QStringLiteral("resume"), paused.alias}).exitCode, 0);
            QTRY_VERIFY_WITH_TIMEOUT(status().value(QLatin1String("accounts")).toArray().at(0).toObject()
                                             .value(QLatin1String("status")) == QLatin1String("active"),
                                     10000);
        }
        // Every turn was served by a request sent early, and at least one more was sent to the paused account
        // (the snapshot had not noticed) and given up: the path this test guards was taken.
        QCOMPARE(turnStagesCount("dispatches_sent_early") - earlyDispatchedBefore, rounds);
        QVERIFY2(givenUp() >= 1, qPrintable(QStringLiteral("no early send given up in %1 rounds").arg(rounds)));
    }

    // An anchor the retention deleted (LedgerRetention, 30 days) while the replica's memory still has it: the
    // continuation is routed to the owner from memory, its claim finds no row (anchor_unknown), and it is refused
    // before dispatch as an unknown response, not as one of another account. Red when the claim reports a missing
    // row as an owner mismatch, or when the turn does not tell them apart.
    void aContinuationWhoseAnchorRowIsGoneIsRefusedAsUnknown()
    {
        const QString error = start(1, {});
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const QByteArray mine = session();
        auto first = send("/v1/responses", v1Body(QStringLiteral("ECHO: first")), {{"session-id", mine}});
        const auto done = first->readResponse(15000);
        QVERIFY(done && done->status == 200);
        const QString anchor = done->json().value(QLatin1String("id")).toString();
        QVERIFY(!anchor.isEmpty());
        {
            Database db;
            QString dbError;
            QVERIFY2(db.open(m_proxy->dataDir() + QStringLiteral("/switchyard.sqlite"), &dbError), qPrintable(dbError));
            QSqlQuery q = db.query();
            QVERIFY(q.prepare(QStringLiteral("DELETE FROM response_anchors WHERE response_id = ?")));
            q.addBindValue(anchor);
            QVERIFY2(q.exec(), qPrintable(q.lastError().text()));
            QCOMPARE(q.numRowsAffected(), 1);
        }
        const int before = m_fake.log().size();
        auto next = send("/v1/responses", v1Body(QStringLiteral("ECHO: next"), anchor), {{"session-id", mine}});
        const auto refused = next->readResponse(10000);
        QVERIFY(refused);
        QCOMPARE(refused->status, 400);
        const QJsonObject err = refused->json().value(QLatin1String("error")).toObject();
        QCOMPARE(err.value(QLatin1String("code")).toString(), QStringLiteral("previous_response_not_found"));
        QVERIFY2(err.value(QLatin1String("message")).toString().contains(QLatin1String("unknown here")),
                 qPrintable(err.value(QLatin1String("message")).toString()));
        QCOMPARE(m_fake.log().size(), before);
    }

    // Point 3: an anchor carries its conversation's session; continuing it from another session is refused
    // before dispatch with previous_response_not_found, so the client resends the full history.
    void anchorOfAnotherSessionIsRefusedBeforeDispatch()
    {
        const QString error = start(1, {});
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const QByteArray mine = session();
        auto first = send("/v1/responses", v1Body(QStringLiteral("ECHO: mine")), {{"session-id", mine}});
        const auto done = first->readResponse(15000);
        QVERIFY(done && done->status == 200);
        const QString anchor = done->json().value(QLatin1String("id")).toString();
        const int before = m_fake.log().size();

        auto foreign = send("/v1/responses", v1Body(QStringLiteral("ECHO: hijack"), anchor), {{"session-id", session()}});
        const auto refused = foreign->readResponse(10000);
        QVERIFY(refused);
        QCOMPARE(refused->status, 400);
        QCOMPARE(refused->json().value(QLatin1String("error")).toObject().value(QLatin1String("code")).toString(),
                 QStringLiteral("previous_response_not_found"));
        QCOMPARE(m_fake.log().size(), before);

        // The same session continues fine.
        auto own = send("/v1/responses", v1Body(QStringLiteral("ECHO: next"), anchor), {{"session-id", mine}});
        const auto ok = own->readResponse(15000);
        QVERIFY(ok);
        QCOMPARE(ok->status, 200);
    }

    // A streamed response's anchor is written by its turn's settlement (one transaction less per turn), so
    // while the stream runs its row does not exist yet; a continuation of it sent meanwhile is still claimed
    // on, and served by, the owning account: its claim writes the anchor the settlement will write again.
    void continuationOfAStreamStillRunningGoesToItsOwner()
    {
        const QString error = start(2, {{QStringLiteral("slots_per_account"), 2}});
        QVERIFY2(error.isEmpty(), qPrintable(error));
        for (const FakeAccount &a : m_proxy->accounts())
            QVERIFY(m_fake.script(a.chatgptAccountId, {QStringLiteral("stall_mid")}));
        const QByteArray s1 = session();
        auto busy = send("/backend-api/codex/responses", codexBody(QStringLiteral("busy")), {{"session-id", s1}});
        QVERIFY(busy->waitForBodyContaining("response.output_text.delta", 10000));
        const QString owner = aliasOf(busy->partial());
        const QRegularExpressionMatch id =
            QRegularExpression(QStringLiteral("\"id\":\"(resp_[A-Za-z0-9_-]+)\"")).match(QString::fromUtf8(busy->partial().body));
        QVERIFY2(id.hasMatch(), busy->partial().body.constData());
        const QString responseId = id.captured(1);

        auto anchorOwner = [&]() -> QString {
            Database db;
            QString dbError;
            if (!db.open(m_proxy->dataDir() + QStringLiteral("/switchyard.sqlite"), &dbError))
                return QStringLiteral("error: ") + dbError;
            QSqlQuery q = db.query();
            q.prepare(QStringLiteral("SELECT a.alias FROM response_anchors r JOIN accounts a ON a.id = r.account_id "
                                     "WHERE r.response_id = ?"));
            q.addBindValue(responseId);
            if (!q.exec())
                return QStringLiteral("error: ") + q.lastError().text();
            return q.next() ? q.value(0).toString() : QString();
        };
        QTest::qWait(300); // a separate anchor write would have committed by now
        QCOMPARE(anchorOwner(), QString());

        auto continuation = send("/v1/responses", v1Body(QStringLiteral("ECHO: continued"), responseId), {{"session-id", s1}});
        const auto continued = continuation->readResponse(15000);
        QVERIFY(continued);
        QCOMPARE(continued->status, 200);
        QCOMPARE(aliasOf(*continued), owner);
        QCOMPARE(anchorOwner(), owner); // the continuation's claim wrote it

        QVERIFY(m_fake.dropHeld());
        QVERIFY(busy->readResponse(15000));
        m_proxy->waitForRequest(QString::fromLatin1(busy->partial().header("x-request-id")));
        QCOMPARE(anchorOwner(), owner); // and the settlement left it as it was
    }

    // The tray's Pause: the setting (written by another process, as the dashboard does) stops new turns with
    // 503 proxy_paused within the one-second poll, lets a turn in flight finish, and Resume serves again.
    void pausedProxyRefusesNewTurnsAndFinishesRunningOnes()
    {
        const QString error = start(1, {});
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QVERIFY(m_fake.script(m_proxy->accounts().at(0).chatgptAccountId, {QStringLiteral("slow:100")}));
        auto running = send("/backend-api/codex/responses", codexBody(QStringLiteral("ECHO: running")), {});
        QVERIFY(running->waitForBodyContaining("response.output_text.delta", 10000));
        auto setPaused = [this](bool paused) {
            Database db;
            QString dbError;
            return db.open(m_proxy->dataDir() + QStringLiteral("/switchyard.sqlite"), &dbError) &&
                   SettingsRepository(db).setValue(QStringLiteral("proxy_paused"),
                                                   paused ? QStringLiteral("true") : QStringLiteral("false"), &dbError);
        };
        QVERIFY(setPaused(true));
        QTRY_VERIFY_WITH_TIMEOUT(status().value(QLatin1String("paused")).toBool(), 10000);
        auto refused = send("/v1/responses", v1Body(QStringLiteral("ECHO: refused")), {});
        const auto r = refused->readResponse(10000);
        QVERIFY(r);
        QCOMPARE(r->status, 503);
        QCOMPARE(r->json().value(QLatin1String("error")).toObject().value(QLatin1String("code")).toString(),
                 QStringLiteral("proxy_paused"));
        QVERIFY(!r->header("retry-after").isEmpty());
        const auto finished = running->readResponse(20000);
        QVERIFY(finished && finished->complete);
        QVERIFY(finished->body.contains("response.completed"));

        QVERIFY(setPaused(false));
        QTRY_VERIFY_WITH_TIMEOUT(!status().value(QLatin1String("paused")).toBool(), 10000);
        auto served = send("/v1/responses", v1Body(QStringLiteral("ECHO: again")), {});
        const auto ok = served->readResponse(15000);
        QVERIFY(ok);
        QCOMPARE(ok->status, 200);
    }

    // A crash in the window the model leaves out: a failover's release committed while the request waits at
    // the gate for its next claim (the fault build exits there: crash-after-failover-release). No slot row
    // names the request any more, so no reclaim reaches it; the next start books it once, as owner_lost, on
    // the claim it gave up, and the durable state keeps every ownership invariant. Red without
    // OwnerSlotRepository::settleAbandonedFailovers (the request never gets a request-log row).
    void aCrashBetweenAFailoversReleaseAndItsNextClaimIsBookedByTheNextStart()
    {
        const QString faults = qEnvironmentVariable("SWITCHYARD_FAULTS_BIN");
        QVERIFY2(!faults.isEmpty(), "run through ctest (SWITCHYARD_FAULTS_BIN)");
        QVERIFY2(start(2, {{QStringLiteral("slots_per_account"), 1}, {QStringLiteral("gate_wait_s"), 30}},
                       {{QStringLiteral("SWITCHYARD_FAULTS"), QStringLiteral("crash-after-failover-release")}}, faults)
                     .isEmpty(),
                 qPrintable(m_proxy->errorString()));
        const FakeAccount holding = m_proxy->accounts().at(0), limited = m_proxy->accounts().at(1);
        QVERIFY(m_fake.script(holding.chatgptAccountId, {QStringLiteral("stall_mid")}));
        // A turn stalls mid-stream on `holding`'s only slot (round robin sends the next turn there if this one
        // went to `limited`, where it completes).
        std::unique_ptr<RawHttpClient> holder;
        for (int i = 0; i < 3 && !holder; ++i) {
            auto turn = send("/backend-api/codex/responses", codexBody(QStringLiteral("holder")), {});
            QVERIFY(turn && turn->waitForBodyContaining("response.output_text.delta", 10000));
            if (aliasOf(turn->partial()) == holding.alias)
                holder = std::move(turn);
            else
                QVERIFY(turn->readResponse(10000));
        }
        QVERIFY(holder);
        // The next turn can only go to `limited`, gets a 429 there, and fails over to the busy slot: it waits
        // at the gate while its release commits, and the fault build exits.
        QVERIFY(m_fake.script(limited.chatgptAccountId, {QStringLiteral("429")}, true));
        auto waiter = send("/backend-api/codex/responses", codexBody(QStringLiteral("waiter")), {});
        QTRY_VERIFY_WITH_TIMEOUT(!m_proxy->isRunning(), 15000);

        const QString database = m_proxy->dataDir() + QStringLiteral("/switchyard.sqlite");
        const auto column = [&database](const QString &sql) {
            QString error;
            const QStringList out = readSqliteColumn(database, sql, &error);
            return error.isEmpty() ? out : QStringList{error};
        };
        // Exactly one request was in the window: every claim of it closed, none settled.
        const QStringList lost = column(
            QStringLiteral("SELECT request_id FROM slot_claims GROUP BY request_id HAVING sum(settlements) = 0 AND "
                           "sum(CASE WHEN released_at_ms IS NULL THEN 1 ELSE 0 END) = 0"));
        QCOMPARE(lost.size(), 1);
        const QString kinds =
            QStringLiteral("SELECT release_kind || ':' || settlements FROM slot_claims WHERE request_id = '%1'")
                .arg(lost.constFirst());
        QCOMPARE(column(kinds), QStringList{QStringLiteral("failover:0")});

        m_proxy->setBinary(qEnvironmentVariable("SWITCHYARD_BIN"));
        m_proxy->setEnv(QStringLiteral("SWITCHYARD_FAULTS"), QString());
        QVERIFY2(m_proxy->start(m_fake.baseUrl()), qPrintable(m_proxy->errorString()));
        const QJsonObject row = m_proxy->waitForRequest(lost.constFirst());
        QVERIFY2(!row.isEmpty(), "the next start booked no request-log row for the request");
        QCOMPARE(row.value(QLatin1String("status")).toString(), QStringLiteral("failed"));
        QCOMPARE(row.value(QLatin1String("error_code")).toString(), QStringLiteral("owner_lost"));
        QCOMPARE(row.value(QLatin1String("account_id")).toString(), limited.id);
        QCOMPARE(column(kinds), QStringList{QStringLiteral("failover:1")});
        QCOMPARE(m_proxy->stop(), 0);
        DurableStateChecker checker(database);
        checker.setQuiescent(true);
        QString error;
        QVERIFY2(checker.run(&error), qPrintable(error));
        QVERIFY2(checker.violations().isEmpty(), qPrintable(checker.report(10)));
    }
};

QTEST_GUILESS_MAIN(TestOwnershipProxy)
#include "tst_ownership_proxy.moc"
