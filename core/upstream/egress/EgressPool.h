#pragma once

#include "upstream/egress/EgressConfig.h"

#include <QList>
#include <QNetworkProxy>
#include <QRandomGenerator>
#include <QString>

namespace sy {

// What the gateway knows about one configured egress proxy.
struct EgressProxyState
{
    enum class Health
    {
        Unknown,  // not probed yet
        Healthy,  // the last probe set up a tunnel to the upstream through it
        Unhealthy // the last probe failed
    };

    EgressProxySpec spec;
    QNetworkProxy proxy;             // ready to hand to a socket, credentials included once loaded
    bool credentialsMissing = false; // has_credentials, but the keychain gave none
    QString credentialsProblem;      // why (never a secret)
    Health health = Health::Unknown;
    QString healthDetail;
    qint64 probedAtMs = -1; // epoch ms of the last probe

    static QNetworkProxy networkProxy(const EgressProxySpec &spec);
    static QString healthName(Health health); // unknown, healthy, unhealthy
};

// One configured pool: the strategy's state. Pure: no sockets, no timers.
class EgressPool
{
public:
    explicit EgressPool(const EgressPoolSpec &spec);

    const EgressPoolSpec &spec() const { return m_spec; }
    const QString &name() const { return m_spec.name; }

    // Index into spec().proxies for an attempt. round_robin takes the pool's one cursor and advances it, for
    // every attempt of every request, whatever became of earlier attempts; ordered takes the request's own
    // attempt count through this pool (0-based, wrapping); random draws from the pool's generator. Health
    // does not skip a proxy: the walk stays recomputable from the configuration alone, and the attempt's own
    // handshake is fresher evidence than the last probe (attempts and budget bound what a dead proxy costs).
    int pick(int attemptInRequest);
    quint64 cursor() const { return m_cursor; }

    // Pool health: whether at least one member proxy passed its last probe. Never "a candidate exists".
    static bool isHealthy(const EgressPoolSpec &spec, const QList<EgressProxyState> &proxies);
    // Empty when every member can be used; otherwise why not (missing credentials), naming the proxies.
    static QString unusableReason(const EgressPoolSpec &spec, const QList<EgressProxyState> &proxies);

private:
    EgressPoolSpec m_spec;
    quint64 m_cursor = 0;
    QRandomGenerator m_rng;
};

} // namespace sy
