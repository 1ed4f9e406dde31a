#include "store/RequestLogRepository.h"

#include "store/Database.h"
#include "store/SqlValues.h"
#include "store/UsageRollupRepository.h"
#include "util/Ids.h"

#include <QJsonDocument>
#include <QJsonValue>
#include <QSqlQuery>
#include <iterator>

namespace sy {

using namespace sql;

namespace {

const QString kColumns = QStringLiteral(
    "request_id, started_at_ms, route, model, session_key, account_id, account_alias, chatgpt_account_id, status, "
    "kill_stage, error_code, upstream_request_id, attempts_json, blocked_by_json, latency_queue_ms, "
    "latency_connect_ms, latency_first_event_ms, latency_total_ms, tokens_input, tokens_cached, tokens_output, "
    "tokens_reasoning, tokens_total");

void setError(QString *error, const QString &text)
{
    if (error)
        *error = text;
}

QJsonValue json(const std::optional<QString> &v)
{
    return v ? QJsonValue(*v) : QJsonValue(QJsonValue::Null);
}

QJsonValue json(const std::optional<qint64> &v)
{
    return v ? QJsonValue(*v) : QJsonValue(QJsonValue::Null);
}

QJsonArray attemptsJson(const QList<RequestAttempt> &attempts)
{
    QJsonArray array;
    for (const RequestAttempt &a : attempts) {
        array.append(QJsonObject{{QStringLiteral("account_id"), a.accountId},
                                 {QStringLiteral("egress_proxy"), json(a.egressProxy)},
                                 {QStringLiteral("outcome"), a.outcome},
                                 {QStringLiteral("elapsed_ms"), json(a.elapsedMs)}});
    }
    return array;
}

QList<RequestAttempt> attemptsFrom(const QString &text)
{
    QList<RequestAttempt> attempts;
    const QJsonArray array = QJsonDocument::fromJson(text.toUtf8()).array();
    for (const QJsonValue &v : array) {
        const QJsonObject o = v.toObject();
        RequestAttempt a;
        a.accountId = o.value(QStringLiteral("account_id")).toString();
        if (o.value(QStringLiteral("egress_proxy")).isString())
            a.egressProxy = o.value(QStringLiteral("egress_proxy")).toString();
        a.outcome = o.value(QStringLiteral("outcome")).toString();
        if (o.value(QStringLiteral("elapsed_ms")).isDouble())
            a.elapsedMs = o.value(QStringLiteral("elapsed_ms")).toInteger();
        attempts << a;
    }
    return attempts;
}

QStringList blockedByFrom(const QString &text)
{
    QStringList list;
    const QJsonArray array = QJsonDocument::fromJson(text.toUtf8()).array();
    for (const QJsonValue &v : array)
        list << v.toString();
    return list;
}

RequestLogRecord recordFrom(const QSqlQuery &q)
{
    RequestLogRecord r;
    r.requestId = q.value(0).toString();
    r.startedAtMs = q.value(1).toLongLong();
    r.route = q.value(2).toString();
    r.model = optText(q.value(3));
    r.sessionKey = optText(q.value(4));
    r.accountId = optText(q.value(5));
    r.accountAlias = optText(q.value(6));
    r.chatgptAccountId = optText(q.value(7));
    r.status = q.value(8).toString();
    r.killStage = optText(q.value(9));
    r.errorCode = optText(q.value(10));
    r.upstreamRequestId = optText(q.value(11));
    r.attempts = attemptsFrom(q.value(12).toString());
    r.blockedBy = blockedByFrom(q.value(13).toString());
    r.latency = {optInt64(q.value(14)), optInt64(q.value(15)), optInt64(q.value(16)), optInt64(q.value(17))};
    r.tokens = {optInt64(q.value(18)), optInt64(q.value(19)), optInt64(q.value(20)), optInt64(q.value(21)),
                optInt64(q.value(22))};
    return r;
}

} // namespace

bool RequestLogRecord::operator==(const RequestLogRecord &o) const
{
    return requestId == o.requestId && startedAtMs == o.startedAtMs && route == o.route && model == o.model &&
           sessionKey == o.sessionKey && accountId == o.accountId && accountAlias == o.accountAlias &&
           chatgptAccountId == o.chatgptAccountId && status == o.status && killStage == o.killStage &&
           errorCode == o.errorCode && upstreamRequestId == o.upstreamRequestId && attempts == o.attempts &&
           blockedBy == o.blockedBy && latency == o.latency && tokens == o.tokens;
}

QStringList RequestLogRecord::statusNames()
{
    return {QStringLiteral("completed"), QStringLiteral("failed"), QStringLiteral("cancelled"),
            QStringLiteral("timed_out"), QStringLiteral("rejected")};
}

QStringList RequestLogRecord::killStageNames()
{
    return {QStringLiteral("gate_wait"),   QStringLiteral("connect"),       QStringLiteral("pre_response"),
            QStringLiteral("stream_idle"), QStringLiteral("request_total"), QStringLiteral("stream_max"),
            QStringLiteral("egress")};
}

RequestLogRepository::RequestLogRepository(Database &db) : m_db(db) {}

bool RequestLogRepository::insert(const RequestLogRecord &r, QString *error)
{
    if (r.requestId.isEmpty() || r.route.isEmpty()) {
        setError(error, QStringLiteral("a request log row needs a request id and a route"));
        return false;
    }
    if (!RequestLogRecord::statusNames().contains(r.status)) {
        setError(error, QStringLiteral("invalid request status '%1'").arg(r.status));
        return false;
    }
    if (r.killStage && !RequestLogRecord::killStageNames().contains(*r.killStage)) {
        setError(error, QStringLiteral("invalid kill stage '%1'").arg(*r.killStage));
        return false;
    }
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q,
                      QStringLiteral("INSERT INTO request_log (") + kColumns +
                          QStringLiteral(") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, "
                                         "?, ?)"),
                      error))
        return false;
    QJsonArray blocked;
    for (const QString &b : r.blockedBy)
        blocked.append(b);
    const QVariant values[] = {
        r.requestId,
        QVariant::fromValue<qint64>(r.startedAtMs),
        r.route,
        nullable(r.model),
        nullable(r.sessionKey),
        nullable(r.accountId),
        nullable(r.accountAlias),
        nullable(r.chatgptAccountId),
        r.status,
        nullable(r.killStage),
        nullable(r.errorCode),
        nullable(r.upstreamRequestId),
        QString::fromUtf8(QJsonDocument(attemptsJson(r.attempts)).toJson(QJsonDocument::Compact)),
        QString::fromUtf8(QJsonDocument(blocked).toJson(QJsonDocument::Compact)),
        nullable(r.latency.queueMs),
        nullable(r.latency.connectMs),
        nullable(r.latency.firstEventMs),
        nullable(r.latency.totalMs),
        nullable(r.tokens.input),
        nullable(r.tokens.cached),
        nullable(r.tokens.output),
        nullable(r.tokens.reasoning),
        nullable(r.tokens.total),
    };
    Database::bindAll(q, values, qsizetype(std::size(values)));
    // The dashboard's hourly rollup moves with the row: both or neither.
    Transaction tx(m_db);
    return tx.begin(error) && m_db.exec(q, error) && UsageRollupRepository(m_db).add(r, error) && tx.commit(error);
}

