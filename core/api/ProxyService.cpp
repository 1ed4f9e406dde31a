#include "api/ProxyService.h"

#include "api/Passthrough.h"
#include "api/RequestScanThread.h"
#include "api/RouteTable.h"
#include "api/Turn.h"
#include "apikeys/ApiKey.h"
#include "apikeys/ApiKeyCheck.h"
#include "config/ConfigWatcher.h"
#include "store/ApiKeyRepository.h"
#include "store/Database.h"
#include "store/RequestLogRepository.h"
#include "store/StoreWorker.h"
#include "upstream/UpstreamClient.h"
#include "upstream/egress/EgressRequest.h"
#include "upstream/egress/EgressSelector.h"
#include "usage/UsagePoller.h"
#include "util/Clock.h"
#include "util/Faults.h"
#include "util/LargeBufferPool.h"

#include <QEventLoop>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLoggingCategory>
#include <QPointer>
#include <QTimer>

Q_LOGGING_CATEGORY(lcProxyConfig, "switchyard.config")

Q_LOGGING_CATEGORY(lcFrontDoor, "switchyard.frontdoor")

namespace sy {

namespace {

bool isProxyRoute(Route route)
{
    switch (route) {
    case Route::CodexResponses:
    case Route::V1Responses:
    case Route::V1ChatCompletions:
    case Route::CodexResponsesCompact:
    case Route::CodexModels:
    case Route::V1Models:
        return true;
    default:
        return false;
    }
}

// The routes served by a Turn, which claims an owner slot before it dispatches.
bool isTurnRoute(Route route)
{
    return route == Route::CodexResponses || route == Route::V1Responses || route == Route::V1ChatCompletions;
}

} // namespace

ProxyService::ProxyService(const Config &config, const Clock &clock, StoreWorker *store, SecretStore *secrets,
                           QObject *parent)
    : QObject(parent), m_config(std::make_shared<const Config>(config)), m_clock(clock), m_store(store),
      m_secrets(secrets)
{
}

ProxyService::~ProxyService()
{
    stop();
}

QString ProxyService::start()
{
    // Children are created here, on the proxy thread, so their timers and sockets live on it.
    m_upstream = new UpstreamClient(this);
    m_pool = new AccountPool(m_config, m_clock, m_store, m_secrets, this);
    m_server = new HttpServer(this);
    m_server->setClock(&m_clock);
    // Large request bodies and their parser are kept for the next large request, 10-20 s after their last use.
    LargeBufferPool::startSweeping(this, kLargeBufferSweepMs);
    // Large Codex bodies are scanned off this thread (SWITCHYARD_SCAN_THREAD=0: here, for A/B runs).
    if (qEnvironmentVariable("SWITCHYARD_SCAN_THREAD") != QLatin1String("0"))
        m_scanner = new RequestScanThread(kLargeBufferSweepMs, this);
    applyFrontDoorSettings();
    m_server->setHandler([this](HttpRequestPtr request, HttpResponse *response) { handle(request, response); });
    // A turn's head arrives 50-100 us before its claim is submitted (the body is read, scanned and routed in
    // between): enough for an idle store thread to wake up and warm its caches for that claim. Not when API keys
    // are required: the key check's own store read comes first and wakes the store thread, and a warm-up
    // running then would only make it wait; the claim is only announced, so that the thread waits awake after
    // that read for it (StoreWorker::announceClaim).
    m_server->setHeadObserver([this](const HttpRequest &head) {
        // Nor when no claim can follow (paused proxy, unwritable store): the store thread would wait for nothing.
        if (head.method != "POST" || m_draining || m_pool->proxyPaused() || !m_store->writable())
            return;
        const RouteMatch match = matchRoute(head.method, head.path.toUtf8(), {});
        if (!match.methodAllowed || !isTurnRoute(match.route))
            return;
        bool lengthKnown = false;
        if (head.header("content-length").toLongLong(&lengthKnown) > kClaimSoonMaxBodyBytes && lengthKnown)
            return;
        if (m_apiKeysRequired)
            m_store->announceClaim();
        else
            m_pool->ledger()->expectClaim();
    });

    // Egress credentials and the first probe round come first: no request, token refresh or usage poll meets
    // a pool of unknown health.
    m_egress = new EgressSelector(*m_config, m_clock, m_secrets, this);
    QEventLoop egressLoop;
    m_egress->start([&egressLoop] { egressLoop.quit(); });
    egressLoop.exec();
    m_pool->setEgress(m_egress);

    QEventLoop loop;
    QString poolError;
    m_pool->start([&loop, &poolError](const QString &error) {
        poolError = error;
        loop.quit();
    });
    loop.exec();
    if (!poolError.isEmpty())
        return poolError;
    if (!m_server->listen(m_config->listenAddress, m_config->listenPort)) {
        if (m_server->serverError() == QAbstractSocket::AddressInUseError)
            return QStringLiteral("port %2 on %1 is already in use by another program (another Switchyard, or "
                                  "something else): stop it, or choose another port with --listen or the listen setting")
                .arg(m_config->listenAddress.toString())
                .arg(m_config->listenPort);
        return QStringLiteral("cannot listen on %1:%2: %3")
            .arg(m_config->listenAddress.toString())
            .arg(m_config->listenPort)
            .arg(m_server->errorString());
    }
    m_frontDoor = FrontDoor(m_config->listenAddress, m_server->serverPort(), m_config->allowedHosts,
                            m_config->allowedOrigins);
    m_startedAtMs = m_clock.nowMs();
    if (m_apiKeysRequired)
        warnWithoutApiKeys();
    startUsagePolling();
    if (m_watchOverrides) {
        m_configWatcher = new ConfigWatcher(*m_watchOverrides, m_watchEnv, m_clock, this);
        connect(m_configWatcher, &ConfigWatcher::configLoaded, this, &ProxyService::applyConfig);
        m_configWatcher->start(*m_config);
    }
    return {};
}

void ProxyService::watchConfigFile(const ConfigOverrides &overrides, const QHash<QString, QString> &env)
{
    m_watchOverrides = overrides;
    m_watchEnv = env;
}

void ProxyService::applyConfig(const Config &loaded)
{
    auto next = std::make_shared<Config>(loaded);
    keepRestartOnlySettings(*m_config, next.get());
    const QStringList applied = differingFileKeys(*m_config, *next);
    QStringList restart;
    for (const QString &key : differingFileKeys(*m_config, loaded)) {
        if (isRestartOnlyKey(key))
            restart << key;
    }
    m_restartRequired = restart;
    m_config = next;
    // One snapshot for everything that reads settings per turn, claim or connection; the turns in flight hold
    // on to theirs.
    m_pool->setConfig(m_config);
    applyFrontDoorSettings();
    if (applied.contains(QLatin1String("usage_poll_interval_s")))
        applyUsagePollInterval();
    if (!applied.isEmpty())
        qCInfo(lcProxyConfig).noquote() << "configuration reloaded, applies from the next turn:"
                                        << applied.join(QStringLiteral(", "));
    if (!restart.isEmpty())
        qCWarning(lcProxyConfig).noquote()
            << "configuration keys that apply after a restart:" << restart.join(QStringLiteral(", "));
}

void ProxyService::applyFrontDoorSettings()
{
    m_server->setMaxBodyBytes(m_config->maxBodyBytes);
    m_server->setMaxHeaderBytes(qint64(m_config->maxHeaderKb) * 1024);
    m_server->setMaxHeaderCount(m_config->maxHeaders);
    m_server->setHeaderTimeoutMs(m_config->headerTimeoutS * 1000);
    m_server->setMaxConnectionsPerClient(m_config->maxConnectionsPerClient);
    m_apiKeysRequired = !m_config->listenAddress.isLoopback() || m_config->requireApiKey;
    if (m_server->isListening())
        m_frontDoor = FrontDoor(m_config->listenAddress, m_server->serverPort(), m_config->allowedHosts,
                                m_config->allowedOrigins);
}

void ProxyService::warnWithoutApiKeys()
{
    // Serving anyway is deliberate: every proxy request gets 401 until a key exists, and a key created with the
    // CLI works at once, without a restart.
    std::optional<int> active;
    QString error;
    m_store->runBlocking(
        [this, &active](Database &db, QString *e) {
            active = ApiKeyRepository(db).countActive(m_clock.nowMs(), e);
            return active.has_value();
        },
        &error, false);
    if (active && *active == 0)
        qCWarning(lcFrontDoor).noquote()
            << QStringLiteral("API keys are required on %1 but none is active: every proxy request gets 401 "
                              "until one is created with `switchyard apikeys create`")
                   .arg(m_config->listenAddress.toString());
}

void ProxyService::stop()
{
    // Draining: no new turns, not even on keep-alive connections that are still open; in-flight turns finish.
    if (!m_draining && m_pool)
        m_pool->ledger()->noteDraining();
    m_draining = true;
    if (m_server)
        m_server->close();
    if (m_usagePoller)
        m_usagePoller->stop();
    if (m_configWatcher)
        m_configWatcher->stop();
    if (m_egress)
        m_egress->stop();
}

void ProxyService::cancelRemainingTurns()
{
    const QList<Turn *> turns = m_turns.values();
    for (Turn *t : turns)
        t->cancelForShutdown();
}

void ProxyService::finishDrain()
{
    if (m_pool)
        m_pool->ledger()->noteStopped();
}

void ProxyService::startUsagePolling()
{
    // One account at a time, staggered over the interval: quota windows stay fresh for idle accounts too.
    // A bound account's usage poll goes through a healthy proxy of its egress pool, never direct; polls are
    // not logged requests, so they leave the pool's round_robin cursor alone (EgressRoute).
    const UsagePoller::Fetch direct = UsagePoller::fetchWith(m_upstream);
    UsagePoller::Fetch fetch = [this, direct](const UpstreamRequest &request, UsagePoller::FetchDone done) {
        QString chatgptAccountId;
        for (const auto &h : request.headers) {
            if (headerNameEquals(h.first, "chatgpt-account-id"))
                chatgptAccountId = QString::fromLatin1(h.second);
        }
        for (const AccountPool::Account *a : m_pool->accounts()) {
            if (a->record.chatgptAccountId != chatgptAccountId)
                continue;
            const EgressRoute route = m_pool->outboundRoute(a->record.id);
            if (!route.allowed()) {
                const QString error = QStringLiteral("egress: %1 (%2)").arg(route.reason, route.detail);
                QTimer::singleShot(0, this, [done, error] { done({0, {}, error}); });
                return UsagePoller::Cancel();
            }
            UpstreamRequest routed = request;
            if (route.kind == EgressRoute::Kind::Proxies)
                routed.egress = UpstreamEgress{route.hops.first().name, route.hops.first().proxy};
            return direct(routed, done);
        }
        return direct(request, done);
    };
    m_usagePoller = new UsagePoller(
        m_clock, m_config->upstreamUrl, fetch,
        [this] {
            QList<PollTarget> targets;
            for (const AccountPool::Account *a : m_pool->accounts()) {
                if (a->tokensReady)
                    targets.append({a->record.id, a->record.chatgptAccountId, a->tokens.accessToken, a->record.status});
            }
            return targets;
        },
        this);
    connect(m_usagePoller, &UsagePoller::usagePolled, this,
            [this](const QString &accountId, const AccountUsage &usage, const QString &plan) {
                m_pool->recordUsage(accountId, usage);
                m_pool->recordPlan(accountId, plan);
            });
    connect(m_usagePoller, &UsagePoller::unauthorized, this, [this](const QString &accountId) {
        // The poll may have used a token that a turn's refresh has just replaced: then there is nothing to do.
        const AccountPool::Account *a = m_pool->account(accountId);
        if (a && a->record.lastRefreshMs && m_clock.nowMs() - *a->record.lastRefreshMs < 60000)
            return;
        m_pool->refreshTokens(accountId, {});
    });
    applyUsagePollInterval();
}

void ProxyService::applyUsagePollInterval()
{
    if (m_draining || !m_usagePoller)
        return;
    if (m_config->usagePollIntervalS == 0) {
        m_usagePoller->stop(); // the user turned background polling off; usage still arrives with every turn
        return;
    }
    m_usagePoller->setIntervalMs(qint64(m_config->usagePollIntervalS) * 1000);
    if (!m_usagePoller->isRunning())
        m_usagePoller->start();
}

quint16 ProxyService::port() const
{
    return m_server ? m_server->serverPort() : 0;
}

void ProxyService::handle(HttpRequestPtr request, HttpResponse *response)
{
    if (const std::optional<FrontDoorRefusal> refusal = m_frontDoor.check(*request)) {
        response->sendJsonError(refusal->status, refusal->type, refusal->code, refusal->message);
        return;
    }
    const RouteMatch match = matchRoute(request->method, request->path.toUtf8(), request->header("upgrade"));
    if (match.websocketUpgrade) {
        // No WebSocket transport yet: 426 makes Codex fall back to HTTP at once.
        response->setHeader("Upgrade", "HTTP/1.1");
        response->sendJsonError(426, "invalid_request_error", "websocket_not_supported",
                                QStringLiteral("WebSocket is not supported by this proxy; use HTTP streaming."));
        return;
    }
    if (!match.methodAllowed) {
        response->sendJsonError(405, "invalid_request_error", "method_not_allowed",
                                QStringLiteral("%1 is not allowed on %2")
                                    .arg(QString::fromLatin1(request->method), request->path));
        return;
    }
    if (m_draining && !SY_FAULT("shutdown-admit") && match.route != Route::HealthLive && match.route != Route::ApiStatus) {
        response->setHeader("Retry-After", "5");
        response->sendJsonError(503, "server_error", "shutting_down",
                                QStringLiteral("Switchyard is shutting down; in-flight turns are finishing."));
        return;
    }
    if (isProxyRoute(match.route) && m_apiKeysRequired) {
        const QByteArray presented = presentedApiKey(*request);
        QPointer<HttpResponse> out(response);
        checkApiKey(m_store, presented, m_clock.nowMs(), this,
                    [this, match, request, out, hasKey = !presented.isEmpty()](const ApiKeyCheck &check) {
                        if (!out)
                            return; // the client left while its key was checked
                        if (check.verdict != ApiKeyVerdict::Valid || !check.storeError.isEmpty()) {
                            refuseApiKey(check, hasKey, out);
                            return;
                        }
                        if (m_draining) {
                            out->setHeader("Retry-After", "5");
                            out->sendJsonError(503, "server_error", "shutting_down",
                                               QStringLiteral("Switchyard is shutting down; in-flight turns are "
                                                              "finishing."));
                            return;
                        }
                        admit(match, request, out, check.keyId);
                    });
        return;
    }
    admit(match, request, response, {});
}

void ProxyService::admit(const RouteMatch &match, HttpRequestPtr request, HttpResponse *response,
                         const QString &apiKeyId)
{
    switch (match.route) {
    case Route::NotFound:
        response->sendJsonError(404, "invalid_request_error", "not_found",
                                QStringLiteral("No route for %1 %2").arg(QString::fromLatin1(request->method),
                                                                         request->path));
        return;
    case Route::HealthLive:
        response->sendFull(200, "application/json", QByteArrayLiteral("{\"status\":\"ok\"}"));
        return;
    case Route::CodexResponses:
    case Route::V1Responses:
    case Route::V1ChatCompletions: {
        ProxyServices services{m_config, &m_clock, m_pool, m_upstream, m_store, m_egress, &m_stages, m_scanner};
        auto *turn = new Turn(services, request, response, match, this);
        m_turns.insert(turn);
        connect(turn, &Turn::settled, this, [this, turn] {
            m_turns.remove(turn);
            emit turnSettled();
        });
        if (!apiKeyId.isEmpty())
            recordApiKeyUse(apiKeyId, turn->requestId());
        turn->start();
        return;
    }
    case Route::CodexResponsesCompact:
    case Route::CodexModels:
    case Route::V1Models:
        if (!apiKeyId.isEmpty())
            recordApiKeyUse(apiKeyId, {});
        passthrough(int(match.route), request, response);
        return;
    case Route::ApiStatus:
    case Route::ApiRequests:
    case Route::ApiReload:
        handleLocalApi(int(match.route), request, response);
        return;
    }
}

void ProxyService::recordApiKeyUse(const QString &keyId, const QString &requestId)
{
    // Booked before the turn settles, so its tokens count against the key as soon as its row exists.
    const qint64 now = m_clock.nowMs();
    m_store->submit([keyId, requestId, now](Database &db,
                                            QString *error) { return ApiKeyRepository(db).recordUse(keyId, requestId, now, error); },
                    this, [keyId](bool ok, const QString &error) {
                        if (!ok)
                            qCWarning(lcFrontDoor).noquote() << "the use of API key" << keyId << "was not booked:" << error;
                    });
}

void ProxyService::passthrough(int route, HttpRequestPtr request, HttpResponse *response)
{
    ProxyServices s{m_config, &m_clock, m_pool, m_upstream, m_store, m_egress};
    runPassthrough(s, Route(route), request, response, this);
}

void ProxyService::handleLocalApi(int route, HttpRequestPtr request, HttpResponse *response)
{
    // The local API describes the user's accounts: loopback peers only.
    if (!request->peerAddress.isLoopback()) {
        response->sendJsonError(403, "permission_error", "forbidden", QStringLiteral("The local API is loopback-only."));
        return;
    }
    switch (Route(route)) {
    case Route::ApiStatus:
        response->sendFull(200, "application/json", statusJson());
        return;
    case Route::ApiReload:
        m_pool->reloadNow();
        response->sendFull(200, "application/json", QByteArrayLiteral("{\"reloading\":true}"));
        return;
    case Route::ApiRequests: {
        bool valid = true;
        const QString limitText = request->query.queryItemValue(QStringLiteral("limit"));
        const int limit = limitText.isEmpty() ? 100 : limitText.toInt(&valid);
        if (!valid || limit < 1 || limit > 100000) {
            response->sendJsonError(400, "invalid_request_error", "invalid_limit",
                                    QStringLiteral("limit must be a number from 1 to 100000"));
            return;
        }
        auto rows = std::make_shared<QJsonArray>();
        QPointer<HttpResponse> out(response);
        m_store->submitRead(
            [rows, limit](Database &db, QString *error) {
                *rows = RequestLogRepository::toJson(RequestLogRepository(db).recent(limit, error));
                return error->isEmpty();
            },
            this, [rows, out](bool ok, const QString &problem) {
                if (!out)
                    return;
                if (!ok) {
                    out->sendJsonError(503, "server_error", "store_unavailable", problem);
                    return;
                }
                out->sendFull(200, "application/json", QJsonDocument(*rows).toJson(QJsonDocument::Compact));
            });
        return;
    }
    default:
        break;
    }
}

} // namespace sy
