#pragma once

#include <QList>
#include <QNetworkProxy>
#include <QString>
#include <functional>

namespace sy {

// How a per-account call that is not a logged request (an OAuth token refresh, a usage poll) may leave the
// machine. Such calls take no part in a pool's strategy (only logged request attempts move a round_robin
// cursor, so the request log accounts for every step of the walk): they try the pool's healthy members (by
// their last probe) in the configured order, at most max_attempts of them. Fail closed: a bound account whose
// pool has no usable proxy gets Refused, never Direct.
struct EgressRoute
{
    enum class Kind
    {
        Direct,  // the account has no pool
        Proxies, // through `hops`, in order: the next one only when the previous could not set up a tunnel
        Refused  // the pool cannot carry it (reason: pool_unusable or no_healthy_proxy)
    };
    struct Hop
    {
        QString name;
        QNetworkProxy proxy; // credentials included
    };

    Kind kind = Kind::Direct;
    QString pool;
    QList<Hop> hops;
    QString reason; // Refused: one of the blocked:: names
    QString detail; // Refused: for people, never a secret

    bool allowed() const { return kind != Kind::Refused; }
};

// The proxy a QNetworkAccessManager uses for one hop. Without the caching capability Qt treats an HTTP proxy as a
// tunnel (CONNECT) for http:// URLs too, instead of handing it the request in absolute form: the proxy only
// ever sees a tunnel, as for turns.
inline QNetworkProxy tunnelOnly(QNetworkProxy proxy)
{
    if (proxy.type() == QNetworkProxy::HttpProxy)
        proxy.setCapabilities(proxy.capabilities() & ~QNetworkProxy::CachingCapability);
    return proxy;
}

// The route for one account's calls (by Switchyard's account id).
using EgressRouter = std::function<EgressRoute(const QString &accountId)>;

} // namespace sy
