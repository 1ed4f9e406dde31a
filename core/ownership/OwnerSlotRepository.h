#pragma once

#include "ownership/OwnershipTypes.h"

#include <QList>
#include <QString>
#include <optional>

class QSqlQuery;

namespace sy {

class Database;

// The durable half of the ownership protocol (spec/CoreOwnership.pml): owner slots claimed by
// compare-and-set on their epoch, leases, fenced releases, reclaims, and the claim ledger. Every function
// runs inside the caller's transaction on the store thread; SQL is portable between SQLite and PostgreSQL.
//
// A request's claims carry exactly one settlement between them: its own (settleTurn) or, when its replica
// died or lost the lease, the reclaimer's, which also books the request as failed with `owner_lost`.
class OwnerSlotRepository
{
public:
    explicit OwnerSlotRepository(Database &db);

    // A new incarnation of `replicaId` (1 on first start). Records the start time and, given its lease TTL,
    // vouches for the incarnation until nowMs + leaseMs (alive_until_ms), as each renewal does after it: until
    // its first renewal another replica judges it by its own TTL, not by the sweeper's.
    std::optional<ReplicaIdentity> registerReplica(const QString &replicaId, qint64 nowMs, QString *error,
                                                   std::optional<qint64> leaseMs = std::nullopt);
    // Frees the slots this replica's earlier incarnations still hold, at once (they died with that process),
    // and settles their open claims. Returns how many slots were reclaimed, -1 on error.
    int reclaimPreviousIncarnations(const ReplicaIdentity &me, qint64 nowMs, QString *error);
    // Frees every slot whose lease expired before nowMs (another replica died or stalled) and settles its
    // open claim. Returns how many, -1 on error.
    int reclaimExpired(const ReplicaIdentity &me, qint64 nowMs, QString *error);
    // Books as lost, once, each request left with no open claim and no settlement: a failover released (or its
    // next claim closed) its last claim and the turn died before its next claim or its settlement. Only claims
    // of an incarnation that is gone: its replica started again, or its alive_until_ms (its last renewal plus
    // its own lease TTL; for one registered without its TTL and never renewed, its start plus leaseMs) is before nowMs;
    // never this incarnation's own. Also retires from the search the given-up claims whose request settled elsewhere.
    // Returns how many requests it booked, -1 on error.
    int settleAbandonedFailovers(const ReplicaIdentity &me, qint64 nowMs, qint64 leaseMs, QString *error);

    // The claim: the durable re-check of the account (status, cooldown, existence) and of the anchor, then a
    // compare-and-set of the slot row from `expectedEpoch` to expectedEpoch + 1 naming this replica, and a
    // ledger row with the durable facts the claim saw.
    ClaimOutcome claim(const ClaimAttempt &attempt, QString *error);
    // The claim's reads of `accountId` and its slot 0, changing nothing: run ahead of a claim by
    // StoreWorker::warmUp() so that the claim finds its account check compiled and the pages of the account's
    // and the slot's rows cached.
    bool warmClaim(const QString &accountId, QString *error);
    // The claim's read of its account's row (status, cooldown, version, selection time), one bound value: the
    // account id. Shared with what measures a re-check of it (the fault switch claim-ahead-cost, sy-bench-db).
    static const QString &accountCheckSql();

    // Extends the leases of `held` to nowMs + leaseMs, each fenced by its epoch and owner. A slot whose row
    // moved on is appended to *lost. False only on a database error.
    bool renew(const ReplicaIdentity &me, const QList<HeldSlot> &held, qint64 nowMs, qint64 leaseMs,
               QList<HeldSlot> *lost, QString *error);
    // Checks that `held` is still ours (epoch and owner unchanged and lease not expired) without changing it.
    bool stillOwned(const ReplicaIdentity &me, const HeldSlot &held, qint64 nowMs, QString *error);

    // A request moves on (another account, or the same one through another egress proxy) before anything
    // reached its client: the claim `held` is released, fenced by its epoch, without a settlement. The
    // request's other claims are left alone.
    bool releaseForFailover(const ReplicaIdentity &me, const HeldSlot &held, qint64 nowMs, QString *error);
    // The request ends: settles its open claim exactly once and releases its slot, fenced by the claim's
    // epoch. Runs in the transaction that writes the request-log row.
    std::optional<SettleOutcome> settleTurn(const ReplicaIdentity &me, const QString &requestId,
                                            const QString &responseId, qint64 nowMs, QString *error);

    QList<SlotState> allSlots(QString *error);
    QList<SlotState> slotsOf(const QString &accountId, QString *error);

    // Replica books shown by status and read by the durable-state checker.
    bool noteDraining(const ReplicaIdentity &me, qint64 nowMs, QString *error);
    bool noteStopped(const ReplicaIdentity &me, qint64 nowMs, QString *error);
    bool saveGateBooks(const ReplicaIdentity &me, qint64 admitted, qint64 left, qint64 queued, qint64 overloaded,
                       qint64 nowMs, QString *error);

private:
    // The claim's ledger row, after its compare-and-set, on the claim's own query `q`: the Claimed outcome.
    ClaimOutcome recordClaim(QSqlQuery &q, const ClaimAttempt &a, const QString &status,
                             const std::optional<qint64> &cooldownUntil, const std::optional<QString> &anchorAccount,
                             ClaimOutcome out, QString *error);
    // ClaimAttempt::closesGivenUpClaims: the request's open, unsettled claims are marked released for failover.
    bool closeGivenUpClaims(QSqlQuery &q, const ClaimAttempt &a, QString *error);
    // settleTurn() of a request whose earlier claim a reclaim settled: the open claim goes back unsettled.
    std::optional<SettleOutcome> releaseSettledElsewhere(QSqlQuery &q, const ReplicaIdentity &me, const HeldSlot &open,
                                                         qint64 nowMs, SettleOutcome out, QString *error);
    // Marks exactly this claim released as `kind`, without a settlement (if it is still open).
    bool closeClaimUnsettled(QSqlQuery &q, const HeldSlot &held, const QString &kind, qint64 nowMs, QString *error);
    // Frees the claim's slot row, fenced by its epoch and this replica; *released names it when it was freed.
    bool releaseFenced(QSqlQuery &q, const ReplicaIdentity &me, const HeldSlot &held,
                       std::optional<SlotState> *released, QString *error);
    bool settleOrphan(const QString &accountId, int slot, qint64 epoch, const QString &kind, qint64 nowMs,
                      QString *error);
    bool bumpReplicaCounter(const ReplicaIdentity &me, const char *column, int by, QString *error);

    Database &m_db;
};

} // namespace sy
