#include "ownership/OwnerSlotRepository.h"

#include "ownership/OwnerSlotRows.h"
#include "store/Database.h"

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

} // namespace sy
