#include "lib/DurableStateChecker.h"

#include <QAtomicInt>
#include <QDateTime>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSet>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QUrl>
#include <QVariant>
#include <algorithm>

namespace sy::test {

namespace {

qint64 orMinus(const QVariant &v)
{
    return v.isNull() ? -1 : v.toLongLong();
}

QString slotKey(const QString &account, int slot)
{
    return account + QLatin1Char('#') + QString::number(slot);
}

QString ms(qint64 v)
{
    return v < 0 ? QStringLiteral("null") : QString::number(v);
}

// A private connection per checker run, removed when it goes out of scope.
class Connection
{
public:
    explicit Connection(const QString &database)
    {
        static QAtomicInt counter;
        m_name = QStringLiteral("durable-state-checker-%1").arg(counter.fetchAndAddRelaxed(1));
        if (database.startsWith(QLatin1String("postgres"))) {
            const QUrl url(database);
            m_db = QSqlDatabase::addDatabase(QStringLiteral("QPSQL"), m_name);
            m_db.setHostName(url.host());
            m_db.setPort(url.port(5432));
            m_db.setUserName(url.userName());
            m_db.setPassword(url.password());
            m_db.setDatabaseName(url.path().mid(1));
            m_postgres = true;
        } else {
            QString path = database;
            if (path.startsWith(QLatin1String("sqlite://")))
                path = path.mid(9);
            m_db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), m_name);
            m_db.setDatabaseName(path);
            m_db.setConnectOptions(QStringLiteral("QSQLITE_OPEN_READONLY;QSQLITE_BUSY_TIMEOUT=10000"));
        }
    }
    ~Connection()
    {
        if (m_db.isOpen())
            m_db.close();
        m_db = QSqlDatabase();
        QSqlDatabase::removeDatabase(m_name);
    }
    QSqlDatabase &db() { return m_db; }
    bool postgres() const { return m_postgres; }

private:
    QString m_name;
    QSqlDatabase m_db;
    bool m_postgres = false;
};

} // namespace

QString CheckerStats::summary() const
{
    return QStringLiteral("turns=%1 requests_with_claims=%2 claims=%3 settlements=%4 failover_releases=%5 "
                          "reclaimed_expired=%6 reclaimed_restart=%7 cas_conflicts=%8 lease_reclaims=%9 kills=%10 "
                          "upstream_turns=%11 replicas=%12 (stopped %13)")
        .arg(turns)
        .arg(requestsWithClaims)
        .arg(claims)
        .arg(settlements)
        .arg(failoverReleases)
        .arg(reclaimedExpired)
        .arg(reclaimedRestart)
        .arg(casConflicts)
        .arg(leaseReclaims)
        .arg(kills)
        .arg(upstreamTurns)
        .arg(replicas)
        .arg(stoppedReplicas);
}

DurableStateChecker::DurableStateChecker(const QString &database) : m_database(database) {}

void DurableStateChecker::add(const QString &invariant, const QString &detail)
{
    m_violations.append({invariant, detail});
}

QList<Violation> DurableStateChecker::violationsOf(const QString &invariant) const
{
    QList<Violation> out;
    for (const Violation &v : m_violations) {
        if (v.invariant == invariant)
            out.append(v);
    }
    return out;
}

QStringList DurableStateChecker::violatedInvariants() const
{
    QStringList out;
    for (const Violation &v : m_violations) {
        if (!out.contains(v.invariant))
            out.append(v.invariant);
    }
    out.sort();
    return out;
}

QString DurableStateChecker::report(int perInvariant) const
{
    QString out = QStringLiteral("durable state: %1\n").arg(m_stats.summary());
    if (m_violations.isEmpty())
        return out + QStringLiteral("no violations\n");
    for (const QString &inv : violatedInvariants()) {
        const QList<Violation> list = violationsOf(inv);
        out += QStringLiteral("%1: %2 violation(s)\n").arg(inv).arg(list.size());
        for (int i = 0; i < list.size() && i < perInvariant; ++i)
            out += QStringLiteral("  - %1\n").arg(list.at(i).detail);
    }
    return out;
}

bool DurableStateChecker::quiescent() const
{
    if (m_quiescent >= 0)
        return m_quiescent == 1;
    if (m_replicas.isEmpty())
        return false;
    for (const ReplicaRow &r : m_replicas) {
        if (r.stoppedAtMs < 0)
            return false;
    }
    return true;
}

