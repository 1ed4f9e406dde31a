#include "ownership/OwnerSlotRepository.h"

#include "ownership/OwnerSlotRows.h"
#include "store/Database.h"
#include "store/SqlValues.h"
#include "util/Faults.h"

#include <QVariant>

namespace sy {

using namespace sql;

namespace {

void setError(QString *error, const QString &text)
{
    if (error)
        *error = text;
}

// Statuses whose durable row forbids any new claim, whatever a replica's snapshot says.
bool blocksClaims(const QString &status)
{
    return status == QLatin1String("paused") || status == QLatin1String("reauth_required") ||
           status == QLatin1String("deactivated");
}

} // namespace

OwnerSlotRepository::OwnerSlotRepository(Database &db) : m_db(db) {}

std::optional<ReplicaIdentity> OwnerSlotRepository::registerReplica(const QString &replicaId, qint64 nowMs,
                                                                    QString *error, std::optional<qint64> leaseMs)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q,
                      QStringLiteral("INSERT INTO replicas (replica_id, incarnation, started_at_ms, heartbeat_ms, "
                                     "alive_until_ms) VALUES (?, 1, ?, ?, ?) ON CONFLICT (replica_id) DO UPDATE SET "
                                     "incarnation = replicas.incarnation + 1, started_at_ms = excluded.started_at_ms, "
                                     "heartbeat_ms = excluded.heartbeat_ms, alive_until_ms = excluded.alive_until_ms, "
                                     "draining_since_ms = NULL, "
                                     "stopped_at_ms = NULL, gate_admitted = 0, gate_left = 0, gate_queued = 0, "
                                     "gate_overloaded = 0, cas_conflicts = 0, lease_reclaims = 0"),
                      error))
        return std::nullopt;
    q.addBindValue(replicaId);
    q.addBindValue(nowMs);
    q.addBindValue(nowMs);
    q.addBindValue(sql::nullable(leaseMs ? std::optional<qint64>(nowMs + *leaseMs) : std::nullopt));
    if (!m_db.exec(q, error))
        return std::nullopt;
    if (!m_db.prepare(q, QStringLiteral("SELECT incarnation FROM replicas WHERE replica_id = ?"), error))
        return std::nullopt;
    q.addBindValue(replicaId);
    if (!m_db.exec(q, error) || !q.next()) {
        setError(error, QStringLiteral("replica %1 was not registered").arg(replicaId));
        return std::nullopt;
    }
    return ReplicaIdentity{replicaId, q.value(0).toLongLong()};
}

bool OwnerSlotRepository::settleOrphan(const QString &accountId, int slot, qint64 epoch, const QString &kind,
                                       qint64 nowMs, QString *error)
{
    // The claim's turn cannot settle any more (its process died, or it lost the lease): book it once, here.
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q,
                      QStringLiteral("INSERT INTO request_log (request_id, started_at_ms, route, account_id, status, "
                                     "error_code) SELECT request_id, started_at_ms, route, account_id, 'failed', "
                                     "'owner_lost' FROM slot_claims WHERE account_id = ? AND slot_index = ? AND "
                                     "owner_epoch = ? AND released_at_ms IS NULL AND settlements = 0 "
                                     "ON CONFLICT (request_id) DO NOTHING"),
                      error))
        return false;
    q.addBindValue(accountId);
    q.addBindValue(slot);
    q.addBindValue(epoch);
    if (!m_db.exec(q, error))
        return false;
    if (!m_db.prepare(q,
                      QStringLiteral("UPDATE slot_claims SET released_at_ms = ?, release_kind = ?, "
                                     "settlements = settlements + 1 WHERE account_id = ? AND slot_index = ? AND "
                                     "owner_epoch = ? AND released_at_ms IS NULL AND settlements = 0"),
                      error))
        return false;
    q.addBindValue(nowMs);
    q.addBindValue(kind);
    q.addBindValue(accountId);
    q.addBindValue(slot);
    q.addBindValue(epoch);
    return m_db.exec(q, error);
}

