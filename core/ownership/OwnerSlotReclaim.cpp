#include "ownership/OwnerSlotRepository.h"
#include "ownership/OwnerSlotRows.h"
#include "store/Database.h"

#include <QSet>
#include <QVariant>

// Reclaims: slots whose owner died (a previous incarnation of this replica) or whose lease expired.
namespace sy {

int OwnerSlotRepository::reclaimPreviousIncarnations(const ReplicaIdentity &me, qint64 nowMs, QString *error)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q,
                      QStringLiteral("SELECT ") + slotrows::columns() +
                          QStringLiteral(" FROM owner_slots WHERE owner_replica = ? AND owner_incarnation < ?"),
                      error))
        return -1;
    q.addBindValue(me.replicaId);
    q.addBindValue(me.incarnation);
    if (!m_db.exec(q, error))
        return -1;
    QList<SlotState> stale;
    while (q.next())
        stale << slotrows::from(q);
    q.finish();
    int reclaimed = 0;
    for (const SlotState &s : std::as_const(stale)) {
        if (!m_db.prepare(q,
                          QStringLiteral("UPDATE owner_slots SET owner_replica = NULL, owner_incarnation = NULL, "
                                         "owner_request_id = NULL, lease_expires_ms = NULL WHERE account_id = ? AND "
                                         "slot_index = ? AND owner_epoch = ? AND owner_replica = ? AND "
                                         "owner_incarnation < ?"),
                          error))
            return -1;
        q.addBindValue(s.accountId);
        q.addBindValue(s.slot);
        q.addBindValue(s.epoch);
        q.addBindValue(me.replicaId);
        q.addBindValue(me.incarnation);
        if (!m_db.exec(q, error))
            return -1;
        if (q.numRowsAffected() != 1)
            continue;
        ++reclaimed;
        if (!settleOrphan(s.accountId, s.slot, s.epoch, QStringLiteral("reclaimed_restart"), nowMs, error))
            return -1;
    }
    if (!bumpReplicaCounter(me, "lease_reclaims", reclaimed, error))
        return -1;
    return reclaimed;
}

int OwnerSlotRepository::reclaimExpired(const ReplicaIdentity &me, qint64 nowMs, QString *error)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q,
                      QStringLiteral("SELECT ") + slotrows::columns() +
                          QStringLiteral(" FROM owner_slots WHERE owner_replica IS NOT NULL AND lease_expires_ms < ?"),
                      error))
        return -1;
    q.addBindValue(nowMs);
    if (!m_db.exec(q, error))
        return -1;
    QList<SlotState> expired;
    while (q.next())
        expired << slotrows::from(q);
    q.finish();
    int reclaimed = 0;
    for (const SlotState &s : std::as_const(expired)) {
        if (!m_db.prepare(q,
                          QStringLiteral("UPDATE owner_slots SET owner_replica = NULL, owner_incarnation = NULL, "
                                         "owner_request_id = NULL, lease_expires_ms = NULL WHERE account_id = ? AND "
                                         "slot_index = ? AND owner_epoch = ? AND lease_expires_ms < ?"),
                          error))
            return -1;
        q.addBindValue(s.accountId);
        q.addBindValue(s.slot);
        q.addBindValue(s.epoch);
        q.addBindValue(nowMs);
        if (!m_db.exec(q, error))
            return -1;
        if (q.numRowsAffected() != 1)
            continue;
        ++reclaimed;
        if (!settleOrphan(s.accountId, s.slot, s.epoch, QStringLiteral("reclaimed_expired"), nowMs, error))
            return -1;
    }
    if (!bumpReplicaCounter(me, "lease_reclaims", reclaimed, error))
        return -1;
    return reclaimed;
}

