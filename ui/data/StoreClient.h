#pragma once

#include "data/DbWorker.h"
#include "data/StoreSnapshot.h"

#include <QObject>
#include <QPointer>
#include <QStringList>
#include <QTimer>
#include <QUrl>
#include <functional>
#include <memory>

namespace sy {
struct ApiKeyRecord;
struct ApiKeyRequest;
struct Config;
struct OAuthLoginOptions;
class Database;
class OAuthLogin;
} // namespace sy

namespace sy::ui {

// The UI's door to the store. Reads a StoreSnapshot about once a second on its own DbWorker thread and
// hands it to the GUI thread (snapshotChanged); runs the user's account and settings actions through the
// same repositories the CLI uses, on that thread, and reports each with actionFinished. Heavy queries
// (request paging, charts) go to a second worker, queryWorker(), so they never delay the snapshot.
class StoreClient : public QObject
{
    Q_OBJECT
public:
    explicit StoreClient(const QString &databasePath, QObject *parent = nullptr);
    ~StoreClient() override;

    // Import, login and remove need the configured SecretStore.
    void setSecretConfig(const Config &config);
    void setPollIntervalMs(int ms) { m_timer.setInterval(ms); }
    // Starts polling (and loads a first snapshot at once).
    void start();
    void stop() { m_timer.stop(); }
    // Loads a snapshot now (coalesced with one already running).
    void refresh();

    SnapshotPtr snapshot() const { return m_snapshot; }
    DbWorker *worker() const { return m_worker; }
    DbWorker *queryWorker() const { return m_queryWorker; }

    // Actions. Each ends with `done` (when given), actionFinished(ok, message) and a fresh snapshot.
    using Done = std::function<void(bool ok, const QString &message)>;
    void setPin(const QString &accountId, Done done = {});
    void clearPin(Done done = {});
    void setAccountPaused(const QString &accountId, bool paused, Done done = {});
    void removeAccount(const QString &accountId, Done done = {});
    void setSetting(const QString &key, const QString &value, Done done = {});
    void setProxyPaused(bool paused, Done done = {});
    // On success the message lists the imported accounts (email, else id).
    void importAuthJsonFiles(const QStringList &files, Done done = {});

    // API keys, through the code `switchyard apikeys create|revoke` runs (apikeys/ApiKeyAdmin). A created key
    // arrives with its plaintext in `secret`: the only copy, wiped when the last holder lets go of it.
    struct CreatedApiKey
    {
        bool ok = false;
        QString error;
        QString keyId;
        std::shared_ptr<QByteArray> secret;
    };
    void createApiKey(const ApiKeyRequest &request, std::function<void(const CreatedApiKey &created)> done);
    void revokeApiKey(const QString &keyId, Done done = {});

    // The browser login (core/accounts/OAuthLogin) runs on the worker thread; loginUrl() carries the URL to
    // open, loginFinished() the outcome. One login at a time.
    void startLogin(const OAuthLoginOptions &options);
    void cancelLogin();
    bool loginRunning() const { return m_loginRunning; }

signals:
    void snapshotChanged(const sy::ui::SnapshotPtr &snapshot);
    void actionFinished(bool ok, const QString &message);
    void loginUrl(const QUrl &url);
    void loginFinished(bool ok, const QString &message);

private:
    struct ActionResult
    {
        bool ok = false;
        QString message;
    };
    void runAction(std::function<ActionResult(Database &db, QString *error)> action, Done done);
    // Runs a job that needs the SecretStore too.
    void runAccountJob(std::function<ActionResult(DbWorker::Context &ctx)> job, Done done);
    void finishAction(const ActionResult &r, const Done &done);

    DbWorker *m_worker;
    DbWorker *m_queryWorker;
    QTimer m_timer;
    SnapshotPtr m_snapshot;
    bool m_loading = false;
    bool m_reloadAgain = false;
    bool m_loginRunning = false;
    QPointer<OAuthLogin> m_login; // touched on the worker thread only
};

} // namespace sy::ui