bool OwnerSlotRepository::bumpReplicaCounter(const ReplicaIdentity &me, const char *column, int by, QString *error)
{
    if (by == 0)
        return true;
    QSqlQuery q = m_db.query();
    const QString col = QString::fromLatin1(column);
    if (!m_db.prepare(q, QStringLiteral("UPDATE replicas SET %1 = %1 + ? WHERE replica_id = ?").arg(col), error))
        return false;
    q.addBindValue(by);
    q.addBindValue(me.replicaId);
    return m_db.exec(q, error);
}

namespace {

// The claim's reads, shared with warmClaim() so that a warm-up prepares (and caches) the same statements
// (accountCheckSql() is public, below).
const QString &slotBeforeSql()
{
    static const QString sql = QStringLiteral("SELECT ") + slotrows::columns() +
                               QStringLiteral(" FROM owner_slots WHERE account_id = ? AND slot_index = ?");
    return sql;
}

} // namespace

const QString &OwnerSlotRepository::accountCheckSql()
{
    static const QString sql =
        QStringLiteral("SELECT status, cooldown_until_ms, version, last_selected_ms FROM accounts WHERE id = ?");
    return sql;
}

bool OwnerSlotRepository::warmClaim(const QString &accountId, QString *error)
{
    QSqlQuery q = m_db.query();
    const std::pair<const QString &, QVariantList> reads[] = {{accountCheckSql(), {accountId}},
                                                              {slotBeforeSql(), {accountId, 0}}};
    for (const auto &[sql, values] : reads) {
        if (!m_db.prepare(q, sql, error))
            return false;
        Database::bindAll(q, values);
        if (!m_db.exec(q, error))
            return false;
        while (q.next()) {
        }
        q.finish();
    }
    return true;
}

