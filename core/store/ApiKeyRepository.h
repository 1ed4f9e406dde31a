#pragma once

#include <QList>
#include <QString>
#include <optional>

namespace sy {

class Database;

// One API key as stored: never the key itself, only its hash (apikeys/ApiKey.h).
struct ApiKeyRecord
{
    QString id;
    QString name; // empty when none was given
    qint64 createdAtMs = 0;
    std::optional<qint64> expiresAtMs;
    std::optional<qint64> revokedAtMs;
    std::optional<qint64> lastUsedMs;
    std::optional<qint64> limitTokens;  // tokens per window, both set or neither
    std::optional<qint64> limitWindowS;

    enum class State { Active, Expired, Revoked };
    State state(qint64 nowMs) const;
    static QString stateName(State state);
};

// What a presented key is worth right now.
enum class ApiKeyVerdict { Valid, Unknown, Revoked, Expired, OverLimit };

// Pure decision, given the key's row (nullopt: no key with that hash) and the tokens it used in its window.
ApiKeyVerdict judgeApiKey(const std::optional<ApiKeyRecord> &key, qint64 nowMs, qint64 tokensUsedInWindow);

// The api_keys and api_key_requests tables (schema version 6).
class ApiKeyRepository
{
public:
    explicit ApiKeyRepository(Database &db) : m_db(db) {}

    bool insert(const ApiKeyRecord &key, const QString &keyHash, QString *error);
    std::optional<ApiKeyRecord> findByHash(const QString &keyHash, QString *error);
    std::optional<ApiKeyRecord> find(const QString &id, QString *error);
    // Oldest first.
    QList<ApiKeyRecord> list(QString *error);
    // Keys that are neither revoked nor expired.
    std::optional<int> countActive(qint64 nowMs, QString *error);
    // Sets revoked_at once; true when the key exists (revoked now or before).
    bool revoke(const QString &id, qint64 nowMs, QString *error);
    // Tokens of the requests this key started at or after `sinceMs`, as the request log booked them (requests
    // still in flight count once they settle).
    std::optional<qint64> tokensUsedSince(const QString &id, qint64 sinceMs, QString *error);
    // Notes a use of the key: last_used_ms, and (with a request id) which request it started; drops the key's
    // bookings older than the longest window.
    bool recordUse(const QString &id, const QString &requestId, qint64 nowMs, QString *error);

private:
    std::optional<ApiKeyRecord> findWhere(const QString &column, const QString &value, QString *error);

    Database &m_db;
};

} // namespace sy
