#include "health/HealthCheck.h"

#include "accounts/SecretStore.h"
#include "config/Config.h"
#include "health/HealthCriteria.h"
#include "health/ProxyHandshake.h"
#include "store/AccountRepository.h"
#include "store/RequestLogRepository.h"
#include "upstream/egress/EgressCredentials.h"

#include <QDateTime>
#include <QFileInfo>

namespace sy {

namespace {

// Enough for any real log; the aggregates criterion compares every row it reads with the store's totals.
constexpr int kAllRows = 10000000;

void readStore(Database &db, HealthInputs *in)
{
    QString error;
    AccountRepository accounts(db);
    in->accounts = accounts.list(&error);
    for (const UsageRecord &u : accounts.loadAllUsage(&error))
        in->usage.insert(u.accountId, u);
    RequestLogRepository log(db);
    in->recentRows = log.recent(kHealthRecentRows, &error);
    in->allRows = log.recent(kAllRows, &error);
    if (!error.isEmpty()) {
        in->storeOk = false;
        in->storeProblem = error;
        return;
    }
    in->aggregates = tokenTotalsByAccount(db, 0, &in->aggregatesError);
}

} // namespace

HealthReport runHealthCheck(const Config &config, Database *db, const QString &storeProblem, SecretStore *secrets,
                            const QString &liveStoreProblem)
{
    HealthInputs in;
    in.liveStoreProblem = liveStoreProblem;
    in.config = &config;
    in.nowMs = QDateTime::currentMSecsSinceEpoch();
    in.storeOk = db != nullptr;
    in.storeProblem = storeProblem;
    if (!config.configFile.isEmpty())
        in.configSinceMs = QFileInfo(config.configFile).lastModified().toMSecsSinceEpoch();
    if (db)
        readStore(*db, &in);

    QHash<QString, ProxyHandshake::Credentials> credentials;
    for (const EgressProxySpec &p : config.egress.proxies) {
        if (!p.hasCredentials)
            continue;
        if (!secrets) {
            in.credentialProblems.insert(p.name, QStringLiteral("no secret store"));
            continue;
        }
        AuthTokens blob;
        const SecretOutcome outcome = secrets->readTokensBlocking(egressSecretKey(p.name), &blob, 5000);
        const std::optional<EgressCredentials> creds = outcome.ok ? unpackEgressCredentials(blob) : std::nullopt;
        if (creds)
            credentials.insert(p.name, {creds->user, creds->password});
        else
            in.credentialProblems.insert(p.name, outcome.ok
                                                     ? QStringLiteral("the keychain entry is not egress credentials")
                                                     : outcome.errorText);
    }
    const QUrl &upstream = config.upstreamUrl;
    const bool tls = upstream.scheme() == QLatin1String("https");
    ProxyHandshake probe(upstream.host(), quint16(upstream.port(tls ? 443 : 80)),
                         qMax(1, config.budgets.connectS) * 1000);
    in.probes = probe.runAndWait(config.egress.proxies, credentials);
    return evaluateHealth(in);
}

} // namespace sy
