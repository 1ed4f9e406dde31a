#include "upstream/egress/EgressConfig.h"

#include "util/Faults.h"

#include <QJsonArray>
#include <QRegularExpression>
#include <QSet>
#include <QUrl>
#include <cmath>

namespace sy {

namespace {

constexpr int maxBudgetMs = 24 * 3600 * 1000;
constexpr int maxAttemptsLimit = 100;

const char kProxies[] = "egress_proxies";
const char kPools[] = "egress_pools";
const char kDefaultPool[] = "egress_default_pool";
const char kBindings[] = "egress_account_bindings";

// A whole number for a message: its digits while a double holds it exactly, else the shortest exact form
// ("1e+118"); converting such a value to an integer type would be undefined.
QString wholeNumberText(double n)
{
    constexpr double kExact = 9007199254740992.0; // 2^53
    return std::fabs(n) < kExact ? QString::number(qint64(n)) : QString::number(n, 'g', QLocale::FloatingPointShortest);
}

bool isWholeNumber(const QJsonValue &v)
{
    return v.isDouble() && std::isfinite(v.toDouble()) && v.toDouble() == std::floor(v.toDouble());
}

bool isValidName(const QString &name)
{
    static const QRegularExpression pattern(QStringLiteral("^[A-Za-z0-9_.-]{1,64}$"));
    return pattern.match(name).hasMatch();
}

// Reports problems as "<file>: key \"<path>\" <problem>".
class Parser
{
public:
    Parser(const QString &file, EgressSettings *out) : m_file(file), m_out(out) {}

    QString problem(const QString &path, const QString &text) const
    {
        return QStringLiteral("%1: key \"%2\" %3").arg(m_file, path, text);
    }

    QString unknownKeys(const QJsonObject &o, const QString &path, const QStringList &known) const
    {
        for (auto it = o.begin(); it != o.end(); ++it) {
            if (!known.contains(it.key()))
                return problem(
                    path + QLatin1Char('.') + it.key(),
                    QStringLiteral("is not a known setting (expected %1)").arg(known.join(QStringLiteral(", "))));
        }
        return {};
    }

    QString proxies(const QJsonValue &value)
    {
        const QString path = QLatin1String(kProxies);
        if (!value.isArray())
            return problem(path, QStringLiteral("must be an array of {name, url, has_credentials}"));
        const QJsonArray list = value.toArray();
        for (int i = 0; i < list.size(); ++i) {
            const QString at = QStringLiteral("%1[%2]").arg(path).arg(i);
            if (!list.at(i).isObject())
                return problem(at, QStringLiteral("must be an object {name, url, has_credentials}"));
            const QJsonObject o = list.at(i).toObject();
            QString error =
                unknownKeys(o, at, {QStringLiteral("name"), QStringLiteral("url"), QStringLiteral("has_credentials")});
            if (!error.isEmpty())
                return error;
            EgressProxySpec spec;
            error = name(o, at, &spec.name);
            if (!error.isEmpty())
                return error;
            if (m_out->proxy(spec.name))
                return problem(at + QStringLiteral(".name"),
                               QStringLiteral("repeats the proxy name \"%1\"").arg(spec.name));
            error = url(o.value(QLatin1String("url")), at + QStringLiteral(".url"), &spec);
            if (!error.isEmpty())
                return error;
            const QJsonValue creds = o.value(QLatin1String("has_credentials"));
            if (!creds.isUndefined() && !creds.isBool())
                return problem(at + QStringLiteral(".has_credentials"), QStringLiteral("must be true or false"));
            spec.hasCredentials = creds.toBool(false);
            m_out->proxies.append(spec);
        }
        return {};
    }

    QString pools(const QJsonValue &value)
    {
        const QString path = QLatin1String(kPools);
        if (!value.isArray())
            return problem(path, QStringLiteral("must be an array of {name, strategy, proxies, request_budget_ms, "
                                                "max_attempts}"));
        const QJsonArray list = value.toArray();
        for (int i = 0; i < list.size(); ++i) {
            const QString at = QStringLiteral("%1[%2]").arg(path).arg(i);
            if (!list.at(i).isObject())
                return problem(at, QStringLiteral("must be an object"));
            const QJsonObject o = list.at(i).toObject();
            QString error = unknownKeys(o, at,
                                        {QStringLiteral("name"), QStringLiteral("strategy"), QStringLiteral("proxies"),
                                         QStringLiteral("request_budget_ms"), QStringLiteral("max_attempts"),
                                         QStringLiteral("seed")});
            if (!error.isEmpty())
                return error;
            EgressPoolSpec spec;
            error = name(o, at, &spec.name);
            if (!error.isEmpty())
                return error;
            if (m_out->pool(spec.name))
                return problem(at + QStringLiteral(".name"),
                               QStringLiteral("repeats the pool name \"%1\"").arg(spec.name));
            error = strategy(o.value(QLatin1String("strategy")), at + QStringLiteral(".strategy"), &spec.strategy);
            if (!error.isEmpty())
                return error;
            error = members(o.value(QLatin1String("proxies")), at + QStringLiteral(".proxies"), &spec.proxies);
            if (!error.isEmpty())
                return error;
            error = wholeNumber(o.value(QLatin1String("request_budget_ms")), at + QStringLiteral(".request_budget_ms"),
                                1, maxBudgetMs, &spec.requestBudgetMs);
            if (!error.isEmpty())
                return error;
            error = wholeNumber(o.value(QLatin1String("max_attempts")), at + QStringLiteral(".max_attempts"), 1,
                                maxAttemptsLimit, &spec.maxAttempts);
            if (!error.isEmpty())
                return error;
            const QJsonValue seed = o.value(QLatin1String("seed"));
            if (!seed.isUndefined()) {
                if (spec.strategy != EgressStrategy::Random)
                    return problem(at + QStringLiteral(".seed"), QStringLiteral("only applies to the random strategy"));
                if (!isWholeNumber(seed) || seed.toDouble() < 0 || seed.toDouble() > 9007199254740991.0)
                    return problem(at + QStringLiteral(".seed"), QStringLiteral("must be a whole number >= 0"));
                spec.seed = quint64(seed.toDouble());
            }
            m_out->pools.append(spec);
        }
        return {};
    }

