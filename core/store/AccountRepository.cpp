#include "store/AccountRepository.h"

#include "store/Database.h"
#include "store/SettingsRepository.h"
#include "store/SqlValues.h"

#include <QCryptographicHash>
#include <QSqlQuery>
#include <QSqlRecord>
#include <QStringList>

namespace sy {

using namespace sql;

namespace {

const QString kColumns = QStringLiteral(
    "id, chatgpt_account_id, user_id, email, alias, plan, status, status_reason, cooldown_until_ms, "
    "consecutive_failures, created_at_ms, updated_at_ms, last_selected_ms, token_expires_at_ms, last_refresh_ms, "
    "slot_count, version");

void setError(QString *error, const QString &text)
{
    if (error)
        *error = text;
}

AccountRecord recordFrom(const QSqlQuery &q)
{
    AccountRecord a;
    a.id = q.value(0).toString();
    a.chatgptAccountId = q.value(1).toString();
    a.userId = q.value(2).toString();
    a.email = q.value(3).toString();
    a.alias = optText(q.value(4));
    a.plan = q.value(5).toString();
    a.status = q.value(6).toString();
    a.statusReason = q.value(7).toString();
    a.cooldownUntilMs = optInt64(q.value(8));
    a.consecutiveFailures = q.value(9).toInt();
    a.createdAtMs = q.value(10).toLongLong();
    a.updatedAtMs = q.value(11).toLongLong();
    a.lastSelectedMs = optInt64(q.value(12));
    a.tokenExpiresAtMs = optInt64(q.value(13));
    a.lastRefreshMs = optInt64(q.value(14));
    a.slotCount = q.value(15).isNull() ? std::nullopt : std::optional<int>(q.value(15).toInt());
    a.version = q.value(16).toLongLong();
    return a;
}

QString describe(const AccountRecord &a)
{
    QStringList parts;
    if (a.alias)
        parts << QStringLiteral("alias %1").arg(*a.alias);
    if (!a.email.isEmpty())
        parts << a.email;
    parts << QStringLiteral("workspace %1").arg(a.chatgptAccountId);
    return QStringLiteral("%1 (%2)").arg(a.id, parts.join(QStringLiteral(", ")));
}

} // namespace

AccountRepository::AccountRepository(Database &db, const Clock &clock) : m_db(db), m_clock(clock) {}

QString AccountRepository::makeAccountId(const QString &chatgptAccountId, const QString &userId, int hexDigits)
{
    const QByteArray digest =
        QCryptographicHash::hash((chatgptAccountId + QLatin1Char('\n') + userId).toUtf8(), QCryptographicHash::Sha256)
            .toHex();
    return QStringLiteral("acc_") + QString::fromLatin1(digest.left(hexDigits));
}

bool AccountRepository::isValidAlias(const QString &alias, QString *why)
{
    if (alias.isEmpty() || alias.size() > 64) {
        setError(why, QStringLiteral("an alias has 1 to 64 characters"));
        return false;
    }
    for (const QChar c : alias) {
        if (c.isSpace() || c.category() == QChar::Other_Control) {
            setError(why, QStringLiteral("an alias cannot contain spaces or control characters"));
            return false;
        }
    }
    return true;
}

bool AccountRepository::checkAliasFree(const QString &alias, const QString &exceptId, QString *error)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q, QStringLiteral("SELECT id FROM accounts WHERE alias = ? AND id <> ?"), error))
        return false;
    q.addBindValue(alias);
    q.addBindValue(exceptId);
    if (!m_db.exec(q, error))
        return false;
    if (q.next()) {
        setError(error, QStringLiteral("alias '%1' is already used by %2").arg(alias, q.value(0).toString()));
        return false;
    }
    return true;
}

