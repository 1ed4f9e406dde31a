// AccountPool: OAuth token refresh (issue 3 point 4), proactive and after an upstream 401.
#include "api/AccountPool.h"

#include "store/AccountRepository.h"
#include "store/StoreWorker.h"
#include "upstream/egress/EgressBudget.h"
#include "upstream/egress/EgressSelector.h"
#include "util/Clock.h"

#include <QLoggingCategory>
#include <QPointer>

Q_DECLARE_LOGGING_CATEGORY(lcPool)

namespace sy {

namespace {

constexpr qint64 kRefreshBeforeExpiryMs = 5 * 60 * 1000;
constexpr qint64 kRefreshMaxAgeMs = 8LL * 24 * 3600 * 1000;
constexpr qint64 kRetryAfterTransientMs = 5 * 60 * 1000;
// A refresh the egress pool refused is tried again once a probe round finds the pool usable, and at the
// latest this much later.
constexpr qint64 kRetryAfterEgressMs = 60 * 1000;

} // namespace

void AccountPool::refreshTokens(const QString &accountId, std::function<void(bool ok)> done,
                                const QString &staleAccessToken)
{
    const Account *a = account(accountId);
    auto later = [this, done](bool ok) {
        QMetaObject::invokeMethod(this, [done, ok] { if (done) done(ok); }, Qt::QueuedConnection);
    };
    if (!a || !a->tokensReady || a->tokens.refreshToken.isEmpty()) {
        later(false);
        return;
    }
    if (!staleAccessToken.isEmpty() && a->tokens.accessToken != staleAccessToken) {
        later(true); // refreshed since that request was sent: just use the current token
        return;
    }
    QPointer<AccountPool> self(this);
    m_refresh->refresh(accountId, a->tokens, [self, accountId, done](const RefreshCoordinator::Outcome &o) {
        if (self)
            self->applyRefresh(accountId, o);
        if (done)
            done(o.ok);
    });
}

void AccountPool::setEgress(EgressSelector *egress)
{
    m_egress = egress;
    if (!egress)
        return;
    connect(egress, &EgressSelector::healthChanged, this, [this] {
        bool retry = false;
        for (auto it = m_refreshEgress.cbegin(); it != m_refreshEgress.cend(); ++it) {
            if (outboundRoute(it.key()).allowed()) {
                m_refreshRetryAtMs.remove(it.key());
                retry = true;
            }
        }
        if (retry)
            refreshDueAccounts();
    });
}

EgressRoute AccountPool::outboundRoute(const QString &accountId) const
{
    const Account *a = account(accountId);
    const std::optional<QString> alias = a ? a->record.alias : std::nullopt;
    if (m_egress)
        return m_egress->backgroundRoute(accountId, alias);
    EgressRoute route;
    route.pool = m_config->egress.poolForAccount(accountId, alias);
    if (!route.pool.isEmpty()) {
        route.kind = EgressRoute::Kind::Refused;
        route.reason = blocked::noHealthyProxy;
        route.detail = QStringLiteral("the egress pools have not been probed yet");
    }
    return route;
}

void AccountPool::refreshDueAccounts()
{
    const qint64 now = m_clock.nowMs();
    for (const Account &a : std::as_const(m_accounts)) {
        const QString &status = a.record.status;
        if (!a.tokensReady || status == QLatin1String("reauth_required") || status == QLatin1String("deactivated") ||
            m_refresh->inFlight(a.record.id) || m_refreshRetryAtMs.value(a.record.id, 0) > now)
            continue;
        const bool expiring = a.record.tokenExpiresAtMs && *a.record.tokenExpiresAtMs - now < kRefreshBeforeExpiryMs;
        const bool old = a.record.lastRefreshMs && now - *a.record.lastRefreshMs > kRefreshMaxAgeMs;
        if (!expiring && !old)
            continue;
        qCInfo(lcPool).noquote() << "refreshing the tokens of" << a.record.id
                                 << (expiring ? "(access token expires soon)" : "(last refresh 8 days ago)");
        refreshTokens(a.record.id, {});
    }
}

void AccountPool::applyRefresh(const QString &accountId, const RefreshCoordinator::Outcome &o)
{
    const int i = m_index.value(accountId, -1);
    if (i < 0)
        return;
    Account &a = m_accounts[i];
    const qint64 now = m_clock.nowMs();
    if (o.ok) {
        m_refreshRetryAtMs.remove(accountId);
        m_refreshEgress.remove(accountId);
        a.tokens = o.tokens;
        a.record.tokenExpiresAtMs = o.expiresAtMs;
        a.record.lastRefreshMs = now;
        if (o.storeFailed)
            setStatus(a, a.record.status,
                      o.message + QStringLiteral("; the account keeps working until Switchyard restarts, then it "
                                                 "needs 'switchyard accounts login' again"));
        qCInfo(lcPool).noquote() << "tokens of" << accountId
                                 << (o.adopted ? "were refreshed by another process" : "refreshed");
        emit accountsChanged();
        emit slotFreed();
        return;
    }
    if (!o.egressReason.isEmpty()) {
        // Fail closed: nothing went out, the tokens are untouched and the account stays as it is.
        m_refreshEgress.insert(accountId, {o.egressReason, o.message});
        m_refreshRetryAtMs.insert(accountId, now + kRetryAfterEgressMs);
        qCWarning(lcPool).noquote() << "token refresh of" << accountId
                                    << "blocked by its egress pool, will retry:" << o.message;
        emit accountsChanged();
        return;
    }
    m_refreshEgress.remove(accountId);
    switch (o.failure) {
    case RefreshFailure::Permanent:
        setStatus(a, QStringLiteral("reauth_required"),
                  QStringLiteral("The sign-in expired or was revoked (token refresh refused: %1); sign in again "
                                 "with 'switchyard accounts login'.")
                      .arg(o.error.isEmpty() ? o.message : o.error));
        break;
    case RefreshFailure::Deactivated:
        setStatus(a, QStringLiteral("deactivated"),
                  QStringLiteral("OpenAI reports the account as deactivated (%1).")
                      .arg(o.error.isEmpty() ? o.message : o.error));
        break;
    case RefreshFailure::Transient:
    case RefreshFailure::None:
        m_refreshRetryAtMs.insert(accountId, now + kRetryAfterTransientMs);
        qCWarning(lcPool).noquote() << "token refresh of" << accountId << "failed, will retry:" << o.message;
        break;
    }
    emit accountsChanged();
}

void AccountPool::setStatus(Account &a, const QString &status, const QString &reason)
{
    a.record.status = status;
    a.record.statusReason = reason;
    const QString id = a.record.id;
    m_store->submit([id, status, reason](Database &db, QString *error) {
        return AccountRepository(db).setStatus(id, status, reason, error);
    }, this, [id](bool ok, const QString &error) {
        if (!ok)
            qCWarning(lcPool).noquote() << "could not store the status of" << id << error;
    });
}

} // namespace sy
