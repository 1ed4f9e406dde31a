#include "LogDb.h"

#include "data/UsageSeries.h"
#include "ownership/LedgerRetention.h"
#include "store/AccountRepository.h"
#include "store/AnchorRepository.h"
#include "store/Database.h"
#include "store/RequestLogRepository.h"
#include "store/UsageTotals.h"
#include "store/WalCheckpointer.h"
#include "util/Ids.h"

#include <QDate>
#include <QDateTime>
#include <QElapsedTimer>
#include <QHash>
#include <QSqlQuery>
#include <QVariant>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

namespace sy::bench {

namespace {

constexpr qint64 kSpanMs = 30LL * 24 * 3600 * 1000;
// The filled turns span the 30 days but their first hour: none of their claims and anchors is older than the
// serve's retention (ownership/LedgerRetention, 30 days) while the bench runs, so no serve deletes any of them.
constexpr qint64 kFillSpanMs = kSpanMs - 3600LL * 1000;
// Rows per write transaction while filling: the proxy commits one row per turn (grouped by the store
// thread); one transaction per row would only make the fill slower, not the rows different.
constexpr qint64 kFillBatch = 5000;

bool scalar(Database &db, const QString &sql, qint64 *value, QString *error)
{
    QSqlQuery q = db.query();
    if (!db.prepare(q, sql, error) || !db.exec(q, error))
        return false;
    *value = q.next() ? q.value(0).toLongLong() : 0;
    return true;
}

struct Timing
{
    double firstMs = 0;
    double medianMs = 0;
    double maxMs = 0;
};

Timing timeRepeated(int repeat, const std::function<bool()> &run)
{
    std::vector<double> ms;
    for (int i = 0; i < repeat; ++i) {
        QElapsedTimer timer;
        timer.start();
        if (!run())
            return {-1, -1, -1};
        ms.push_back(double(timer.nsecsElapsed()) / 1e6);
    }
    Timing t;
    t.firstMs = ms.front();
    std::sort(ms.begin(), ms.end());
    t.medianMs = ms[ms.size() / 2];
    t.maxMs = ms.back();
    return t;
}

void print(const char *name, const Timing &t, qint64 rows)
{
    std::printf("%s_first_ms=%.1f %s_median_ms=%.1f %s_max_ms=%.1f %s_rows=%lld\n", name, t.firstMs, name, t.medianMs,
                name, t.maxMs, name, static_cast<long long>(rows));
}

// The slots of each account that the filled turns were served on (the bench's 16 clients use about as many).
constexpr int kFillSlots = 16;

// The clock the anchor and affinity repositories read: the time of the turn being filled.
struct RowClock final : Clock
{
    qint64 ms = 0;
    qint64 nowMs() const override { return ms; }
    qint64 monotonicMs() const override { return ms; }
};

struct ReplicaRow
{
    QString id;
    qint64 incarnation = 0;
};

// The replica that the filled claims are booked to (the data dir's own, registered by its first serve) and
// the slots' current epochs, which the filled claims go on from.
bool readLedgerStart(Database &db, ReplicaRow *replica, QHash<QString, qint64> *epochs, QString *error)
{
    QSqlQuery q = db.query();
    if (!db.prepare(q,
                    QStringLiteral("SELECT replica_id, incarnation FROM replicas ORDER BY started_at_ms DESC LIMIT 1"),
                    error) ||
        !db.exec(q, error))
        return false;
    if (q.next()) {
        replica->id = q.value(0).toString();
        replica->incarnation = q.value(1).toLongLong();
    } else { // no serve has run on it yet (bench/instructions.sh): a replica of the past
        replica->id = QStringLiteral("bench-fill");
        replica->incarnation = 1;
    }
    if (!db.prepare(q, QStringLiteral("SELECT account_id, slot_index, owner_epoch FROM owner_slots"), error) ||
        !db.exec(q, error))
        return false;
    while (q.next())
        epochs->insert(q.value(0).toString() + QLatin1Char('/') + q.value(1).toString(), q.value(2).toLongLong());
    return true;
}

// An upstream response id: "resp_" and 48 hex digits, the first 8 of them the Unix time in seconds (as the
// upstream's ids look), or with BENCH_FILL_IDS=random all random.
QString fillResponseId(qint64 ms, bool random)
{
    const QString rest = newOpaqueId() + newOpaqueId(); // 48
    if (random)
        return QStringLiteral("resp_") + rest;
    return QStringLiteral("resp_%1").arg(quint32(ms / 1000), 8, 16, QLatin1Char('0')) + rest.left(40);
}

// The row OwnerSlotRepository's claim inserts, as the turn's settlement leaves it (released, settled once).
bool insertSettledClaim(Database &db, const RequestLogRecord &r, const AccountRecord &a, int slot, qint64 epoch,
                        const ReplicaRow &replica, const QString &responseId, qint64 releasedAtMs, QString *error)
{
    QSqlQuery q = db.query();
    if (!db.prepare(q,
                    QStringLiteral("INSERT INTO slot_claims (request_id, account_id, slot_index, owner_epoch, "
                                   "replica_id, incarnation, route, started_at_ms, claimed_at_ms, durable_status, "
                                   "account_version, released_at_ms, release_kind, settlements, response_id) "
                                   "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'settled', 1, ?)"),
                    error))
        return false;
    Database::bindAll(q,
                      {r.requestId, a.id, slot, epoch, replica.id, replica.incarnation, r.route, r.startedAtMs,
                       r.startedAtMs + r.latency.queueMs.value_or(0), a.status, a.version, releasedAtMs, responseId});
    return db.exec(q, error);
}

bool storeEpochs(Database &db, const QHash<QString, qint64> &epochs, QString *error)
{
    Transaction tx(db);
    if (!tx.begin(error))
        return false;
    QSqlQuery q = db.query();
    for (auto it = epochs.begin(); it != epochs.end(); ++it) {
        const qsizetype cut = it.key().lastIndexOf(QLatin1Char('/'));
        if (!db.prepare(q,
                        QStringLiteral("INSERT INTO owner_slots (account_id, slot_index, owner_epoch) VALUES (?, ?, ?) "
                                       "ON CONFLICT (account_id, slot_index) DO UPDATE SET owner_epoch = "
                                       "excluded.owner_epoch"),
                        error))
            return false;
        Database::bindAll(q, {it.key().left(cut), it.key().mid(cut + 1).toInt(), it.value()});
        if (!db.exec(q, error))
            return false;
    }
    return tx.commit(error);
}

} // namespace

LogDb::LogDb(const QString &path) : m_path(path) {}

LogDb::~LogDb() = default;

bool LogDb::open(QString *error)
{
    m_db = std::make_unique<Database>();
    if (!m_db->open(m_path, error))
        return false;
    qint64 accounts = 0;
    return scalar(*m_db, QStringLiteral("SELECT COUNT(*) FROM accounts"), &accounts, error);
}

bool LogDb::fill(qint64 rows, QString *error)
{
    const QList<AccountRecord> accounts = AccountRepository(*m_db).list(error);
    if (accounts.isEmpty()) {
        if (error && error->isEmpty())
            *error = QStringLiteral("the database has no accounts");
        return false;
    }
    const qint64 nowMs = QDateTime::currentMSecsSinceEpoch();
    // Ids as the proxy makes them (time first, util/Ids.h), or with BENCH_FILL_IDS=random as it made them before
    // session 42 (24 random hex chars), for an A/B of the two: where a new row's id lands in the primary key's
    // index decides which pages an insert reads and writes.
    const bool randomIds = qgetenv("BENCH_FILL_IDS") == "random";
    // BENCH_FILL_LEDGER=0 fills the request log alone, as before session 43.
    const bool ledger = qgetenv("BENCH_FILL_LEDGER") != "0";
    ReplicaRow replica;
    QHash<QString, qint64> epochs; // "account/slot" -> the last epoch the fill gave that slot
    if (ledger && !readLedgerStart(*m_db, &replica, &epochs, error))
        return false;
    RowClock rowClock;
    RequestLogRepository log(*m_db);
    AnchorRepository anchors(*m_db, rowClock);
    AffinityRepository affinity(*m_db, rowClock);
    QElapsedTimer timer;
    timer.start();
    for (qint64 from = 0; from < rows; from += kFillBatch) {
        Database::StatementScope statements(*m_db); // as on the store thread: statements compiled once
        Transaction tx(*m_db);
        if (!tx.begin(error))
            return false;
        for (qint64 i = from; i < std::min(rows, from + kFillBatch); ++i) {
            const AccountRecord &a = accounts[int(i % accounts.size())];
            const bool failed = i % 50 == 0;
            RequestLogRecord r;
            r.startedAtMs = nowMs - kFillSpanMs + (i * kFillSpanMs) / rows;
            r.requestId = randomIds ? QStringLiteral("req_") + newOpaqueId() : newRequestId(r.startedAtMs);
            r.route = QStringLiteral("/backend-api/codex/responses");
            r.model = QStringLiteral("gpt-5-codex");
            const QString sessionKey = QStringLiteral("session-%1").arg(i / 40);
            r.sessionKey = sessionKey;
            r.accountId = a.id;
            r.accountAlias = a.alias;
            r.chatgptAccountId = a.chatgptAccountId;
            r.status = failed ? QStringLiteral("failed") : QStringLiteral("completed");
            if (failed)
                r.errorCode = QStringLiteral("upstream_stream_lost");
            r.upstreamRequestId = QStringLiteral("req_up_%1").arg(i);
            r.attempts = {{a.id, std::nullopt, r.status, 800 + i % 9000}};
            r.latency = {0, 3 + i % 20, 300 + i % 2000, 800 + i % 9000};
            const qint64 input = 8000 + i % 40000, output = 50 + i % 3000, reasoning = i % 500;
            r.tokens = {input, input / 2, output, reasoning, input + output + reasoning};
            if (!log.insert(r, error))
                return false;
            if (!ledger)
                continue;
            // What the same turn leaves in the ownership tables (docs/OWNERSHIP.md): its claim as its settlement
            // closed it, the anchor of the response it served, and its session's binding when that moved.
            rowClock.ms = r.startedAtMs + r.latency.totalMs.value_or(0);
            const int slot = int(i / accounts.size()) % kFillSlots;
            const qint64 epoch = ++epochs[a.id + QLatin1Char('/') + QString::number(slot)];
            const QString responseId = fillResponseId(rowClock.ms, randomIds);
            if (!insertSettledClaim(*m_db, r, a, slot, epoch, replica, responseId, rowClock.ms, error))
                return false;
            AnchorRecord anchor;
            anchor.responseId = responseId;
            anchor.accountId = a.id;
            anchor.lineage = responseId;
            anchor.sessionKey = sessionKey;
            anchor.slot = slot;
            anchor.epoch = epoch;
            if (!anchors.rememberServed(anchor, error))
                return false;
            if (i % 40 == 0 && !affinity.set(sessionKey, a.id, error))
                return false;
        }
        if (!tx.commit(error))
            return false;
    }
    // The slots' epochs go on from the last one the ledger gave them, as the claims of those turns left them.
    if (ledger && !storeEpochs(*m_db, epochs, error))
        return false;
    const double seconds = double(timer.elapsed()) / 1000;
    m_db->exec(QStringLiteral("PRAGMA wal_checkpoint(TRUNCATE)"), error);
    // The rollups must account for every logged row, or the chart below would be timed on a partial table.
    qint64 logged = 0, rolledUp = 0;
    if (!scalar(*m_db, QStringLiteral("SELECT COUNT(*) FROM request_log"), &logged, error) ||
        !scalar(*m_db, QStringLiteral("SELECT COALESCE(SUM(requests), 0) FROM usage_rollup_hourly"), &rolledUp, error))
        return false;
    if (logged != rolledUp) {
        *error = QStringLiteral("rollups count %1 requests, the log holds %2 rows").arg(rolledUp).arg(logged);
        return false;
    }
    qint64 claims = 0, anchorRows = 0, sessions = 0;
    if (!scalar(*m_db, QStringLiteral("SELECT COUNT(*) FROM slot_claims"), &claims, error) ||
        !scalar(*m_db, QStringLiteral("SELECT COUNT(*) FROM response_anchors"), &anchorRows, error) ||
        !scalar(*m_db, QStringLiteral("SELECT COUNT(*) FROM session_affinity"), &sessions, error))
        return false;
    std::printf("filled_rows=%lld fill_seconds=%.1f log_rows=%lld rollup_requests=%lld claim_rows=%lld "
                "anchor_rows=%lld session_rows=%lld\n",
                static_cast<long long>(rows), seconds, static_cast<long long>(logged), static_cast<long long>(rolledUp),
                static_cast<long long>(claims), static_cast<long long>(anchorRows), static_cast<long long>(sessions));
    return true;
}

bool LogDb::timeRetention(int days, int batches, QString *error)
{
    const qint64 cutoffMs = QDateTime::currentMSecsSinceEpoch() - qint64(days) * 24 * 3600 * 1000;
    std::vector<double> ms;
    qint64 claims = 0, anchors = 0, legacyClaims = 0;
    // One Batch for the whole run, as the serve keeps one: the walk over random ids goes on from where it stopped.
    LedgerRetention::Batch batch;
    // As on the serve's store thread: its commits leave the WAL to the checkpointer's thread, which copies it back
    // after them (here between batches, outside the timing; the serve's checkpoint runs beside its store thread).
    if (!m_db->setWalAutoCheckpoint(WalCheckpointer::kStoreFallbackPages, error))
        return false;
    for (int i = 0; i < batches; ++i) {
        if (i > 0 && !m_db->exec(QStringLiteral("PRAGMA wal_checkpoint(PASSIVE)"), error))
            return false;
        QElapsedTimer timer;
        timer.start();
        Transaction tx(*m_db);
        if (!tx.begin(error) ||
            !LedgerRetention::pruneBatch(*m_db, cutoffMs, LedgerRetention::kBatchRows, &batch, error) ||
            !tx.commit(error))
            return false;
        ms.push_back(double(timer.nsecsElapsed()) / 1e6);
        claims += batch.claims;
        anchors += batch.anchors;
        legacyClaims += batch.legacyClaims;
        // As the serve: the next batch at once (a second later there) while one comes back full.
        if (batch.claims < LedgerRetention::kBatchRows && batch.anchors < LedgerRetention::kBatchRows &&
            batch.legacyClaims < LedgerRetention::kBatchRows)
            break;
    }
    const double first = ms.front();
    std::sort(ms.begin(), ms.end());
    std::printf("retention_batches=%zu retention_claims=%lld retention_legacy_claims=%lld retention_anchors=%lld "
                "retention_first_ms=%.2f retention_median_ms=%.2f retention_max_ms=%.2f\n",
                ms.size(), static_cast<long long>(claims), static_cast<long long>(legacyClaims),
                static_cast<long long>(anchors), first, ms[ms.size() / 2], ms.back());
    return true;
}

bool LogDb::timeChartQueries(int repeat, QString *error)
{
    // The dashboard reads on its own connection (ui/data/DbWorker), as here.
    Database db;
    if (!db.open(m_path, error))
        return false;
    const qint64 nowMs = QDateTime::currentMSecsSinceEpoch();
    const qint64 dayStart =
        QDateTime(QDateTime::fromMSecsSinceEpoch(nowMs).date(), QTime(0, 0)).toMSecsSinceEpoch(); // as UsagePage
    const struct
    {
        const char *name;
        ui::UsageRange range;
    } pages[] = {{"chart_month", ui::UsageRange::Month},
                 {"chart_week", ui::UsageRange::Week},
                 {"chart_day", ui::UsageRange::Day}};
    for (const auto &page : pages) {
        qint64 tokens = 0;
        const Timing t = timeRepeated(repeat, [&] {
            const ui::UsageSeries s = ui::loadUsageSeries(db, page.range, nowMs, dayStart);
            if (!s.error.isEmpty()) {
                *error = s.error;
                return false;
            }
            tokens = 0;
            for (const QList<qint64> &perBucket : s.tokens)
                for (qint64 v : perBucket)
                    tokens += v;
            return true;
        });
        if (t.medianMs < 0)
            return false;
        print(page.name, t, tokens);
    }

    const qint64 since = nowMs - kSpanMs;
    qint64 accounts = 0;
    const Timing totals = timeRepeated(repeat, [&] {
        const auto byAccount = tokenTotalsByAccount(db, since, error); // `switchyard usage`
        accounts = byAccount.size();
        return error->isEmpty();
    });
    if (totals.medianMs < 0)
        return false;
    print("totals", totals, accounts);

    // What the chart cost before the rollups: hourly sums straight from request_log (reference only).
    const QString raw = QStringLiteral(
        "SELECT account_id, started_at_ms / 3600000 AS bucket, COUNT(*), SUM(tokens_input), SUM(tokens_cached), "
        "SUM(tokens_output), SUM(tokens_total) FROM request_log WHERE started_at_ms >= ? GROUP BY account_id, bucket");
    qint64 buckets = 0;
    const Timing rawTiming = timeRepeated(std::min(repeat, 3), [&] {
        QSqlQuery q = db.query();
        q.setForwardOnly(true);
        if (!db.prepare(q, raw, error))
            return false;
        q.addBindValue(since);
        if (!db.exec(q, error))
            return false;
        buckets = 0;
        while (q.next())
            ++buckets;
        return true;
    });
    if (rawTiming.medianMs < 0)
        return false;
    print("raw_hour", rawTiming, buckets);
    return true;
}

} // namespace sy::bench