bool DurableStateChecker::load(QString *error)
{
    Connection conn(m_database);
    QSqlDatabase &db = conn.db();
    if (!db.open()) {
        *error = QStringLiteral("cannot open %1: %2").arg(m_database, db.lastError().text());
        return false;
    }
    // One consistent snapshot of every table.
    if (!db.transaction()) {
        *error = QStringLiteral("cannot begin a read transaction: %1").arg(db.lastError().text());
        return false;
    }
    QSqlQuery q(db);
    auto run = [&](const QString &sql) {
        if (!q.exec(sql)) {
            *error = QStringLiteral("%1: %2").arg(sql, q.lastError().text());
            return false;
        }
        return true;
    };
    if (conn.postgres() && !run(QStringLiteral("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")))
        return false;

    if (!run(QStringLiteral("SELECT request_id, account_id, slot_index, owner_epoch, replica_id, incarnation, route, "
                            "started_at_ms, claimed_at_ms, durable_status, durable_cooldown_until_ms, "
                            "account_version, previous_response_id, anchor_account_id, released_at_ms, "
                            "release_kind, settlements, response_id FROM slot_claims")))
        return false;
    while (q.next()) {
        Claim c;
        c.requestId = q.value(0).toString();
        c.accountId = q.value(1).toString();
        c.slot = q.value(2).toInt();
        c.epoch = q.value(3).toLongLong();
        c.replicaId = q.value(4).toString();
        c.incarnation = q.value(5).toLongLong();
        c.route = q.value(6).toString();
        c.startedAtMs = q.value(7).toLongLong();
        c.claimedAtMs = q.value(8).toLongLong();
        c.durableStatus = q.value(9).toString();
        c.cooldownUntilMs = orMinus(q.value(10));
        c.accountVersion = q.value(11).toLongLong();
        c.previousResponseId = q.value(12).toString();
        c.anchorAccountId = q.value(13).toString();
        c.releasedAtMs = orMinus(q.value(14));
        c.releaseKind = q.value(15).toString();
        c.settlements = q.value(16).toInt();
        c.responseId = q.value(17).toString();
        m_claimsByRequest[c.requestId].append(int(m_claims.size()));
        m_claims.append(c);
    }
    if (!run(QStringLiteral("SELECT account_id, slot_index, owner_epoch, owner_replica, owner_incarnation, "
                            "owner_request_id, lease_expires_ms FROM owner_slots")))
        return false;
    while (q.next()) {
        SlotRow s;
        s.accountId = q.value(0).toString();
        s.slot = q.value(1).toInt();
        s.epoch = q.value(2).toLongLong();
        s.ownerReplica = q.value(3).toString();
        s.ownerIncarnation = q.value(4).toLongLong();
        s.ownerRequestId = q.value(5).toString();
        s.leaseExpiresMs = orMinus(q.value(6));
        m_slots.append(s);
    }
    if (!run(QStringLiteral("SELECT replica_id, incarnation, started_at_ms, draining_since_ms, stopped_at_ms, "
                            "gate_admitted, gate_left, gate_queued, gate_overloaded, cas_conflicts, lease_reclaims "
                            "FROM replicas")))
        return false;
    while (q.next()) {
        ReplicaRow r;
        r.replicaId = q.value(0).toString();
        r.incarnation = q.value(1).toLongLong();
        r.startedAtMs = q.value(2).toLongLong();
        r.drainingSinceMs = orMinus(q.value(3));
        r.stoppedAtMs = orMinus(q.value(4));
        r.gateAdmitted = q.value(5).toLongLong();
        r.gateLeft = q.value(6).toLongLong();
        r.gateQueued = q.value(7).toLongLong();
        r.gateOverloaded = q.value(8).toLongLong();
        r.casConflicts = q.value(9).toLongLong();
        r.leaseReclaims = q.value(10).toLongLong();
        m_replicas.append(r);
    }
    if (!run(QStringLiteral("SELECT request_id, status, kill_stage, error_code, account_id, upstream_request_id, "
                            "started_at_ms, latency_queue_ms, latency_connect_ms, latency_first_event_ms, "
                            "latency_total_ms, attempts_json FROM request_log")))
        return false;
    while (q.next()) {
        LogRow l;
        l.requestId = q.value(0).toString();
        l.status = q.value(1).toString();
        l.killStage = q.value(2).toString();
        l.errorCode = q.value(3).toString();
        l.accountId = q.value(4).toString();
        l.upstreamRequestId = q.value(5).toString();
        l.startedAtMs = q.value(6).toLongLong();
        l.queueMs = orMinus(q.value(7));
        l.connectMs = orMinus(q.value(8));
        l.firstEventMs = orMinus(q.value(9));
        l.totalMs = orMinus(q.value(10));
        l.attempts = int(QJsonDocument::fromJson(q.value(11).toString().toUtf8()).array().size());
        m_log.insert(l.requestId, l);
    }
    if (!run(QStringLiteral("SELECT response_id, account_id FROM response_anchors")))
        return false;
    while (q.next())
        m_anchors.insert(q.value(0).toString(), q.value(1).toString());
    if (!run(QStringLiteral("SELECT id, chatgpt_account_id FROM accounts")))
        return false;
    while (q.next())
        m_accountByChatgpt.insert(q.value(1).toString(), q.value(0).toString());
    q.finish();
    db.commit();
    return true;
}

