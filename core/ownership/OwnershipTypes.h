#pragma once

#include <QList>
#include <QString>
#include <optional>

namespace sy {

// Who a replica is: a stable id per data dir and the number of this start (DESIGN.md "Accounts, slots and
// replicas"). Slot rows name both, so a restarted replica can tell its previous incarnation's slots apart.
struct ReplicaIdentity
{
    QString replicaId;
    qint64 incarnation = 0;
    bool isValid() const { return !replicaId.isEmpty() && incarnation > 0; }
};

// One owner_slots row as read from the database.
struct SlotState
{
    QString accountId;
    int slot = 0;
    qint64 epoch = 0;
    QString ownerReplica; // empty: free
    qint64 ownerIncarnation = 0;
    QString ownerRequestId;
    std::optional<qint64> leaseExpiresMs;

    // Held by a live lease at `nowMs` (an expired lease may be reclaimed).
    bool heldAt(qint64 nowMs) const { return !ownerReplica.isEmpty() && leaseExpiresMs && *leaseExpiresMs >= nowMs; }
};

// A slot a turn of this replica holds: the fence for every later write is (account, slot, epoch).
struct HeldSlot
{
    QString requestId;
    QString accountId;
    int slot = -1;
    qint64 epoch = 0;
    bool isValid() const { return slot >= 0; }
};

// What a turn asks to claim. `slot`/`expectedEpoch` come from the replica's (possibly stale) snapshot: the
// compare-and-set fails if the row moved on since.
struct ClaimAttempt
{
    QString requestId;
    QString accountId;
    int slot = 0;
    qint64 expectedEpoch = 0;
    QString route;
    qint64 startedAtMs = 0;
    QString previousResponseId; // the continuation anchor, if any
    ReplicaIdentity replica;
    qint64 nowMs = 0;
    qint64 leaseMs = 0;
    // The request gave up an earlier claim (a failover, SlotLedger::releaseForFailover): a successful claim also
    // marks the request's still open claims as released for failover, in its own transaction. Their queued
    // releases may never commit (a store outage, a crash), and a reclaim of such a claim would then settle a
    // request that this claim settles too (spec/README.md, finding F5).
    bool closesGivenUpClaims = false;
};

struct ClaimOutcome
{
    enum class Kind
    {
        Claimed,    // the slot is ours: `held` names it
        Conflict,   // the row moved on (another owner, or a newer epoch): `rows` holds the fresh rows
        Ineligible, // the durable account row (or the anchor) says no: `reason`
        Error       // the database failed: `reason`
    };
    Kind kind = Kind::Error;
    HeldSlot held;
    QString reason; // "removed", "paused", "reauth_required", "deactivated", "cooldown", "anchor_owner_mismatch",
                    // "anchor_unknown"
    QList<SlotState> rows; // Conflict: every row of the account; Claimed: the claimed slot's row
    bool reclaimedExpired = false; // the slot was taken over from an expired lease
    qint64 durableVersion = 0;
    // When the claim's statements began and ended on the store thread (Clock::monotonicUs; 0 = never ran):
    // the claim's latency split into waiting for the store, its statements, and the commit plus the way back.
    qint64 storeStartUs = 0;
    qint64 storeEndUs = 0;
    // Claimed: the selection time the claim's transaction stored (accounts.last_selected_ms), and the one the
    // row had before, read in the same transaction: what a given-up claim puts back.
    std::optional<qint64> selectedAtMs;
    std::optional<qint64> previousSelectedMs;
};

// A claim given up before anything was sent (a continuation found by the body's scan): the account's selection
// time goes back to what it was, unless a later claim has stored another one since.
struct SelectionUndo
{
    QString accountId;
    std::optional<qint64> previousMs;
    qint64 storedMs = 0;
};

// How the settlement of a request went, inside the request-log transaction.
struct SettleOutcome
{
    bool hadClaim = false;       // the request held a slot when it settled
    bool ownerLost = false;      // the slot was not ours any more when the request ended
    bool settledElsewhere = false; // a reclaim had already settled (and booked) the request
    std::optional<SlotState> released; // the slot it released (fenced by its epoch)
};

} // namespace sy
