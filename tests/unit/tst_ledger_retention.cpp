// LedgerRetention on a real SQLite file: which claims and anchors of past turns go after 30 days, and which
// must stay (an open claim, a failover's release the sweep has not seen, a request with a newer claim, a recent
// turn), a batch at a time, through the store thread. The same batch on PostgreSQL: tst_store_postgres_repos.
#include "ManualClock.h"
#include "ownership/LedgerRetention.h"
#include "ownership/OwnerSlotRepository.h"
#include "store/AnchorRepository.h"
#include "store/Database.h"
#include "store/StoreWorker.h"
#include "util/Ids.h"

#include <QSignalSpy>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>

using namespace sy;

namespace {

const qint64 kNow = 1796000000000;
const qint64 kDay = 24LL * 3600 * 1000;
const qint64 kOld = kNow - LedgerRetention::kRetentionMs - kDay; // a turn from before the retention
const qint64 kRecent = kNow - kDay;
const qint64 kLease = 60000;

qint64 count(Database &db, const QString &sql)
{
    QSqlQuery q = db.query();
    if (!q.exec(sql) || !q.next())
        return -1;
    return q.value(0).toLongLong();
}

} // namespace

class tst_LedgerRetention : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    std::unique_ptr<Database> m_db;
    ReplicaIdentity m_me;
    int m_nextSlot = 0;

    QString path() const { return m_dir.filePath(QStringLiteral("%1.sqlite").arg(QTest::currentTestFunction())); }

    // A claim won at `at` on a fresh slot; its held slot, or an invalid one when it failed.
    HeldSlot claimAt(const QString &requestId, qint64 at)
    {
        ClaimAttempt a;
        a.requestId = requestId;
        a.accountId = QStringLiteral("acc_1");
        a.slot = m_nextSlot++;
        a.route = QStringLiteral("/v1/responses");
        a.startedAtMs = a.nowMs = at;
        a.replica = m_me;
        a.leaseMs = kLease;
        QString error;
        const ClaimOutcome out = OwnerSlotRepository(*m_db).claim(a, &error);
        return out.kind == ClaimOutcome::Kind::Claimed ? out.held : HeldSlot{};
    }

    // A whole turn at `at`: its claim, its settlement, the anchor of its response.
    QString settledTurn(qint64 at, QString requestId = {})
    {
        if (requestId.isEmpty())
            requestId = newRequestId(at);
        if (!claimAt(requestId, at).isValid())
            return {};
        QString error;
        if (!OwnerSlotRepository(*m_db).settleTurn(m_me, requestId, QStringLiteral("resp_") + requestId, at + 900,
                                                   &error))
            return {};
        test::ManualClock clock(at + 900);
        if (!AnchorRepository(*m_db, clock)
                 .remember(QStringLiteral("resp_") + requestId, QStringLiteral("acc_1"), &error))
            return {};
        return requestId;
    }

    qint64 claimsOf(const QString &requestId)
    {
        return count(*m_db, QStringLiteral("SELECT COUNT(*) FROM slot_claims WHERE request_id = '%1'").arg(requestId));
    }

    LedgerRetention::Batch prune(int limit)
    {
        LedgerRetention::Batch batch;
        QString error;
        if (!LedgerRetention::pruneBatch(*m_db, kNow - LedgerRetention::kRetentionMs, limit, &batch, &error))
            qWarning("pruneBatch: %s", qPrintable(error));
        return batch;
    }