bool DurableStateChecker::run(QString *error)
{
    m_claims.clear();
    m_claimsByRequest.clear();
    m_slots.clear();
    m_replicas.clear();
    m_log.clear();
    m_anchors.clear();
    m_accountByChatgpt.clear();
    m_violations.clear();
    m_stats = {};
    QString e;
    if (!load(&e)) {
        if (error)
            *error = e;
        return false;
    }
    checkSingleOwner();
    checkSettledOnce();
    checkOwnerReleased();
    checkFreshSnapshots();
    checkAnchorOwnership();
    checkAnchorCurrent();
    checkTerminalIsolation();
    checkGateAccounting();
    checkShutdownDrain();
    checkBudgets();
    computeStats();
    return true;
}

const DurableStateChecker::Claim *DurableStateChecker::claimAt(const QString &requestId, qint64 t) const
{
    const Claim *best = nullptr;
    for (int i : m_claimsByRequest.value(requestId)) {
        const Claim &c = m_claims.at(i);
        if (c.claimedAtMs <= t && (!best || c.claimedAtMs > best->claimedAtMs ||
                                   (c.claimedAtMs == best->claimedAtMs && c.epoch > best->epoch)))
            best = &c;
    }
    return best;
}

// Inv5SingleOwnerCAS: one claim per (account, slot, epoch); epochs grow by one with every claim and in the
// order of the claims; a claim starts only after the previous owner of the slot released it, or after that
// owner's lease had expired (a reclaim); the slot row is never behind its ledger.
void DurableStateChecker::checkSingleOwner()
{
    const QString inv = QStringLiteral("Inv5SingleOwnerCAS");
    QHash<QString, QList<int>> bySlot;
    for (int i = 0; i < m_claims.size(); ++i)
        bySlot[slotKey(m_claims.at(i).accountId, m_claims.at(i).slot)].append(i);
    for (auto it = bySlot.begin(); it != bySlot.end(); ++it) {
        QList<int> &list = it.value();
        std::sort(list.begin(), list.end(), [this](int a, int b) {
            const Claim &x = m_claims.at(a), &y = m_claims.at(b);
            return x.epoch != y.epoch ? x.epoch < y.epoch : x.claimedAtMs < y.claimedAtMs;
        });
        for (int k = 1; k < list.size(); ++k) {
            const Claim &prev = m_claims.at(list.at(k - 1));
            const Claim &cur = m_claims.at(list.at(k));
            if (cur.epoch == prev.epoch) {
                add(inv, QStringLiteral("slot %1 epoch %2 was claimed twice: by %3 (replica %4, at %5) and by %6 "
                                        "(replica %7, at %8)")
                             .arg(it.key())
                             .arg(cur.epoch)
                             .arg(prev.requestId, prev.replicaId, ms(prev.claimedAtMs), cur.requestId, cur.replicaId,
                                  ms(cur.claimedAtMs)));
                continue;
            }
            if (cur.epoch != prev.epoch + 1)
                add(inv, QStringLiteral("slot %1 epoch jumped from %2 to %3 (a claim without a ledger row)")
                             .arg(it.key())
                             .arg(prev.epoch)
                             .arg(cur.epoch));
            if (cur.claimedAtMs < prev.claimedAtMs)
                add(inv, QStringLiteral("slot %1 epoch %2 (%3) was claimed at %4, before epoch %5 (%6) at %7")
                             .arg(it.key())
                             .arg(cur.epoch)
                             .arg(cur.requestId, ms(cur.claimedAtMs))
                             .arg(prev.epoch)
                             .arg(prev.requestId, ms(prev.claimedAtMs)));
            if (!prev.reclaimed()) {
                if (!prev.released())
                    add(inv, QStringLiteral("slot %1: %2 still holds epoch %3 (never released) but %4 claimed "
                                            "epoch %5 at %6")
                                 .arg(it.key(), prev.requestId)
                                 .arg(prev.epoch)
                                 .arg(cur.requestId)
                                 .arg(cur.epoch)
                                 .arg(ms(cur.claimedAtMs)));
                else if (cur.claimedAtMs + m_inFlightSlackMs < prev.releasedAtMs)
                    add(inv, QStringLiteral("slot %1: %2 claimed epoch %3 at %4 while %5 held epoch %6 until %7 "
                                            "(two owners for %8 ms)")
                                 .arg(it.key(), cur.requestId)
                                 .arg(cur.epoch)
                                 .arg(ms(cur.claimedAtMs), prev.requestId)
                                 .arg(prev.epoch)
                                 .arg(ms(prev.releasedAtMs))
                                 .arg(prev.releasedAtMs - cur.claimedAtMs));
            }
        }
        for (int i : list) {
            const Claim &c = m_claims.at(i);
            if (c.releaseKind == QLatin1String("reclaimed_expired") && m_leaseTtlMs > 0 &&
                c.releasedAtMs < c.claimedAtMs + m_leaseTtlMs)
                add(inv, QStringLiteral("slot %1: %2 (epoch %3, replica %4) was taken over as expired %5 ms after "
                                        "its claim, before its lease of %6 ms could expire: a second owner")
                             .arg(it.key(), c.requestId)
                             .arg(c.epoch)
                             .arg(c.replicaId)
                             .arg(c.releasedAtMs - c.claimedAtMs)
                             .arg(m_leaseTtlMs));
        }
    }
    for (const SlotRow &s : m_slots) {
        const QList<int> list = bySlot.value(slotKey(s.accountId, s.slot));
        qint64 maxEpoch = 0;
        const Claim *owner = nullptr;
        for (int i : list) {
            maxEpoch = qMax(maxEpoch, m_claims.at(i).epoch);
            if (m_claims.at(i).epoch == s.epoch && m_claims.at(i).requestId == s.ownerRequestId)
                owner = &m_claims.at(i);
        }
        if (s.epoch < maxEpoch)
            add(inv, QStringLiteral("slot %1 row is at epoch %2 but the ledger has a claim at epoch %3 (the "
                                    "epoch went backwards)")
                         .arg(slotKey(s.accountId, s.slot))
                         .arg(s.epoch)
                         .arg(maxEpoch));
        if (!s.ownerReplica.isEmpty() && (!owner || owner->replicaId != s.ownerReplica ||
                                          owner->incarnation != s.ownerIncarnation))
            add(inv, QStringLiteral("slot %1 row names owner %2/%3 (request %4) at epoch %5, which no claim of "
                                    "the ledger matches")
                         .arg(slotKey(s.accountId, s.slot), s.ownerReplica)
                         .arg(s.ownerIncarnation)
                         .arg(s.ownerRequestId)
                         .arg(s.epoch));
    }
}

