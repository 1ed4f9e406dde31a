#include "config/Config.h"

#include "accounts/SecretCipher.h"
#include "store/DatabaseLocation.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcessEnvironment>
#include <QRegularExpression>
#include <QStandardPaths>

#include <algorithm>
#include <cmath>
#include <functional>

namespace sy {

namespace {

// A whole number for a message: its digits while a double holds it exactly, else the shortest exact form
// ("1e+118"); converting such a value to an integer type would be undefined.
QString wholeNumberText(double n)
{
    constexpr double kExact = 9007199254740992.0; // 2^53
    return std::fabs(n) < kExact ? QString::number(qint64(n)) : QString::number(n, 'g', QLocale::FloatingPointShortest);
}

struct IntKey
{
    const char *name;
    int &(*field)(Config &);
    int min;
    int max;
};

#define SY_FIELD(expr) [](Config &c) -> int & { return c.expr; }

const IntKey kIntKeys[] = {
    {"backoff_max_s", SY_FIELD(backoffMaxS), 30, 86400},
    {"slots_per_account", SY_FIELD(slotsPerAccount), 1, 1024},
    {"usage_poll_interval_s", SY_FIELD(usagePollIntervalS), 0, 86400},
    {"gate_wait_s", SY_FIELD(budgets.gateWaitS), 1, 3600},
    {"connect_s", SY_FIELD(budgets.connectS), 1, 600},
    {"gate_retire_s", SY_FIELD(budgets.gateRetireS), 1, 86400},
    {"keepalive_interval_s", SY_FIELD(budgets.keepaliveIntervalS), 1, 600},
    {"keepalive_max", SY_FIELD(budgets.keepaliveMax), 1, 1000},
    {"stream_idle_s", SY_FIELD(budgets.streamIdleS), 1, 86400},
    {"request_total_s", SY_FIELD(budgets.requestTotalS), 1, 86400},
    {"stream_max_s", SY_FIELD(budgets.streamMaxS), 1, 7 * 86400},
    {"lease_ttl_s", SY_FIELD(leaseTtlS), 1, 3600},
    {"lease_renew_s", SY_FIELD(leaseRenewS), 1, 3600},
    {"gate_max_waiters", SY_FIELD(gateMaxWaiters), 1, 100000},
    {"gate_max_waiters_per_account", SY_FIELD(gateMaxWaitersPerAccount), 1, 100000},
    {"drain_s", SY_FIELD(drainS), 1, 86400},
    {"header_timeout_s", SY_FIELD(headerTimeoutS), 1, 600},
    {"max_header_kb", SY_FIELD(maxHeaderKb), 1, 64},
    {"max_headers", SY_FIELD(maxHeaders), 8, 10000},
    {"max_connections_per_client", SY_FIELD(maxConnectionsPerClient), 1, 100000},
};
#undef SY_FIELD

const char *const kStrategies[] = {"capacity_weighted", "usage_weighted", "round_robin", "fill_first"};

QString defaultConfigPath(const QHash<QString, QString> &env)
{
    QString base = env.value(QStringLiteral("XDG_CONFIG_HOME"));
    if (base.isEmpty())
        base = env.value(QStringLiteral("HOME")) + QStringLiteral("/.config");
    return base + QStringLiteral("/switchyard/config.json");
}

QString defaultDataDir(const QHash<QString, QString> &env)
{
    QString base = env.value(QStringLiteral("XDG_DATA_HOME"));
    if (base.isEmpty())
        base = env.value(QStringLiteral("HOME")) + QStringLiteral("/.local/share");
    return base + QStringLiteral("/switchyard");
}

// An allowed_hosts entry: a DNS name or IP literal ("[::1]" for IPv6), optionally with ":PORT".
bool validAllowedHost(const QString &entry)
{
    static const QRegularExpression re(
        QStringLiteral("^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9.])?|\\[[0-9A-Fa-f:.]+\\])(?::[0-9]{1,5})?$"));
    if (!re.match(entry).hasMatch())
        return false;
    const int colon = entry.lastIndexOf(QLatin1Char(':'));
    return colon < 0 || entry.endsWith(QLatin1Char(']')) || entry.mid(colon + 1).toUInt() <= 65535;
}

// An allowed_origins entry: exactly what a browser sends in Origin, "scheme://host[:port]" without a path.
bool validAllowedOrigin(const QString &entry)
{
    const QUrl url(entry, QUrl::StrictMode);
    return url.isValid() && !url.scheme().isEmpty() && !url.host().isEmpty() && url.path().isEmpty() &&
           !url.hasQuery() && !url.hasFragment() && url.userInfo().isEmpty() && !entry.endsWith(QLatin1Char('/'));
}

QString readStringList(const QJsonValue &v, bool (*valid)(const QString &), QStringList *out)
{
    if (!v.isArray())
        return QStringLiteral(" must be an array of strings");
    QStringList list;
    for (const QJsonValue &item : v.toArray()) {
        if (!item.isString() || !valid(item.toString()))
            return QStringLiteral(" has an invalid entry %1")
                .arg(QString::fromUtf8(QJsonDocument(QJsonArray{item}).toJson(QJsonDocument::Compact)));
        list.append(item.toString());
    }
    *out = list;
    return {};
}

QString applyFile(const QString &path, const QJsonObject &obj, Config &c)
{
    auto where = [&](const QString &key) { return QStringLiteral("%1: key \"%2\"").arg(path, key); };
    for (auto it = obj.begin(); it != obj.end(); ++it) {
        const QString key = it.key();
        const QJsonValue v = it.value();
        bool handled = false;
        for (const IntKey &k : kIntKeys) {
            if (key != QLatin1String(k.name))
                continue;
            handled = true;
            // Range before conversion: a double beyond qint64 (1e118) has no integer value to convert to.
            const double d = v.toDouble();
            if (!v.isDouble() || !std::isfinite(d) || d != std::floor(d))
                return where(key) + QStringLiteral(" must be a whole number");
            if (d < k.min || d > k.max)
                return where(key) +
                       QStringLiteral(" is %1, outside %2..%3").arg(wholeNumberText(d)).arg(k.min).arg(k.max);
            k.field(c) = int(d);
        }
        if (handled || EgressSettings::isEgressKey(key))
            continue; // egress keys refer to each other: read together below
        if (key == QLatin1String("listen")) {
            if (!v.isString())
                return where(key) + QStringLiteral(" must be a string \"HOST:PORT\"");
            const QString err = parseListen(v.toString(), &c.listenAddress, &c.listenPort);
            if (!err.isEmpty())
                return where(key) + QStringLiteral(": ") + err;
        } else if (key == QLatin1String("strategy")) {
            if (!v.isString())
                return where(key) + QStringLiteral(" must be a string");
            bool known = false;
            for (const char *s : kStrategies)
                known = known || v.toString() == QLatin1String(s);
            if (!known)
                return where(key) + QStringLiteral(" is \"%1\"; expected one of capacity_weighted, usage_weighted, "
                                                   "round_robin, fill_first")
                                        .arg(v.toString());
            c.strategy = v.toString();
        } else if (key == QLatin1String("max_body_mb")) {
            if (!v.isDouble() || v.toDouble() < 1 || v.toDouble() > 1024)
                return where(key) + QStringLiteral(" must be a number from 1 to 1024");
            c.maxBodyBytes = qint64(v.toDouble() * 1024 * 1024);
        } else if (key == QLatin1String("allowed_hosts")) {
            const QString err = readStringList(v, validAllowedHost, &c.allowedHosts);
            if (!err.isEmpty())
                return where(key) + err;
        } else if (key == QLatin1String("allowed_origins")) {
            const QString err = readStringList(v, validAllowedOrigin, &c.allowedOrigins);
            if (!err.isEmpty())
                return where(key) + err;
        } else if (key == QLatin1String("require_api_key")) {
            if (!v.isBool())
                return where(key) + QStringLiteral(" must be true or false");
            c.requireApiKey = v.toBool();
        } else {
            return where(key) + QStringLiteral(" is not a known setting");
        }
    }
    return parseEgressSettings(path, obj, &c.egress);
}

QString validate(const Config &c)
{
    const QString budgets = c.budgets.validate();
    if (!budgets.isEmpty())
        return budgets;
    const QString egress = validateEgressSettings(c.egress, c.budgets.requestTotalS);
    if (!egress.isEmpty())
        return egress;
    if (c.leaseTtlS < c.leaseRenewS * 2)
        return QStringLiteral("lease_ttl_s (%1) must be at least twice lease_renew_s (%2)")
            .arg(c.leaseTtlS)
            .arg(c.leaseRenewS);
    if (c.secretBackend != QLatin1String("keychain") && c.secretBackend != QLatin1String("database"))
        return QStringLiteral("SWITCHYARD_SECRET_BACKEND is \"%1\"; expected keychain or database").arg(c.secretBackend);
    if (!c.upstreamUrl.isValid() || (c.upstreamUrl.scheme() != QLatin1String("http") &&
                                     c.upstreamUrl.scheme() != QLatin1String("https")))
        return QStringLiteral("SWITCHYARD_UPSTREAM_URL is not an http(s) URL");
    return {};
}

} // namespace

QString Config::databaseLocation() const
{
    if (databaseUrl.isEmpty())
        return dataDir + QStringLiteral("/switchyard.sqlite");
    const std::optional<DatabaseLocation> loc = DatabaseLocation::parse(databaseUrl, nullptr);
    // loadConfig refused an unparsable URL; a Config built by hand falls through to Database::open's error.
    if (!loc || loc->dialect == SqlDialect::Postgres)
        return databaseUrl;
    return loc->sqlitePath;
}

bool Config::usesPostgres() const
{
    const std::optional<DatabaseLocation> loc = DatabaseLocation::parse(databaseUrl, nullptr);
    return loc && loc->dialect == SqlDialect::Postgres;
}

QString parseListen(const QString &text, QHostAddress *address, quint16 *port)
{
    const int colon = text.lastIndexOf(QLatin1Char(':'));
    if (colon <= 0)
        return QStringLiteral("\"%1\" is not HOST:PORT").arg(text);
    QString host = text.left(colon);
    if (host.startsWith(QLatin1Char('[')) && host.endsWith(QLatin1Char(']')))
        host = host.mid(1, host.size() - 2);
    bool ok = false;
    const uint p = text.mid(colon + 1).toUInt(&ok);
    if (!ok || p > 65535)
        return QStringLiteral("\"%1\" has no valid port").arg(text);
    QHostAddress a;
    if (host == QLatin1String("localhost"))
        a = QHostAddress::LocalHost;
    else if (!a.setAddress(host))
        return QStringLiteral("\"%1\" is not an IP address").arg(host);
    *address = a;
    *port = quint16(p);
    return {};
}

QHash<QString, QString> processEnvironment()
{
    QHash<QString, QString> env;
    const QProcessEnvironment pe = QProcessEnvironment::systemEnvironment();
    for (const QString &k : pe.keys())
        env.insert(k, pe.value(k));
    return env;
}

QString configFilePath(const ConfigOverrides &overrides, const QHash<QString, QString> &env, bool *isExplicit)
{
    bool named = true;
    QString path;
    if (overrides.configFile)
        path = *overrides.configFile;
    else if (env.contains(QStringLiteral("SWITCHYARD_CONFIG")))
        path = env.value(QStringLiteral("SWITCHYARD_CONFIG"));
    else {
        path = defaultConfigPath(env);
        named = false;
    }
    if (isExplicit)
        *isExplicit = named;
    return path;
}

QStringList differingFileKeys(const Config &a, const Config &b)
{
    QStringList keys;
    // kIntKeys hands out mutable references; copies keep the callers' objects const.
    Config ca = a;
    Config cb = b;
    if (a.listenAddress != b.listenAddress || a.listenPort != b.listenPort)
        keys << QStringLiteral("listen");
    if (a.strategy != b.strategy)
        keys << QStringLiteral("strategy");
    if (a.maxBodyBytes != b.maxBodyBytes)
        keys << QStringLiteral("max_body_mb");
    if (a.allowedHosts != b.allowedHosts)
        keys << QStringLiteral("allowed_hosts");
    if (a.allowedOrigins != b.allowedOrigins)
        keys << QStringLiteral("allowed_origins");
    if (a.requireApiKey != b.requireApiKey)
        keys << QStringLiteral("require_api_key");
    for (const IntKey &k : kIntKeys) {
        if (k.field(ca) != k.field(cb))
            keys << QLatin1String(k.name);
    }
    const EgressSettings &ea = a.egress;
    const EgressSettings &eb = b.egress;
    const bool proxiesSame = std::equal(ea.proxies.begin(), ea.proxies.end(), eb.proxies.begin(), eb.proxies.end(),
                                        [](const EgressProxySpec &x, const EgressProxySpec &y) {
                                            return x.name == y.name && x.type == y.type && x.host == y.host &&
                                                   x.port == y.port && x.hasCredentials == y.hasCredentials &&
                                                   x.url == y.url;
                                        });
    if (!proxiesSame)
        keys << QStringLiteral("egress_proxies");
    const bool poolsSame = std::equal(ea.pools.begin(), ea.pools.end(), eb.pools.begin(), eb.pools.end(),
                                      [](const EgressPoolSpec &x, const EgressPoolSpec &y) {
                                          return x.name == y.name && x.strategy == y.strategy &&
                                                 x.proxies == y.proxies && x.requestBudgetMs == y.requestBudgetMs &&
                                                 x.maxAttempts == y.maxAttempts && x.seed == y.seed;
                                      });
    if (!poolsSame)
        keys << QStringLiteral("egress_pools");
    if (ea.defaultPool != eb.defaultPool)
        keys << QStringLiteral("egress_default_pool");
    if (ea.accountBindings != eb.accountBindings)
        keys << QStringLiteral("egress_account_bindings");
    return keys;
}

bool isRestartOnlyKey(const QString &key)
{
    return key == QLatin1String("listen") || EgressSettings::isEgressKey(key);
}

void keepRestartOnlySettings(const Config &running, Config *next)
{
    next->listenAddress = running.listenAddress;
    next->listenPort = running.listenPort;
    next->egress = running.egress;
    // Not file keys: they come from the environment and options, which do not change while running.
    next->dataDir = running.dataDir;
    next->databaseUrl = running.databaseUrl;
    next->secretBackend = running.secretBackend;
    next->secretKeyFile = running.secretKeyFile;
    next->upstreamUrl = running.upstreamUrl;
    next->authUrl = running.authUrl;
}

ConfigResult loadConfig(const ConfigOverrides &overrides, const QHash<QString, QString> &env)
{
    ConfigResult r;
    Config &c = r.config;
    c.configFile = configFilePath(overrides, env, &c.configFileExplicit);

    QFile file(c.configFile);
    if (file.exists()) {
        if (!file.open(QIODevice::ReadOnly)) {
            r.error = QStringLiteral("%1: cannot be read: %2").arg(c.configFile, file.errorString());
            return r;
        }
        QJsonParseError pe;
        const QJsonDocument doc = QJsonDocument::fromJson(file.readAll(), &pe);
        if (pe.error != QJsonParseError::NoError) {
            r.error = QStringLiteral("%1: invalid JSON at offset %2: %3").arg(c.configFile).arg(pe.offset).arg(pe.errorString());
            return r;
        }
        if (!doc.isObject()) {
            r.error = QStringLiteral("%1: the top level must be a JSON object").arg(c.configFile);
            return r;
        }
        r.error = applyFile(c.configFile, doc.object(), c);
        if (!r.error.isEmpty())
            return r;
    } else if (c.configFileExplicit) {
        r.error = QStringLiteral("%1: configuration file does not exist").arg(c.configFile);
        return r;
    } else {
        c.configFile.clear();
    }

    auto envOr = [&](const char *name, const QString &fallback) {
        const QString v = env.value(QLatin1String(name));
        return v.isEmpty() ? fallback : v;
    };
    c.dataDir = overrides.dataDir ? *overrides.dataDir : envOr("SWITCHYARD_DATA_DIR", defaultDataDir(env));
    c.databaseUrl = env.value(QStringLiteral("SWITCHYARD_DATABASE_URL"));
    c.secretBackend = envOr("SWITCHYARD_SECRET_BACKEND", c.secretBackend);
    c.secretKeyFile = env.value(QStringLiteral("SWITCHYARD_SECRET_KEY_FILE"));
    c.upstreamUrl = QUrl(envOr("SWITCHYARD_UPSTREAM_URL", c.upstreamUrl.toString()));
    c.authUrl = QUrl(envOr("SWITCHYARD_AUTH_URL", c.authUrl.toString()));
    // Test-only: shorten leases so lease expiry can be exercised in seconds.
    if (env.contains(QStringLiteral("SWITCHYARD_TEST_LEASE_TTL_S"))) {
        c.leaseTtlS = env.value(QStringLiteral("SWITCHYARD_TEST_LEASE_TTL_S")).toInt();
        c.leaseRenewS = qMax(1, c.leaseTtlS / 3);
    }
    if (overrides.listen) {
        const QString err = parseListen(*overrides.listen, &c.listenAddress, &c.listenPort);
        if (!err.isEmpty()) {
            r.error = QStringLiteral("--listen: ") + err;
            return r;
        }
    }
    if (!c.databaseUrl.isEmpty()) {
        // The reason never repeats the URL: it may carry a password.
        QString why;
        if (!DatabaseLocation::parse(c.databaseUrl, &why)) {
            r.error = QStringLiteral("SWITCHYARD_DATABASE_URL: ") + why;
            return r;
        }
    }
    r.error = validate(c);
    if (!r.error.isEmpty() && !c.configFile.isEmpty()) {
        r.error = c.configFile + QStringLiteral(": ") + r.error;
        return r;
    }
    // Fail closed before anything runs: a replica without a usable, private key file must not start.
    if (r.error.isEmpty() && c.secretBackend == QLatin1String("database")) {
        if (c.secretKeyFile.isEmpty()) {
            r.error = QStringLiteral("SWITCHYARD_SECRET_BACKEND=database needs SWITCHYARD_SECRET_KEY_FILE "
                                     "(32 random bytes or 64 hex digits, mode 0600)");
        } else {
            QString keyError;
            if (!SecretKey::fromFile(c.secretKeyFile, &keyError))
                r.error = QStringLiteral("SWITCHYARD_SECRET_KEY_FILE: ") + keyError;
        }
    }
    return r;
}

} // namespace sy