    QString defaultPool(const QJsonValue &value)
    {
        const QString path = QLatin1String(kDefaultPool);
        if (!value.isString())
            return problem(path, QStringLiteral("must be the name of a pool"));
        if (!m_out->pool(value.toString()))
            return problem(path, QStringLiteral("names unknown pool \"%1\"").arg(value.toString()));
        m_out->defaultPool = value.toString();
        return {};
    }

    QString bindings(const QJsonValue &value)
    {
        const QString path = QLatin1String(kBindings);
        if (!value.isObject())
            return problem(path, QStringLiteral("must be an object {\"<account alias or id>\": \"<pool>\"}"));
        const QJsonObject o = value.toObject();
        for (auto it = o.begin(); it != o.end(); ++it) {
            const QString at = path + QLatin1Char('.') + it.key();
            if (it.key().trimmed().isEmpty())
                return problem(path, QStringLiteral("has an empty account name"));
            if (!it.value().isString())
                return problem(at, QStringLiteral("must be the name of a pool"));
            if (!m_out->pool(it.value().toString()))
                return problem(at, QStringLiteral("names unknown pool \"%1\"").arg(it.value().toString()));
            m_out->accountBindings.insert(it.key(), it.value().toString());
        }
        return {};
    }

private:
    QString name(const QJsonObject &o, const QString &at, QString *out) const
    {
        const QJsonValue v = o.value(QLatin1String("name"));
        if (!v.isString() || !isValidName(v.toString()))
            return problem(at + QStringLiteral(".name"),
                           QStringLiteral("must be a string of 1 to 64 letters, digits, '_', '.' or '-'"));
        *out = v.toString();
        return {};
    }

    QString url(const QJsonValue &v, const QString &at, EgressProxySpec *spec) const
    {
        if (!v.isString())
            return problem(at, QStringLiteral("must be a string like \"http://host:port\", \"socks5://host:port\" or "
                                              "\"socks5h://host:port\""));
        spec->url = v.toString();
        const QUrl u(spec->url, QUrl::StrictMode);
        const QString scheme = u.scheme().toLower();
        if (!u.isValid() || u.host().isEmpty())
            return problem(at, QStringLiteral("is \"%1\", not a proxy URL with a host").arg(spec->url));
        if (scheme == QLatin1String("http"))
            spec->type = EgressProxyType::HttpConnect;
        else if (scheme == QLatin1String("socks5"))
            spec->type = EgressProxyType::Socks5;
        else if (scheme == QLatin1String("socks5h"))
            spec->type = EgressProxyType::Socks5RemoteDns;
        else
            return problem(at, QStringLiteral("has scheme \"%1\"; expected http, socks5 or socks5h").arg(u.scheme()));
        // Credentials in a config file would be in clear text on disk: they belong in the keychain.
        if (!u.userInfo().isEmpty())
            return problem(at,
                           QStringLiteral("contains credentials; set has_credentials and keep them in the keychain"));
        if (u.port() < 1 || u.port() > 65535)
            return problem(at, QStringLiteral("needs an explicit port from 1 to 65535"));
        if ((!u.path().isEmpty() && u.path() != QLatin1String("/")) || u.hasQuery() || u.hasFragment())
            return problem(at, QStringLiteral("must be scheme://host:port only"));
        spec->host = u.host();
        spec->port = quint16(u.port());
        return {};
    }

    QString strategy(const QJsonValue &v, const QString &at, EgressStrategy *out) const
    {
        const QString s = v.toString();
        if (s == QLatin1String("round_robin"))
            *out = EgressStrategy::RoundRobin;
        else if (s == QLatin1String("ordered"))
            *out = EgressStrategy::Ordered;
        else if (s == QLatin1String("random"))
            *out = EgressStrategy::Random;
        else
            return problem(at, QStringLiteral("must be one of round_robin, ordered, random"));
        return {};
    }

