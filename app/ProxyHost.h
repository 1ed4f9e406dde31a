#pragma once

#include "config/Config.h"

#include <QLockFile>
#include <QObject>
#include <QThread>

#include <memory>
#include <optional>

namespace sy {
class ProxyService;
class StoreWorker;
class SecretStore;
} // namespace sy

namespace sy::app {

// Owns the running proxy for `serve` and the tray app: the data-dir lock, the store thread and the proxy
// thread (never the GUI thread).
class ProxyHost : public QObject
{
    Q_OBJECT
public:
    explicit ProxyHost(const Config &config, QObject *parent = nullptr);
    ~ProxyHost() override;

    // Makes the running proxy follow edits of the configuration file (call before start()); `overrides` and
    // `env` are what `config` was loaded with.
    void watchConfigFile(const ConfigOverrides &overrides, const QHash<QString, QString> &env);
    // Returns an error text or empty.
    QString start();
    // drain_s of the configuration in force (it may have been edited since start-up), in milliseconds.
    int drainMs() const;
    // Stops accepting, lets in-flight turns finish for up to `drainMs`, then stops the threads.
    void shutdown(int drainMs);
    quint16 port() const;
    ProxyService *proxy() const { return m_proxy; }
    // <data dir>/instance.json: {"pid", "api"} of the running instance, removed when it stops.
    static QString instanceFilePath(const Config &config);
    StoreWorker *store() const { return m_store.get(); }

private:
    // True when no turn is in flight any more (within timeoutMs).
    bool waitForTurns(int timeoutMs);
    void writeInstanceFile();
    void installProxyEventDispatcher();

    Config m_config;
    std::optional<ConfigOverrides> m_watchOverrides;
    QHash<QString, QString> m_watchEnv;
    std::unique_ptr<QLockFile> m_lock;
    std::unique_ptr<StoreWorker> m_store;
    QThread m_proxyThread;
    ProxyService *m_proxy = nullptr;
    SecretStore *m_secrets = nullptr;
    bool m_running = false;
};

} // namespace sy::app
