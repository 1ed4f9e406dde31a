#include "accounts/RefreshCoordinator.h"

#include "accounts/IdToken.h"
#include "accounts/SecretStore.h"
#include "store/AccountRepository.h"
#include "store/RefreshClaimRepository.h"
#include "store/StoreWorker.h"
#include "util/Clock.h"

#include <QCoreApplication>
#include <QCryptographicHash>
#include <QLoggingCategory>
#include <QTimer>
#include <QUuid>

Q_DECLARE_LOGGING_CATEGORY(lcRefresh)

namespace sy {

namespace {

QByteArray digest(const QString &token)
{
    return QCryptographicHash::hash(token.toUtf8(), QCryptographicHash::Sha256);
}

} // namespace

RefreshCoordinator::RefreshCoordinator(const Clock &clock, StoreWorker *store, SecretStore *secrets,
                                       TokenRefresher *refresher, QObject *parent)
    : QObject(parent), m_clock(clock), m_store(store), m_secrets(secrets), m_refresher(refresher)
{
}

void RefreshCoordinator::refresh(const QString &accountId, const AuthTokens &current, Done done)
{
    auto it = m_flights.find(accountId);
    if (it != m_flights.end()) {
        it->waiters.append(std::move(done));
        return;
    }
    Flight f;
    f.tokens = current;
    f.owner = QStringLiteral("%1/%2").arg(QCoreApplication::applicationPid())
                  .arg(QUuid::createUuid().toString(QUuid::WithoutBraces));
    // Waiting for another holder is bounded: its claim expires after the TTL, then we may take it over.
    f.giveUpAtMs = m_clock.monotonicMs() + 2 * m_claimTtlMs;
    f.waiters.append(std::move(done));
    m_flights.insert(accountId, f);
    tryClaim(accountId);
}

void RefreshCoordinator::tryClaim(const QString &accountId)
{
    const QString owner = m_flights.value(accountId).owner;
    const qint64 now = m_clock.nowMs();
    const qint64 ttl = m_claimTtlMs;
    auto claimed = std::make_shared<bool>(false);
    m_store->submit(
        [accountId, owner, now, ttl, claimed](Database &db, QString *error) {
            *claimed = RefreshClaimRepository(db).claim(accountId, owner, now, ttl, error);
            return error->isEmpty();
        },
        this,
        [this, accountId, claimed](bool ok, const QString &error) {
            if (!m_flights.contains(accountId))
                return;
            if (!ok) {
                Outcome o;
                o.failure = RefreshFailure::Transient;
                o.message = QStringLiteral("could not claim the refresh in the database: %1").arg(error);
                finish(accountId, o);
                return;
            }
            if (*claimed) {
                onClaimed(accountId);
                return;
            }
            if (m_clock.monotonicMs() >= m_flights.value(accountId).giveUpAtMs) {
                Outcome o;
                o.failure = RefreshFailure::Transient;
                o.message = QStringLiteral("another process kept the refresh claim for this account");
                finish(accountId, o);
                return;
            }
            // Another process is refreshing: wait for it to release, then take what it stored.
            QTimer::singleShot(m_pollIntervalMs, this, [this, accountId] {
                if (m_flights.contains(accountId))
                    tryClaim(accountId);
            });
        });
}

void RefreshCoordinator::onClaimed(const QString &accountId)
{
    // The stored tokens are the truth: another process may have rotated them since we read ours, and
    // refreshing with the consumed token would get the account logged out.
    m_secrets->readTokens(accountId, [this, accountId](const SecretOutcome &read, const AuthTokens &stored) {
        if (!m_flights.contains(accountId))
            return;
        Flight &f = m_flights[accountId];
        if (read.ok && !stored.refreshToken.isEmpty() && stored.refreshToken != f.tokens.refreshToken &&
            !m_consumed.value(accountId).contains(digest(stored.refreshToken))) {
            Outcome o;
            o.ok = true;
            o.adopted = true;
            o.tokens = stored;
            o.expiresAtMs = jwtExpiryMs(stored.accessToken);
            releaseAndFinish(accountId, o);
            return;
        }
        if (!read.ok)
            qCWarning(lcRefresh).noquote() << "could not re-read the stored tokens of" << accountId
                                           << "before refreshing:" << read.errorText;
        m_refresher->refresh(accountId, f.tokens, [this, accountId](const RefreshResult &result) {
            if (!m_flights.contains(accountId))
                return;
            if (!result.ok) {
                Outcome o;
                o.failure = result.failure;
                o.error = result.error;
                o.message = result.message;
                o.egressReason = result.egressReason;
                releaseAndFinish(accountId, o);
                return;
            }
            m_consumed[accountId].insert(digest(m_flights.value(accountId).tokens.refreshToken));
            storeNewTokens(accountId, result);
        });
    });
}

void RefreshCoordinator::storeNewTokens(const QString &accountId, const RefreshResult &result)
{
    const AuthTokens tokens = result.tokens;
    m_secrets->writeTokens(accountId, tokens, [this, accountId, tokens](const SecretOutcome &written) {
        if (!m_flights.contains(accountId))
            return;
        Outcome o;
        o.ok = true;
        o.tokens = tokens;
        o.expiresAtMs = jwtExpiryMs(tokens.accessToken);
        if (!written.ok) {
            // The server has consumed the old refresh token; the new one lives only in this process now.
            // The claim stays until its TTL so that no other process refreshes with the consumed token.
            qCCritical(lcRefresh).noquote() << "refresh of" << accountId
                                            << "succeeded but storing the new tokens failed:" << written.errorText;
            o.storeFailed = true;
            o.message = QStringLiteral("the token refresh succeeded but the new tokens could not be stored (%1)")
                            .arg(written.errorText);
            finish(accountId, o);
            return;
        }
        const qint64 now = m_clock.nowMs();
        const std::optional<qint64> expires = o.expiresAtMs;
        m_store->submit(
            [accountId, expires, now](Database &db, QString *error) {
                return AccountRepository(db).setTokenTimes(accountId, expires, now, error);
            },
            this, [accountId](bool ok, const QString &error) {
                if (!ok)
                    qCWarning(lcRefresh).noquote() << "could not record the refresh time of" << accountId << error;
            });
        releaseAndFinish(accountId, o);
    });
}

void RefreshCoordinator::releaseAndFinish(const QString &accountId, const Outcome &outcome)
{
    const QString owner = m_flights.value(accountId).owner;
    m_store->submit(
        [accountId, owner](Database &db, QString *error) {
            return RefreshClaimRepository(db).release(accountId, owner, error);
        },
        this, [this, accountId, outcome](bool ok, const QString &error) {
            if (!ok)
                qCWarning(lcRefresh).noquote() << "could not release the refresh claim of" << accountId
                                               << "(it expires by itself):" << error;
            finish(accountId, outcome);
        });
}

void RefreshCoordinator::finish(const QString &accountId, const Outcome &outcome)
{
    const QList<Done> waiters = m_flights.take(accountId).waiters;
    for (const Done &d : waiters) {
        if (d)
            d(outcome);
    }
}

} // namespace sy
