#pragma once

#include "config/Config.h"

#include <QObject>
#include <QPointer>
#include <QThread>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>

namespace sy {
class Database;
class SecretStore;
} // namespace sy

namespace sy::ui {

class DbWorkerCore;

// A thread of the UI with its own database connection (never the proxy's): every store read and write the
// dashboard and the tray make runs here, so the GUI thread never waits on SQLite or the keychain. Results
// come back to the GUI thread as values (immutable snapshots), through the `done` callback of run().
//
// Lives on the GUI thread; the destructor lets the running job finish, closes the connection on the worker
// thread and stops it. Results still queued then are dropped.
class DbWorker : public QObject
{
    Q_OBJECT
public:
    // What a job gets on the worker thread. The connection opens (read-write, migrating the schema) at the
    // first use; the SecretStore exists only when the worker was given a Config.
    class Context
    {
    public:
        Database *db(QString *error);
        SecretStore *secrets(QString *error);
        // The configuration the worker was given (null without one).
        const Config *config() const { return m_config ? &*m_config : nullptr; }

    private:
        friend class DbWorker;
        friend class DbWorkerCore;
        QString m_path;
        std::optional<Config> m_config;
        std::unique_ptr<Database> m_db;
        std::unique_ptr<SecretStore> m_secrets;
    };
    using Job = std::function<void(Context &)>;

    DbWorker(const QString &databasePath, const QString &threadName, QObject *parent = nullptr);
    ~DbWorker() override;

    // Account actions need the SecretStore the configuration names; call before the first job.
    void setSecretConfig(const Config &config);
    QString databasePath() const { return m_path; }

    // Runs `job` on the worker thread, then `done(result)` on the GUI thread unless `context` is gone.
    template <typename R>
    void run(std::function<R(Context &)> job, QObject *context, std::function<void(const R &)> done)
    {
        QPointer<QObject> guard(context);
        post([this, job = std::move(job), guard, done = std::move(done)](Context &ctx) {
            auto result = std::make_shared<const R>(job(ctx));
            deliver([guard, done, result] {
                if (guard)
                    done(*result);
            });
        });
    }
    // Runs `job` on the worker thread (its own thread affinity: create QObjects there, e.g. a login).
    void post(Job job);
    // Queues `fn` onto the GUI thread (callable from the worker thread).
    void deliver(std::function<void()> fn);
    // Jobs posted and not yet finished.
    int pending() const { return m_pending.load(); }
    QThread *workerThread() { return &m_thread; }

private:
    QString m_path;
    QThread m_thread;
    DbWorkerCore *m_core = nullptr;
    std::atomic<int> m_pending{0};
};

} // namespace sy::ui
