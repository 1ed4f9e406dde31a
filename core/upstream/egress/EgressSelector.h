#pragma once

#include "upstream/egress/EgressBudget.h"
#include "upstream/egress/EgressConfig.h"
#include "upstream/egress/EgressPool.h"
#include "upstream/egress/EgressRoute.h"

#include <QHash>
#include <QJsonObject>
#include <QObject>
#include <QTimer>
#include <functional>
#include <memory>

namespace sy {

class EgressProber;
class EgressRequest;
class SecretStore;
struct Config;

// The gateway's egress proxies and pools (DESIGN.md `egress`): per-proxy state (credentials from the
// keychain, health from real handshake probes through each proxy to the upstream, repeated every
// probeIntervalMs()), the pools' strategy state, and the account -> pool bindings. Requests talk to it
// through their own EgressRequest (beginRequest()). Lives on the proxy thread.
//
// With no egress configuration every attempt goes direct, as before.
class EgressSelector : public QObject
{
    Q_OBJECT

public:
    EgressSelector(const Config &config, const Clock &clock, SecretStore *secrets, QObject *parent = nullptr);
    ~EgressSelector() override;

    // Loads credentials, runs the first probe round, then probes periodically. `ready` runs once the first
    // round is done (at most about connect_s later), so no request sees a pool of unknown health.
    void start(std::function<void()> ready);
    void stop();

    bool isConfigured() const { return !m_settings.isEmpty(); }
    const EgressSettings &settings() const { return m_settings; }

    // A new request's own view (its budgets and blocked_by reasons). Never shared between requests.
    std::unique_ptr<EgressRequest> beginRequest();

    // The route of an account's calls that are not logged requests (token refresh, usage polls): the healthy
    // members of its pool in configured order, never moving the pool's cursor. Refused when none can carry it.
    EgressRoute backgroundRoute(const QString &accountId, const std::optional<QString> &alias) const;
    // The route of a login's code exchange (`accounts login --alias`): the pool of the alias, or the default
    // pool, with every member in configured order (at most max_attempts) whatever its health, since a process
    // that makes one call has no probes. Refused when the pool is unusable; Direct without a pool.
    EgressRoute loginRoute(const std::optional<QString> &alias) const;
    // Reads the proxies' credentials without probing (for loginRoute); `done` once they are in.
    void loadCredentialsOnly(std::function<void()> done);

    // The pool an account's attempts go through; empty = direct.
    QString poolFor(const QString &accountId, const std::optional<QString> &alias) const;
    EgressPool *pool(const QString &name);
    const QList<EgressProxyState> &proxies() const { return m_proxies; }
    const EgressProxyState *proxy(const QString &name) const;
    bool poolHealthy(const QString &pool) const;
    QString poolUnusableReason(const QString &pool) const;

    // Probes every proxy now; `done` after the round.
    void probeNow(std::function<void()> done = {});
    int probeIntervalMs() const { return m_probeIntervalMs; }
    void setProbeIntervalMs(int ms);
    // {pools: [{name, strategy, healthy, unusable, proxies}], proxies: [{name, type, health, detail, probed_at}]}
    QJsonObject statusJson() const;

signals:
    void healthChanged();

private:
    friend class EgressRequest;
    // The budget a request gets for a pool: a new one for every request.
    std::shared_ptr<EgressBudget> budgetFor(const QString &pool);
    void loadCredentials(std::function<void()> done);
    EgressRoute routeOf(const QString &accountId, const std::optional<QString> &alias, bool healthyOnly) const;
    void applyProbe(const QString &proxy, bool healthy, const QString &detail);

    const Clock &m_clock;
    SecretStore *m_secrets;
    EgressSettings m_settings;
    QList<EgressProxyState> m_proxies;
    QHash<QString, EgressPool *> m_pools;
    EgressProber *m_prober = nullptr;
    QTimer m_probeTimer;
    int m_probeIntervalMs = 30 * 1000;
};

} // namespace sy
