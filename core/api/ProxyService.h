#pragma once

#include "api/AccountPool.h"
#include "api/FrontDoor.h"
#include "api/RouteTable.h"
#include "api/TurnStages.h"
#include "config/Config.h"
#include "http/HttpServer.h"

#include <QObject>
#include <QSet>
#include <memory>
#include <optional>

namespace sy {

class Clock;
class ConfigWatcher;
class EgressSelector;
class RequestScanThread;
class SecretStore;
class StoreWorker;
class Turn;
class UpstreamClient;
class UsagePoller;

// The proxy: downstream server, routes, account pool and upstream client, all living on one thread that is not
// the GUI thread. Create it, move it to its thread, then call start() there (e.g. with a blocking queued call).
class ProxyService : public QObject
{
    Q_OBJECT

public:
    // How often the proxy thread's LargeBufferPool drops what went unused.
    static constexpr int kLargeBufferSweepMs = 10 * 1000;

    ProxyService(const Config &config, const Clock &clock, StoreWorker *store, SecretStore *secrets,
                 QObject *parent = nullptr);
    ~ProxyService() override;

    // Loads accounts and listens. Returns an error text (the port is in use, ...) or empty.
    Q_INVOKABLE QString start();
    Q_INVOKABLE void stop();
    // After the drain deadline: cancel (and book) every turn still in flight.
    Q_INVOKABLE void cancelRemainingTurns();
    // The drain is over (every turn settled): record it on the replica's row.
    Q_INVOKABLE void finishDrain();
    quint16 port() const;
    // Watch the configuration file from start() on and apply valid edits (call before start()). `overrides`
    // and `env` are what the configuration was loaded with at start-up.
    void watchConfigFile(const ConfigOverrides &overrides, const QHash<QString, QString> &env);
    // Applies a configuration loaded while running: hot keys take effect for the next turn (turns in flight keep
    // the snapshot they started with); restart-only keys keep their running values and are reported in
    // /api/status "config.restart_required".
    void applyConfig(const Config &loaded);
    // The configuration in force (restart-only keys as started).
    std::shared_ptr<const Config> config() const { return m_config; }
    AccountPool *pool() const { return m_pool; }
    int inFlightTurns() const { return int(m_turns.size()); }

signals:
    void turnSettled();

private:
    void handle(HttpRequestPtr request, HttpResponse *response);
    // A proxy route, after the front door and (when keys are required) the API key; `apiKeyId` is the key's id.
    void admit(const RouteMatch &match, HttpRequestPtr request, HttpResponse *response, const QString &apiKeyId);
    void warnWithoutApiKeys();
    // Header limits, connection limits, Host/Origin allow-lists and the API-key rule: all hot.
    void applyFrontDoorSettings();
    void recordApiKeyUse(const QString &keyId, const QString &requestId);
    void handleLocalApi(int route, HttpRequestPtr request, HttpResponse *response);
    void passthrough(int route, HttpRequestPtr request, HttpResponse *response);
    QByteArray statusJson() const;
    void startUsagePolling();
    void applyUsagePollInterval();
    QJsonObject configStatusJson() const;

    std::shared_ptr<const Config> m_config;
    std::optional<ConfigOverrides> m_watchOverrides;
    QHash<QString, QString> m_watchEnv;
    ConfigWatcher *m_configWatcher = nullptr; // created by start(), on the proxy thread
    QStringList m_restartRequired;
    const Clock &m_clock;
    StoreWorker *m_store;
    SecretStore *m_secrets;
    HttpServer *m_server = nullptr;
    UpstreamClient *m_upstream = nullptr;
    AccountPool *m_pool = nullptr;
    UsagePoller *m_usagePoller = nullptr;
    EgressSelector *m_egress = nullptr;
    RequestScanThread *m_scanner = nullptr; // created by start(), on the proxy thread
    FrontDoor m_frontDoor;
    // Non-loopback listen address or require_api_key: proxy routes need a valid API key.
    bool m_apiKeysRequired = false;
    QSet<Turn *> m_turns;
    TurnStageStats m_stages; // proxy thread, like the turns that record into it
    qint64 m_startedAtMs = 0;
    bool m_draining = false;
};

} // namespace sy