std::optional<AccountRepository::UpsertResult> AccountRepository::upsert(const Identity &identity, QString *error)
{
    if (identity.chatgptAccountId.isEmpty() || identity.userId.isEmpty()) {
        setError(error, QStringLiteral("an account needs a ChatGPT account id and a user id"));
        return std::nullopt;
    }
    QString why;
    if (identity.alias && !isValidAlias(*identity.alias, &why)) {
        setError(error, QStringLiteral("invalid alias '%1': %2").arg(*identity.alias, why));
        return std::nullopt;
    }
    Transaction tx(m_db);
    // Look-up and insert must not interleave with another replica importing the same account.
    if (!tx.begin(error) || !m_db.lockForWrite(QStringLiteral("accounts"), error))
        return std::nullopt;
    const qint64 now = m_clock.nowMs();

    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q,
                      QStringLiteral("SELECT id, chatgpt_account_id, user_id FROM accounts "
                                     "WHERE (chatgpt_account_id = ? AND user_id = ?) OR substr(id, 1, ?) = ?"),
                      error))
        return std::nullopt;
    const QString shortId = makeAccountId(identity.chatgptAccountId, identity.userId);
    q.addBindValue(identity.chatgptAccountId);
    q.addBindValue(identity.userId);
    q.addBindValue(shortId.size());
    q.addBindValue(shortId);
    if (!m_db.exec(q, error))
        return std::nullopt;
    QString existingId;
    QStringList takenIds; // ids of other accounts sharing our hash prefix (practically never)
    while (q.next()) {
        if (q.value(1).toString() == identity.chatgptAccountId && q.value(2).toString() == identity.userId)
            existingId = q.value(0).toString();
        else
            takenIds << q.value(0).toString();
    }
    q.finish();

    UpsertResult result;
    if (!existingId.isEmpty()) {
        if (identity.alias && !checkAliasFree(*identity.alias, existingId, error))
            return std::nullopt;
        if (!m_db.prepare(
                q,
                QStringLiteral(
                    "UPDATE accounts SET email = coalesce(?, email), plan = coalesce(?, plan), "
                    "alias = coalesce(?, alias), token_expires_at_ms = ?, last_refresh_ms = ?, updated_at_ms = ?, "
                    "version = version + 1, "
                    "status = CASE status WHEN 'reauth_required' THEN 'active' ELSE status END, "
                    "status_reason = CASE status WHEN 'reauth_required' THEN NULL ELSE status_reason END "
                    "WHERE id = ?"),
                error))
            return std::nullopt;
        q.addBindValue(nullableText(identity.email));
        q.addBindValue(nullableText(identity.plan));
        q.addBindValue(nullable(identity.alias));
        q.addBindValue(nullable(identity.tokenExpiresAtMs));
        q.addBindValue(nullable(identity.lastRefreshMs));
        q.addBindValue(now);
        q.addBindValue(existingId);
        result.id = existingId;
    } else {
        if (identity.alias && !checkAliasFree(*identity.alias, QString(), error))
            return std::nullopt;
        int digits = 12;
        result.id = shortId;
        while (takenIds.contains(result.id) && digits < 64)
            result.id = makeAccountId(identity.chatgptAccountId, identity.userId, digits += 4);
        result.created = true;
        if (!m_db.prepare(q,
                          QStringLiteral("INSERT INTO accounts (id, chatgpt_account_id, user_id, email, alias, plan, "
                                         "token_expires_at_ms, last_refresh_ms, created_at_ms, updated_at_ms) "
                                         "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"),
                          error))
            return std::nullopt;
        q.addBindValue(result.id);
        q.addBindValue(identity.chatgptAccountId);
        q.addBindValue(identity.userId);
        q.addBindValue(nullableText(identity.email));
        q.addBindValue(nullable(identity.alias));
        q.addBindValue(nullableText(identity.plan));
        q.addBindValue(nullable(identity.tokenExpiresAtMs));
        q.addBindValue(nullable(identity.lastRefreshMs));
        q.addBindValue(now);
        q.addBindValue(now);
    }
    if (!m_db.exec(q, error) || !m_db.bumpChangeCounter(error) || !tx.commit(error))
        return std::nullopt;
    return result;
}

QList<AccountRecord> AccountRepository::list(QString *error)
{
    QList<AccountRecord> accounts;
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q,
                      QStringLiteral("SELECT ") + kColumns +
                          QStringLiteral(" FROM accounts "
                                         "ORDER BY created_at_ms, id"),
                      error) ||
        !m_db.exec(q, error))
        return accounts;
    while (q.next())
        accounts << recordFrom(q);
    return accounts;
}

std::optional<AccountRecord> AccountRepository::find(const QString &id, QString *error)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q, QStringLiteral("SELECT ") + kColumns + QStringLiteral(" FROM accounts WHERE id = ?"), error))
        return std::nullopt;
    q.addBindValue(id);
    if (!m_db.exec(q, error))
        return std::nullopt;
    if (!q.next()) {
        setError(error, QStringLiteral("no account %1").arg(id));
        return std::nullopt;
    }
    return recordFrom(q);
}

