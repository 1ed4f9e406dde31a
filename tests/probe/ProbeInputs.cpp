#include "ProbeInputs.h"

#include <QDateTime>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QUrl>
#include <cmath>

namespace probe {

namespace {

bool readJson(const QString &path, QJsonDocument *doc, QString *error)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        *error = QStringLiteral("%1: cannot be read").arg(path);
        return false;
    }
    QJsonParseError pe;
    *doc = QJsonDocument::fromJson(f.readAll(), &pe);
    if (pe.error != QJsonParseError::NoError) {
        *error = QStringLiteral("%1: not JSON (%2)").arg(path, pe.errorString());
        return false;
    }
    return true;
}

bool wholeIn(const QJsonValue &v, double lo, double hi)
{
    return v.isDouble() && v.toDouble() == std::floor(v.toDouble()) && v.toDouble() >= lo && v.toDouble() <= hi;
}

QString text(const QJsonObject &o, const char *key)
{
    return o.value(QLatin1String(key)).toString();
}

qint64 epochMs(const QString &iso)
{
    return QDateTime::fromString(iso, Qt::ISODateWithMs).toMSecsSinceEpoch();
}

} // namespace

const PoolConf *ConfigView::pool(const QString &name) const
{
    for (const PoolConf &p : pools) {
        if (p.name == name)
            return &p;
    }
    return nullptr;
}

QString FakeProxy::modeAt(qint64 ms) const
{
    QString mode = modes.isEmpty() ? QString() : modes.first().second;
    for (const auto &m : modes) {
        if (m.first <= ms)
            mode = m.second;
    }
    return mode;
}

int FakeProxy::delayAt(qint64 ms) const
{
    int delay = 0;
    for (const auto &m : modes) {
        if (m.first <= ms)
            delay = delays.value(m.first);
    }
    return delay;
}

const FakeProxy *Inputs::fakeFor(const QString &configuredName) const
{
    const auto conf = config.proxies.find(configuredName);
    if (conf == config.proxies.end())
        return nullptr;
    for (const FakeProxy &p : proxies) {
        if (p.port == conf->port)
            return &p;
    }
    return nullptr;
}