QList<RequestLogRecord> RequestLogRepository::recent(int limit, QString *error)
{
    QList<RequestLogRecord> records;
    QSqlQuery q = m_db.query();
    // rowid breaks ties between requests started in the same millisecond: later insert, newer. (SQLite's
    // implicit rowid; on PostgreSQL an identity column of that name, see Schema.cpp.)
    if (!m_db.prepare(q,
                      QStringLiteral("SELECT ") + kColumns +
                          QStringLiteral(" FROM request_log ORDER BY started_at_ms DESC, rowid DESC LIMIT ?"),
                      error))
        return records;
    q.addBindValue(qMax(0, limit));
    if (!m_db.exec(q, error))
        return records;
    while (q.next())
        records << recordFrom(q);
    return records;
}

std::optional<RequestLogRecord> RequestLogRepository::find(const QString &requestId, QString *error)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(
            q, QStringLiteral("SELECT ") + kColumns + QStringLiteral(" FROM request_log WHERE request_id = ?"), error))
        return std::nullopt;
    q.addBindValue(requestId);
    if (!m_db.exec(q, error) || !q.next())
        return std::nullopt;
    return recordFrom(q);
}

QJsonObject RequestLogRepository::toJson(const RequestLogRecord &r)
{
    QJsonArray blocked;
    for (const QString &b : r.blockedBy)
        blocked.append(b);
    return QJsonObject{
        {QStringLiteral("request_id"), r.requestId},
        {QStringLiteral("started_at"), isoUtc(r.startedAtMs)},
        {QStringLiteral("route"), r.route},
        {QStringLiteral("model"), json(r.model)},
        {QStringLiteral("session_key"), json(r.sessionKey)},
        {QStringLiteral("account_id"), json(r.accountId)},
        {QStringLiteral("account_alias"), json(r.accountAlias)},
        {QStringLiteral("chatgpt_account_id"), json(r.chatgptAccountId)},
        {QStringLiteral("status"), r.status},
        {QStringLiteral("kill_stage"), json(r.killStage)},
        {QStringLiteral("error_code"), json(r.errorCode)},
        {QStringLiteral("upstream_request_id"), json(r.upstreamRequestId)},
        {QStringLiteral("attempts"), attemptsJson(r.attempts)},
        {QStringLiteral("blocked_by"), blocked},
        {QStringLiteral("latency_ms"), QJsonObject{{QStringLiteral("queue"), json(r.latency.queueMs)},
                                                   {QStringLiteral("connect"), json(r.latency.connectMs)},
                                                   {QStringLiteral("first_event"), json(r.latency.firstEventMs)},
                                                   {QStringLiteral("total"), json(r.latency.totalMs)}}},
        {QStringLiteral("tokens"), QJsonObject{{QStringLiteral("input"), json(r.tokens.input)},
                                               {QStringLiteral("cached"), json(r.tokens.cached)},
                                               {QStringLiteral("output"), json(r.tokens.output)},
                                               {QStringLiteral("reasoning"), json(r.tokens.reasoning)},
                                               {QStringLiteral("total"), json(r.tokens.total)}}},
    };
}

QJsonArray RequestLogRepository::toJson(const QList<RequestLogRecord> &records)
{
    QJsonArray array;
    for (const RequestLogRecord &r : records)
        array.append(toJson(r));
    return array;
}

bool RequestLogRepository::exists(const QString &requestId, QString *error)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q, QStringLiteral("SELECT count(*) FROM request_log WHERE request_id = ?"), error))
        return false;
    q.addBindValue(requestId);
    return m_db.exec(q, error) && q.next() && q.value(0).toInt() > 0;
}

bool RequestLogRepository::fillMissingModel(const QString &requestId, const QString &model, QString *error,
                                            bool *updated)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q, QStringLiteral("UPDATE request_log SET model = ? WHERE request_id = ? AND model IS NULL"),
                      error))
        return false;
    Database::bindAll(q, {model, requestId});
    if (!m_db.exec(q, error))
        return false;
    if (updated)
        *updated = q.numRowsAffected() > 0;
    return true;
}

} // namespace sy
