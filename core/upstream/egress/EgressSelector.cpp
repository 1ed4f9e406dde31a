#include "upstream/egress/EgressSelector.h"

#include "accounts/SecretStore.h"
#include "config/Config.h"
#include "upstream/egress/EgressCredentials.h"
#include "upstream/egress/EgressProber.h"
#include "upstream/egress/EgressRequest.h"
#include "util/Faults.h"

#include <QJsonArray>
#include <QLoggingCategory>
#include <QPointer>

Q_LOGGING_CATEGORY(lcEgress, "switchyard.egress")

namespace sy {

namespace {

QString isoUtcMs(qint64 ms)
{
    return QDateTime::fromMSecsSinceEpoch(ms, Qt::UTC).toString(Qt::ISODateWithMs);
}

} // namespace

EgressSelector::EgressSelector(const Config &config, const Clock &clock, SecretStore *secrets, QObject *parent)
    : QObject(parent), m_clock(clock), m_secrets(secrets), m_settings(config.egress)
{
    for (const EgressProxySpec &spec : m_settings.proxies) {
        EgressProxyState state;
        state.spec = spec;
        state.proxy = EgressProxyState::networkProxy(spec);
        m_proxies.append(state);
    }
    for (const EgressPoolSpec &spec : m_settings.pools)
        m_pools.insert(spec.name, new EgressPool(spec));
    const QUrl &upstream = config.upstreamUrl;
    const bool tls = upstream.scheme() == QLatin1String("https");
    m_prober = new EgressProber(upstream.host(), quint16(upstream.port(tls ? 443 : 80)),
                                qMax(1, config.budgets.connectS) * 1000, this);
    connect(&m_probeTimer, &QTimer::timeout, this, [this] { probeNow(); });
}

EgressSelector::~EgressSelector()
{
    qDeleteAll(m_pools);
}

void EgressSelector::start(std::function<void()> ready)
{
    if (!isConfigured()) {
        QTimer::singleShot(0, this, [ready] {
            if (ready)
                ready();
        });
        return;
    }
    QPointer<EgressSelector> self(this);
    loadCredentials([self, ready] {
        if (!self)
            return;
        self->probeNow([self, ready] {
            if (!self)
                return;
            self->m_probeTimer.start(self->m_probeIntervalMs);
            if (ready)
                ready();
        });
    });
}

void EgressSelector::stop()
{
    m_probeTimer.stop();
}

void EgressSelector::setProbeIntervalMs(int ms)
{
    m_probeIntervalMs = qMax(100, ms);
    if (m_probeTimer.isActive())
        m_probeTimer.start(m_probeIntervalMs);
}

void EgressSelector::loadCredentials(std::function<void()> done)
{
    auto pending = std::make_shared<int>(0);
    for (const EgressProxyState &p : std::as_const(m_proxies)) {
        if (p.spec.hasCredentials)
            ++*pending;
    }
    if (*pending == 0 || !m_secrets) {
        for (EgressProxyState &p : m_proxies) {
            if (p.spec.hasCredentials) {
                p.credentialsMissing = true;
                p.credentialsProblem = QStringLiteral("no secret store");
            }
        }
        QTimer::singleShot(0, this, [done] { done(); });
        return;
    }
    QPointer<EgressSelector> self(this);
    for (const EgressProxyState &p : std::as_const(m_proxies)) {
        if (!p.spec.hasCredentials)
            continue;
        const QString name = p.spec.name;
        m_secrets->readTokens(egressSecretKey(name), [self, name, pending, done](const SecretOutcome &outcome,
                                                                                 const AuthTokens &tokens) {
            if (!self)
                return;
            for (EgressProxyState &state : self->m_proxies) {
                if (state.spec.name != name)
                    continue;
                const std::optional<EgressCredentials> creds =
                    outcome.ok ? unpackEgressCredentials(tokens) : std::nullopt;
                if (creds) {
                    state.proxy.setUser(creds->user);
                    state.proxy.setPassword(creds->password);
                    state.credentialsMissing = false;
                } else {
                    state.credentialsMissing = true;
                    state.credentialsProblem =
                        outcome.ok ? QStringLiteral("the keychain entry is not egress credentials") : outcome.errorText;
                    qCWarning(lcEgress).noquote()
                        << "egress proxy" << name << "has no usable credentials:" << state.credentialsProblem;
                }
            }
            if (--*pending == 0)
                done();
        });
    }
}

void EgressSelector::probeNow(std::function<void()> done)
{
    QList<EgressProber::Target> targets;
    for (const EgressProxyState &p : std::as_const(m_proxies))
        targets.append({p.spec.name, p.proxy});
    QPointer<EgressSelector> self(this);
    m_prober->probe(
        targets,
        [self](const QString &name, bool healthy, const QString &detail) {
            if (self)
                self->applyProbe(name, healthy, detail);
        },
        [self, done] {
            if (!self)
                return;
            emit self->healthChanged();
            if (done)
                done();
        });
}

void EgressSelector::applyProbe(const QString &proxy, bool healthy, const QString &detail)
{
    for (EgressProxyState &p : m_proxies) {
        if (p.spec.name != proxy)
            continue;
        const EgressProxyState::Health health =
            healthy ? EgressProxyState::Health::Healthy : EgressProxyState::Health::Unhealthy;
        if (health != p.health)
            qCInfo(lcEgress).noquote() << "egress proxy" << proxy << "is" << EgressProxyState::healthName(health)
                                       << "(" + detail + ")";
        p.health = health;
        p.healthDetail = detail;
        p.probedAtMs = m_clock.nowMs();
    }
}

std::unique_ptr<EgressRequest> EgressSelector::beginRequest()
{
    return std::make_unique<EgressRequest>(this, m_clock);
}

std::shared_ptr<EgressBudget> EgressSelector::budgetFor(const QString &pool)
{
    const EgressPoolSpec *spec = m_settings.pool(pool);
    const int budgetMs = spec ? spec->requestBudgetMs : 0;
    const int maxAttempts = spec ? spec->maxAttempts : 0;
    if (SY_FAULT("egress-shared-budget")) {
        // The planted failure (fault build only): one budget for every request through the pool.
        static QHash<QString, std::shared_ptr<EgressBudget>> shared;
        const QString key = QString::number(quintptr(this)) + QLatin1Char('/') + pool;
        std::shared_ptr<EgressBudget> &b = shared[key];
        if (!b)
            b = std::make_shared<EgressBudget>(m_clock, budgetMs, maxAttempts);
        return b;
    }
    return std::make_shared<EgressBudget>(m_clock, budgetMs, maxAttempts);
}

QString EgressSelector::poolFor(const QString &accountId, const std::optional<QString> &alias) const
{
    return m_settings.poolForAccount(accountId, alias);
}

EgressRoute EgressSelector::backgroundRoute(const QString &accountId, const std::optional<QString> &alias) const
{
    return routeOf(accountId, alias, true);
}

EgressRoute EgressSelector::loginRoute(const std::optional<QString> &alias) const
{
    return routeOf(QString(), alias, false);
}

void EgressSelector::loadCredentialsOnly(std::function<void()> done)
{
    if (!isConfigured()) {
        QTimer::singleShot(0, this, [done] { done(); });
        return;
    }
    loadCredentials(std::move(done));
}

EgressRoute EgressSelector::routeOf(const QString &accountId, const std::optional<QString> &alias,
                                    bool healthyOnly) const
{
    EgressRoute route;
    route.pool = poolFor(accountId, alias);
    if (route.pool.isEmpty())
        return route;
    const auto refuse = [&route](const QString &reason, const QString &detail) {
        route.kind = EgressRoute::Kind::Refused;
        route.reason = reason;
        route.detail = detail;
        return route;
    };
    const EgressPoolSpec *spec = m_settings.pool(route.pool);
    if (!spec)
        return refuse(blocked::poolUnusable, QStringLiteral("egress pool \"%1\" is not configured").arg(route.pool));
    const QString unusable = EgressPool::unusableReason(*spec, m_proxies);
    if (!unusable.isEmpty())
        return refuse(blocked::poolUnusable, unusable);
    for (const QString &name : spec->proxies) {
        const EgressProxyState *state = proxy(name);
        const bool usable = state && (!healthyOnly || state->health == EgressProxyState::Health::Healthy);
        if (usable && route.hops.size() < spec->maxAttempts)
            route.hops.append({name, state->proxy});
    }
    if (route.hops.isEmpty())
        return refuse(blocked::noHealthyProxy,
                      QStringLiteral("no proxy of egress pool \"%1\" passed its last probe").arg(route.pool));
    route.kind = EgressRoute::Kind::Proxies;
    return route;
}

EgressPool *EgressSelector::pool(const QString &name)
{
    return m_pools.value(name);
}

const EgressProxyState *EgressSelector::proxy(const QString &name) const
{
    for (const EgressProxyState &p : m_proxies) {
        if (p.spec.name == name)
            return &p;
    }
    return nullptr;
}

bool EgressSelector::poolHealthy(const QString &pool) const
{
    const EgressPoolSpec *spec = m_settings.pool(pool);
    return spec && EgressPool::isHealthy(*spec, m_proxies);
}

QString EgressSelector::poolUnusableReason(const QString &pool) const
{
    const EgressPoolSpec *spec = m_settings.pool(pool);
    if (!spec)
        return QStringLiteral("egress pool \"%1\" is not configured").arg(pool);
    return EgressPool::unusableReason(*spec, m_proxies);
}

QJsonObject EgressSelector::statusJson() const
{
    QJsonArray proxies;
    for (const EgressProxyState &p : m_proxies) {
        proxies.append(QJsonObject{
            {QStringLiteral("name"), p.spec.name},
            {QStringLiteral("type"), egressProxyTypeName(p.spec.type)},
            {QStringLiteral("health"), EgressProxyState::healthName(p.health)},
            {QStringLiteral("detail"), p.credentialsMissing ? p.credentialsProblem : p.healthDetail},
            {QStringLiteral("probed_at"), p.probedAtMs < 0 ? QJsonValue() : QJsonValue(isoUtcMs(p.probedAtMs))},
        });
    }
    QJsonArray pools;
    for (const EgressPoolSpec &spec : m_settings.pools) {
        const QString unusable = EgressPool::unusableReason(spec, m_proxies);
        pools.append(QJsonObject{
            {QStringLiteral("name"), spec.name},
            {QStringLiteral("strategy"), egressStrategyName(spec.strategy)},
            {QStringLiteral("healthy"), EgressPool::isHealthy(spec, m_proxies)},
            {QStringLiteral("unusable"), unusable.isEmpty() ? QJsonValue() : QJsonValue(unusable)},
            {QStringLiteral("proxies"), QJsonArray::fromStringList(spec.proxies)},
        });
    }
    return QJsonObject{{QStringLiteral("pools"), pools}, {QStringLiteral("proxies"), proxies}};
}

} // namespace sy
