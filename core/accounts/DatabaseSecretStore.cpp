#include "accounts/DatabaseSecretStore.h"

#include "store/Database.h"
#include "util/Clock.h"

#include <QSqlQuery>
#include <QVariant>

namespace sy {

DatabaseSecretStore::DatabaseSecretStore(const QString &databaseLocation, const SecretKey &key, QObject *parent)
    : SecretStore(parent), m_location(databaseLocation), m_key(key)
{
}

DatabaseSecretStore::~DatabaseSecretStore() = default;

SecretOutcome DatabaseSecretStore::ensureOpen()
{
    if (m_db && m_db->isOpen())
        return SecretOutcome::success();
    auto db = std::make_unique<Database>();
    QString error;
    if (!db->open(m_location, &error))
        return SecretOutcome::failure(SecretError::NoBackend,
                                      QStringLiteral("the secret database cannot be opened: ") + error);
    m_db = std::move(db);
    return SecretOutcome::success();
}

SecretOutcome DatabaseSecretStore::sqlFailure(const QString &what, const QString &detail, bool busy) const
{
    if (busy)
        return SecretOutcome::failure(SecretError::Timeout,
                                      QStringLiteral("the database stayed locked while %1: %2").arg(what, detail));
    return SecretOutcome::failure(SecretError::Failed, QStringLiteral("database error while %1: %2").arg(what, detail));
}

SecretOutcome DatabaseSecretStore::readNow(const QString &accountId, AuthTokens *tokens)
{
    const SecretOutcome opened = ensureOpen();
    if (!opened.ok)
        return opened;
    const QString what = QStringLiteral("reading tokens");
    QSqlQuery q = m_db->query();
    QString error;
    if (!m_db->prepare(q,
                       QStringLiteral("SELECT format, key_id, nonce, ciphertext FROM account_secrets "
                                      "WHERE account_id = ?"),
                       &error))
        return sqlFailure(what, error, m_db->isBusy(q.lastError()));
    q.addBindValue(accountId);
    if (!m_db->exec(q, &error))
        return sqlFailure(what, error, m_db->isBusy(q.lastError()));
    if (!q.next())
        return SecretOutcome::failure(SecretError::NotFound,
                                      QStringLiteral("no tokens stored in the database for this account"));
    const int format = q.value(0).toInt();
    const QString keyId = q.value(1).toString();
    const SealedSecret sealed{q.value(2).toByteArray(), q.value(3).toByteArray()};
    q.finish();
    if (format != kFormat)
        return SecretOutcome::failure(
            SecretError::Failed,
            QStringLiteral("the stored tokens use format %1, which this Switchyard does not know").arg(format));
    if (keyId != m_key.id())
        return SecretOutcome::failure(SecretError::Failed,
                                      QStringLiteral("the stored tokens were sealed with another key (key id %1; "
                                                     "SWITCHYARD_SECRET_KEY_FILE holds key id %2)")
                                          .arg(keyId, m_key.id()));
    QByteArray blob;
    if (!openSecret(m_key, accountId, sealed, &blob))
        return SecretOutcome::failure(SecretError::Failed,
                                      QStringLiteral("the stored tokens fail authentication: altered, or stored for "
                                                     "another account"));
    QString parseError;
    AuthTokens parsed;
    const bool ok = deserializeTokens(blob, &parsed, &parseError);
    wipe(blob);
    if (!ok)
        return SecretOutcome::failure(SecretError::Failed,
                                      QStringLiteral("the stored tokens are unreadable: ") + parseError);
    *tokens = parsed;
    return SecretOutcome::success();
}

SecretOutcome DatabaseSecretStore::writeNow(const QString &accountId, const AuthTokens &tokens)
{
    const SecretOutcome opened = ensureOpen();
    if (!opened.ok)
        return opened;
    QByteArray blob = serializeTokens(tokens);
    const SealedSecret sealed = sealSecret(m_key, accountId, blob);
    wipe(blob);
    if (sealed.ciphertext.isEmpty())
        return SecretOutcome::failure(SecretError::Failed, QStringLiteral("the tokens could not be encrypted"));
    const QString what = QStringLiteral("writing tokens");
    QSqlQuery q = m_db->query();
    QString error;
    // One statement replaces the row atomically: a crash leaves either the old or the new tokens.
    if (!m_db->prepare(q,
                       QStringLiteral("INSERT INTO account_secrets "
                                      "(account_id, format, key_id, nonce, ciphertext, updated_at_ms) "
                                      "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (account_id) DO UPDATE SET "
                                      "format = excluded.format, key_id = excluded.key_id, nonce = excluded.nonce, "
                                      "ciphertext = excluded.ciphertext, updated_at_ms = excluded.updated_at_ms"),
                       &error))
        return sqlFailure(what, error, m_db->isBusy(q.lastError()));
    q.addBindValue(accountId);
    q.addBindValue(kFormat);
    q.addBindValue(m_key.id());
    q.addBindValue(sealed.nonce);
    q.addBindValue(sealed.ciphertext);
    q.addBindValue(QVariant::fromValue<qint64>(SystemClock::instance().nowMs()));
    if (!m_db->exec(q, &error))
        return sqlFailure(what, error, m_db->isBusy(q.lastError()));
    return SecretOutcome::success();
}

SecretOutcome DatabaseSecretStore::removeNow(const QString &accountId)
{
    const SecretOutcome opened = ensureOpen();
    if (!opened.ok)
        return opened;
    const QString what = QStringLiteral("removing tokens");
    QSqlQuery q = m_db->query();
    QString error;
    if (!m_db->prepare(q, QStringLiteral("DELETE FROM account_secrets WHERE account_id = ?"), &error))
        return sqlFailure(what, error, m_db->isBusy(q.lastError()));
    q.addBindValue(accountId);
    if (!m_db->exec(q, &error))
        return sqlFailure(what, error, m_db->isBusy(q.lastError()));
    return SecretOutcome::success();
}

void DatabaseSecretStore::readTokens(const QString &accountId, ReadCallback callback)
{
    if (!checkThread([callback](const SecretOutcome &o) { callback(o, {}); }))
        return;
    AuthTokens tokens;
    const SecretOutcome outcome = readNow(accountId, &tokens);
    QMetaObject::invokeMethod(
        this, [callback, outcome, tokens] { callback(outcome, tokens); }, Qt::QueuedConnection);
}

void DatabaseSecretStore::writeTokens(const QString &accountId, const AuthTokens &tokens, Callback callback)
{
    if (!checkThread(callback))
        return;
    const SecretOutcome outcome = writeNow(accountId, tokens);
    QMetaObject::invokeMethod(
        this, [callback, outcome] { callback(outcome); }, Qt::QueuedConnection);
}

void DatabaseSecretStore::removeTokens(const QString &accountId, Callback callback)
{
    if (!checkThread(callback))
        return;
    const SecretOutcome outcome = removeNow(accountId);
    QMetaObject::invokeMethod(
        this, [callback, outcome] { callback(outcome); }, Qt::QueuedConnection);
}

} // namespace sy
