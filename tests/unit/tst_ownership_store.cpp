// The durable half of the ownership protocol on a real SQLite file: compare-and-set claims, the durable
// re-check, leases, fenced releases, reclaims and the exactly-once settlement.
#include "ownership/OwnerSlotRepository.h"
#include "store/Database.h"

#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>

using namespace sy;

namespace {

const qint64 kNow = 1796000000000;
const qint64 kLease = 60000;

QVariant scalar(Database &db, const QString &sql)
{
    QSqlQuery q = db.query();
    if (!q.exec(sql) || !q.next())
        return {};
    return q.value(0);
}

} // namespace

class tst_OwnershipStore : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    std::unique_ptr<Database> m_db;
    ReplicaIdentity m_a;
    ReplicaIdentity m_b;

    void exec(const QString &sql)
    {
        QString error;
        QVERIFY2(m_db->exec(sql, &error), qPrintable(error));
    }

    ClaimAttempt attempt(const ReplicaIdentity &who, const QString &request, int slot, qint64 expectedEpoch,
                         qint64 now = kNow)
    {
        ClaimAttempt a;
        a.requestId = request;
        a.accountId = QStringLiteral("acc_1");
        a.slot = slot;
        a.expectedEpoch = expectedEpoch;
        a.route = QStringLiteral("/v1/responses");
        a.startedAtMs = now;
        a.replica = who;
        a.nowMs = now;
        a.leaseMs = kLease;
        return a;
    }

    ClaimOutcome claim(const ClaimAttempt &a)
    {
        QString error;
        return OwnerSlotRepository(*m_db).claim(a, &error);
    }