// Inv3ReservationSettledExactlyOnce: across a request's claims exactly one settlement (its turn's or a
// reclaimer's), each settled claim released, one request_log row, and nothing left open once all stopped.
void DurableStateChecker::checkSettledOnce()
{
    const QString inv = QStringLiteral("Inv3ReservationSettledExactlyOnce");
    const bool done = quiescent();
    for (auto it = m_claimsByRequest.cbegin(); it != m_claimsByRequest.cend(); ++it) {
        int sum = 0;
        QStringList kinds;
        for (int i : it.value()) {
            const Claim &c = m_claims.at(i);
            sum += c.settlements;
            kinds << QStringLiteral("%1#%2@%3:%4x%5%6")
                         .arg(c.accountId)
                         .arg(c.slot)
                         .arg(c.epoch)
                         .arg(c.releaseKind.isEmpty() ? QStringLiteral("open") : c.releaseKind)
                         .arg(c.settlements)
                         .arg(c.previousResponseId.isEmpty() ? QString()
                                                             : QStringLiteral(" continuing ") + c.previousResponseId);
            if (c.settlements > 0 && !c.released())
                add(inv, QStringLiteral("%1: claim epoch %2 is settled but its slot was never released")
                             .arg(it.key())
                             .arg(c.epoch));
            if (done && !c.released())
                add(inv, QStringLiteral("%1: claim %2#%3 epoch %4 of replica %5/%6 is still open after every "
                                        "replica stopped")
                             .arg(it.key(), c.accountId)
                             .arg(c.slot)
                             .arg(c.epoch)
                             .arg(c.replicaId)
                             .arg(c.incarnation));
        }
        const LogRow log = m_log.value(it.key());
        const QString route = m_claims.at(it.value().constFirst()).route;
        if (sum > 1)
            add(inv, QStringLiteral("%1 (%2) was settled %3 times (claims %4; request_log status %5)")
                         .arg(it.key(), route)
                         .arg(sum)
                         .arg(kinds.join(QStringLiteral(", ")), log.status));
        else if (sum == 0 && (done || m_log.contains(it.key())))
            add(inv, QStringLiteral("%1 (%2) was never settled (claims %3; request_log status %4 %5)")
                         .arg(it.key(), route, kinds.join(QStringLiteral(", ")),
                              log.status.isEmpty() ? QStringLiteral("none") : log.status, log.errorCode));
        if (sum >= 1 && !m_log.contains(it.key()))
            add(inv, QStringLiteral("%1 is settled but has no request_log row").arg(it.key()));
        else if (done && !m_log.contains(it.key()))
            add(inv, QStringLiteral("%1 has claims but no request_log row after every replica stopped").arg(it.key()));
    }
}

