#include "LogDb.h"

#include <QDateTime>
#include <QElapsedTimer>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QStringList>
#include <QVariant>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace sy::bench {

namespace {

bool run(QSqlQuery &q, const QString &sql, QString *error)
{
    if (q.exec(sql))
        return true;
    *error = q.lastError().text();
    return false;
}

} // namespace

LogDb::LogDb(const QString &path) : m_path(path), m_connection(QStringLiteral("bench-db")) {}

LogDb::~LogDb()
{
    {
        QSqlDatabase db = QSqlDatabase::database(m_connection, false);
        if (db.isOpen())
            db.close();
    }
    QSqlDatabase::removeDatabase(m_connection);
}

bool LogDb::open(QString *error)
{
    QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), m_connection);
    db.setDatabaseName(m_path);
    if (!db.open()) {
        *error = db.lastError().text();
        return false;
    }
    QSqlQuery q(db);
    if (!run(q, QStringLiteral("SELECT COUNT(*) FROM accounts"), error))
        return false; // not a Switchyard database (yet)
    return true;
}

bool LogDb::setSlots(int slotCount, QString *error)
{
    QSqlQuery q(QSqlDatabase::database(m_connection));
    if (!q.prepare(QStringLiteral("UPDATE accounts SET slot_count = ?"))) {
        *error = q.lastError().text();
        return false;
    }
    q.addBindValue(slotCount);
    if (!q.exec()) {
        *error = q.lastError().text();
        return false;
    }
    std::printf("slot_count=%d accounts=%d\n", slotCount, q.numRowsAffected());
    return true;
}

bool LogDb::fill(qint64 rows, QString *error)
{
    QSqlDatabase db = QSqlDatabase::database(m_connection);
    QSqlQuery q(db);
    QStringList ids, aliases, chatgptIds;
    if (!run(q, QStringLiteral("SELECT id, COALESCE(alias, ''), chatgpt_account_id FROM accounts ORDER BY id"), error))
        return false;
    while (q.next()) {
        ids << q.value(0).toString();
        aliases << q.value(1).toString();
        chatgptIds << q.value(2).toString();
    }
    if (ids.isEmpty()) {
        *error = QStringLiteral("the database has no accounts");
        return false;
    }
    // Account columns chosen by row number: a CASE over the real ids keeps the generator inside SQLite.
    auto pick = [&](const QStringList &values) -> QString {
        QString s = QStringLiteral("CASE i % %1").arg(values.size());
        for (int k = 0; k < values.size(); ++k)
            s += QStringLiteral(" WHEN %1 THEN '%2'").arg(k).arg(QString(values[k]).replace(QLatin1Char('\''), "''"));
        return s + QStringLiteral(" END");
    };
    const qint64 nowMs = QDateTime::currentMSecsSinceEpoch();
    const qint64 spanMs = 30LL * 24 * 3600 * 1000;
    const QString sql =
        QStringLiteral(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < %1) "
            "INSERT INTO request_log (request_id, started_at_ms, route, model, session_key, account_id, "
            "account_alias, chatgpt_account_id, status, kill_stage, error_code, upstream_request_id, attempts_json, "
            "blocked_by_json, latency_queue_ms, latency_connect_ms, latency_first_event_ms, latency_total_ms, "
            "tokens_input, tokens_cached, tokens_output, tokens_reasoning, tokens_total) "
            "SELECT 'req_' || lower(hex(randomblob(12))), %2 + (i * %3) / %4, '/backend-api/codex/responses', "
            "'gpt-5-codex', 'session-' || (i / 40), %5, %6, %7, "
            "CASE WHEN i % 50 = 0 THEN 'failed' ELSE 'completed' END, NULL, "
            "CASE WHEN i % 50 = 0 THEN 'upstream_stream_lost' ELSE NULL END, 'req_up_' || i, "
            "'[{\"account_id\":\"' || %5 || '\",\"egress_proxy\":null,\"outcome\":\"completed\",\"elapsed_ms\":' "
            "|| (800 + i % 9000) || '}]', '[]', 0, 3 + i % 20, 300 + i % 2000, 800 + i % 9000, "
            "8000 + i % 40000, (8000 + i % 40000) / 2, 50 + i % 3000, i % 500, 8050 + i % 40000 + i % 3000 + i % 500 "
            "FROM n")
            .arg(rows - 1)
            .arg(nowMs - spanMs)
            .arg(spanMs)
            .arg(rows)
            .arg(pick(ids), pick(aliases), pick(chatgptIds));
    QElapsedTimer timer;
    timer.start();
    if (!db.transaction()) {
        *error = db.lastError().text();
        return false;
    }
    if (!run(q, sql, error)) {
        db.rollback();
        return false;
    }
    if (!db.commit()) {
        *error = db.lastError().text();
        return false;
    }
    run(q, QStringLiteral("PRAGMA wal_checkpoint(TRUNCATE)"), error);
    std::printf("filled_rows=%lld fill_seconds=%.1f\n", static_cast<long long>(rows), double(timer.elapsed()) / 1000);
    return true;
}