private slots:
    void init()
    {
        m_db = std::make_unique<Database>();
        m_nextSlot = 0;
        QString error;
        QVERIFY2(m_db->open(path(), &error), qPrintable(error));
        QVERIFY2(m_db->exec(QStringLiteral("INSERT INTO accounts (id, chatgpt_account_id, user_id, created_at_ms, "
                                           "updated_at_ms) VALUES ('acc_1', 'ws', 'u1', 0, 0)"),
                            &error),
                 qPrintable(error));
        const auto me = OwnerSlotRepository(*m_db).registerReplica(QStringLiteral("rep_a"), kOld - kDay, &error);
        QVERIFY2(me, qPrintable(error));
        m_me = *me;
    }

    void cleanup() { m_db.reset(); }

    // Red when the batch deletes by claimed time alone (the open, given-up and straddling requests go too), by the
    // id alone (the recent one whose id does not begin with its time goes), or not at all.
    void onlyClosedRequestsOlderThanTheRetentionGo()
    {
        QString error;
        const QString old = settledTurn(kOld);
        const QString recent = settledTurn(kRecent);
        QVERIFY(!old.isEmpty() && !recent.isEmpty());
        // Open: claimed long ago and never released (its process died; a reclaim would settle it).
        const QString open = newRequestId(kOld);
        QVERIFY(claimAt(open, kOld).isValid());
        // A failover released its claim and the sweep has not looked at it yet (settlements 0, not swept).
        const QString givenUp = newRequestId(kOld);
        const HeldSlot first = claimAt(givenUp, kOld);
        QVERIFY(first.isValid());
        QVERIFY(OwnerSlotRepository(*m_db).releaseForFailover(m_me, first, kOld + 1, &error));
        // A request whose first claim is old and whose next one is recent (it cannot happen within a lease,
        // but the batch must not split a request's claims).
        const QString straddling = newRequestId(kOld);
        const HeldSlot before = claimAt(straddling, kOld);
        QVERIFY(before.isValid());
        QVERIFY(OwnerSlotRepository(*m_db).releaseForFailover(m_me, before, kOld + 1, &error));
        QVERIFY(!settledTurn(kRecent, straddling).isEmpty());
        // A recent turn whose id does not begin with its time, and sorts below the cutoff's.
        const QString timeless = QStringLiteral("req_000000000000") + newOpaqueId().left(12);
        QVERIFY(!settledTurn(kRecent, timeless).isEmpty());
        // The lease tick's sweep retires the straddling request's failover release (its request settled on its
        // next claim), so only the age of that next claim keeps the request.
        QVERIFY(OwnerSlotRepository(*m_db).settleAbandonedFailovers(m_me, kNow, kLease, &error) >= 0);

        const LedgerRetention::Batch batch = prune(100);
        QCOMPARE(batch.claims, 1);
        QCOMPARE(claimsOf(old), 0);
        QCOMPARE(claimsOf(recent), 1);
        QCOMPARE(claimsOf(open), 1);
        QCOMPARE(claimsOf(givenUp), 1);
        QCOMPARE(claimsOf(straddling), 2);
        QCOMPARE(claimsOf(timeless), 1);
        // The anchors of the old turn's response go, the recent ones stay.
        QCOMPARE(batch.anchors, 1);
        QVERIFY(!AnchorRepository(*m_db).ownerOf(QStringLiteral("resp_") + old));
        QCOMPARE(AnchorRepository(*m_db).ownerOf(QStringLiteral("resp_") + recent), QStringLiteral("acc_1"));
        QCOMPARE(AnchorRepository(*m_db).ownerOf(QStringLiteral("resp_") + straddling), QStringLiteral("acc_1"));
        // Nothing else qualifies: the next batch is empty.
        const LedgerRetention::Batch again = prune(100);
        QCOMPARE(again.claims, 0);
        QCOMPARE(again.anchors, 0);
    }

    // A request's claims go together: an old request with a failover's release and its settled next claim loses
    // both in one batch, once the sweep has retired the release. Red when the batch looks at one claim at a time.
    void aRequestsClaimsGoTogether()
    {
        QString error;
        const QString request = newRequestId(kOld);
        const HeldSlot first = claimAt(request, kOld);
        QVERIFY(first.isValid());
        QVERIFY(OwnerSlotRepository(*m_db).releaseForFailover(m_me, first, kOld + 1, &error));
        QVERIFY(!settledTurn(kOld + 2, request).isEmpty());
        QCOMPARE(claimsOf(request), 2);
        // Until the sweep has seen the failover's release (its request settled on the next claim), the request
        // stays whole; then it goes whole.
        QCOMPARE(prune(100).claims, 0);
        QVERIFY(OwnerSlotRepository(*m_db).settleAbandonedFailovers(m_me, kNow, kLease, &error) >= 0);
        QCOMPARE(prune(100).claims, 2);
        QCOMPARE(claimsOf(request), 0);
    }

    // At most `limit` rows per table per batch, the oldest first. Red without the LIMIT or with another order.
    void aBatchTakesAtMostItsLimitOldestFirst()
    {
        QStringList ids;
        for (int i = 0; i < 5; ++i)
            ids << settledTurn(kOld + i * 1000);
        QVERIFY(!ids.contains(QString()));
        const LedgerRetention::Batch batch = prune(2);
        QCOMPARE(batch.claims, 2);
        QCOMPARE(batch.anchors, 2);
        QCOMPARE(claimsOf(ids[0]) + claimsOf(ids[1]), 0);
        QCOMPARE(claimsOf(ids[2]) + claimsOf(ids[3]) + claimsOf(ids[4]), 3);
        QVERIFY(!AnchorRepository(*m_db).ownerOf(QStringLiteral("resp_") + ids[1]));
        QVERIFY(AnchorRepository(*m_db).ownerOf(QStringLiteral("resp_") + ids[2]));
        QCOMPARE(prune(2).claims, 2);
        QCOMPARE(prune(2).claims, 1);
    }

    // The batches through the store thread: a backlog larger than a batch is worked off batch after batch
    // (the busy interval), then the retention waits for its idle interval. Red when a full batch does not
    // bring the next one forward.
    void aBacklogIsWorkedOffBatchAfterBatch()
    {
        const int turns = LedgerRetention::kBatchRows * 2 + 50;
        {
            Transaction tx(*m_db);
            QString error;
            QVERIFY2(tx.begin(&error), qPrintable(error));
            for (int i = 0; i < turns; ++i)
                QVERIFY(!settledTurn(kOld + i).isEmpty());
            QVERIFY2(tx.commit(&error), qPrintable(error));
        }
        const QString recent = settledTurn(kRecent);
        m_db.reset();

        StoreWorker store;
        QString error;
        QVERIFY2(store.start(path(), &error), qPrintable(error));
        test::ManualClock clock(kNow);
        LedgerRetention retention(&store, clock, nullptr, 60 * 1000, 10);
        QSignalSpy batches(&retention, &LedgerRetention::batchDone);
        retention.runOnce(); // not started: one batch, no follow-up
        QTRY_COMPARE(batches.size(), 1);
        QCOMPARE(batches.at(0).at(0).toInt(), LedgerRetention::kBatchRows);
        QTest::qWait(50);
        QCOMPARE(batches.size(), 1);

        retention.start(); // its first batch after the idle interval: brought forward by hand
        retention.runOnce();
        QTRY_COMPARE(batches.size(), 3);
        QCOMPARE(retention.claimsPruned(), qint64(turns));
        QCOMPARE(retention.anchorsPruned(), qint64(turns));
        QCOMPARE(batches.at(2).at(0).toInt(), 50);
        // The short batch sends it back to its idle interval (a minute): no fourth batch now.
        QTest::qWait(100);
        QCOMPARE(batches.size(), 3);
        retention.stop();
        store.stop();

        Database db;
        QVERIFY2(db.open(path(), &error), qPrintable(error));
        QCOMPARE(count(db, QStringLiteral("SELECT COUNT(*) FROM slot_claims")), 1);
        QCOMPARE(count(db, QStringLiteral("SELECT COUNT(*) FROM slot_claims WHERE request_id = '%1'").arg(recent)), 1);
        QCOMPARE(count(db, QStringLiteral("SELECT COUNT(*) FROM response_anchors")), 1);
    }

    // Claims with random ids (builds before b015fa5) are walked kLegacyScanRows index entries at a time, above
    // every time-first id of the next day, then below the first pass's range (where about 1 in 160 random ids
    // sort, and time-first ones more than kFirstPassSpanMs older than the cutoff): the old ones go, the recent
    // ones stay, and the walk comes round again. Red when random ids are not looked at, when the walk deletes by id
    // alone or does not go on from where it stopped, when either part is left out, or when the first pass reads
    // below its range (the old ids there would go with its claims).
    void claimsWithRandomIdsAreWalkedInWindows()
    {
        const qint64 cutoff = kNow - LedgerRetention::kRetentionMs;
        // Random ids as 0.1.0 made them, "f" first (above any time-first id for thousands of years): a full window
        // of recent ones first in index order, then old ones. And some with "00" first, below any time-first id
        // since 2004.
        QStringList old, recent, oldBelow, recentBelow;
        {
            Transaction tx(*m_db);
            QString error;
            QVERIFY2(tx.begin(&error), qPrintable(error));
            for (int i = 0; i < LedgerRetention::kLegacyScanRows + 300; ++i) {
                const bool isOld = i >= LedgerRetention::kLegacyScanRows;
                const QString id =
                    (isOld ? QStringLiteral("req_f8") : QStringLiteral("req_f0")) + newOpaqueId().left(22);
                QVERIFY(!settledTurn(isOld ? kOld + i : kRecent + i, id).isEmpty());
                (isOld ? old : recent) << id;
            }
            for (int i = 0; i < 40; ++i) {
                const bool isOld = i % 2 == 0;
                const QString id = QStringLiteral("req_00") + newOpaqueId().left(22);
                QVERIFY(!settledTurn(isOld ? kOld + i : kRecent + i, id).isEmpty());
                (isOld ? oldBelow : recentBelow) << id;
            }
            QVERIFY2(tx.commit(&error), qPrintable(error));
        }
        const QString timeFirst = settledTurn(kOld);
        // A time-first turn from before the first pass's range (the store was not pruned for a year).
        const QString yearOld = settledTurn(cutoff - LedgerRetention::kFirstPassSpanMs - kDay);
        QVERIFY(!yearOld.isEmpty() && yearOld < requestIdFloor(cutoff - LedgerRetention::kFirstPassSpanMs));
        oldBelow << yearOld;
        LedgerRetention::Batch batch;
        QString error;
        QVERIFY2(LedgerRetention::pruneBatch(*m_db, cutoff, 100000, &batch, &error), qPrintable(error));
        QCOMPARE(batch.claims, 1); // the time-first one in the first pass's range
        // The first window holds only recent claims: none goes, and the walk goes on after them.
        QCOMPARE(batch.legacyClaims, 0);
        QVERIFY(!batch.legacyAfter.isEmpty());
        QVERIFY(!batch.legacyBelow);
        QVERIFY2(LedgerRetention::pruneBatch(*m_db, cutoff, 100000, &batch, &error), qPrintable(error));
        QCOMPARE(batch.claims, 0);
        QCOMPARE(batch.legacyClaims, int(old.size()));
        // Past the last one above: the part below is next, from its start.
        QVERIFY(batch.legacyAfter.isEmpty());
        QVERIFY(batch.legacyBelow);
        QVERIFY2(LedgerRetention::pruneBatch(*m_db, cutoff, 100000, &batch, &error), qPrintable(error));
        QCOMPARE(batch.claims, 0);
        QCOMPARE(batch.legacyClaims, int(oldBelow.size()));
        QVERIFY(batch.legacyAfter.isEmpty()); // past the last one below: the part above is next
        QVERIFY(!batch.legacyBelow);
        auto left = [this](const QStringList &ids) {
            qint64 n = 0;
            for (const QString &id : ids)
                n += claimsOf(id);
            return n;
        };
        QCOMPARE(left(old), 0);
        QCOMPARE(left(oldBelow), 0);
        QCOMPARE(left(recent), qint64(recent.size()));
        QCOMPARE(left(recentBelow), qint64(recentBelow.size()));
        QCOMPARE(claimsOf(timeFirst), 0);
        QVERIFY2(LedgerRetention::pruneBatch(*m_db, cutoff, 100000, &batch, &error), qPrintable(error));
        QCOMPARE(batch.legacyClaims, 0);
        QVERIFY(!batch.legacyAfter.isEmpty());
        QVERIFY(!batch.legacyBelow);
    }

    // A window that holds more claims that may go than a batch takes is taken up again after the last one the batch
    // took, not after the window: else the rest would wait for the walk's next round, and a batch that finds fewer
    // than it takes sends the retention back to its idle minute. Red when the walk goes on after the window.
    void aWindowWithMoreThanABatchIsTakenUpAgain()
    {
        QStringList old, recent;
        {
            Transaction tx(*m_db);
            QString error;
            QVERIFY2(tx.begin(&error), qPrintable(error));
            for (int i = 0; i < 270; ++i) {
                const bool isOld = i % 27 != 0;
                const QString id = QStringLiteral("req_f8") + newOpaqueId().left(22);
                QVERIFY(!settledTurn(isOld ? kOld + i : kRecent + i, id).isEmpty());
                (isOld ? old : recent) << id;
            }
            QVERIFY2(tx.commit(&error), qPrintable(error));
        }
        QCOMPARE(old.size(), 260);
        LedgerRetention::Batch batch;
        QString error;
        const qint64 cutoff = kNow - LedgerRetention::kRetentionMs;
        for (int i = 0; i < 2; ++i) {
            QVERIFY2(LedgerRetention::pruneBatch(*m_db, cutoff, 100, &batch, &error), qPrintable(error));
            QCOMPARE(batch.legacyClaims, 100);
            QVERIFY(!batch.legacyAfter.isEmpty());
            QVERIFY(!batch.legacyBelow);
        }
        QVERIFY2(LedgerRetention::pruneBatch(*m_db, cutoff, 100, &batch, &error), qPrintable(error));
        QCOMPARE(batch.legacyClaims, 60);
        QVERIFY(batch.legacyAfter.isEmpty()); // past the last one above: the part below is next
        QVERIFY(batch.legacyBelow);
        qint64 left = 0;
        for (const QString &id : std::as_const(old))
            left += claimsOf(id);
        QCOMPARE(left, 0);
        for (const QString &id : std::as_const(recent))
            left += claimsOf(id);
        QCOMPARE(left, qint64(recent.size()));
    }

    // The request-id floor sorts like the time in the ids: every id of an earlier millisecond below it, every id of
    // that millisecond or a later one at or above it. Red if the ids stop beginning with their time.
    void theIdFloorSeparatesEarlierFromLaterIds()
    {
        const QString floor = requestIdFloor(kNow);
        for (int i = 0; i < 200; ++i) {
            QVERIFY(newRequestId(kNow - 1 - i * 977) < floor);
            QVERIFY(newRequestId(kNow + i * 977) >= floor);
        }
    }
};

QTEST_GUILESS_MAIN(tst_LedgerRetention)
#include "tst_ledger_retention.moc"
