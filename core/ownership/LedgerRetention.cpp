#include "ownership/LedgerRetention.h"

#include "store/Database.h"
#include "store/StoreWorker.h"
#include "util/Clock.h"
#include "util/Ids.h"

#include <QLoggingCategory>
#include <QSqlQuery>
#include <QVariant>
#include <memory>

namespace sy {

Q_LOGGING_CATEGORY(lcRetention, "switchyard.ownership.retention")

namespace {

// A claim `c` of a request that may go: none of the request's claims is open, made at or after the cutoff (the
// bound value), or a failover's release the sweep has yet to retire.
const QString kRequestClosedAndOld = QStringLiteral(
    "NOT EXISTS (SELECT 1 FROM slot_claims o WHERE o.request_id = c.request_id AND (o.released_at_ms IS NULL OR "
    "o.claimed_at_ms >= ? OR (o.release_kind = 'failover' AND o.settlements = 0 AND o.swept_at_ms IS NULL)))");

int deleteBatch(Database &db, const QString &sql, const QVariantList &values, QString *error)
{
    QSqlQuery q = db.query();
    if (!db.prepare(q, sql, error))
        return -1;
    Database::bindAll(q, values);
    if (!db.exec(q, error))
        return -1;
    return q.numRowsAffected();
}

// How many request ids `select` (a SELECT of c.request_id, in order) gives, and the last of them.
bool countAndLast(Database &db, const QString &select, const QVariantList &values, int *count, QString *last,
                  QString *error)
{
    QSqlQuery q = db.query();
    if (!db.prepare(q, QStringLiteral("SELECT count(*), max(request_id) FROM (") + select + QStringLiteral(") w"),
                    error))
        return false;
    Database::bindAll(q, values);
    if (!db.exec(q, error) || !q.next())
        return false;
    *count = q.value(0).toInt();
    *last = q.value(1).toString();
    q.finish();
    return true;
}

} // namespace

bool LedgerRetention::pruneBatch(Database &db, qint64 cutoffMs, int limit, Batch *out, QString *error)
{
    out->claims = out->anchors = out->legacyClaims = 0;
    if (db.dialect() == Database::Dialect::Postgres) {
        // One replica's batch at a time. Two batches picking the same old rows would wait for each other, and a
        // batch shares its transaction with other writes (a group commit): a settlement waiting behind such a
        // wait could meet a cycle and be the deadlock's victim. Settlements and claims lock only rows of turns
        // in flight, which no batch picks. Busy: this batch is skipped, the next one comes a minute later.
        bool taken = false;
        if (!db.tryLockForWrite(QStringLiteral("ledger_retention"), &taken, error))
            return false;
        if (!taken)
            return true;
    }
    // The first pass: the oldest requests first, by the request-id index (slot_claims_request), among the ids of
    // kFirstPassSpanMs before the cutoff. A request goes with all its claims or not at all, and not while one of
    // them is open, is a failover's release the sweep has yet to look at
    // (OwnerSlotRepository::settleAbandonedFailovers) or was made after the cutoff (which also keeps any claim
    // whose id does not begin with its time). A request with several claims can take the batch past `limit`.
    const QString spanFloor = requestIdFloor(qMax<qint64>(0, cutoffMs - kFirstPassSpanMs));
    const int claims = deleteBatch(
        db,
        QStringLiteral("DELETE FROM slot_claims WHERE request_id IN (SELECT c.request_id FROM slot_claims c WHERE "
                       "c.request_id >= ? AND c.request_id < ? AND ") +
            kRequestClosedAndOld + QStringLiteral(" ORDER BY c.request_id LIMIT ?)"),
        {spanFloor, requestIdFloor(cutoffMs), cutoffMs, limit}, error);
    if (claims < 0)
        return false;
    // The walk: the next window of at most kLegacyScanRows index entries above every time-first id of the next
    // day or below the first pass's range, so that a batch reads a bounded part of the index however many of
    // them are not old enough yet. Between the two lie the first pass's range and the ids it reaches later.
    // The part below from its start has no lower bound, the part above no upper one.
    const bool below = out->legacyBelow;
    const QString after =
        below ? out->legacyAfter : qMax(out->legacyAfter, requestIdFloor(cutoffMs + kRetentionMs + 24LL * 3600 * 1000));
    QString lower; // "c.request_id > ? AND " unless the walk starts its part
    QVariantList lowerValues;
    if (!after.isEmpty()) {
        lower = QStringLiteral("c.request_id > ? AND ");
        lowerValues << after;
    }
    int inWindow = 0;
    QString windowEnd;
    if (!countAndLast(db,
                      QStringLiteral("SELECT c.request_id FROM slot_claims c WHERE ") + lower +
                          (below ? QStringLiteral("c.request_id < ?") : QStringLiteral("TRUE")) +
                          QStringLiteral(" ORDER BY c.request_id LIMIT ?"),
                      lowerValues + (below ? QVariantList{spanFloor, kLegacyScanRows} : QVariantList{kLegacyScanRows}),
                      &inWindow, &windowEnd, error))
        return false;
    // The claims of the window that may go, the first `limit` of them and the last of their ids: a window that
    // holds more of them than a batch takes is taken up again after that id, not after the window.
    int legacy = 0;
    bool takenUpAgain = false;
    QString pickedEnd;
    if (inWindow > 0) {
        const QString picked = QStringLiteral("SELECT c.request_id FROM slot_claims c WHERE ") + lower +
                               QStringLiteral("c.request_id <= ? AND ") + kRequestClosedAndOld;
        int pickedRows = 0;
        if (!countAndLast(db, picked + QStringLiteral(" ORDER BY c.request_id LIMIT ?"),
                          lowerValues + QVariantList{windowEnd, cutoffMs, limit}, &pickedRows, &pickedEnd, error))
            return false;
        takenUpAgain = pickedRows >= limit && pickedEnd < windowEnd;
        if (pickedRows > 0) {
            legacy = deleteBatch(
                db, QStringLiteral("DELETE FROM slot_claims WHERE request_id IN (") + picked + QLatin1Char(')'),
                lowerValues + QVariantList{pickedEnd, cutoffMs}, error);
            if (legacy < 0)
                return false;
        }
    }
    // By response_anchors_created.
    const int anchors = deleteBatch(db,
                                    QStringLiteral("DELETE FROM response_anchors WHERE response_id IN (SELECT "
                                                   "response_id FROM response_anchors WHERE created_at_ms < ? "
                                                   "ORDER BY created_at_ms LIMIT ?)"),
                                    {cutoffMs, limit}, error);
    if (anchors < 0)
        return false;
    out->claims = claims;
    out->anchors = anchors;
    out->legacyClaims = legacy;
    // A short window went past the last entry of its part: the other part is next, from its start.
    const bool fullWindow = inWindow == kLegacyScanRows;
    out->legacyAfter = takenUpAgain ? pickedEnd : fullWindow ? windowEnd : QString();
    out->legacyBelow = takenUpAgain || fullWindow ? below : !below;
    return true;
}

LedgerRetention::LedgerRetention(StoreWorker *store, const Clock &clock, QObject *parent, int idleMs, int busyMs)
    : QObject(parent), m_store(store), m_clock(clock), m_idleMs(idleMs), m_busyMs(busyMs)
{
    m_timer.setSingleShot(true);
    connect(&m_timer, &QTimer::timeout, this, &LedgerRetention::runOnce);
}

void LedgerRetention::start()
{
    m_started = true;
    m_timer.start(m_idleMs);
}

void LedgerRetention::stop()
{
    m_started = false;
    m_timer.stop();
}

void LedgerRetention::runOnce()
{
    if (m_running)
        return;
    m_running = true;
    const qint64 cutoffMs = m_clock.nowMs() - kRetentionMs;
    auto batch = std::make_shared<Batch>();
    batch->legacyAfter = m_legacyAfter;
    batch->legacyBelow = m_legacyBelow;
    m_store->submit(
        [cutoffMs, batch](Database &db, QString *error) {
            return pruneBatch(db, cutoffMs, kBatchRows, batch.get(), error);
        },
        this,
        [this, batch](bool ok, const QString &error) {
            m_running = false;
            const int claims = batch->claims + batch->legacyClaims;
            const bool full = ok && (batch->claims >= kBatchRows || batch->anchors >= kBatchRows ||
                                     batch->legacyClaims >= kBatchRows);
            if (!ok) {
                // The store is unavailable (read-only, full): the next minute tries again.
                if (!m_warned)
                    qCWarning(lcRetention).noquote() << "cannot drop old claims and anchors:" << error;
                m_warned = true;
            } else {
                m_warned = false;
                m_legacyAfter = batch->legacyAfter;
                m_legacyBelow = batch->legacyBelow;
                m_claimsPruned += claims;
                m_anchorsPruned += batch->anchors;
                if (claims > 0 || batch->anchors > 0)
                    qCDebug(lcRetention).noquote()
                        << "dropped" << claims << "claims and" << batch->anchors << "anchors older than"
                        << kRetentionMs / (24 * 3600 * 1000) << "days";
                emit batchDone(claims, batch->anchors);
            }
            if (!m_started)
                return;
            m_timer.start(full ? m_busyMs : m_idleMs);
        });
}

} // namespace sy
