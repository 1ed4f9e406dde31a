#pragma once

#include "accounts/AuthTokens.h"
#include "accounts/TokenRefresher.h"

#include <QHash>
#include <QObject>
#include <QSet>
#include <QString>

#include <functional>
#include <optional>

namespace sy {

class Clock;
class SecretStore;
class StoreWorker;

// Single-flight token refresh (issue 3 point 4). Within this process concurrent requests for one account
// share one refresh and all get its result; across processes and replicas the durable claim in
// refresh_claims decides who refreshes, and the others wait for it and take the rotated tokens from the
// SecretStore. New tokens are stored before the claim is released, so another holder never refreshes with a
// refresh token the server has already consumed.
class RefreshCoordinator : public QObject
{
    Q_OBJECT

public:
    struct Outcome
    {
        bool ok = false;
        AuthTokens tokens; // when ok: the tokens to use from now on
        std::optional<qint64> expiresAtMs;
        RefreshFailure failure = RefreshFailure::None;
        QString error;   // OAuth code of a refused refresh, if any
        QString message; // for people; never token text
        // ok, but the new tokens could not be written to the SecretStore: they live only in this process.
        bool storeFailed = false;
        bool adopted = false; // another process had already refreshed: its stored tokens were taken
        QString egressReason; // the account's egress pool could not carry the refresh (nothing was sent)
    };
    using Done = std::function<void(const Outcome &outcome)>;

    RefreshCoordinator(const Clock &clock, StoreWorker *store, SecretStore *secrets, TokenRefresher *refresher,
                       QObject *parent = nullptr);

    void setClaimTtlMs(qint64 ms) { m_claimTtlMs = ms; }
    void setPollIntervalMs(int ms) { m_pollIntervalMs = ms; }

    bool inFlight(const QString &accountId) const { return m_flights.contains(accountId); }
    // Refreshes `current` (the tokens this process uses for the account); `done` runs once, later.
    void refresh(const QString &accountId, const AuthTokens &current, Done done);

private:
    struct Flight
    {
        AuthTokens tokens;
        QString owner;
        qint64 giveUpAtMs = 0;
        QList<Done> waiters;
    };

    void tryClaim(const QString &accountId);
    void onClaimed(const QString &accountId);
    void storeNewTokens(const QString &accountId, const RefreshResult &result);
    void releaseAndFinish(const QString &accountId, const Outcome &outcome);
    void finish(const QString &accountId, const Outcome &outcome);

    const Clock &m_clock;
    StoreWorker *m_store;
    SecretStore *m_secrets;
    TokenRefresher *m_refresher;
    qint64 m_claimTtlMs = 60000;
    int m_pollIntervalMs = 500;
    QHash<QString, Flight> m_flights;
    // SHA-256 of refresh tokens this process has used up, per account: a store that still holds one of them
    // (its write failed) must not be mistaken for a newer token another process stored.
    QHash<QString, QSet<QByteArray>> m_consumed;
};

} // namespace sy