// Inv9TerminalOwnerReleased: a slot row never stays owned by a request whose claim ended, and once every
// replica stopped no slot is held (nor long after its lease expired while replicas run).
void DurableStateChecker::checkOwnerReleased()
{
    const QString inv = QStringLiteral("Inv9TerminalOwnerReleased");
    const bool done = quiescent();
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    for (const SlotRow &s : m_slots) {
        if (s.ownerReplica.isEmpty())
            continue;
        const QString key = slotKey(s.accountId, s.slot);
        for (int i : m_claimsByRequest.value(s.ownerRequestId)) {
            const Claim &c = m_claims.at(i);
            if (c.accountId == s.accountId && c.slot == s.slot && c.epoch == s.epoch && c.released())
                add(inv, QStringLiteral("slot %1 (epoch %2) is still owned by %3 of replica %4, whose claim ended "
                                        "(%5) at %6")
                             .arg(key)
                             .arg(s.epoch)
                             .arg(s.ownerRequestId, s.ownerReplica, c.releaseKind, ms(c.releasedAtMs)));
        }
        if (done)
            add(inv, QStringLiteral("slot %1 (epoch %2) is still held by %3/%4 (request %5, lease until %6) after "
                                    "every replica stopped")
                         .arg(key)
                         .arg(s.epoch)
                         .arg(s.ownerReplica)
                         .arg(s.ownerIncarnation)
                         .arg(s.ownerRequestId, ms(s.leaseExpiresMs)));
        else if (m_leaseTtlMs > 0 && s.leaseExpiresMs >= 0 &&
                 s.leaseExpiresMs + qMax<qint64>(m_leaseTtlMs, 2000) + m_budgets.slackMs < now)
            add(inv, QStringLiteral("slot %1 (epoch %2) is still held by %3 %4 ms after its lease expired")
                         .arg(key)
                         .arg(s.epoch)
                         .arg(s.ownerReplica)
                         .arg(now - s.leaseExpiresMs));
    }
}

// Inv4FreshSnapshots: the durable account row a claim saw allowed it (not paused, no reauth, not
// deactivated, not cooling down).
void DurableStateChecker::checkFreshSnapshots()
{
    const QString inv = QStringLiteral("Inv4FreshSnapshots");
    static const QStringList blocking{QStringLiteral("paused"), QStringLiteral("reauth_required"),
                                      QStringLiteral("deactivated")};
    for (const Claim &c : m_claims) {
        if (blocking.contains(c.durableStatus))
            add(inv, QStringLiteral("%1 claimed %2#%3 epoch %4 on replica %5 although the account's durable row "
                                    "said %6 (version %7)")
                         .arg(c.requestId, c.accountId)
                         .arg(c.slot)
                         .arg(c.epoch)
                         .arg(c.replicaId, c.durableStatus)
                         .arg(c.accountVersion));
        else if (c.cooldownUntilMs > c.claimedAtMs)
            add(inv, QStringLiteral("%1 claimed %2#%3 at %4 although the account cools down until %5")
                         .arg(c.requestId, c.accountId)
                         .arg(c.slot)
                         .arg(ms(c.claimedAtMs), ms(c.cooldownUntilMs)));
    }
}