ClaimOutcome OwnerSlotRepository::claim(const ClaimAttempt &a, QString *error)
{
    ClaimOutcome out;
    auto fail = [&](const QString &why) {
        out.kind = ClaimOutcome::Kind::Error;
        out.reason = why;
        return out;
    };
    QSqlQuery q = m_db.query();
    // The durable account row, read inside the claim's transaction: the snapshot the router used may be stale.
    if (!m_db.prepare(q, accountCheckSql(), error))
        return fail(*error);
    Database::bindAll(q, {a.accountId});
    if (!m_db.exec(q, error))
        return fail(*error);
    if (!q.next()) {
        out.kind = ClaimOutcome::Kind::Ineligible;
        out.reason = QStringLiteral("removed");
        return out;
    }
    const QString status = q.value(0).toString();
    const std::optional<qint64> cooldownUntil = optInt64(q.value(1));
    out.durableVersion = q.value(2).toLongLong();
    // What a given-up claim puts back, and what the selection time's update (later in this transaction) follows.
    out.previousSelectedMs = optInt64(q.value(3));
    q.finish();
    if (!SY_FAULT("stale-route-acquire")) {
        if (blocksClaims(status)) {
            out.kind = ClaimOutcome::Kind::Ineligible;
            out.reason = status;
            return out;
        }
        if (cooldownUntil && *cooldownUntil > a.nowMs) {
            out.kind = ClaimOutcome::Kind::Ineligible;
            out.reason = QStringLiteral("cooldown");
            return out;
        }
    }
    // A continuation dispatches only on the account its anchor names.
    std::optional<QString> anchorAccount;
    if (!a.previousResponseId.isEmpty()) {
        if (!m_db.prepare(q, QStringLiteral("SELECT account_id FROM response_anchors WHERE response_id = ?"), error))
            return fail(*error);
        Database::bindAll(q, {a.previousResponseId});
        if (!m_db.exec(q, error))
            return fail(*error);
        if (q.next())
            anchorAccount = q.value(0).toString();
        q.finish();
        if (!SY_FAULT("cross-account-anchor") && anchorAccount != a.accountId) {
            out.kind = ClaimOutcome::Kind::Ineligible;
            // No row at all: a response never served here, or one whose anchor the retention deleted while the
            // turn's routing still had it from memory.
            out.reason = anchorAccount ? QStringLiteral("anchor_owner_mismatch") : QStringLiteral("anchor_unknown");
            return out;
        }
    }

    // Runs `sql`, whose two parameters are the slot's account and index.
    auto execOnSlot = [&](const QString &sql) {
        if (!m_db.prepare(q, sql, error))
            return false;
        Database::bindAll(q, {a.accountId, a.slot});
        return m_db.exec(q, error);
    };
    // The snapshot was stale: the caller gets the account's fresh rows and tries again.
    auto conflict = [&] {
        q.finish();
        out.kind = ClaimOutcome::Kind::Conflict;
        out.rows = slotsOf(a.accountId, error);
        if (!bumpReplicaCounter(a.replica, "cas_conflicts", 1, error))
            return fail(*error);
        return out;
    };
    // A slot's first claim creates its row at epoch 0. A snapshot that saw a later epoch saw the row: epochs
    // only grow, so the row is there unless its account was removed (and perhaps added again) since, and then the
    // compare-and-set below cannot match anyway. Skipping the insert saves one statement on nearly every claim.
    if (a.expectedEpoch == 0 &&
        !execOnSlot(QStringLiteral("INSERT INTO owner_slots (account_id, slot_index, owner_epoch) VALUES (?, ?, 0) "
                                   "ON CONFLICT (account_id, slot_index) DO NOTHING")))
        return fail(*error);
    const qint64 newEpoch = a.expectedEpoch + 1;
    const QString set = QStringLiteral("UPDATE owner_slots SET owner_epoch = ?, owner_replica = ?, "
                                       "owner_incarnation = ?, owner_request_id = ?, lease_expires_ms = ? "
                                       "WHERE account_id = ? AND slot_index = ?");
    // The compare-and-set of nearly every claim: from the epoch the snapshot saw, on a free slot. Its previous
    // row needs no reading then (nothing is reclaimed). No row changed (the slot is held, perhaps by an expired
    // lease, or the epoch moved, or the row is gone): the full compare-and-set below decides, on the same row.
    if (!SY_FAULT("non-atomic-claim")) {
        static const QString freeCas = set + QStringLiteral(" AND owner_epoch = ? AND owner_replica IS NULL");
        if (!m_db.prepare(q, freeCas, error))
            return fail(*error);
        Database::bindAll(q, {newEpoch, a.replica.replicaId, a.replica.incarnation, a.requestId, a.nowMs + a.leaseMs,
                              a.accountId, a.slot, a.expectedEpoch});
        if (!m_db.exec(q, error))
            return fail(*error);
        const bool claimedFree = q.numRowsAffected() == 1;
        q.finish();
        if (claimedFree)
            return recordClaim(q, a, status, cooldownUntil, anchorAccount, std::move(out), error);
    }

    // What the row held before: an owner whose lease expired is being reclaimed by this claim.
    if (!execOnSlot(slotBeforeSql()))
        return fail(*error);
    if (!q.next()) {
        if (a.expectedEpoch == 0)
            return fail(QStringLiteral("slot row vanished"));
        return conflict(); // the snapshot's row is gone: no rows come back, and the retry from epoch 0 creates it
    }
    const SlotState before = slotrows::from(q);
    q.finish();

    // The compare-and-set: only from the epoch the snapshot saw, and only a free slot or an expired lease.
    const QString cas = SY_FAULT("non-atomic-claim")
                            ? set
                            : set + QStringLiteral(" AND owner_epoch = ? AND (owner_replica IS NULL OR "
                                                   "lease_expires_ms < ?)");
    if (!m_db.prepare(q, cas, error))
        return fail(*error);
    if (SY_FAULT("non-atomic-claim"))
        Database::bindAll(q, {newEpoch, a.replica.replicaId, a.replica.incarnation, a.requestId, a.nowMs + a.leaseMs,
                              a.accountId, a.slot});
    else
        Database::bindAll(q, {newEpoch, a.replica.replicaId, a.replica.incarnation, a.requestId, a.nowMs + a.leaseMs,
                              a.accountId, a.slot, a.expectedEpoch, a.nowMs});
    if (!m_db.exec(q, error))
        return fail(*error);
    if (q.numRowsAffected() != 1)
        return conflict();
    q.finish();
    if (!before.ownerReplica.isEmpty()) {
        // The previous owner's lease had expired: its turn is over as far as the protocol is concerned. Unless
        // that claim is one this request gave up (its release never committed): closed first, it is not
        // settled here, and this claim settles the request.
        out.reclaimedExpired = true;
        if (!closeGivenUpClaims(q, a, error))
            return fail(*error);
        if (!settleOrphan(before.accountId, before.slot, before.epoch, QStringLiteral("reclaimed_expired"), a.nowMs,
                          error) ||
            !bumpReplicaCounter(a.replica, "lease_reclaims", 1, error))
            return fail(*error);
    }
    return recordClaim(q, a, status, cooldownUntil, anchorAccount, std::move(out), error);
}

