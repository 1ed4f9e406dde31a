#pragma once

#include "accounts/SecretCipher.h"
#include "accounts/SecretStore.h"

#include <memory>

namespace sy {

class Database;

// Tokens in the Switchyard database itself (SWITCHYARD_SECRET_BACKEND=database, DESIGN.md "Secrets"), for
// replicas that share one database and so must share the rotating refresh tokens. Each account's token
// blob (serializeTokens) is sealed with XChaCha20-Poly1305 under the key from SWITCHYARD_SECRET_KEY_FILE,
// with a fresh random nonce per write and the account id as associated data, and kept in the table
// account_secrets (schema version 2). The database never sees a token in clear; a blob copied to another
// account, altered, or read with another key fails to open. Each row records the key's id (a fingerprint),
// so a wrong key file is reported as such.
//
// Threading: the store opens its own database connection lazily, on first use, on the thread it lives in
// (so it may be created on one thread and moved to another before use), and must be destroyed there.
// Calls run synchronously against the database (bounded by SQLite's 5 s busy timeout or PostgreSQL's 5 s lock
// timeout, reported as SecretError::Timeout); callbacks are queued as the SecretStore contract requires. The
// database is a SQLite file or a PostgreSQL URL (Database::open); on PostgreSQL the sealed blobs are BYTEA.
class DatabaseSecretStore final : public SecretStore
{
    Q_OBJECT
public:
    // Format of the rows this build writes (the `format` column).
    static constexpr int kFormat = 1;

    DatabaseSecretStore(const QString &databaseLocation, const SecretKey &key, QObject *parent = nullptr);
    ~DatabaseSecretStore() override;

    void readTokens(const QString &accountId, ReadCallback callback) override;
    void writeTokens(const QString &accountId, const AuthTokens &tokens, Callback callback) override;
    void removeTokens(const QString &accountId, Callback callback) override;

    // What Database::open() is given: a SQLite path or a PostgreSQL URL (with its password: never print it).
    QString databaseLocation() const { return m_location; }
    QString keyId() const { return m_key.id(); }

private:
    SecretOutcome ensureOpen();
    SecretOutcome readNow(const QString &accountId, AuthTokens *tokens);
    SecretOutcome writeNow(const QString &accountId, const AuthTokens &tokens);
    SecretOutcome removeNow(const QString &accountId);
    SecretOutcome sqlFailure(const QString &what, const QString &detail, bool busy) const;

    QString m_location;
    SecretKey m_key;
    std::unique_ptr<Database> m_db;
};

} // namespace sy