AccountRepository::Lookup AccountRepository::findByRef(const QString &ref)
{
    Lookup lookup;
    const QString needle = ref.trimmed();
    if (needle.isEmpty()) {
        lookup.error = QStringLiteral("no account given");
        return lookup;
    }
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q,
                      QStringLiteral("SELECT ") + kColumns +
                          QStringLiteral(" FROM accounts WHERE id = ? OR alias = ? OR lower(email) = lower(?) "
                                         "ORDER BY created_at_ms, id"),
                      &lookup.error))
        return lookup;
    q.addBindValue(needle);
    q.addBindValue(needle);
    q.addBindValue(needle);
    if (!m_db.exec(q, &lookup.error))
        return lookup;
    while (q.next())
        lookup.matches << recordFrom(q);
    if (lookup.matches.size() == 1) {
        lookup.account = lookup.matches.first();
    } else if (lookup.matches.isEmpty()) {
        lookup.error = QStringLiteral("no account matches '%1' (give an id, alias or email)").arg(needle);
    } else {
        QStringList described;
        for (const AccountRecord &a : std::as_const(lookup.matches))
            described << describe(a);
        lookup.error =
            QStringLiteral("'%1' is ambiguous; it matches: %2").arg(needle, described.join(QStringLiteral("; ")));
    }
    return lookup;
}

bool AccountRepository::update(const QString &id, const QString &assignments, const QVariantList &values, bool bump,
                               QString *error)
{
    Transaction tx(m_db);
    if (!tx.begin(error))
        return false;
    QSqlQuery q = m_db.query();
    // The durable snapshot version moves with every change other processes must notice (a claim re-checks it).
    const QString versioned = bump ? assignments + QStringLiteral(", version = version + 1") : assignments;
    if (!m_db.prepare(q, QStringLiteral("UPDATE accounts SET ") + versioned + QStringLiteral(" WHERE id = ?"), error))
        return false;
    QVariantList bound;
    bound.reserve(values.size() + 1);
    bound << values << id;
    Database::bindAll(q, bound);
    if (!m_db.exec(q, error))
        return false;
    if (q.numRowsAffected() != 1) {
        setError(error, QStringLiteral("no account %1").arg(id));
        return false;
    }
    q.finish();
    if (bump && !m_db.bumpChangeCounter(error))
        return false;
    return tx.commit(error);
}

bool AccountRepository::setStatus(const QString &id, const QString &status, const QString &reason, QString *error)
{
    if (!isAccountStatusName(status)) {
        setError(error, QStringLiteral("unknown account status '%1'").arg(status));
        return false;
    }
    return update(id, QStringLiteral("status = ?, status_reason = ?, updated_at_ms = ?"),
                  {status, nullableText(reason), m_clock.nowMs()}, true, error);
}

bool AccountRepository::setAlias(const QString &id, const std::optional<QString> &alias, QString *error)
{
    QString why;
    if (alias && !isValidAlias(*alias, &why)) {
        setError(error, QStringLiteral("invalid alias '%1': %2").arg(*alias, why));
        return false;
    }
    Transaction tx(m_db);
    if (!tx.begin(error) || !m_db.lockForWrite(QStringLiteral("accounts"), error))
        return false;
    if (alias && !checkAliasFree(*alias, id, error))
        return false;
    return update(id, QStringLiteral("alias = ?, updated_at_ms = ?"), {nullable(alias), m_clock.nowMs()}, true,
                  error) &&
           tx.commit(error);
}

bool AccountRepository::setSlotCount(const QString &id, int slotCount, QString *error)
{
    if (slotCount < 1) {
        setError(error, QStringLiteral("an account needs at least one slot"));
        return false;
    }
    return update(id, QStringLiteral("slot_count = ?, updated_at_ms = ?"), {slotCount, m_clock.nowMs()}, true, error);
}

bool AccountRepository::setCooldown(const QString &id, std::optional<qint64> untilMs, int consecutiveFailures,
                                    QString *error)
{
    return update(id, QStringLiteral("cooldown_until_ms = ?, consecutive_failures = ?"),
                  {nullable(untilMs), consecutiveFailures}, false, error);
}

