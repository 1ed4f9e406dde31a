#include "store/UsageRollupRepository.h"

#include "store/Database.h"
#include "store/SqlValues.h"

#include <QSqlQuery>

namespace sy {

using namespace sql;

void UsageRollupRow::add(const UsageRollupRow &o)
{
    requests += o.requests;
    errors += o.errors;
    input += o.input;
    cached += o.cached;
    output += o.output;
    reasoning += o.reasoning;
    total += o.total;
}

UsageRollupRepository::UsageRollupRepository(Database &db) : m_db(db) {}

bool UsageRollupRepository::add(const RequestLogRecord &r, QString *error)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q,
                      QStringLiteral("INSERT INTO usage_rollup_hourly (hour_start_ms, account_id, requests, errors, "
                                     "tokens_input, tokens_cached, tokens_output, tokens_reasoning, tokens_total) "
                                     "VALUES (?, coalesce(?, ''), 1, ?, ?, ?, ?, ?, ?) "
                                     "ON CONFLICT (hour_start_ms, account_id) DO UPDATE SET "
                                     "requests = usage_rollup_hourly.requests + 1, "
                                     "errors = usage_rollup_hourly.errors + excluded.errors, "
                                     "tokens_input = usage_rollup_hourly.tokens_input + excluded.tokens_input, "
                                     "tokens_cached = usage_rollup_hourly.tokens_cached + excluded.tokens_cached, "
                                     "tokens_output = usage_rollup_hourly.tokens_output + excluded.tokens_output, "
                                     "tokens_reasoning = usage_rollup_hourly.tokens_reasoning + "
                                     "excluded.tokens_reasoning, "
                                     "tokens_total = usage_rollup_hourly.tokens_total + excluded.tokens_total"),
                      error))
        return false;
    // Unknown token counts add nothing (the request log keeps them NULL).
    auto count = [](const std::optional<qint64> &v) { return QVariant::fromValue<qint64>(v.value_or(0)); };
    Database::bindAll(q, {QVariant::fromValue<qint64>(hourStart(r.startedAtMs)), r.accountId.value_or(QString()),
                          r.status == QLatin1String("completed") ? 0 : 1, count(r.tokens.input), count(r.tokens.cached),
                          count(r.tokens.output), count(r.tokens.reasoning), count(r.tokens.total)});
    return m_db.exec(q, error);
}

QList<UsageRollupRow> UsageRollupRepository::hourly(qint64 fromMs, qint64 toMs, QString *error)
{
    QList<UsageRollupRow> rows;
    QSqlQuery q = m_db.query();
    q.setForwardOnly(true); // a month is ~2,000 rows read once: Qt need not keep a copy of each
    if (!m_db.prepare(q,
                      QStringLiteral("SELECT hour_start_ms, account_id, requests, errors, tokens_input, tokens_cached, "
                                     "tokens_output, tokens_reasoning, tokens_total FROM usage_rollup_hourly "
                                     "WHERE hour_start_ms >= ? AND hour_start_ms < ? "
                                     "ORDER BY hour_start_ms, account_id"),
                      error))
        return rows;
    q.addBindValue(QVariant::fromValue<qint64>(fromMs));
    q.addBindValue(QVariant::fromValue<qint64>(toMs));
    if (!m_db.exec(q, error))
        return rows;
    while (q.next()) {
        UsageRollupRow r;
        r.hourStartMs = q.value(0).toLongLong();
        r.accountId = q.value(1).toString();
        r.requests = q.value(2).toLongLong();
        r.errors = q.value(3).toLongLong();
        r.input = q.value(4).toLongLong();
        r.cached = q.value(5).toLongLong();
        r.output = q.value(6).toLongLong();
        r.reasoning = q.value(7).toLongLong();
        r.total = q.value(8).toLongLong();
        rows << r;
    }
    return rows;
}