ClaimOutcome OwnerSlotRepository::recordClaim(QSqlQuery &q, const ClaimAttempt &a, const QString &status,
                                              const std::optional<qint64> &cooldownUntil,
                                              const std::optional<QString> &anchorAccount, ClaimOutcome out,
                                              QString *error)
{
    auto fail = [&](const QString &why) {
        out.kind = ClaimOutcome::Kind::Error;
        out.reason = why;
        return out;
    };
    const qint64 newEpoch = a.expectedEpoch + 1;
    // Before this claim's own row, which must stay open.
    if (!closeGivenUpClaims(q, a, error))
        return fail(*error);
    if (!m_db.prepare(q,
                      QStringLiteral("INSERT INTO slot_claims (request_id, account_id, slot_index, owner_epoch, "
                                     "replica_id, incarnation, route, started_at_ms, claimed_at_ms, durable_status, "
                                     "durable_cooldown_until_ms, account_version, previous_response_id, "
                                     "anchor_account_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
                      error))
        return fail(*error);
    Database::bindAll(q, {a.requestId, a.accountId, a.slot, newEpoch, a.replica.replicaId, a.replica.incarnation,
                          a.route, a.startedAtMs, a.nowMs, status, nullable(cooldownUntil), out.durableVersion,
                          nullableText(a.previousResponseId), nullable(anchorAccount)});
    if (!m_db.exec(q, error))
        return fail(*error);
    out.kind = ClaimOutcome::Kind::Claimed;
    out.held = HeldSlot{a.requestId, a.accountId, a.slot, newEpoch};
    // The row this transaction wrote, as it now stands. Not the account's other rows: reading all of them
    // (up to slot_count) on every claim costs the store thread and the proxy thread O(slots) per turn, and
    // the snapshot needs no help here: it is refreshed every second, and a stale row only costs a Conflict
    // (which does return every row) because the compare-and-set above is the guard.
    SlotState mine;
    mine.accountId = a.accountId;
    mine.slot = a.slot;
    mine.epoch = newEpoch;
    mine.ownerReplica = a.replica.replicaId;
    mine.ownerIncarnation = a.replica.incarnation;
    mine.ownerRequestId = a.requestId;
    mine.leaseExpiresMs = a.nowMs + a.leaseMs;
    out.rows = {mine};
    return out;
}

bool OwnerSlotRepository::renew(const ReplicaIdentity &me, const QList<HeldSlot> &held, qint64 nowMs,
                                qint64 leaseMs, QList<HeldSlot> *lost, QString *error)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q,
                      QStringLiteral("UPDATE owner_slots SET lease_expires_ms = ? WHERE account_id = ? AND "
                                     "slot_index = ? AND owner_epoch = ? AND owner_replica = ? AND "
                                     "owner_incarnation = ? AND lease_expires_ms >= ?"),
                      error))
        return false;
    for (const HeldSlot &h : held) {
        q.addBindValue(nowMs + leaseMs);
        q.addBindValue(h.accountId);
        q.addBindValue(h.slot);
        q.addBindValue(h.epoch);
        q.addBindValue(me.replicaId);
        q.addBindValue(me.incarnation);
        q.addBindValue(nowMs);
        if (!m_db.exec(q, error))
            return false;
        if (q.numRowsAffected() != 1 && lost)
            lost->append(h);
    }
    // alive_until_ms: until when this incarnation vouches for itself, by its own lease TTL (another replica's
    // may differ), read by settleAbandonedFailovers.
    if (!m_db.prepare(
            q, QStringLiteral("UPDATE replicas SET heartbeat_ms = ?, alive_until_ms = ? WHERE replica_id = ?"), error))
        return false;
    Database::bindAll(q, {nowMs, nowMs + leaseMs, me.replicaId});
    return m_db.exec(q, error);
}