bool LogDb::timeChartQueries(int repeat, QString *error)
{
    QSqlDatabase db = QSqlDatabase::database(m_connection);
    const qint64 since = QDateTime::currentMSecsSinceEpoch() - 30LL * 24 * 3600 * 1000;
    // Per-account token sums per hour (and per day) over 30 days, as a usage chart would draw them; the last
    // is the per-account 30-day total that `switchyard usage` runs (core/store/UsageTotals.cpp).
    const struct
    {
        const char *name;
        QString sql;
    } queries[] = {
        {"chart_hour",
         QStringLiteral("SELECT account_id, started_at_ms / 3600000 AS bucket, COUNT(*), SUM(tokens_input), "
                        "SUM(tokens_cached), SUM(tokens_output), SUM(tokens_total) FROM request_log "
                        "WHERE started_at_ms >= ? GROUP BY account_id, bucket")},
        {"chart_day",
         QStringLiteral("SELECT account_id, started_at_ms / 86400000 AS bucket, COUNT(*), SUM(tokens_input), "
                        "SUM(tokens_cached), SUM(tokens_output), SUM(tokens_total) FROM request_log "
                        "WHERE started_at_ms >= ? GROUP BY account_id, bucket")},
        {"totals",
         QStringLiteral("SELECT account_id, COUNT(*), COALESCE(SUM(tokens_input),0), COALESCE(SUM(tokens_cached),0), "
                        "COALESCE(SUM(tokens_output),0), COALESCE(SUM(tokens_reasoning),0), "
                        "COALESCE(SUM(tokens_total),0) FROM request_log WHERE account_id IS NOT NULL AND "
                        "started_at_ms >= ? GROUP BY account_id")},
    };
    for (const auto &query : queries) {
        std::vector<double> ms;
        qint64 buckets = 0;
        for (int i = 0; i < repeat; ++i) {
            QElapsedTimer timer;
            timer.start();
            QSqlQuery q(db);
            q.setForwardOnly(true);
            if (!q.prepare(query.sql)) {
                *error = q.lastError().text();
                return false;
            }
            q.addBindValue(since);
            if (!q.exec()) {
                *error = q.lastError().text();
                return false;
            }
            buckets = 0;
            while (q.next())
                ++buckets;
            ms.push_back(double(timer.nsecsElapsed()) / 1e6);
        }
        const double first = ms.front();
        std::sort(ms.begin(), ms.end());
        std::printf("%s_first_ms=%.1f %s_median_ms=%.1f %s_max_ms=%.1f %s_rows=%lld\n", query.name, first, query.name,
                    ms[ms.size() / 2], query.name, ms.back(), query.name, static_cast<long long>(buckets));
    }
    QSqlQuery plan(db);
    if (plan.exec(QStringLiteral("EXPLAIN QUERY PLAN ") + QString(queries[0].sql).replace(QLatin1Char('?'), "0"))) {
        while (plan.next())
            std::printf("# plan chart_hour: %s\n", qPrintable(plan.value(3).toString()));
    }
    return true;
}

} // namespace sy::bench