UsageRollupRow UsageRollupRepository::total(qint64 fromMs, qint64 toMs, QString *error)
{
    UsageRollupRow sum;
    sum.hourStartMs = fromMs;
    for (const UsageRollupRow &r : hourly(fromMs, toMs, error))
        sum.add(r);
    return sum;
}

bool UsageRollupRepository::recordSample(const UsageRecord &u, QString *error)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q,
                      QStringLiteral("INSERT INTO usage_samples (account_id, bucket_ms, observed_at_ms, "
                                     "primary_used_percent, primary_reset_at_ms, secondary_used_percent, "
                                     "secondary_reset_at_ms) VALUES (?, ?, ?, ?, ?, ?, ?) "
                                     "ON CONFLICT (account_id, bucket_ms) DO UPDATE SET "
                                     "observed_at_ms = excluded.observed_at_ms, "
                                     "primary_used_percent = excluded.primary_used_percent, "
                                     "primary_reset_at_ms = excluded.primary_reset_at_ms, "
                                     "secondary_used_percent = excluded.secondary_used_percent, "
                                     "secondary_reset_at_ms = excluded.secondary_reset_at_ms"),
                      error))
        return false;
    q.addBindValue(u.accountId);
    q.addBindValue(QVariant::fromValue<qint64>(u.observedAtMs - u.observedAtMs % kSampleBucketMs));
    q.addBindValue(QVariant::fromValue<qint64>(u.observedAtMs));
    q.addBindValue(nullable(u.primary.usedPercent));
    q.addBindValue(nullable(u.primary.resetAtMs));
    q.addBindValue(nullable(u.secondary.usedPercent));
    q.addBindValue(nullable(u.secondary.resetAtMs));
    if (!m_db.exec(q, error))
        return false;
    QSqlQuery prune = m_db.query();
    if (!m_db.prepare(prune, QStringLiteral("DELETE FROM usage_samples WHERE account_id = ? AND bucket_ms < ?"), error))
        return false;
    prune.addBindValue(u.accountId);
    prune.addBindValue(QVariant::fromValue<qint64>(u.observedAtMs - kSampleRetentionMs));
    return m_db.exec(prune, error);
}

QList<UsageSample> UsageRollupRepository::samples(qint64 fromMs, qint64 toMs, const QString &accountId, QString *error)
{
    QList<UsageSample> out;
    QSqlQuery q = m_db.query();
    const QString filter = accountId.isEmpty() ? QString() : QStringLiteral(" AND account_id = ?");
    if (!m_db.prepare(
            q,
            QStringLiteral("SELECT account_id, observed_at_ms, primary_used_percent, primary_reset_at_ms, "
                           "secondary_used_percent, secondary_reset_at_ms FROM usage_samples "
                           "WHERE bucket_ms >= ? AND bucket_ms < ? AND observed_at_ms >= ? AND observed_at_ms < ?") +
                filter + QStringLiteral(" ORDER BY account_id, observed_at_ms"),
            error))
        return out;
    // bucket_ms (indexed) narrows the scan; observed_at_ms is the exact bound.
    q.addBindValue(QVariant::fromValue<qint64>(fromMs - fromMs % kSampleBucketMs));
    q.addBindValue(QVariant::fromValue<qint64>(toMs));
    q.addBindValue(QVariant::fromValue<qint64>(fromMs));
    q.addBindValue(QVariant::fromValue<qint64>(toMs));
    if (!accountId.isEmpty())
        q.addBindValue(accountId);
    if (!m_db.exec(q, error))
        return out;
    while (q.next()) {
        UsageSample s;
        s.accountId = q.value(0).toString();
        s.observedAtMs = q.value(1).toLongLong();
        s.primary.usedPercent = optDouble(q.value(2));
        s.primary.resetAtMs = optInt64(q.value(3));
        s.secondary.usedPercent = optDouble(q.value(4));
        s.secondary.resetAtMs = optInt64(q.value(5));
        out << s;
    }
    return out;
}

} // namespace sy