// Inv10AnchorAccountOwnership: a continuation dispatches only on the account that owns its anchor.
void DurableStateChecker::checkAnchorOwnership()
{
    const QString inv = QStringLiteral("Inv10AnchorAccountOwnership");
    for (const Claim &c : m_claims) {
        if (c.previousResponseId.isEmpty())
            continue;
        if (c.anchorAccountId.isEmpty())
            add(inv, QStringLiteral("%1 claimed %2 for a continuation of %3 whose owner is unknown")
                         .arg(c.requestId, c.accountId, c.previousResponseId));
        else if (c.anchorAccountId != c.accountId)
            add(inv, QStringLiteral("%1 claimed %2 for a continuation of %3, which belongs to %4")
                         .arg(c.requestId, c.accountId, c.previousResponseId, c.anchorAccountId));
        else if (m_anchors.contains(c.previousResponseId) && m_anchors.value(c.previousResponseId) != c.accountId)
            add(inv, QStringLiteral("%1 claimed %2 for a continuation of %3, which response_anchors gives to %4")
                         .arg(c.requestId, c.accountId, c.previousResponseId, m_anchors.value(c.previousResponseId)));
    }
    // The upstream's view: which account produced the anchor, which account was asked to continue it.
    QHash<QString, QString> producer; // response id -> chatgpt account id
    for (const QJsonValue &v : m_upstream) {
        const QJsonObject e = v.toObject();
        if (!e.value(QLatin1String("response_id")).toString().isEmpty())
            producer.insert(e.value(QLatin1String("response_id")).toString(),
                            e.value(QLatin1String("chatgpt_account_id")).toString());
    }
    for (const QJsonValue &v : m_upstream) {
        const QJsonObject e = v.toObject();
        const QString previous =
            e.value(QLatin1String("body")).toObject().value(QLatin1String("previous_response_id")).toString();
        if (previous.isEmpty() || !producer.contains(previous))
            continue;
        const QString asked = e.value(QLatin1String("chatgpt_account_id")).toString();
        if (producer.value(previous) != asked)
            add(inv, QStringLiteral("%1 reached the upstream on account %2 (%3) with previous_response_id %4, "
                                    "produced by account %5 (%6): a foreign anchor was dispatched")
                         .arg(e.value(QLatin1String("x_request_id")).toString(), m_accountByChatgpt.value(asked),
                              asked, previous, m_accountByChatgpt.value(producer.value(previous)),
                              producer.value(previous)));
    }
}

// Inv1AnchorCurrent: a turn acts as owner (dispatches upstream, forwards the upstream's output, completes)
// only while its claim's epoch is current.
void DurableStateChecker::checkAnchorCurrent()
{
    const QString inv = QStringLiteral("Inv1AnchorCurrent");
    for (const QJsonValue &v : m_upstream) {
        const QJsonObject e = v.toObject();
        if (!e.value(QLatin1String("path")).toString().endsWith(QLatin1String("/codex/responses")))
            continue;
        const QString requestId = e.value(QLatin1String("x_request_id")).toString();
        const qint64 t = qint64(e.value(QLatin1String("received_at_ms")).toDouble());
        if (requestId.isEmpty())
            continue;
        if (!m_claimsByRequest.contains(requestId)) {
            add(inv, QStringLiteral("%1 reached the upstream at %2 without ever claiming a slot").arg(requestId, ms(t)));
            continue;
        }
        const Claim *c = claimAt(requestId, t);
        if (!c) {
            add(inv, QStringLiteral("%1 reached the upstream at %2, before its first claim").arg(requestId, ms(t)));
            continue;
        }
        // A request already on the wire when its own turn ended may arrive a little later; a dispatch after a
        // reclaim is the stale-epoch case this invariant is about.
        const qint64 slack = c->reclaimed() ? m_inFlightSlackMs : qMax<qint64>(m_inFlightSlackMs, 5000);
        if (c->released() && t > c->releasedAtMs + slack)
            add(inv, QStringLiteral("%1 reached the upstream at %2, %3 ms after its claim %4#%5 epoch %6 ended (%7): "
                                    "dispatched under a stale epoch")
                         .arg(requestId, ms(t))
                         .arg(t - c->releasedAtMs)
                         .arg(c->accountId)
                         .arg(c->slot)
                         .arg(c->epoch)
                         .arg(c->releaseKind));
    }
    for (const ClientObservation &o : m_clients) {
        for (qint64 t : o.outputAtMs) {
            const Claim *c = claimAt(o.requestId, t);
            if (c && c->reclaimed() && t > c->releasedAtMs + m_inFlightSlackMs) {
                add(inv, QStringLiteral("%1: its client received upstream output at %2, %3 ms after its claim %4#%5 "
                                        "epoch %6 was taken over (%7): the turn went on as owner of a lost epoch")
                             .arg(o.requestId, ms(t))
                             .arg(t - c->releasedAtMs)
                             .arg(c->accountId)
                             .arg(c->slot)
                             .arg(c->epoch)
                             .arg(c->releaseKind));
                break;
            }
        }
    }
    for (auto it = m_claimsByRequest.cbegin(); it != m_claimsByRequest.cend(); ++it) {
        const LogRow log = m_log.value(it.key());
        if (log.status != QLatin1String("completed"))
            continue;
        for (int i : it.value()) {
            const Claim &c = m_claims.at(i);
            if (c.reclaimed() && c.settlements > 0)
                add(inv, QStringLiteral("%1 is booked completed although its claim %2#%3 epoch %4 was %5")
                             .arg(it.key(), c.accountId)
                             .arg(c.slot)
                             .arg(c.epoch)
                             .arg(c.releaseKind));
        }
    }
}