ConfigView readConfig(const QJsonObject &root)
{
    ConfigView c;
    const QStringList proxyKeys{QStringLiteral("name"), QStringLiteral("url"), QStringLiteral("has_credentials")};
    const QStringList poolKeys{QStringLiteral("name"),         QStringLiteral("strategy"),
                               QStringLiteral("proxies"),      QStringLiteral("request_budget_ms"),
                               QStringLiteral("max_attempts"), QStringLiteral("seed")};
    const QJsonValue proxies = root.value(QLatin1String("egress_proxies"));
    if (!proxies.isUndefined() && !proxies.isArray())
        c.problems << QStringLiteral("egress_proxies is not an array");
    for (const QJsonValue &v : proxies.toArray()) {
        const QJsonObject o = v.toObject();
        for (auto it = o.begin(); it != o.end(); ++it) {
            if (!proxyKeys.contains(it.key()))
                c.problems << QStringLiteral("egress proxy has unknown key %1").arg(it.key());
        }
        ProxyConf p;
        p.name = text(o, "name");
        const QUrl url(text(o, "url"));
        p.scheme = url.scheme();
        p.host = url.host();
        p.port = url.port();
        p.credentials = o.value(QLatin1String("has_credentials")).toBool();
        if (p.name.isEmpty() || c.proxies.contains(p.name))
            c.problems << QStringLiteral("egress proxy name \"%1\" is empty or repeated").arg(p.name);
        if (!QStringList{QStringLiteral("http"), QStringLiteral("socks5"), QStringLiteral("socks5h")}.contains(
                p.scheme))
            c.problems << QStringLiteral("egress proxy %1 has scheme \"%2\"").arg(p.name, p.scheme);
        if (p.host.isEmpty() || p.port < 1 || !url.userInfo().isEmpty())
            c.problems
                << QStringLiteral("egress proxy %1 has no usable host:port (or carries credentials)").arg(p.name);
        const QJsonValue creds = o.value(QLatin1String("has_credentials"));
        if (!creds.isUndefined() && !creds.isBool())
            c.problems << QStringLiteral("egress proxy %1: has_credentials is not a boolean").arg(p.name);
        c.proxies.insert(p.name, p);
    }
    const QJsonValue pools = root.value(QLatin1String("egress_pools"));
    if (!pools.isUndefined() && !pools.isArray())
        c.problems << QStringLiteral("egress_pools is not an array");
    for (const QJsonValue &v : pools.toArray()) {
        const QJsonObject o = v.toObject();
        for (auto it = o.begin(); it != o.end(); ++it) {
            if (!poolKeys.contains(it.key()))
                c.problems << QStringLiteral("egress pool has unknown key %1").arg(it.key());
        }
        PoolConf p;
        p.name = text(o, "name");
        p.strategy = text(o, "strategy");
        for (const QJsonValue &m : o.value(QLatin1String("proxies")).toArray()) {
            if (!c.proxies.contains(m.toString()) || p.proxies.contains(m.toString()))
                c.problems
                    << QStringLiteral("pool %1 names unknown or repeated proxy \"%2\"").arg(p.name, m.toString());
            p.proxies << m.toString();
        }
        if (p.proxies.isEmpty())
            c.problems << QStringLiteral("pool %1 has no proxies").arg(p.name);
        if (!QStringList{QStringLiteral("round_robin"), QStringLiteral("ordered"), QStringLiteral("random")}.contains(
                p.strategy))
            c.problems << QStringLiteral("pool %1 has strategy \"%2\"").arg(p.name, p.strategy);
        const QJsonValue budget = o.value(QLatin1String("request_budget_ms"));
        const QJsonValue attempts = o.value(QLatin1String("max_attempts"));
        if (!wholeIn(budget, 1, 86400000.0) || !wholeIn(attempts, 1, 100))
            c.problems << QStringLiteral("pool %1 has an invalid request_budget_ms or max_attempts").arg(p.name);
        if (o.contains(QLatin1String("seed")) &&
            (p.strategy != QLatin1String("random") || !wholeIn(o.value(QLatin1String("seed")), 0, 9007199254740991.0)))
            c.problems << QStringLiteral("pool %1 has a seed it cannot use").arg(p.name);
        p.budgetMs = int(budget.toDouble());
        p.maxAttempts = int(attempts.toDouble());
        if (c.pool(p.name) || p.name.isEmpty())
            c.problems << QStringLiteral("pool name \"%1\" is empty or repeated").arg(p.name);
        c.pools.append(p);
    }
    const QJsonValue def = root.value(QLatin1String("egress_default_pool"));
    if (!def.isUndefined()) {
        c.defaultPool = def.toString();
        if (!def.isString() || !c.pool(c.defaultPool))
            c.problems << QStringLiteral("egress_default_pool names no pool");
    }
    const QJsonValue bindings = root.value(QLatin1String("egress_account_bindings"));
    if (!bindings.isUndefined() && !bindings.isObject())
        c.problems << QStringLiteral("egress_account_bindings is not an object");
    const QJsonObject b = bindings.toObject();
    for (auto it = b.begin(); it != b.end(); ++it) {
        c.bindings.insert(it.key(), it.value().toString());
        if (!it.value().isString() || !c.pool(it.value().toString()))
            c.problems << QStringLiteral("binding of %1 names no pool").arg(it.key());
    }
    return c;
}

