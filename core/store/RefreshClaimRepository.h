#pragma once

#include <QString>
#include <optional>

namespace sy {

class Database;

// Durable single-flight claims for token refresh (schema version 3, table refresh_claims). A claim is held by
// one owner until it releases it or it expires, so processes and replicas sharing the database never refresh
// the same (single-use) refresh token twice.
class RefreshClaimRepository
{
public:
    explicit RefreshClaimRepository(Database &db) : m_db(db) {}

    // Atomically takes the claim when nobody holds it or the holder's claim expired before nowMs.
    // True when `owner` now holds it; false (with *error empty) when another owner holds an unexpired claim.
    bool claim(const QString &accountId, const QString &owner, qint64 nowMs, qint64 ttlMs, QString *error);
    // Deletes the claim when `owner` holds it (a claim taken over after expiry is left to its new owner).
    bool release(const QString &accountId, const QString &owner, QString *error);
    // The expiry of the current claim, or nullopt when there is none.
    std::optional<qint64> heldUntil(const QString &accountId, QString *error);

private:
    Database &m_db;
};

} // namespace sy