// Inv6TerminalIsolation: what the upstream produced for one request reaches that request only.
void DurableStateChecker::checkTerminalIsolation()
{
    const QString inv = QStringLiteral("Inv6TerminalIsolation");
    QHash<QString, QSet<QString>> byResponse;
    for (const Claim &c : m_claims) {
        if (!c.responseId.isEmpty())
            byResponse[c.responseId].insert(c.requestId);
    }
    for (auto it = byResponse.cbegin(); it != byResponse.cend(); ++it) {
        if (it.value().size() > 1) {
            QStringList ids = it.value().values();
            ids.sort();
            add(inv, QStringLiteral("response %1 was recorded by %2 requests: %3")
                         .arg(it.key())
                         .arg(ids.size())
                         .arg(ids.join(QStringLiteral(", "))));
        }
    }
    if (m_upstream.isEmpty())
        return;
    QHash<QString, QString> producedFor;     // response id -> x-request-id
    QHash<QString, QString> producedOn;      // response id -> chatgpt account id
    QHash<QString, QString> upstreamIdFor;   // upstream x-request-id (up_...) -> our request id
    for (const QJsonValue &v : m_upstream) {
        const QJsonObject e = v.toObject();
        const QString rid = e.value(QLatin1String("response_id")).toString();
        if (!rid.isEmpty()) {
            producedFor.insert(rid, e.value(QLatin1String("x_request_id")).toString());
            producedOn.insert(rid, e.value(QLatin1String("chatgpt_account_id")).toString());
        }
        upstreamIdFor.insert(e.value(QLatin1String("upstream_request_id")).toString(),
                             e.value(QLatin1String("x_request_id")).toString());
    }
    for (const Claim &c : m_claims) {
        if (c.responseId.isEmpty())
            continue;
        if (!producedFor.contains(c.responseId))
            add(inv, QStringLiteral("%1 recorded response %2, which the upstream never produced")
                         .arg(c.requestId, c.responseId));
        else if (producedFor.value(c.responseId) != c.requestId)
            add(inv, QStringLiteral("%1 recorded response %2, which the upstream produced for %3 (account %4)")
                         .arg(c.requestId, c.responseId, producedFor.value(c.responseId),
                              m_accountByChatgpt.value(producedOn.value(c.responseId))));
    }
    for (const LogRow &l : m_log) {
        if (l.upstreamRequestId.isEmpty() || !upstreamIdFor.contains(l.upstreamRequestId))
            continue;
        if (upstreamIdFor.value(l.upstreamRequestId) != l.requestId)
            add(inv, QStringLiteral("%1 is booked with upstream exchange %2, which answered %3")
                         .arg(l.requestId, l.upstreamRequestId, upstreamIdFor.value(l.upstreamRequestId)));
    }
    for (auto it = m_anchors.cbegin(); it != m_anchors.cend(); ++it) {
        if (producedOn.contains(it.key()) && m_accountByChatgpt.value(producedOn.value(it.key())) != it.value())
            add(inv, QStringLiteral("anchor %1 is recorded for account %2 but the upstream produced it on %3")
                         .arg(it.key(), it.value(), m_accountByChatgpt.value(producedOn.value(it.key()))));
    }
}

// Inv7GateAccounting: a stopped replica's gate books balance: nobody queued, everyone admitted has left.
void DurableStateChecker::checkGateAccounting()
{
    const QString inv = QStringLiteral("Inv7GateAccounting");
    for (const ReplicaRow &r : m_replicas) {
        if (r.stoppedAtMs < 0)
            continue;
        if (r.gateQueued != 0 || r.gateAdmitted != r.gateLeft)
            add(inv, QStringLiteral("replica %1/%2 stopped with gate books queued=%3 admitted=%4 left=%5 "
                                    "(overloaded=%6)")
                         .arg(r.replicaId)
                         .arg(r.incarnation)
                         .arg(r.gateQueued)
                         .arg(r.gateAdmitted)
                         .arg(r.gateLeft)
                         .arg(r.gateOverloaded));
    }
}

// Inv8ShutdownDrain: no turn admitted after its replica began draining; a cleanly stopped replica left no
// claim open.
void DurableStateChecker::checkShutdownDrain()
{
    const QString inv = QStringLiteral("Inv8ShutdownDrain");
    for (const ReplicaRow &r : m_replicas) {
        for (const Claim &c : m_claims) {
            if (c.replicaId != r.replicaId || c.incarnation != r.incarnation)
                continue;
            if (r.drainingSinceMs >= 0 && c.startedAtMs > r.drainingSinceMs)
                add(inv, QStringLiteral("%1 was admitted at %2 by replica %3/%4, %5 ms after it began draining, and "
                                        "claimed %6#%7")
                             .arg(c.requestId, ms(c.startedAtMs), r.replicaId)
                             .arg(r.incarnation)
                             .arg(c.startedAtMs - r.drainingSinceMs)
                             .arg(c.accountId)
                             .arg(c.slot));
            if (r.stoppedAtMs >= 0 && !c.released())
                add(inv, QStringLiteral("replica %1/%2 stopped cleanly at %3 leaving claim %4 (%5#%6) open")
                             .arg(r.replicaId)
                             .arg(r.incarnation)
                             .arg(ms(r.stoppedAtMs), c.requestId, c.accountId)
                             .arg(c.slot));
        }
    }
}