QStringList loadInputs(const InputFiles &files, Inputs *out)
{
    QStringList errors;
    QString error;
    QJsonDocument doc;

    if (readJson(files.config, &doc, &error) && doc.isObject())
        out->config = readConfig(doc.object());
    else
        out->config.problems << (error.isEmpty() ? QStringLiteral("%1: not a JSON object").arg(files.config) : error);

    if (!readJson(files.requests, &doc, &error) || !doc.isArray())
        errors << QStringLiteral("request log: ") + (error.isEmpty() ? QStringLiteral("not a JSON array") : error);
    for (const QJsonValue &v : doc.array()) {
        const QJsonObject o = v.toObject();
        Row r;
        r.id = text(o, "request_id");
        r.startedAtMs = epochMs(text(o, "started_at"));
        const QJsonValue total = o.value(QLatin1String("latency_ms")).toObject().value(QLatin1String("total"));
        r.totalMs = total.isDouble() ? qint64(total.toDouble()) : -1;
        r.status = text(o, "status");
        r.killStage = text(o, "kill_stage");
        r.accountId = text(o, "account_id");
        r.accountAlias = text(o, "account_alias");
        r.chatgptAccountId = text(o, "chatgpt_account_id");
        for (const QJsonValue &a : o.value(QLatin1String("attempts")).toArray()) {
            const QJsonObject ao = a.toObject();
            const QJsonValue elapsed = ao.value(QLatin1String("elapsed_ms"));
            r.attempts.append({text(ao, "account_id"), text(ao, "egress_proxy"), text(ao, "outcome"),
                               elapsed.isDouble() ? qint64(elapsed.toDouble()) : -1});
        }
        for (const QJsonValue &b : o.value(QLatin1String("blocked_by")).toArray())
            r.blockedBy << b.toString();
        out->rows.append(r);
        if (!r.accountId.isEmpty() && !out->accounts.contains(r.accountId))
            out->accounts.insert(r.accountId, {r.accountId, r.accountAlias, r.chatgptAccountId, {}});
    }
    // Oldest first, like everything else here.
    std::stable_sort(out->rows.begin(), out->rows.end(),
                     [](const Row &a, const Row &b) { return a.startedAtMs < b.startedAtMs; });

    if (!files.upstreamLog.isEmpty()) {
        if (!readJson(files.upstreamLog, &doc, &error) || !doc.isArray())
            errors << QStringLiteral("upstream log: ") + (error.isEmpty() ? QStringLiteral("not a JSON array") : error);
        out->haveUpstream = true;
        for (const QJsonValue &v : doc.array()) {
            const QJsonObject o = v.toObject();
            out->upstream.append({o.value(QLatin1String("seq")).toInt(), text(o, "x_request_id"),
                                  text(o, "chatgpt_account_id"), o.value(QLatin1String("status_sent")).toInt(),
                                  text(o, "action")});
        }
    }
    for (const QString &path : files.proxyLogs) {
        if (!readJson(path, &doc, &error) || !doc.isObject()) {
            errors << QStringLiteral("proxy log: ") + (error.isEmpty() ? QStringLiteral("not a JSON object") : error);
            continue;
        }
        const QJsonObject o = doc.object();
        FakeProxy p;
        p.name = text(o, "name");
        p.port = o.value(QLatin1String("port")).toInt();
        p.requiresCredentials = o.value(QLatin1String("requires_credentials")).toBool();
        for (const QJsonValue &m : o.value(QLatin1String("modes")).toArray()) {
            const qint64 at = qint64(m.toObject().value(QLatin1String("at_ms")).toDouble());
            p.modes.append({at, text(m.toObject(), "mode")});
            p.delays.insert(at, m.toObject().value(QLatin1String("delay_ms")).toInt());
        }
        for (const QJsonValue &c : o.value(QLatin1String("connections")).toArray()) {
            const QJsonObject co = c.toObject();
            FakeConnection fc;
            fc.id = co.value(QLatin1String("id")).toInt();
            fc.acceptedAtMs = qint64(co.value(QLatin1String("accepted_at_ms")).toDouble());
            const QJsonValue est = co.value(QLatin1String("established_at_ms"));
            fc.establishedAtMs = est.isDouble() ? qint64(est.toDouble()) : -1;
            fc.mode = text(co, "mode");
            fc.outcome = text(co, "outcome");
            for (const QJsonValue &r : co.value(QLatin1String("requests")).toArray())
                fc.requests << r.toString();
            p.connections.append(fc);
        }
        out->proxies.append(p);
    }
    if (!files.accounts.isEmpty()) {
        if (!readJson(files.accounts, &doc, &error) || !doc.isArray())
            errors << QStringLiteral("accounts: ") + (error.isEmpty() ? QStringLiteral("not a JSON array") : error);
        for (const QJsonValue &v : doc.array()) {
            const QJsonObject o = v.toObject();
            out->accounts.insert(text(o, "account_id"), {text(o, "account_id"), text(o, "account_alias"),
                                                         text(o, "chatgpt_account_id"), text(o, "status")});
        }
    }
    if (!files.health.isEmpty()) {
        out->health.present = true;
        out->health.exitCode = files.healthExit;
        // Health may print nothing at all (exit 3): that is an answer too, checked against the exit code.
        if (readJson(files.health, &doc, &error))
            out->health.json = doc.object();
    }
    return errors;
}

} // namespace probe
