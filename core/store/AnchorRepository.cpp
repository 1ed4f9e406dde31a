#include "store/AnchorRepository.h"

#include "store/Database.h"
#include "store/SqlValues.h"

#include <QSqlQuery>
#include <QVariant>

namespace sy {

namespace {

bool upsertOwner(Database &db, const QString &sql, const QString &key, const QString &accountId, qint64 nowMs,
                 QString *error)
{
    QSqlQuery q = db.query();
    if (!db.prepare(q, sql, error))
        return false;
    q.addBindValue(key);
    q.addBindValue(accountId);
    q.addBindValue(QVariant::fromValue<qint64>(nowMs));
    return db.exec(q, error);
}

std::optional<QString> lookupOwner(Database &db, const QString &sql, const QString &key, QString *error)
{
    QSqlQuery q = db.query();
    if (!db.prepare(q, sql, error))
        return std::nullopt;
    q.addBindValue(key);
    if (!db.exec(q, error) || !q.next())
        return std::nullopt;
    return q.value(0).toString();
}

} // namespace

AnchorRepository::AnchorRepository(Database &db, const Clock &clock) : m_db(db), m_clock(clock) {}

bool AnchorRepository::remember(const QString &responseId, const QString &accountId, QString *error)
{
    return upsertOwner(m_db,
                       QStringLiteral("INSERT INTO response_anchors (response_id, account_id, created_at_ms) "
                                      "VALUES (?, ?, ?) ON CONFLICT (response_id) DO UPDATE SET "
                                      "account_id = excluded.account_id, created_at_ms = excluded.created_at_ms"),
                       responseId, accountId, m_clock.nowMs(), error);
}

bool AnchorRepository::rememberServed(const AnchorRecord &a, QString *error)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q,
                      QStringLiteral("INSERT INTO response_anchors (response_id, account_id, created_at_ms, lineage, "
                                     "session_key, slot_index, owner_epoch, provenance) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
                                     "ON CONFLICT (response_id) DO UPDATE SET account_id = excluded.account_id, "
                                     "lineage = excluded.lineage, session_key = excluded.session_key, "
                                     "slot_index = excluded.slot_index, owner_epoch = excluded.owner_epoch, "
                                     "provenance = excluded.provenance"),
                      error))
        return false;
    Database::bindAll(q,
                      {a.responseId, a.accountId, m_clock.nowMs(), sql::nullableText(a.lineage),
                       sql::nullableText(a.sessionKey), sql::nullable(a.slot), sql::nullable(a.epoch), a.provenance});
    return m_db.exec(q, error);
}

std::optional<AnchorRecord> AnchorRepository::find(const QString &responseId, QString *error)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q,
                      QStringLiteral("SELECT account_id, lineage, session_key, slot_index, owner_epoch, provenance "
                                     "FROM response_anchors WHERE response_id = ?"),
                      error))
        return std::nullopt;
    q.addBindValue(responseId);
    if (!m_db.exec(q, error) || !q.next())
        return std::nullopt;
    AnchorRecord a;
    a.responseId = responseId;
    a.accountId = q.value(0).toString();
    a.lineage = q.value(1).toString();
    a.sessionKey = q.value(2).toString();
    a.slot = sql::optInt(q.value(3));
    a.epoch = sql::optInt64(q.value(4));
    a.provenance = q.value(5).toString();
    return a;
}

std::optional<QString> AnchorRepository::ownerOf(const QString &responseId, QString *error)
{
    return lookupOwner(m_db, QStringLiteral("SELECT account_id FROM response_anchors WHERE response_id = ?"),
                       responseId, error);
}

AffinityRepository::AffinityRepository(Database &db, const Clock &clock) : m_db(db), m_clock(clock) {}

bool AffinityRepository::set(const QString &sessionKey, const QString &accountId, QString *error)
{
    return upsertOwner(m_db,
                       QStringLiteral("INSERT INTO session_affinity (session_key, account_id, updated_at_ms) "
                                      "VALUES (?, ?, ?) ON CONFLICT (session_key) DO UPDATE SET "
                                      "account_id = excluded.account_id, updated_at_ms = excluded.updated_at_ms"),
                       sessionKey, accountId, m_clock.nowMs(), error);
}

std::optional<QString> AffinityRepository::accountFor(const QString &sessionKey, QString *error)
{
    return lookupOwner(m_db, QStringLiteral("SELECT account_id FROM session_affinity WHERE session_key = ?"),
                       sessionKey, error);
}

bool AffinityRepository::clear(const QString &sessionKey, QString *error)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q, QStringLiteral("DELETE FROM session_affinity WHERE session_key = ?"), error))
        return false;
    q.addBindValue(sessionKey);
    return m_db.exec(q, error);
}

} // namespace sy