// Inv11PreResponseBudget (a kill before the stream started is never stream_idle) and Inv2DeadlineOrdering
// (every stage is bounded by its own budget, not only by request_total).
void DurableStateChecker::checkBudgets()
{
    const QString inv11 = QStringLiteral("Inv11PreResponseBudget");
    const QString inv2 = QStringLiteral("Inv2DeadlineOrdering");
    const qint64 slack = m_budgets.slackMs;
    for (const LogRow &l : m_log) {
        if (l.status == QLatin1String("timed_out") && l.killStage == QLatin1String("stream_idle") && l.firstEventMs < 0)
            add(inv11, QStringLiteral("%1 was killed as stream_idle although no event had arrived (first event null, "
                                      "total %2 ms): a pre_response kill under the wrong budget")
                           .arg(l.requestId, ms(l.totalMs)));
        if (l.killStage == QLatin1String("pre_response") && l.firstEventMs >= 0)
            add(inv11, QStringLiteral("%1 was killed as pre_response after its first event (%2 ms)")
                           .arg(l.requestId, ms(l.firstEventMs)));
        if (m_budgets.gateWaitS > 0 && l.queueMs >= 0) {
            // One wait before the first attempt and at most one after each failed attempt.
            const int waits = qMax(1, l.attempts);
            const qint64 bound = qint64(m_budgets.gateWaitS) * 1000 * waits + slack;
            if (l.queueMs > bound)
                add(inv2, QStringLiteral("%1 waited %2 ms at the gate (status %3, kill stage %4) although gate_wait_s "
                                         "is %5 (bound %6 ms for %7 wait(s))")
                              .arg(l.requestId, ms(l.queueMs), l.status,
                                   l.killStage.isEmpty() ? QStringLiteral("none") : l.killStage)
                              .arg(m_budgets.gateWaitS)
                              .arg(bound)
                              .arg(waits));
        }
        if (m_budgets.connectS > 0 && l.connectMs > qint64(m_budgets.connectS) * 1000 + slack)
            add(inv2, QStringLiteral("%1 spent %2 ms connecting although connect_s is %3")
                          .arg(l.requestId, ms(l.connectMs))
                          .arg(m_budgets.connectS));
        if (m_budgets.requestTotalS > 0 && l.status == QLatin1String("timed_out") && l.firstEventMs < 0 &&
            l.totalMs > qint64(m_budgets.requestTotalS) * 1000 + slack)
            add(inv2, QStringLiteral("%1 was killed (%2) after %3 ms without a first event although request_total_s "
                                     "is %4")
                          .arg(l.requestId, l.killStage, ms(l.totalMs))
                          .arg(m_budgets.requestTotalS));
    }
}

void DurableStateChecker::computeStats()
{
    m_stats.turns = int(m_log.size());
    m_stats.requestsWithClaims = int(m_claimsByRequest.size());
    m_stats.claims = int(m_claims.size());
    QSet<QString> killed;
    for (const Claim &c : m_claims) {
        m_stats.settlements += c.settlements;
        if (c.releaseKind == QLatin1String("failover"))
            ++m_stats.failoverReleases;
        else if (c.releaseKind == QLatin1String("reclaimed_expired"))
            ++m_stats.reclaimedExpired;
        else if (c.releaseKind == QLatin1String("reclaimed_restart")) {
            ++m_stats.reclaimedRestart;
            killed.insert(c.replicaId + QLatin1Char('/') + QString::number(c.incarnation));
        }
    }
    m_stats.kills = int(killed.size());
    for (const ReplicaRow &r : m_replicas) {
        m_stats.casConflicts += r.casConflicts;
        m_stats.leaseReclaims += r.leaseReclaims;
        m_stats.stoppedReplicas += r.stoppedAtMs >= 0 ? 1 : 0;
    }
    m_stats.replicas = int(m_replicas.size());
    for (const QJsonValue &v : m_upstream)
        m_stats.upstreamTurns +=
            v.toObject().value(QLatin1String("path")).toString().endsWith(QLatin1String("/codex/responses"));
}

} // namespace sy::test