    QString members(const QJsonValue &v, const QString &at, QStringList *out) const
    {
        if (!v.isArray() || v.toArray().isEmpty())
            return problem(at, QStringLiteral("must be a non-empty array of proxy names"));
        const QJsonArray list = v.toArray();
        for (int i = 0; i < list.size(); ++i) {
            const QString item = QStringLiteral("%1[%2]").arg(at).arg(i);
            if (!list.at(i).isString())
                return problem(item, QStringLiteral("must be a proxy name"));
            const QString name = list.at(i).toString();
            if (!m_out->proxy(name))
                return problem(item, QStringLiteral("names unknown egress proxy \"%1\"").arg(name));
            if (out->contains(name))
                return problem(item, QStringLiteral("repeats the proxy \"%1\"").arg(name));
            out->append(name);
        }
        return {};
    }

    QString wholeNumber(const QJsonValue &v, const QString &at, int min, int max, int *out) const
    {
        if (!isWholeNumber(v))
            return problem(at, QStringLiteral("must be a whole number"));
        const double n = v.toDouble();
        if (n < min || n > max)
            return problem(at,
                           QStringLiteral("is %1, outside %2..%3").arg(wholeNumberText(n)).arg(min).arg(max));
        *out = int(n);
        return {};
    }

    QString m_file;
    EgressSettings *m_out;
};

QString parseStrict(const QString &file, const QJsonObject &root, EgressSettings *out)
{
    Parser parser(file, out);
    // Pools name proxies and bindings name pools, so the order is fixed whatever the file's order.
    QString error;
    if (root.contains(QLatin1String(kProxies)))
        error = parser.proxies(root.value(QLatin1String(kProxies)));
    if (error.isEmpty() && root.contains(QLatin1String(kPools)))
        error = parser.pools(root.value(QLatin1String(kPools)));
    if (error.isEmpty() && root.contains(QLatin1String(kDefaultPool)))
        error = parser.defaultPool(root.value(QLatin1String(kDefaultPool)));
    if (error.isEmpty() && root.contains(QLatin1String(kBindings)))
        error = parser.bindings(root.value(QLatin1String(kBindings)));
    return error;
}

} // namespace

const EgressProxySpec *EgressSettings::proxy(const QString &name) const
{
    for (const EgressProxySpec &p : proxies) {
        if (p.name == name)
            return &p;
    }
    return nullptr;
}

const EgressPoolSpec *EgressSettings::pool(const QString &name) const
{
    for (const EgressPoolSpec &p : pools) {
        if (p.name == name)
            return &p;
    }
    return nullptr;
}

QString EgressSettings::poolForAccount(const QString &accountId, const std::optional<QString> &alias) const
{
    if (accountBindings.contains(accountId))
        return accountBindings.value(accountId);
    if (alias && !alias->isEmpty() && accountBindings.contains(*alias))
        return accountBindings.value(*alias);
    return defaultPool;
}

bool EgressSettings::isEgressKey(const QString &key)
{
    return key == QLatin1String(kProxies) || key == QLatin1String(kPools) || key == QLatin1String(kDefaultPool) ||
           key == QLatin1String(kBindings);
}

QString egressProxyTypeName(EgressProxyType type)
{
    switch (type) {
    case EgressProxyType::HttpConnect:
        return QStringLiteral("http");
    case EgressProxyType::Socks5:
        return QStringLiteral("socks5");
    case EgressProxyType::Socks5RemoteDns:
        return QStringLiteral("socks5h");
    }
    return {};
}

QString egressStrategyName(EgressStrategy strategy)
{
    switch (strategy) {
    case EgressStrategy::RoundRobin:
        return QStringLiteral("round_robin");
    case EgressStrategy::Ordered:
        return QStringLiteral("ordered");
    case EgressStrategy::Random:
        return QStringLiteral("random");
    }
    return {};
}

QString egressSecretKey(const QString &proxyName)
{
    return QStringLiteral("egress:") + proxyName;
}

QString parseEgressSettings(const QString &file, const QJsonObject &root, EgressSettings *out)
{
    *out = EgressSettings();
    const QString error = parseStrict(file, root, out);
    if (!error.isEmpty() && SY_FAULT("egress-config-defaults")) {
        *out = EgressSettings(); // the planted failure (fault build only): a broken section silently means "direct"
        return {};
    }
    if (!error.isEmpty())
        *out = EgressSettings();
    return error;
}

QString validateEgressSettings(const EgressSettings &egress, int requestTotalS)
{
    for (const EgressPoolSpec &p : egress.pools) {
        if (qint64(p.requestBudgetMs) > qint64(requestTotalS) * 1000)
            return QStringLiteral("egress pool \"%1\": request_budget_ms (%2) exceeds request_total_s (%3) x 1000")
                .arg(p.name)
                .arg(p.requestBudgetMs)
                .arg(requestTotalS);
    }
    return {};
}

} // namespace sy
