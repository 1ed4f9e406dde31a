#include "store/ApiKeyRepository.h"

#include "apikeys/ApiKey.h"
#include "store/Database.h"
#include "store/SqlValues.h"

#include <QSqlQuery>
#include <QVariant>

namespace sy {

namespace {

const char kColumns[] = "id, name, created_at_ms, expires_at_ms, revoked_at_ms, last_used_ms, limit_tokens, "
                        "limit_window_s";

ApiKeyRecord readRow(const QSqlQuery &q)
{
    ApiKeyRecord k;
    k.id = q.value(0).toString();
    k.name = q.value(1).toString();
    k.createdAtMs = q.value(2).toLongLong();
    k.expiresAtMs = sql::optInt64(q.value(3));
    k.revokedAtMs = sql::optInt64(q.value(4));
    k.lastUsedMs = sql::optInt64(q.value(5));
    k.limitTokens = sql::optInt64(q.value(6));
    k.limitWindowS = sql::optInt64(q.value(7));
    return k;
}

} // namespace

ApiKeyRecord::State ApiKeyRecord::state(qint64 nowMs) const
{
    if (revokedAtMs)
        return State::Revoked;
    if (expiresAtMs && *expiresAtMs <= nowMs)
        return State::Expired;
    return State::Active;
}

QString ApiKeyRecord::stateName(State state)
{
    switch (state) {
    case State::Active:
        return QStringLiteral("active");
    case State::Expired:
        return QStringLiteral("expired");
    case State::Revoked:
        return QStringLiteral("revoked");
    }
    return {};
}

ApiKeyVerdict judgeApiKey(const std::optional<ApiKeyRecord> &key, qint64 nowMs, qint64 tokensUsedInWindow)
{
    if (!key)
        return ApiKeyVerdict::Unknown;
    switch (key->state(nowMs)) {
    case ApiKeyRecord::State::Revoked:
        return ApiKeyVerdict::Revoked;
    case ApiKeyRecord::State::Expired:
        return ApiKeyVerdict::Expired;
    case ApiKeyRecord::State::Active:
        break;
    }
    if (key->limitTokens && key->limitWindowS && tokensUsedInWindow >= *key->limitTokens)
        return ApiKeyVerdict::OverLimit;
    return ApiKeyVerdict::Valid;
}

bool ApiKeyRepository::insert(const ApiKeyRecord &key, const QString &keyHash, QString *error)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q,
                      QStringLiteral("INSERT INTO api_keys (id, name, key_hash, created_at_ms, expires_at_ms, "
                                     "revoked_at_ms, last_used_ms, limit_tokens, limit_window_s) "
                                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"),
                      error))
        return false;
    q.addBindValue(key.id);
    q.addBindValue(sql::nullableText(key.name));
    q.addBindValue(keyHash);
    q.addBindValue(key.createdAtMs);
    q.addBindValue(sql::nullable(key.expiresAtMs));
    q.addBindValue(sql::nullable(key.revokedAtMs));
    q.addBindValue(sql::nullable(key.lastUsedMs));
    q.addBindValue(sql::nullable(key.limitTokens));
    q.addBindValue(sql::nullable(key.limitWindowS));
    return m_db.exec(q, error);
}

std::optional<ApiKeyRecord> ApiKeyRepository::findWhere(const QString &column, const QString &value, QString *error)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q, QStringLiteral("SELECT %1 FROM api_keys WHERE %2 = ?").arg(QLatin1String(kColumns), column),
                      error))
        return std::nullopt;
    q.addBindValue(value);
    if (!m_db.exec(q, error) || !q.next())
        return std::nullopt;
    return readRow(q);
}

std::optional<ApiKeyRecord> ApiKeyRepository::findByHash(const QString &keyHash, QString *error)
{
    return findWhere(QStringLiteral("key_hash"), keyHash, error);
}

std::optional<ApiKeyRecord> ApiKeyRepository::find(const QString &id, QString *error)
{
    return findWhere(QStringLiteral("id"), id, error);
}

QList<ApiKeyRecord> ApiKeyRepository::list(QString *error)
{
    QList<ApiKeyRecord> out;
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q, QStringLiteral("SELECT %1 FROM api_keys ORDER BY created_at_ms, id").arg(QLatin1String(kColumns)),
                      error) ||
        !m_db.exec(q, error))
        return out;
    while (q.next())
        out.append(readRow(q));
    return out;
}

std::optional<int> ApiKeyRepository::countActive(qint64 nowMs, QString *error)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q,
                      QStringLiteral("SELECT count(*) FROM api_keys WHERE revoked_at_ms IS NULL AND "
                                     "(expires_at_ms IS NULL OR expires_at_ms > ?)"),
                      error))
        return std::nullopt;
    q.addBindValue(nowMs);
    if (!m_db.exec(q, error) || !q.next())
        return std::nullopt;
    return int(q.value(0).toLongLong());
}

bool ApiKeyRepository::revoke(const QString &id, qint64 nowMs, QString *error)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q, QStringLiteral("UPDATE api_keys SET revoked_at_ms = ? WHERE id = ? AND revoked_at_ms IS NULL"),
                      error))
        return false;
    q.addBindValue(nowMs);
    q.addBindValue(id);
    if (!m_db.exec(q, error))
        return false;
    if (q.numRowsAffected() == 1)
        return true;
    return find(id, error).has_value();
}

std::optional<qint64> ApiKeyRepository::tokensUsedSince(const QString &id, qint64 sinceMs, QString *error)
{
    QSqlQuery q = m_db.query();
    // A row without a total (an old or partial usage report) still counts what it knows.
    if (!m_db.prepare(q,
                      QStringLiteral("SELECT coalesce(sum(coalesce(r.tokens_total, coalesce(r.tokens_input, 0) + "
                                     "coalesce(r.tokens_output, 0))), 0) FROM api_key_requests k "
                                     "JOIN request_log r ON r.request_id = k.request_id "
                                     "WHERE k.key_id = ? AND k.started_at_ms >= ?"),
                      error))
        return std::nullopt;
    q.addBindValue(id);
    q.addBindValue(sinceMs);
    if (!m_db.exec(q, error) || !q.next())
        return std::nullopt;
    return q.value(0).toLongLong();
}

bool ApiKeyRepository::recordUse(const QString &id, const QString &requestId, qint64 nowMs, QString *error)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q, QStringLiteral("UPDATE api_keys SET last_used_ms = ? WHERE id = ?"), error))
        return false;
    q.addBindValue(nowMs);
    q.addBindValue(id);
    if (!m_db.exec(q, error))
        return false;
    if (requestId.isEmpty())
        return true;
    QSqlQuery insert = m_db.query();
    if (!m_db.prepare(insert,
                      QStringLiteral("INSERT INTO api_key_requests (request_id, key_id, started_at_ms) VALUES (?, ?, ?) "
                                     "ON CONFLICT (request_id) DO NOTHING"),
                      error))
        return false;
    insert.addBindValue(requestId);
    insert.addBindValue(id);
    insert.addBindValue(nowMs);
    if (!m_db.exec(insert, error))
        return false;
    QSqlQuery prune = m_db.query();
    if (!m_db.prepare(prune, QStringLiteral("DELETE FROM api_key_requests WHERE key_id = ? AND started_at_ms < ?"),
                      error))
        return false;
    prune.addBindValue(id);
    prune.addBindValue(nowMs - kMaxLimitWindowS * 1000);
    return m_db.exec(prune, error);
}

} // namespace sy
