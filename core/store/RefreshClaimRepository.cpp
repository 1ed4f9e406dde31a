#include "store/RefreshClaimRepository.h"

#include "store/Database.h"

#include <QSqlQuery>
#include <QVariant>

namespace sy {

bool RefreshClaimRepository::claim(const QString &accountId, const QString &owner, qint64 nowMs, qint64 ttlMs,
                                   QString *error)
{
    QSqlQuery q = m_db.query();
    // One statement: the insert, or the take-over of an expired claim, is atomic (SQLite's write lock;
    // PostgreSQL's row lock, with the WHERE re-checked on the latest row), so of two racers only one sees a
    // changed row.
    if (!m_db.prepare(q,
                      QStringLiteral("INSERT INTO refresh_claims (account_id, owner, expires_at_ms) VALUES (?, ?, ?) "
                                     "ON CONFLICT (account_id) DO UPDATE SET owner = excluded.owner, "
                                     "expires_at_ms = excluded.expires_at_ms "
                                     "WHERE refresh_claims.expires_at_ms < ?"),
                      error))
        return false;
    q.addBindValue(accountId);
    q.addBindValue(owner);
    q.addBindValue(nowMs + ttlMs);
    q.addBindValue(nowMs);
    if (!m_db.exec(q, error))
        return false;
    return q.numRowsAffected() == 1;
}

bool RefreshClaimRepository::release(const QString &accountId, const QString &owner, QString *error)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q, QStringLiteral("DELETE FROM refresh_claims WHERE account_id = ? AND owner = ?"), error))
        return false;
    q.addBindValue(accountId);
    q.addBindValue(owner);
    return m_db.exec(q, error);
}

std::optional<qint64> RefreshClaimRepository::heldUntil(const QString &accountId, QString *error)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q, QStringLiteral("SELECT expires_at_ms FROM refresh_claims WHERE account_id = ?"), error))
        return std::nullopt;
    q.addBindValue(accountId);
    if (!m_db.exec(q, error) || !q.next())
        return std::nullopt;
    return q.value(0).toLongLong();
}

} // namespace sy