private slots:
    void init()
    {
        m_db = std::make_unique<Database>();
        QString error;
        QVERIFY2(m_db->open(m_dir.filePath(QStringLiteral("own-%1.sqlite").arg(QTest::currentTestFunction())), &error),
                 qPrintable(error));
        exec(QStringLiteral("INSERT INTO accounts (id, chatgpt_account_id, user_id, created_at_ms, updated_at_ms) "
                            "VALUES ('acc_1', 'ws', 'u1', 0, 0), ('acc_2', 'ws', 'u2', 0, 0)"));
        OwnerSlotRepository repo(*m_db);
        m_a = *repo.registerReplica(QStringLiteral("rep_a"), kNow, &error);
        m_b = *repo.registerReplica(QStringLiteral("rep_b"), kNow, &error);
        QCOMPARE(m_a.incarnation, 1);
    }

    void cleanup() { m_db.reset(); }

    // The warm-up a claim gets ahead of it (StoreWorker::warmUp) runs the claim's own reads: afterwards the
    // claim compiles only its writes. Red when the claim's SQL changes and warmClaim() does not follow.
    void warmClaimPreparesTheClaimsReadsAndChangesNothing()
    {
        auto compiledByClaim = [this](const QString &request, qint64 expectedEpoch) {
            Database::StatementScope scope(*m_db);
            const quint64 before = m_db->compiledStatements();
            if (claim(attempt(m_a, request, 0, expectedEpoch)).kind != ClaimOutcome::Kind::Claimed)
                return quint64(0);
            return m_db->compiledStatements() - before;
        };
        QString error;
        {
            Database::StatementScope scope(*m_db);
            QVERIFY2(OwnerSlotRepository(*m_db).warmClaim(QStringLiteral("acc_1"), &error), qPrintable(error));
        }
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT count(*) FROM owner_slots")).toInt(), 0);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT count(*) FROM slot_claims")).toInt(), 0);
        // The first claim of a slot: the row insert, the compare-and-set of a free slot and the ledger row are new;
        // the account check was compiled by the warm-up. (A free slot's previous owner is not read: the warm-up
        // reads that row for its pages.)
        QCOMPARE(compiledByClaim(QStringLiteral("req_1"), 0), quint64(3));
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT count(*) FROM slot_claims")).toInt(), 1);
    }

    void claimIsACompareAndSetOnTheEpoch()
    {
        const ClaimOutcome first = claim(attempt(m_a, QStringLiteral("req_1"), 0, 0));
        QCOMPARE(int(first.kind), int(ClaimOutcome::Kind::Claimed));
        QCOMPARE(first.held.epoch, 1);
        // Replica B decided from a snapshot that still saw epoch 0: it loses, and learns the fresh row.
        const ClaimOutcome stale = claim(attempt(m_b, QStringLiteral("req_2"), 0, 0));
        QCOMPARE(int(stale.kind), int(ClaimOutcome::Kind::Conflict));
        QCOMPARE(stale.rows.size(), 1);
        QCOMPARE(stale.rows.at(0).epoch, 1);
        QCOMPARE(stale.rows.at(0).ownerReplica, QStringLiteral("rep_a"));
        // Even with the right epoch a held slot cannot be taken while its lease runs.
        QCOMPARE(int(claim(attempt(m_b, QStringLiteral("req_2"), 0, 1)).kind), int(ClaimOutcome::Kind::Conflict));
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT cas_conflicts FROM replicas WHERE replica_id = 'rep_b'")).toInt(),
                 2);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT count(*) FROM slot_claims")).toInt(), 1);
        // Another slot of the same account is free.
        QCOMPARE(int(claim(attempt(m_b, QStringLiteral("req_2"), 1, 0)).kind), int(ClaimOutcome::Kind::Claimed));
    }

    // A snapshot that saw epoch > 0 saw the row, so the claim does not try to create it. If the row is gone all
    // the same (its account was removed and added again since), the claim is a Conflict with the account's
    // fresh rows, not a database error, and the retry from epoch 0 creates the row and claims it.
    void claimOfAVanishedRowIsAConflict()
    {
        QCOMPARE(int(claim(attempt(m_a, QStringLiteral("req_1"), 0, 0)).kind), int(ClaimOutcome::Kind::Claimed));
        exec(QStringLiteral("DELETE FROM owner_slots"));
        const ClaimOutcome stale = claim(attempt(m_a, QStringLiteral("req_2"), 0, 3));
        QCOMPARE(int(stale.kind), int(ClaimOutcome::Kind::Conflict));
        QVERIFY(stale.rows.isEmpty());
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT count(*) FROM owner_slots")).toInt(), 0);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT cas_conflicts FROM replicas WHERE replica_id = 'rep_a'")).toInt(),
                 1);
        const ClaimOutcome retry = claim(attempt(m_a, QStringLiteral("req_2"), 0, 0));
        QCOMPARE(int(retry.kind), int(ClaimOutcome::Kind::Claimed));
        QCOMPARE(retry.held.epoch, 1);
        // A later claim from the snapshot's epoch (1) finds the row without creating it.
        QString error;
        QVERIFY2(OwnerSlotRepository(*m_db).settleTurn(m_a, QStringLiteral("req_2"), QString(), kNow, &error),
                 qPrintable(error));
        const ClaimOutcome next = claim(attempt(m_a, QStringLiteral("req_3"), 0, 1));
        QCOMPARE(int(next.kind), int(ClaimOutcome::Kind::Claimed));
        QCOMPARE(next.held.epoch, 2);
    }

    void claimRechecksTheDurableAccountRow()
    {
        exec(QStringLiteral("UPDATE accounts SET status = 'paused', version = 7 WHERE id = 'acc_1'"));
        ClaimOutcome o = claim(attempt(m_a, QStringLiteral("req_1"), 0, 0));
        QCOMPARE(int(o.kind), int(ClaimOutcome::Kind::Ineligible));
        QCOMPARE(o.reason, QStringLiteral("paused"));
        QCOMPARE(o.durableVersion, 7);
        exec(QStringLiteral("UPDATE accounts SET status = 'rate_limited', cooldown_until_ms = %1 WHERE id = 'acc_1'")
                 .arg(kNow + 1000));
        o = claim(attempt(m_a, QStringLiteral("req_1"), 0, 0));
        QCOMPARE(o.reason, QStringLiteral("cooldown"));
        // Once the cooldown passed, a limited account serves again.
        o = claim(attempt(m_a, QStringLiteral("req_1"), 0, 0, kNow + 1001));
        QCOMPARE(int(o.kind), int(ClaimOutcome::Kind::Claimed));
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT durable_status FROM slot_claims")).toString(),
                 QStringLiteral("rate_limited"));
        exec(QStringLiteral("DELETE FROM accounts WHERE id = 'acc_2'"));
        ClaimAttempt gone = attempt(m_a, QStringLiteral("req_2"), 0, 0);
        gone.accountId = QStringLiteral("acc_2");
        QCOMPARE(claim(gone).reason, QStringLiteral("removed"));
    }

    void continuationClaimsOnlyTheAnchorsAccount()
    {
        exec(QStringLiteral("INSERT INTO response_anchors (response_id, account_id, created_at_ms) "
                            "VALUES ('resp_x', 'acc_2', 0)"));
        ClaimAttempt a = attempt(m_a, QStringLiteral("req_1"), 0, 0);
        a.previousResponseId = QStringLiteral("resp_x");
        QCOMPARE(claim(a).reason, QStringLiteral("anchor_owner_mismatch"));
        a.previousResponseId = QStringLiteral("resp_unknown"); // no row (never served here, or deleted)
        QCOMPARE(claim(a).reason, QStringLiteral("anchor_unknown"));
        a.accountId = QStringLiteral("acc_2");
        a.previousResponseId = QStringLiteral("resp_x");
        QCOMPARE(int(claim(a).kind), int(ClaimOutcome::Kind::Claimed));
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT anchor_account_id FROM slot_claims")).toString(),
                 QStringLiteral("acc_2"));
    }

    void settlementIsExactlyOnceAndFenced()
    {
        QString error;
        OwnerSlotRepository repo(*m_db);
        QCOMPARE(int(claim(attempt(m_a, QStringLiteral("req_1"), 0, 0)).kind), int(ClaimOutcome::Kind::Claimed));
        auto s = repo.settleTurn(m_a, QStringLiteral("req_1"), QStringLiteral("resp_1"), kNow + 10, &error);
        QVERIFY2(s, qPrintable(error));
        QVERIFY(s->hadClaim && !s->ownerLost && s->released);
        QCOMPARE(s->released->epoch, 1);
        QVERIFY(scalar(*m_db, QStringLiteral("SELECT owner_replica FROM owner_slots")).isNull());
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT settlements FROM slot_claims")).toInt(), 1);
        // A second settlement finds nothing open and settles nothing.
        s = repo.settleTurn(m_a, QStringLiteral("req_1"), QString(), kNow + 20, &error);
        QVERIFY(s && s->settledElsewhere);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT settlements FROM slot_claims")).toInt(), 1);
    }

    void staleHolderCannotReleaseANewerOwner()
    {
        QString error;
        OwnerSlotRepository repo(*m_db);
        QVERIFY(claim(attempt(m_a, QStringLiteral("req_old"), 0, 0)).kind == ClaimOutcome::Kind::Claimed);
        // A's lease expires (A stalled); B reclaims the slot with a new epoch and settles A's claim for it.
        const qint64 later = kNow + kLease + 1;
        const ClaimOutcome b = claim(attempt(m_b, QStringLiteral("req_new"), 0, 1, later));
        QCOMPARE(int(b.kind), int(ClaimOutcome::Kind::Claimed));
        QVERIFY(b.reclaimedExpired);
        QCOMPARE(b.held.epoch, 2);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT release_kind FROM slot_claims WHERE request_id = 'req_old'"))
                     .toString(),
                 QStringLiteral("reclaimed_expired"));
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT error_code FROM request_log WHERE request_id = 'req_old'"))
                     .toString(),
                 QStringLiteral("owner_lost"));
        // A wakes up: its renewal reports the loss, its settlement neither settles twice nor frees B's slot.
        QList<HeldSlot> lost;
        QVERIFY(repo.renew(m_a, {HeldSlot{QStringLiteral("req_old"), QStringLiteral("acc_1"), 0, 1}}, later, kLease,
                           &lost, &error));
        QCOMPARE(lost.size(), 1);
        const auto s = repo.settleTurn(m_a, QStringLiteral("req_old"), QString(), later + 5, &error);
        QVERIFY(s && s->ownerLost && s->settledElsewhere && !s->released);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT owner_replica FROM owner_slots")).toString(),
                 QStringLiteral("rep_b"));
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT sum(settlements) FROM slot_claims WHERE request_id = 'req_old'"))
                     .toInt(),
                 1);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT lease_reclaims FROM replicas WHERE replica_id = 'rep_b'")).toInt(),
                 1);
    }

    void renewalExtendsTheLease()
    {
        QString error;
        OwnerSlotRepository repo(*m_db);
        const ClaimOutcome o = claim(attempt(m_a, QStringLiteral("req_1"), 0, 0));
        QList<HeldSlot> lost;
        QVERIFY(repo.renew(m_a, {o.held}, kNow + 20000, kLease, &lost, &error));
        QVERIFY(lost.isEmpty());
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT lease_expires_ms FROM owner_slots")).toLongLong(),
                 kNow + 20000 + kLease);
        QVERIFY(repo.stillOwned(m_a, o.held, kNow + 70000, &error));
        QVERIFY(!repo.stillOwned(m_b, o.held, kNow + 70000, &error));
        // Nobody reclaims a renewed lease.
        QCOMPARE(repo.reclaimExpired(m_b, kNow + kLease + 1, &error), 0);
    }

    void expiredLeasesAreSweptAndTheirTurnsBooked()
    {
        QString error;
        OwnerSlotRepository repo(*m_db);
        QVERIFY(claim(attempt(m_a, QStringLiteral("req_1"), 0, 0)).kind == ClaimOutcome::Kind::Claimed);
        QVERIFY(claim(attempt(m_a, QStringLiteral("req_2"), 1, 0)).kind == ClaimOutcome::Kind::Claimed);
        QCOMPARE(repo.reclaimExpired(m_b, kNow + kLease - 1, &error), 0);
        QCOMPARE(repo.reclaimExpired(m_b, kNow + kLease + 1, &error), 2);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT count(*) FROM owner_slots WHERE owner_replica IS NOT NULL")).toInt(),
                 0);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT count(*) FROM request_log WHERE status = 'failed'")).toInt(), 2);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT min(settlements) FROM slot_claims")).toInt(), 1);
    }

    void restartReclaimsThePreviousIncarnationAtOnce()
    {
        QString error;
        OwnerSlotRepository repo(*m_db);
        QVERIFY(claim(attempt(m_a, QStringLiteral("req_1"), 0, 0)).kind == ClaimOutcome::Kind::Claimed);
        QVERIFY(claim(attempt(m_b, QStringLiteral("req_b"), 1, 0)).kind == ClaimOutcome::Kind::Claimed);
        const auto restarted = repo.registerReplica(QStringLiteral("rep_a"), kNow + 5, &error);
        QVERIFY(restarted);
        QCOMPARE(restarted->incarnation, 2);
        // Long before the lease would expire: only A's own old slot, never B's.
        QCOMPARE(repo.reclaimPreviousIncarnations(*restarted, kNow + 5, &error), 1);
        QVERIFY(scalar(*m_db, QStringLiteral("SELECT owner_replica FROM owner_slots WHERE slot_index = 0")).isNull());
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT owner_replica FROM owner_slots WHERE slot_index = 1")).toString(),
                 QStringLiteral("rep_b"));
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT release_kind FROM slot_claims WHERE request_id = 'req_1'")).toString(),
                 QStringLiteral("reclaimed_restart"));
    }

    void failoverReleasesWithoutSettling()
    {
        QString error;
        OwnerSlotRepository repo(*m_db);
        const ClaimOutcome first = claim(attempt(m_a, QStringLiteral("req_1"), 0, 0));
        QVERIFY(first.kind == ClaimOutcome::Kind::Claimed);
        QVERIFY(repo.releaseForFailover(m_a, first.held, kNow + 1, &error));
        ClaimAttempt other = attempt(m_a, QStringLiteral("req_1"), 0, 0, kNow + 2);
        other.accountId = QStringLiteral("acc_2");
        QVERIFY(claim(other).kind == ClaimOutcome::Kind::Claimed);
        const auto s = repo.settleTurn(m_a, QStringLiteral("req_1"), QString(), kNow + 3, &error);
        QVERIFY(s && s->released && s->released->accountId == QLatin1String("acc_2"));
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT group_concat(release_kind || ':' || settlements) FROM "
                                              "(SELECT * FROM slot_claims ORDER BY claimed_at_ms)"))
                     .toString(),
                 QStringLiteral("failover:0,settled:1"));
    }

    // A claim goes ahead of queued writes (StoreWorker::submitUrgent), so a request's next claim can commit
    // before the queued release of its previous one. That release frees the previous claim only: the next
    // one stays held and its lease renews. Red when the release frees every open claim of the request.
    void failoverReleaseLeavesTheRequestsNextClaimHeld()
    {
        QString error;
        OwnerSlotRepository repo(*m_db);
        const ClaimOutcome first = claim(attempt(m_a, QStringLiteral("req_1"), 0, 0));
        QVERIFY(first.kind == ClaimOutcome::Kind::Claimed);
        const ClaimOutcome next = claim(attempt(m_a, QStringLiteral("req_1"), 1, 0, kNow + 1));
        QVERIFY(next.kind == ClaimOutcome::Kind::Claimed);
        QVERIFY2(repo.releaseForFailover(m_a, first.held, kNow + 2, &error), qPrintable(error));
        QVERIFY(scalar(*m_db, QStringLiteral("SELECT owner_replica FROM owner_slots WHERE slot_index = 0")).isNull());
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT owner_replica FROM owner_slots WHERE slot_index = 1")).toString(),
                 QStringLiteral("rep_a"));
        QCOMPARE(
            scalar(*m_db, QStringLiteral("SELECT group_concat(slot_index || ':' || coalesce(release_kind, 'open')) "
                                         "FROM (SELECT * FROM slot_claims ORDER BY slot_index)"))
                .toString(),
            QStringLiteral("0:failover,1:open"));
        QList<HeldSlot> lost;
        QVERIFY2(repo.renew(m_a, {next.held}, kNow + 3, kLease, &lost, &error), qPrintable(error));
        QVERIFY(lost.isEmpty());
        // Releasing the same claim again changes nothing.
        QVERIFY2(repo.releaseForFailover(m_a, first.held, kNow + 4, &error), qPrintable(error));
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT owner_replica FROM owner_slots WHERE slot_index = 1")).toString(),
                 QStringLiteral("rep_a"));
    }

    // A request that gives up after a failover released its slot (no other account could take it) is still
    // settled exactly once, on its last claim.
    void givingUpAfterAFailoverReleaseStillSettlesOnce()
    {
        QString error;
        OwnerSlotRepository repo(*m_db);
        const ClaimOutcome first = claim(attempt(m_a, QStringLiteral("req_1"), 0, 0));
        QVERIFY(first.kind == ClaimOutcome::Kind::Claimed);
        QVERIFY(repo.releaseForFailover(m_a, first.held, kNow + 1, &error));
        auto s = repo.settleTurn(m_a, QStringLiteral("req_1"), QString(), kNow + 2, &error);
        QVERIFY2(s, qPrintable(error));
        QVERIFY(s->hadClaim && !s->settledElsewhere);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT sum(settlements) FROM slot_claims")).toInt(), 1);
        s = repo.settleTurn(m_a, QStringLiteral("req_1"), QString(), kNow + 3, &error);
        QVERIFY(s && s->settledElsewhere);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT sum(settlements) FROM slot_claims")).toInt(), 1);
    }

    // F5 (spec/README.md): a claim given up by a failover whose queued release never commits (a store outage
    // fails it, nothing retries it) is not settled by the reclaim that later takes its expired lease: the
    // request's next claim marked it released for failover, in its own transaction. The request is settled
    // once, on that next claim. Red when the next claim leaves the given-up claim open.
    void aGivenUpClaimIsNotSettledByTheReclaimOfItsExpiredLease()
    {
        QString error;
        OwnerSlotRepository repo(*m_db);
        const ClaimOutcome first = claim(attempt(m_a, QStringLiteral("req_1"), 0, 0));
        QVERIFY(first.kind == ClaimOutcome::Kind::Claimed);
        ClaimAttempt next = attempt(m_a, QStringLiteral("req_1"), 0, 0, kNow + 1);
        next.accountId = QStringLiteral("acc_2");
        next.closesGivenUpClaims = true;
        QVERIFY(claim(next).kind == ClaimOutcome::Kind::Claimed);
        // The first claim's release never ran. Another replica sweeps its expired lease.
        QCOMPARE(repo.reclaimExpired(m_b, kNow + kLease + 1, &error), 1);
        QVERIFY(
            scalar(*m_db, QStringLiteral("SELECT owner_replica FROM owner_slots WHERE account_id = 'acc_1'")).isNull());
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT count(*) FROM request_log")).toInt(), 0);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT sum(settlements) FROM slot_claims")).toInt(), 0);
        // The next claim, whose lease has not run out, settles the request.
        const auto s = repo.settleTurn(m_a, QStringLiteral("req_1"), QString(), kNow + kLease + 1, &error);
        QVERIFY2(s, qPrintable(error));
        QVERIFY(s->released && s->released->accountId == QLatin1String("acc_2"));
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT group_concat(account_id || ':' || release_kind || ':' || "
                                              "settlements) FROM (SELECT * FROM slot_claims ORDER BY claimed_at_ms)"))
                     .toString(),
                 QStringLiteral("acc_1:failover:0,acc_2:settled:1"));
    }

    // F5, the crash: the process dies after the request's next claim committed and before the queued release
    // of the claim it gave up. The restart reclaims both rows and books the request once, on the next claim.
    // Red when the next claim leaves the given-up claim open (two settlements, the first one's booking).
    void aRestartSettlesARequestOnceWhenItsGivenUpClaimWasNeverReleased()
    {
        QString error;
        OwnerSlotRepository repo(*m_db);
        QVERIFY(claim(attempt(m_a, QStringLiteral("req_1"), 0, 0)).kind == ClaimOutcome::Kind::Claimed);
        ClaimAttempt next = attempt(m_a, QStringLiteral("req_1"), 1, 0, kNow + 1);
        next.closesGivenUpClaims = true;
        QVERIFY(claim(next).kind == ClaimOutcome::Kind::Claimed);
        const auto restarted = repo.registerReplica(QStringLiteral("rep_a"), kNow + 5, &error);
        QVERIFY(restarted);
        QCOMPARE(repo.reclaimPreviousIncarnations(*restarted, kNow + 5, &error), 2);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT group_concat(slot_index || ':' || release_kind || ':' || "
                                              "settlements) FROM (SELECT * FROM slot_claims ORDER BY slot_index)"))
                     .toString(),
                 QStringLiteral("0:failover:0,1:reclaimed_restart:1"));
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT count(*) FROM request_log WHERE request_id = 'req_1'")).toInt(),
                 1);
        // A claim that gives nothing up leaves the request's other open claims alone (the previous test's
        // shape without the flag is failoverReleaseLeavesTheRequestsNextClaimHeld).
        QVERIFY(claim(attempt(*restarted, QStringLiteral("req_2"), 0, 1, kNow + 6)).kind ==
                ClaimOutcome::Kind::Claimed);
        QVERIFY(claim(attempt(*restarted, QStringLiteral("req_2"), 1, 1, kNow + 7)).kind ==
                ClaimOutcome::Kind::Claimed);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT count(*) FROM slot_claims WHERE request_id = 'req_2' AND "
                                              "released_at_ms IS NULL"))
                     .toInt(),
                 2);
    }

    // The gap the model leaves out (crashes): a failover's release committed, then the process died before the
    // request's next claim. No slot row names the claim any more, so no reclaim reaches it; the restart books
    // it once. A request that moved on to a next claim, or settled on its given-up claim, is left alone. Red
    // without settleAbandonedFailovers.
    void aRestartBooksARequestWhoseFailoverReleaseCommittedBeforeItsNextClaim()
    {
        QString error;
        OwnerSlotRepository repo(*m_db);
        const auto releasedAndGone = [&](const QString &request, int slot, const QString &account = {}) {
            ClaimAttempt a = attempt(m_a, request, slot, 0);
            if (!account.isEmpty())
                a.accountId = account;
            a.closesGivenUpClaims = true;
            const ClaimOutcome c = claim(a);
            return c.kind == ClaimOutcome::Kind::Claimed && repo.releaseForFailover(m_a, c.held, kNow + 1, &error);
        };
        QVERIFY(releasedAndGone(QStringLiteral("req_lost"), 0));
        // Moved on: its next claim is open (a restart's reclaim of that claim settles it).
        QVERIFY(releasedAndGone(QStringLiteral("req_moved"), 1));
        ClaimAttempt next = attempt(m_a, QStringLiteral("req_moved"), 2, 0, kNow + 2);
        next.closesGivenUpClaims = true;
        QVERIFY(claim(next).kind == ClaimOutcome::Kind::Claimed);
        // Failed over twice, then died: booked once, on its last claim.
        QVERIFY(releasedAndGone(QStringLiteral("req_twice"), 4));
        ClaimAttempt second = attempt(m_a, QStringLiteral("req_twice"), 5, 0, kNow + 2);
        second.closesGivenUpClaims = true;
        const ClaimOutcome secondClaim = claim(second);
        QVERIFY(secondClaim.kind == ClaimOutcome::Kind::Claimed);
        QVERIFY(repo.releaseForFailover(m_a, secondClaim.held, kNow + 3, &error));
        // Failed over twice in one millisecond, on two accounts' slots of the same epoch: two last claims tie.
        QVERIFY(releasedAndGone(QStringLiteral("req_tie"), 6));
        QVERIFY(releasedAndGone(QStringLiteral("req_tie"), 6, QStringLiteral("acc_2")));
        // Gave up and settled on its given-up claim.
        QVERIFY(releasedAndGone(QStringLiteral("req_gave_up"), 3));
        const auto gaveUp = repo.settleTurn(m_a, QStringLiteral("req_gave_up"), QString(), kNow + 3, &error);
        QVERIFY2(gaveUp && gaveUp->hadClaim && !gaveUp->ownerLost, qPrintable(error));
        // While this incarnation runs, none of them is touched, however late.
        QCOMPARE(repo.settleAbandonedFailovers(m_a, kNow + 10 * kLease, kLease, &error), 0);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT count(*) FROM request_log")).toInt(), 0);

        const auto restarted = repo.registerReplica(QStringLiteral("rep_a"), kNow + 5, &error);
        QVERIFY(restarted);
        QCOMPARE(repo.reclaimPreviousIncarnations(*restarted, kNow + 5, &error), 1); // req_moved's open claim
        QCOMPARE(repo.settleAbandonedFailovers(*restarted, kNow + 5, kLease, &error), 3);
        QCOMPARE(repo.settleAbandonedFailovers(*restarted, kNow + 6, kLease, &error), 0);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT group_concat(request_id || ':' || release_kind || ':' || "
                                              "settlements) FROM (SELECT * FROM slot_claims WHERE request_id <> "
                                              "'req_tie' ORDER BY slot_index)"))
                     .toString(),
                 QStringLiteral("req_lost:failover:1,req_moved:failover:0,req_moved:reclaimed_restart:1,"
                                "req_gave_up:failover:1,req_twice:failover:0,req_twice:failover:1"));
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT sum(settlements) FROM slot_claims WHERE request_id = 'req_tie'"))
                     .toInt(),
                 1);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT status || ':' || error_code || ':' || account_id || ':' || "
                                              "started_at_ms FROM request_log WHERE request_id = 'req_lost'"))
                     .toString(),
                 QStringLiteral("failed:owner_lost:acc_1:%1").arg(kNow));
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT count(*) FROM request_log")).toInt(), 4);
        // The given-up claims of settled requests have left the search (the index holds none of them).
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT count(*) FROM slot_claims INDEXED BY slot_claims_given_up WHERE "
                                              "release_kind = 'failover' AND settlements = 0 AND swept_at_ms IS NULL"))
                     .toInt(),
                 0);
    }

    // Another replica's turn died the same way and that replica never came back: it is booked once that
    // replica stops vouching for itself (its last renewal plus its own lease TTL, which may be longer than this
    // one's; for one that never renewed, its start plus this one's TTL), not before. If that replica was only
    // stalled and its turn goes on, the booking stands: the turn's next claim is released unsettled and the
    // turn ends as owner_lost.
    void anotherReplicasAbandonedFailoverIsBookedOnceThatReplicaStopsVouchingForItself()
    {
        QString error;
        OwnerSlotRepository repo(*m_db);
        const auto c = repo.registerReplica(QStringLiteral("rep_c"), kNow, &error);
        QVERIFY(c);
        const ClaimOutcome ofC = claim(attempt(*c, QStringLiteral("req_c"), 2, 0));
        QVERIFY(ofC.kind == ClaimOutcome::Kind::Claimed);
        QVERIFY(repo.releaseForFailover(*c, ofC.held, kNow + 1, &error));
        // A request of rep_c whose next claim (another account's slot, in the same millisecond, same epoch) is
        // open under a longer lease: not abandoned, whatever the order of its claims says.
        const ClaimOutcome given = claim(attempt(*c, QStringLiteral("req_c_open"), 3, 0));
        QVERIFY(given.kind == ClaimOutcome::Kind::Claimed);
        QVERIFY(repo.releaseForFailover(*c, given.held, kNow + 1, &error));
        ClaimAttempt open = attempt(*c, QStringLiteral("req_c_open"), 3, 0);
        open.accountId = QStringLiteral("acc_2");
        open.leaseMs = 10 * kLease;
        open.closesGivenUpClaims = true;
        QVERIFY(claim(open).kind == ClaimOutcome::Kind::Claimed);
        QCOMPARE(repo.settleAbandonedFailovers(m_a, kNow + kLease, kLease, &error), 0);
        QCOMPARE(repo.settleAbandonedFailovers(m_a, kNow + kLease + 1, kLease, &error), 1);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT sum(settlements) FROM slot_claims WHERE request_id = "
                                              "'req_c_open'"))
                     .toInt(),
                 0);

        const ClaimOutcome first = claim(attempt(m_b, QStringLiteral("req_1"), 0, 0));
        QVERIFY(first.kind == ClaimOutcome::Kind::Claimed);
        QVERIFY(repo.releaseForFailover(m_b, first.held, kNow + 1, &error));
        // rep_b renews with ten times this replica's lease TTL.
        QVERIFY(repo.renew(m_b, {}, kNow + kLease, 10 * kLease, nullptr, &error));
        QCOMPARE(repo.settleAbandonedFailovers(m_a, kNow + 3 * kLease, kLease, &error), 0);
        QCOMPARE(
            scalar(*m_db, QStringLiteral("SELECT settlements FROM slot_claims WHERE request_id = 'req_1'")).toInt(), 0);
        QCOMPARE(repo.settleAbandonedFailovers(m_a, kNow + 11 * kLease + 1, kLease, &error), 1);
        QCOMPARE(
            scalar(*m_db, QStringLiteral("SELECT error_code FROM request_log WHERE request_id = 'req_1'")).toString(),
            QStringLiteral("owner_lost"));

        ClaimAttempt next = attempt(m_b, QStringLiteral("req_1"), 1, 0, kNow + 2);
        next.closesGivenUpClaims = true;
        QVERIFY(claim(next).kind == ClaimOutcome::Kind::Claimed);
        const auto s = repo.settleTurn(m_b, QStringLiteral("req_1"), QStringLiteral("resp_1"), kNow + 3, &error);
        QVERIFY2(s, qPrintable(error));
        QVERIFY(s->ownerLost && s->settledElsewhere && s->released);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT sum(settlements) FROM slot_claims WHERE request_id = 'req_1'"))
                     .toInt(),
                 1);
        QCOMPARE(
            scalar(*m_db, QStringLiteral("SELECT count(*) FROM owner_slots WHERE owner_replica = 'rep_b'")).toInt(), 0);
    }

    // A replica that starts with a lease TTL longer than the sweeper's vouches for itself by that TTL from its
    // start, before its first renewal: its turn between a failover's release and its next claim is not booked
    // lost by the sweeper's shorter TTL. Red when registration leaves alive_until_ms empty.
    void aFreshReplicaVouchesForItselfByItsOwnLeaseBeforeItsFirstRenewal()
    {
        QString error;
        OwnerSlotRepository repo(*m_db);
        const auto d = repo.registerReplica(QStringLiteral("rep_d"), kNow, &error, 10 * kLease);
        QVERIFY2(d, qPrintable(error));
        const ClaimOutcome ofD = claim(attempt(*d, QStringLiteral("req_d"), 2, 0));
        QVERIFY(ofD.kind == ClaimOutcome::Kind::Claimed);
        QVERIFY(repo.releaseForFailover(*d, ofD.held, kNow + 1, &error));
        QCOMPARE(repo.settleAbandonedFailovers(m_a, kNow + 3 * kLease, kLease, &error), 0);
        QCOMPARE(repo.settleAbandonedFailovers(m_a, kNow + 10 * kLease, kLease, &error), 0);
        QCOMPARE(repo.settleAbandonedFailovers(m_a, kNow + 10 * kLease + 1, kLease, &error), 1);
        // Its next incarnation vouches afresh: the previous one's value is not kept.
        const auto again = repo.registerReplica(QStringLiteral("rep_d"), kNow + 20 * kLease, &error, kLease);
        QVERIFY(again && again->incarnation == d->incarnation + 1);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT alive_until_ms FROM replicas WHERE replica_id = 'rep_d'"))
                     .toLongLong(),
                 kNow + 21 * kLease);
    }

    // F5, the request's own next claim takes over the given-up claim's expired slot (same account, same slot):
    // it closes that claim before the takeover's reclaim could settle it. Red when the close comes after.
    void aNextClaimTakingOverItsOwnGivenUpSlotClosesItFirst()
    {
        QString error;
        OwnerSlotRepository repo(*m_db);
        const ClaimOutcome first = claim(attempt(m_a, QStringLiteral("req_1"), 0, 0));
        QVERIFY(first.kind == ClaimOutcome::Kind::Claimed);
        ClaimAttempt next = attempt(m_a, QStringLiteral("req_1"), 0, first.held.epoch, kNow + kLease + 1);
        next.closesGivenUpClaims = true;
        const ClaimOutcome taken = claim(next);
        QVERIFY(taken.kind == ClaimOutcome::Kind::Claimed);
        QVERIFY(taken.reclaimedExpired);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT count(*) FROM request_log")).toInt(), 0);
        const auto s = repo.settleTurn(m_a, QStringLiteral("req_1"), QString(), kNow + kLease + 2, &error);
        QVERIFY2(s, qPrintable(error));
        QVERIFY(!s->ownerLost && s->released);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT group_concat(owner_epoch || ':' || release_kind || ':' || "
                                              "settlements) FROM (SELECT * FROM slot_claims ORDER BY owner_epoch)"))
                     .toString(),
                 QStringLiteral("1:failover:0,2:settled:1"));
    }

    // F5, the lease of the given-up claim runs out before the request's next claim (a long gate wait): a sweep
    // settles it and books the request as lost first. The next claim then cannot close it, so its settlement
    // releases it without a second settlement and reports the turn's owner lost, as the booking says. Red
    // when settleTurn settles the open claim anyway.
    void aRequestAReclaimSettledIsNotSettledAgainByItsNextClaim()
    {
        QString error;
        OwnerSlotRepository repo(*m_db);
        QVERIFY(claim(attempt(m_a, QStringLiteral("req_1"), 0, 0)).kind == ClaimOutcome::Kind::Claimed);
        QCOMPARE(repo.reclaimExpired(m_b, kNow + kLease + 1, &error), 1);
        ClaimAttempt next = attempt(m_a, QStringLiteral("req_1"), 0, 0, kNow + kLease + 2);
        next.accountId = QStringLiteral("acc_2");
        next.closesGivenUpClaims = true;
        QVERIFY(claim(next).kind == ClaimOutcome::Kind::Claimed);
        const auto s =
            repo.settleTurn(m_a, QStringLiteral("req_1"), QStringLiteral("resp_1"), kNow + kLease + 3, &error);
        QVERIFY2(s, qPrintable(error));
        QVERIFY(s->ownerLost && s->settledElsewhere);
        QVERIFY(s->released && s->released->accountId == QLatin1String("acc_2"));
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT group_concat(account_id || ':' || release_kind || ':' || "
                                              "settlements) FROM (SELECT * FROM slot_claims ORDER BY claimed_at_ms)"))
                     .toString(),
                 QStringLiteral("acc_1:reclaimed_expired:1,acc_2:settled_elsewhere:0"));
        QVERIFY(
            scalar(*m_db, QStringLiteral("SELECT owner_replica FROM owner_slots WHERE account_id = 'acc_2'")).isNull());
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT status || ':' || error_code FROM request_log")).toString(),
                 QStringLiteral("failed:owner_lost"));
    }
};

QTEST_GUILESS_MAIN(tst_OwnershipStore)
#include "tst_ownership_store.moc"