bool AccountRepository::touchSelected(const QString &id, QString *error, qint64 *storedMs)
{
    // Without update()'s savepoint: it runs in every claim's transaction, on a turn's way to its first byte, and
    // a failure fails the claim's whole job anyway. The stored time only grows, by at least 1 ms per claim: two
    // claims on one account never store the same value, so a given-up claim's undo (undoSelected) can tell
    // whether a later claim stored its own since (also within one millisecond). The stored value is read back
    // by a second statement (the row stays locked by the update until the transaction ends): an UPDATE ...
    // RETURNING cost SQLite 60-70 us more per claim at 256 streams (bench/HISTORY.md, "What changed").
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q,
                      QStringLiteral("UPDATE accounts SET last_selected_ms = CASE WHEN last_selected_ms >= ? "
                                     "THEN last_selected_ms + 1 ELSE ? END WHERE id = ?"),
                      error))
        return false;
    const qint64 now = m_clock.nowMs();
    Database::bindAll(q, {now, now, id});
    if (!m_db.exec(q, error))
        return false;
    if (q.numRowsAffected() != 1) {
        setError(error, QStringLiteral("no account %1").arg(id));
        return false;
    }
    if (!storedMs)
        return true;
    if (!m_db.prepare(q, QStringLiteral("SELECT last_selected_ms FROM accounts WHERE id = ?"), error))
        return false;
    Database::bindAll(q, {id});
    if (!m_db.exec(q, error))
        return false;
    if (!q.next()) {
        setError(error, QStringLiteral("no account %1").arg(id));
        return false;
    }
    *storedMs = q.value(0).toLongLong();
    q.finish();
    return true;
}

bool AccountRepository::touchSelectedAfterReading(const QString &id, std::optional<qint64> readMs, QString *error,
                                                  qint64 *storedMs)
{
    if (m_db.dialect() != Database::Dialect::Sqlite)
        return touchSelected(id, error, storedMs);
    // touchSelected()'s CASE, on the value read, without its read-back.
    const qint64 now = m_clock.nowMs();
    const qint64 stored = readMs && *readMs >= now ? *readMs + 1 : now;
    // Only over the value read: a row that holds another (a caller outside its transaction, a write in between)
    // takes touchSelected()'s way instead, which also reports an unknown account.
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q,
                      QStringLiteral("UPDATE accounts SET last_selected_ms = ? WHERE id = ? AND last_selected_ms IS ?"),
                      error))
        return false;
    Database::bindAll(q, {stored, id, nullable(readMs)});
    if (!m_db.exec(q, error))
        return false;
    if (q.numRowsAffected() != 1) {
        q.finish();
        return touchSelected(id, error, storedMs);
    }
    if (storedMs)
        *storedMs = stored;
    return true;
}

bool AccountRepository::undoSelected(const QString &id, std::optional<qint64> previousMs, qint64 storedMs,
                                     QString *error)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(
            q, QStringLiteral("UPDATE accounts SET last_selected_ms = ? WHERE id = ? AND last_selected_ms = ?"), error))
        return false;
    Database::bindAll(q, {nullable(previousMs), id, storedMs});
    return m_db.exec(q, error);
}

bool AccountRepository::setTokenTimes(const QString &id, std::optional<qint64> expiresAtMs,
                                      std::optional<qint64> lastRefreshMs, QString *error)
{
    return update(id, QStringLiteral("token_expires_at_ms = ?, last_refresh_ms = ?"),
                  {nullable(expiresAtMs), nullable(lastRefreshMs)}, false, error);
}

bool AccountRepository::setPlan(const QString &id, const QString &plan, QString *error)
{
    return update(id, QStringLiteral("plan = ?"), {nullableText(plan)}, false, error);
}

bool AccountRepository::remove(const QString &id, QString *error)
{
    Transaction tx(m_db);
    if (!tx.begin(error))
        return false;
    QSqlQuery q = m_db.query();
    // Usage, anchors and affinity go with the account (ON DELETE CASCADE); request_log has no foreign key.
    if (!m_db.prepare(q, QStringLiteral("DELETE FROM accounts WHERE id = ?"), error))
        return false;
    q.addBindValue(id);
    if (!m_db.exec(q, error))
        return false;
    if (q.numRowsAffected() != 1) {
        setError(error, QStringLiteral("no account %1").arg(id));
        return false;
    }
    q.finish();
    SettingsRepository settings(m_db);
    const std::optional<PinSetting> pin = settings.pin(error);
    if (pin && pin->accountId == id && !settings.clearPin(error))
        return false;
    return m_db.bumpChangeCounter(error) && tx.commit(error);
}

} // namespace sy