int OwnerSlotRepository::settleAbandonedFailovers(const ReplicaIdentity &me, qint64 nowMs, qint64 leaseMs,
                                                  QString *error)
{
    // Every claim closed by a failover, unsettled and not swept yet (the partial index slot_claims_given_up),
    // with what the rest of its request's ledger says. A request whose last claim (settleTurn's order) is one
    // of these, with no claim open or settled, was between a failover's release and its next claim, or about
    // to settle on that claim. Nothing else can settle it once that turn's incarnation is gone (its replica
    // started again, or no longer vouches for itself: alive_until_ms, its start or last renewal plus its own
    // lease TTL; one registered without it is judged by its start and this one's TTL), since no slot row names
    // it.
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(
            q,
            QStringLiteral(
                "SELECT c.request_id, c.account_id, c.slot_index, c.owner_epoch, "
                "EXISTS (SELECT 1 FROM slot_claims o WHERE o.request_id = c.request_id AND o.settlements > 0), "
                "EXISTS (SELECT 1 FROM slot_claims o WHERE o.request_id = c.request_id AND (o.released_at_ms IS "
                "NULL OR o.claimed_at_ms > c.claimed_at_ms OR (o.claimed_at_ms = c.claimed_at_ms AND o.owner_epoch "
                "> c.owner_epoch))), "
                "(r.incarnation > c.incarnation OR COALESCE(r.alive_until_ms, r.heartbeat_ms + ?) < ?) AND NOT "
                "(c.replica_id = ? AND c.incarnation = ?) "
                "FROM slot_claims c JOIN replicas r ON r.replica_id = c.replica_id WHERE c.release_kind = "
                "'failover' AND c.settlements = 0 AND c.swept_at_ms IS NULL"),
            error))
        return -1;
    Database::bindAll(q, {leaseMs, nowMs, me.replicaId, me.incarnation});
    if (!m_db.exec(q, error))
        return -1;
    QList<HeldSlot> settledElsewhere, abandoned;
    while (q.next()) {
        const HeldSlot h{q.value(0).toString(), q.value(1).toString(), q.value(2).toInt(), q.value(3).toLongLong()};
        if (q.value(4).toBool())
            settledElsewhere << h; // its request settled on another claim: never a candidate again
        else if (!q.value(5).toBool() && q.value(6).toBool())
            abandoned << h;
    }
    q.finish();
    for (const HeldSlot &h : std::as_const(settledElsewhere)) {
        if (!m_db.prepare(q,
                          QStringLiteral("UPDATE slot_claims SET swept_at_ms = ? WHERE request_id = ? AND "
                                         "account_id = ? AND slot_index = ? AND owner_epoch = ?"),
                          error))
            return -1;
        Database::bindAll(q, {nowMs, h.requestId, h.accountId, h.slot, h.epoch});
        if (!m_db.exec(q, error))
            return -1;
        q.finish();
    }
    QSet<QString> booked;
    for (const HeldSlot &h : std::as_const(abandoned)) {
        // Once per request (two last claims can tie on time and epoch, on two accounts), fenced by the
        // request's settlements: a second sweeper (another replica) finds it settled and books nothing.
        if (booked.contains(h.requestId))
            continue;
        if (!m_db.prepare(q,
                          QStringLiteral("UPDATE slot_claims SET settlements = settlements + 1 WHERE request_id = ? "
                                         "AND account_id = ? AND slot_index = ? AND owner_epoch = ? AND "
                                         "settlements = 0 AND NOT EXISTS (SELECT 1 FROM slot_claims o WHERE "
                                         "o.request_id = ? AND o.settlements > 0)"),
                          error))
            return -1;
        Database::bindAll(q, {h.requestId, h.accountId, h.slot, h.epoch, h.requestId});
        if (!m_db.exec(q, error))
            return -1;
        if (q.numRowsAffected() != 1)
            continue;
        q.finish();
        booked.insert(h.requestId);
        if (!m_db.prepare(q,
                          QStringLiteral("INSERT INTO request_log (request_id, started_at_ms, route, account_id, "
                                         "status, error_code) SELECT request_id, started_at_ms, route, account_id, "
                                         "'failed', 'owner_lost' FROM slot_claims WHERE request_id = ? AND "
                                         "account_id = ? AND slot_index = ? AND owner_epoch = ? "
                                         "ON CONFLICT (request_id) DO NOTHING"),
                          error))
            return -1;
        Database::bindAll(q, {h.requestId, h.accountId, h.slot, h.epoch});
        if (!m_db.exec(q, error))
            return -1;
        q.finish();
    }
    return int(booked.size());
}

} // namespace sy
