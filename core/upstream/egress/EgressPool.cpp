#include "upstream/egress/EgressPool.h"

#include "util/Faults.h"

#include <QStringList>

namespace sy {

namespace {

const EgressProxyState *stateOf(const QString &name, const QList<EgressProxyState> &proxies)
{
    for (const EgressProxyState &p : proxies) {
        if (p.spec.name == name)
            return &p;
    }
    return nullptr;
}

} // namespace

QNetworkProxy EgressProxyState::networkProxy(const EgressProxySpec &spec)
{
    QNetworkProxy proxy(spec.type == EgressProxyType::HttpConnect ? QNetworkProxy::HttpProxy
                                                                  : QNetworkProxy::Socks5Proxy,
                        spec.host, spec.port);
    if (spec.type == EgressProxyType::Socks5) {
        // socks5://: the name is resolved here and the proxy is handed an address.
        proxy.setCapabilities(proxy.capabilities() & ~QNetworkProxy::HostNameLookupCapability);
    } else if (spec.type == EgressProxyType::Socks5RemoteDns) {
        proxy.setCapabilities(proxy.capabilities() | QNetworkProxy::HostNameLookupCapability);
    }
    return proxy;
}

QString EgressProxyState::healthName(Health health)
{
    switch (health) {
    case Health::Unknown:
        return QStringLiteral("unknown");
    case Health::Healthy:
        return QStringLiteral("healthy");
    case Health::Unhealthy:
        return QStringLiteral("unhealthy");
    }
    return {};
}

EgressPool::EgressPool(const EgressPoolSpec &spec) : m_spec(spec)
{
    if (spec.seed)
        m_rng.seed(quint32(*spec.seed ^ (*spec.seed >> 32)));
    else
        m_rng.seed(QRandomGenerator::system()->generate());
}

int EgressPool::pick(int attemptInRequest)
{
    const int n = int(m_spec.proxies.size());
    if (n == 0)
        return -1;
    switch (m_spec.strategy) {
    case EgressStrategy::RoundRobin:
        return int(m_cursor++ % quint64(n));
    case EgressStrategy::Ordered:
        return attemptInRequest % n;
    case EgressStrategy::Random:
        return int(m_rng.bounded(quint32(n)));
    }
    return -1;
}

bool EgressPool::isHealthy(const EgressPoolSpec &spec, const QList<EgressProxyState> &proxies)
{
    if (SY_FAULT("egress-health-from-candidates"))
        return !spec.proxies.isEmpty(); // the planted failure (fault build only): "a candidate exists"
    for (const QString &name : spec.proxies) {
        const EgressProxyState *p = stateOf(name, proxies);
        if (p && p->health == EgressProxyState::Health::Healthy)
            return true;
    }
    return false;
}

QString EgressPool::unusableReason(const EgressPoolSpec &spec, const QList<EgressProxyState> &proxies)
{
    QStringList missing;
    for (const QString &name : spec.proxies) {
        const EgressProxyState *p = stateOf(name, proxies);
        if (!p || p->credentialsMissing)
            missing.append(name);
    }
    if (missing.isEmpty())
        return {};
    return QStringLiteral("no credentials in the keychain for egress proxy %1").arg(missing.join(QStringLiteral(", ")));
}

} // namespace sy