bool OwnerSlotRepository::stillOwned(const ReplicaIdentity &me, const HeldSlot &held, qint64 nowMs, QString *error)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q,
                      QStringLiteral("SELECT count(*) FROM owner_slots WHERE account_id = ? AND slot_index = ? AND "
                                     "owner_epoch = ? AND owner_replica = ? AND owner_incarnation = ? AND "
                                     "lease_expires_ms >= ?"),
                      error))
        return false;
    q.addBindValue(held.accountId);
    q.addBindValue(held.slot);
    q.addBindValue(held.epoch);
    q.addBindValue(me.replicaId);
    q.addBindValue(me.incarnation);
    q.addBindValue(nowMs);
    return m_db.exec(q, error) && q.next() && q.value(0).toInt() == 1;
}

QList<SlotState> OwnerSlotRepository::allSlots(QString *error)
{
    QList<SlotState> out;
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q, QStringLiteral("SELECT ") + slotrows::columns() +
                             QStringLiteral(" FROM owner_slots ORDER BY account_id, slot_index"),
                      error) ||
        !m_db.exec(q, error))
        return out;
    while (q.next())
        out << slotrows::from(q);
    return out;
}

QList<SlotState> OwnerSlotRepository::slotsOf(const QString &accountId, QString *error)
{
    QList<SlotState> out;
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q, QStringLiteral("SELECT ") + slotrows::columns() +
                             QStringLiteral(" FROM owner_slots WHERE account_id = ? ORDER BY slot_index"),
                      error))
        return out;
    q.addBindValue(accountId);
    if (!m_db.exec(q, error))
        return out;
    while (q.next())
        out << slotrows::from(q);
    return out;
}

bool OwnerSlotRepository::noteDraining(const ReplicaIdentity &me, qint64 nowMs, QString *error)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q, QStringLiteral("UPDATE replicas SET draining_since_ms = ? WHERE replica_id = ?"), error))
        return false;
    q.addBindValue(nowMs);
    q.addBindValue(me.replicaId);
    return m_db.exec(q, error);
}

bool OwnerSlotRepository::noteStopped(const ReplicaIdentity &me, qint64 nowMs, QString *error)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q, QStringLiteral("UPDATE replicas SET stopped_at_ms = ? WHERE replica_id = ?"), error))
        return false;
    q.addBindValue(nowMs);
    q.addBindValue(me.replicaId);
    return m_db.exec(q, error);
}

bool OwnerSlotRepository::saveGateBooks(const ReplicaIdentity &me, qint64 admitted, qint64 left, qint64 queued,
                                        qint64 overloaded, qint64 nowMs, QString *error)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q,
                      QStringLiteral("UPDATE replicas SET gate_admitted = ?, gate_left = ?, gate_queued = ?, "
                                     "gate_overloaded = ?, heartbeat_ms = ? WHERE replica_id = ?"),
                      error))
        return false;
    q.addBindValue(admitted);
    q.addBindValue(left);
    q.addBindValue(queued);
    q.addBindValue(overloaded);
    q.addBindValue(nowMs);
    q.addBindValue(me.replicaId);
    return m_db.exec(q, error);
}

} // namespace sy
