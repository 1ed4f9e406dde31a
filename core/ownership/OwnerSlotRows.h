#pragma once

#include "ownership/OwnershipTypes.h"
#include "store/SqlValues.h"

#include <QSqlQuery>
#include <QVariant>

// Reading owner_slots rows, shared by the claim and the reclaim halves of OwnerSlotRepository.
namespace sy::slotrows {

inline const QString &columns()
{
    static const QString c = QStringLiteral(
        "account_id, slot_index, owner_epoch, owner_replica, owner_incarnation, owner_request_id, lease_expires_ms");
    return c;
}

inline SlotState from(const QSqlQuery &q)
{
    SlotState s;
    s.accountId = q.value(0).toString();
    s.slot = q.value(1).toInt();
    s.epoch = q.value(2).toLongLong();
    s.ownerReplica = q.value(3).toString();
    s.ownerIncarnation = q.value(4).toLongLong();
    s.ownerRequestId = q.value(5).toString();
    s.leaseExpiresMs = sql::optInt64(q.value(6));
    return s;
}

} // namespace sy::slotrows
