#include "LogDb.h"

#include "data/UsageSeries.h"
#include "store/AccountRepository.h"
#include "store/Database.h"
#include "store/RequestLogRepository.h"
#include "store/UsageTotals.h"
#include "util/Ids.h"

#include <QDate>
#include <QDateTime>
#include <QElapsedTimer>
#include <QSqlQuery>
#include <QVariant>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

namespace sy::bench {

namespace {

constexpr qint64 kSpanMs = 30LL * 24 * 3600 * 1000;
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
    RequestLogRepository log(*m_db);
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
            r.startedAtMs = nowMs - kSpanMs + (i * kSpanMs) / rows;
            r.requestId = randomIds ? QStringLiteral("req_") + newOpaqueId() : newRequestId(r.startedAtMs);
            r.route = QStringLiteral("/backend-api/codex/responses");
            r.model = QStringLiteral("gpt-5-codex");
            r.sessionKey = QStringLiteral("session-%1").arg(i / 40);
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
        }
        if (!tx.commit(error))
            return false;
    }
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
    std::printf("filled_rows=%lld fill_seconds=%.1f log_rows=%lld rollup_requests=%lld\n",
                static_cast<long long>(rows), seconds, static_cast<long long>(logged),
                static_cast<long long>(rolledUp));
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
