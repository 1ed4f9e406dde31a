#pragma once

#include <QHash>
#include <QJsonObject>
#include <QList>
#include <QString>
#include <QStringList>
#include <optional>

namespace sy {

// How an egress proxy carries a connection: HTTP CONNECT, SOCKS5 with the host name resolved here
// ("socks5://"), or SOCKS5 with the host name resolved by the proxy ("socks5h://", remote DNS).
enum class EgressProxyType
{
    HttpConnect,
    Socks5,
    Socks5RemoteDns
};

enum class EgressStrategy
{
    RoundRobin, // one cursor per pool, advancing on every attempt through the pool, across requests
    Ordered,    // the k-th attempt of a request through the pool takes the k-th proxy (wrapping)
    Random      // uniform, from the pool's own generator (seeded by "seed" when given)
};

// One entry of "egress_proxies". Credentials never appear in the file: has_credentials says the keychain
// holds them under egressSecretKey(name).
struct EgressProxySpec
{
    QString name;
    EgressProxyType type = EgressProxyType::HttpConnect;
    QString host;
    quint16 port = 0;
    bool hasCredentials = false;
    QString url; // as written, for messages
};

// One entry of "egress_pools".
struct EgressPoolSpec
{
    QString name;
    EgressStrategy strategy = EgressStrategy::RoundRobin;
    QStringList proxies;         // names from egress_proxies, in the configured order
    int requestBudgetMs = 0;     // the `egress` budget: connection set-up time across attempts of one request
    int maxAttempts = 0;         // attempts through this pool per request
    std::optional<quint64> seed; // random only
};

// The egress part of the configuration file. Empty (no proxies, no pools) means every attempt goes direct.
struct EgressSettings
{
    QList<EgressProxySpec> proxies;
    QList<EgressPoolSpec> pools;
    QString defaultPool;                     // empty: accounts without a binding go direct
    QHash<QString, QString> accountBindings; // account alias or internal id -> pool name

    bool isEmpty() const { return proxies.isEmpty() && pools.isEmpty(); }
    const EgressProxySpec *proxy(const QString &name) const;
    const EgressPoolSpec *pool(const QString &name) const;
    // The pool an account uses: its binding (by internal id first, then alias), else the default pool;
    // empty means direct.
    QString poolForAccount(const QString &accountId, const std::optional<QString> &alias) const;

    static bool isEgressKey(const QString &key);
};

QString egressProxyTypeName(EgressProxyType type);   // "http", "socks5", "socks5h"
QString egressStrategyName(EgressStrategy strategy); // "round_robin", "ordered", "random"
// Where the keychain keeps a proxy's credentials (SecretStore "account" id): "egress:<name>".
QString egressSecretKey(const QString &proxyName);

// Reads the egress keys (egress_proxies, egress_pools, egress_default_pool, egress_account_bindings) of a
// configuration file's top-level object into *out. Returns empty, or the first problem as
// "<file>: key \"<path>\" <problem>". Never fills in defaults for something written wrongly.
QString parseEgressSettings(const QString &file, const QJsonObject &root, EgressSettings *out);

// Cross-checks against the other budgets: an egress budget longer than request_total_s could never fire.
QString validateEgressSettings(const EgressSettings &egress, int requestTotalS);

} // namespace sy
