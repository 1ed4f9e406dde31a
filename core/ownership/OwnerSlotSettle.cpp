#include "ownership/OwnerSlotRepository.h"

#include "store/Database.h"
#include "store/SqlValues.h"
#include "util/Faults.h"

#include <QSqlQuery>
#include <QVariant>

// How a claim ends: given up by a failover (released without a settlement, or closed by the request's next
// claim) or settled once, with its fenced release.
namespace sy {

using namespace sql;

bool OwnerSlotRepository::closeGivenUpClaims(QSqlQuery &q, const ClaimAttempt &a, QString *error)
{
    if (!a.closesGivenUpClaims)
        return true;
    // Only the ledger rows: a given-up claim's slot is freed by its own (fenced) release, or by a reclaim once
    // its lease, which nobody renews, runs out. Running it twice changes nothing.
    if (!m_db.prepare(q,
                      QStringLiteral("UPDATE slot_claims SET released_at_ms = ?, release_kind = 'failover' WHERE "
                                     "request_id = ? AND released_at_ms IS NULL AND settlements = 0"),
                      error))
        return false;
    Database::bindAll(q, {a.nowMs, a.requestId});
    if (!m_db.exec(q, error))
        return false;
    q.finish();
    return true;
}

bool OwnerSlotRepository::releaseForFailover(const ReplicaIdentity &me, const HeldSlot &held, qint64 nowMs,
                                             QString *error)
{
    if (!held.isValid())
        return true;
    // Exactly this claim, never "every open claim of the request": the request's next claim (urgent) may have
    // committed before this queued release ran, and it must stay held.
    QSqlQuery q = m_db.query();
    return releaseFenced(q, me, held, nullptr, error) &&
           closeClaimUnsettled(q, held, QStringLiteral("failover"), nowMs, error);
}

bool OwnerSlotRepository::closeClaimUnsettled(QSqlQuery &q, const HeldSlot &held, const QString &kind, qint64 nowMs,
                                              QString *error)
{
    if (!m_db.prepare(q,
                      QStringLiteral("UPDATE slot_claims SET released_at_ms = ?, release_kind = ? WHERE request_id = ? "
                                     "AND account_id = ? AND slot_index = ? AND owner_epoch = ? AND "
                                     "released_at_ms IS NULL"),
                      error))
        return false;
    Database::bindAll(q, {nowMs, kind, held.requestId, held.accountId, held.slot, held.epoch});
    if (!m_db.exec(q, error))
        return false;
    q.finish();
    return true;
}

std::optional<SettleOutcome> OwnerSlotRepository::settleTurn(const ReplicaIdentity &me, const QString &requestId,
                                                             const QString &responseId, qint64 nowMs, QString *error)
{
    SettleOutcome out;
    QSqlQuery q = m_db.query();
    // The request's last claim: the open one, or one a reclaim already settled.
    if (!m_db.prepare(q,
                      QStringLiteral("SELECT account_id, slot_index, owner_epoch, settlements, released_at_ms FROM "
                                     "slot_claims WHERE request_id = ? ORDER BY claimed_at_ms DESC, owner_epoch DESC"),
                      error))
        return std::nullopt;
    Database::bindAll(q, {requestId});
    if (!m_db.exec(q, error))
        return std::nullopt;
    std::optional<HeldSlot> open;
    std::optional<HeldSlot> latest;
    bool settledByOther = false;
    while (q.next()) {
        const HeldSlot h{requestId, q.value(0).toString(), q.value(1).toInt(), q.value(2).toLongLong()};
        if (!latest)
            latest = h;
        if (q.value(4).isNull() && !open)
            open = h;
        if (q.value(3).toInt() > 0)
            settledByOther = true;
    }
    q.finish();
    // (Fault build only: double-settle settles the latest claim again, whoever settled it before.)
    if (!open && SY_FAULT("double-settle"))
        open = latest;
    if (!open && latest && !settledByOther) {
        // The request gave up after a failover released its last slot: its settlement goes on that claim.
        if (!m_db.prepare(q,
                          QStringLiteral("UPDATE slot_claims SET settlements = settlements + 1, response_id = ? "
                                         "WHERE request_id = ? AND account_id = ? AND slot_index = ? AND "
                                         "owner_epoch = ? AND settlements = 0"),
                          error))
            return std::nullopt;
        Database::bindAll(q, {nullableText(responseId), requestId, latest->accountId, latest->slot, latest->epoch});
        if (!m_db.exec(q, error))
            return std::nullopt;
        out.hadClaim = true;
        // Settled meanwhile by another replica's settleAbandonedFailovers (a concurrent transaction on
        // PostgreSQL): booked as lost there, so the turn is too.
        out.ownerLost = out.settledElsewhere = q.numRowsAffected() != 1;
        return out;
    }
    if (!open) {
        out.hadClaim = settledByOther;
        out.ownerLost = settledByOther;
        out.settledElsewhere = settledByOther;
        return out;
    }
    out.hadClaim = true;
    if (settledByOther && !SY_FAULT("double-settle"))
        return releaseSettledElsewhere(q, me, *open, nowMs, out, error);
    // Exactly once: only an unsettled claim takes this settlement.
    const QString settle = QStringLiteral("UPDATE slot_claims SET settlements = settlements + 1, released_at_ms = ?, "
                                          "release_kind = 'settled', response_id = ? WHERE request_id = ? AND "
                                          "account_id = ? AND slot_index = ? AND owner_epoch = ?");
    if (!m_db.prepare(q, SY_FAULT("double-settle") ? settle : settle + QStringLiteral(" AND settlements = 0"), error))
        return std::nullopt;
    Database::bindAll(q, {nowMs, nullableText(responseId), requestId, open->accountId, open->slot, open->epoch});
    if (!m_db.exec(q, error))
        return std::nullopt;
    if (q.numRowsAffected() != 1) {
        out.ownerLost = true;
        out.settledElsewhere = true;
        return out;
    }
    q.finish();
    if (SY_FAULT("leak-owner-on-terminal"))
        return out;
    if (!releaseFenced(q, me, *open, &out.released, error))
        return std::nullopt;
    if (!out.released)
        out.ownerLost = true; // the row moved on (lease expired and reclaimed) before the settlement
    return out;
}

std::optional<SettleOutcome> OwnerSlotRepository::releaseSettledElsewhere(QSqlQuery &q, const ReplicaIdentity &me,
                                                                          const HeldSlot &open, qint64 nowMs,
                                                                          SettleOutcome out, QString *error)
{
    // A reclaim settled an earlier claim of this request (one given up whose lease ran out before this claim
    // could close it) and booked the request as lost: this claim goes back without a second settlement, and the
    // turn ends as owner_lost, as the booking says.
    out.ownerLost = true;
    out.settledElsewhere = true;
    if (!closeClaimUnsettled(q, open, QStringLiteral("settled_elsewhere"), nowMs, error) ||
        !releaseFenced(q, me, open, &out.released, error))
        return std::nullopt;
    return out;
}

bool OwnerSlotRepository::releaseFenced(QSqlQuery &q, const ReplicaIdentity &me, const HeldSlot &held,
                                        std::optional<SlotState> *released, QString *error)
{
    // Only while the row still carries this claim's epoch and this replica.
    if (!m_db.prepare(q,
                      QStringLiteral("UPDATE owner_slots SET owner_replica = NULL, owner_incarnation = NULL, "
                                     "owner_request_id = NULL, lease_expires_ms = NULL WHERE account_id = ? AND "
                                     "slot_index = ? AND owner_epoch = ? AND owner_replica = ?"),
                      error))
        return false;
    Database::bindAll(q, {held.accountId, held.slot, held.epoch, me.replicaId});
    if (!m_db.exec(q, error))
        return false;
    if (released && q.numRowsAffected() == 1) {
        SlotState s;
        s.accountId = held.accountId;
        s.slot = held.slot;
        s.epoch = held.epoch;
        *released = s;
    }
    q.finish();
    return true;
}

} // namespace sy
