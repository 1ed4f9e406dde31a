#include "data/StoreClient.h"

#include "accounts/AuthJsonImportStore.h"
#include "accounts/LoginStorage.h"
#include "accounts/OAuthLogin.h"
#include "accounts/SecretStore.h"
#include "apikeys/ApiKeyAdmin.h"
#include "store/AccountRepository.h"
#include "store/ApiKeyRepository.h"
#include "store/Database.h"
#include "store/SettingsRepository.h"

#include <QDate>
#include <QDateTime>
#include <QPointer>

namespace sy::ui {

namespace {

qint64 startOfToday()
{
    return QDateTime(QDate::currentDate(), QTime(0, 0)).toMSecsSinceEpoch();
}

} // namespace

StoreClient::StoreClient(const QString &databasePath, QObject *parent)
    : QObject(parent), m_worker(new DbWorker(databasePath, QStringLiteral("ui-store"), this)),
      m_queryWorker(new DbWorker(databasePath, QStringLiteral("ui-query"), this))
{
    qRegisterMetaType<SnapshotPtr>();
    m_timer.setInterval(1000);
    connect(&m_timer, &QTimer::timeout, this, &StoreClient::refresh);
}

StoreClient::~StoreClient()
{
    // A login still waiting for its browser callback ends with the window: no callback may outlive us.
    if (m_loginRunning) {
        m_worker->post([this](DbWorker::Context &) {
            if (m_login) {
                QObject::disconnect(m_login, nullptr, nullptr, nullptr);
                delete m_login.data();
            }
        });
    }
    // Stop the threads while our members still exist: their jobs may touch them.
    delete m_queryWorker;
    delete m_worker;
}

void StoreClient::setSecretConfig(const Config &config)
{
    m_worker->setSecretConfig(config);
}

void StoreClient::start()
{
    m_timer.start();
    refresh();
}

void StoreClient::refresh()
{
    if (m_loading) {
        m_reloadAgain = true; // an action landed while a read was running: read once more afterwards
        return;
    }
    m_loading = true;
    const qint64 dayStart = startOfToday();
    m_worker->run<SnapshotPtr>(
        [dayStart](DbWorker::Context &ctx) {
            QString error;
            Database *db = ctx.db(&error);
            const qint64 now = QDateTime::currentMSecsSinceEpoch();
            if (!db) {
                auto failed = std::make_shared<StoreSnapshot>();
                failed->takenAtMs = now;
                failed->error = error;
                return SnapshotPtr(failed);
            }
            return SnapshotPtr(std::make_shared<StoreSnapshot>(loadStoreSnapshot(*db, now, dayStart)));
        },
        this,
        [this](const SnapshotPtr &snapshot) {
            m_loading = false;
            m_snapshot = snapshot;
            emit snapshotChanged(snapshot);
            if (m_reloadAgain) {
                m_reloadAgain = false;
                refresh();
            }
        });
}

void StoreClient::finishAction(const ActionResult &r, const Done &done)
{
    if (done)
        done(r.ok, r.message);
    emit actionFinished(r.ok, r.message);
    refresh();
}

void StoreClient::runAccountJob(std::function<ActionResult(DbWorker::Context &ctx)> job, Done done)
{
    m_worker->run<ActionResult>(std::move(job), this, [this, done](const ActionResult &r) { finishAction(r, done); });
}

void StoreClient::runAction(std::function<ActionResult(Database &db, QString *error)> action, Done done)
{
    runAccountJob(
        [action](DbWorker::Context &ctx) {
            QString error;
            Database *db = ctx.db(&error);
            if (!db)
                return ActionResult{false, error};
            ActionResult r = action(*db, &error);
            if (!r.ok && r.message.isEmpty())
                r.message = error;
            return r;
        },
        std::move(done));
}

void StoreClient::setPin(const QString &accountId, Done done)
{
    runAction(
        [accountId](Database &db, QString *error) {
            return ActionResult{SettingsRepository(db).setPin(accountId, false, error), {}};
        },
        std::move(done));
}

void StoreClient::clearPin(Done done)
{
    runAction(
        [](Database &db, QString *error) {
            return ActionResult{SettingsRepository(db).clearPin(error), {}};
        },
        std::move(done));
}

void StoreClient::setAccountPaused(const QString &accountId, bool paused, Done done)
{
    runAction(
        [accountId, paused](Database &db, QString *error) {
            // The same status change and reason `switchyard accounts pause|resume` writes.
            const bool ok =
                AccountRepository(db).setStatus(accountId, paused ? QStringLiteral("paused") : QStringLiteral("active"),
                                                paused ? QStringLiteral("paused by user") : QString(), error);
            return ActionResult{ok, {}};
        },
        std::move(done));
}

void StoreClient::setSetting(const QString &key, const QString &value, Done done)
{
    runAction(
        [key, value](Database &db, QString *error) {
            return ActionResult{SettingsRepository(db).setValue(key, value, error), {}};
        },
        std::move(done));
}

void StoreClient::setProxyPaused(bool paused, Done done)
{
    setSetting(uikeys::proxyPaused, paused ? QStringLiteral("true") : QStringLiteral("false"), std::move(done));
}

void StoreClient::removeAccount(const QString &accountId, Done done)
{
    runAccountJob(
        [accountId](DbWorker::Context &ctx) {
            QString error;
            Database *db = ctx.db(&error);
            SecretStore *secrets = db ? ctx.secrets(&error) : nullptr;
            if (!secrets)
                return ActionResult{false, error};
            // As `switchyard accounts remove`: the stored tokens first, then the record.
            const SecretOutcome removed = secrets->removeTokensBlocking(accountId);
            if (!removed.ok)
                return ActionResult{false, removed.errorText};
            if (!AccountRepository(*db).remove(accountId, &error))
                return ActionResult{false, error};
            return ActionResult{true, {}};
        },
        std::move(done));
}

void StoreClient::importAuthJsonFiles(const QStringList &files, Done done)
{
    runAccountJob(
        [files](DbWorker::Context &ctx) {
            QList<AuthJsonImport> parsed;
            QString error;
            if (!readAuthJsonFiles(files, &parsed, &error))
                return ActionResult{false, error};
            Database *db = ctx.db(&error);
            SecretStore *secrets = db ? ctx.secrets(&error) : nullptr;
            if (!secrets)
                return ActionResult{false, error};
            QStringList imported;
            for (int i = 0; i < parsed.size(); ++i) {
                const auto stored = storeAuthJsonImport(*db, *secrets, parsed.at(i), std::nullopt, &error);
                if (!stored)
                    return ActionResult{false, QStringLiteral("%1: %2").arg(files.at(i), error)};
                imported << (stored->email.isEmpty() ? stored->accountId : stored->email);
            }
            return ActionResult{true, imported.join(QStringLiteral(", "))};
        },
        std::move(done));
}

void StoreClient::createApiKey(const ApiKeyRequest &request, std::function<void(const CreatedApiKey &created)> done)
{
    m_worker->run<CreatedApiKey>(
        [request](DbWorker::Context &ctx) {
            CreatedApiKey created;
            Database *db = ctx.db(&created.error);
            if (!db)
                return created;
            std::optional<IssuedApiKey> issued =
                issueApiKey(*db, request, QDateTime::currentMSecsSinceEpoch(), &created.error);
            if (!issued)
                return created;
            created.ok = true;
            created.keyId = issued->record.id;
            // Moved, not copied: this buffer is the one copy, and its deleter wipes it wherever it ends (also
            // when the page is gone before the result arrives).
            created.secret = std::shared_ptr<QByteArray>(new QByteArray(std::move(issued->secret)), [](QByteArray *b) {
                wipeSecret(*b);
                delete b;
            });
            return created;
        },
        this,
        [this, done = std::move(done)](const CreatedApiKey &created) {
            if (done)
                done(created);
            emit actionFinished(created.ok, created.ok ? tr("API key %1 created.").arg(created.keyId) : created.error);
        });
}

void StoreClient::revokeApiKey(const QString &keyId, Done done)
{
    runAction(
        [keyId](Database &db, QString *error) {
            // As `switchyard apikeys revoke`: a running proxy reads the key's row on every request, so the next
            // request with it gets 401.
            if (!ApiKeyRepository(db).revoke(keyId, QDateTime::currentMSecsSinceEpoch(), error))
                return ActionResult{false, error->isEmpty() ? tr("No API key %1.").arg(keyId) : *error};
            return ActionResult{true, tr("API key %1 revoked: requests with it get 401 from now on.").arg(keyId)};
        },
        std::move(done));
}

void StoreClient::startLogin(const OAuthLoginOptions &options)
{
    if (m_loginRunning)
        return;
    m_loginRunning = true;
    DbWorker *worker = m_worker;
    QPointer<StoreClient> self(this);
    const auto finish = [worker, self](bool ok, const QString &message) {
        worker->deliver([self, ok, message] {
            if (!self)
                return;
            self->m_loginRunning = false;
            emit self->loginFinished(ok, message);
            self->refresh();
        });
    };
    m_worker->post([this, options, worker, self, finish](DbWorker::Context &ctx) {
        QString error;
        Database *db = ctx.db(&error);
        SecretStore *secrets = db ? ctx.secrets(&error) : nullptr;
        if (!secrets) {
            finish(false, error);
            return;
        }
        // The code exchange goes through the default egress pool when there is one, never directly when that
        // pool cannot carry it (the dashboard's login names no alias).
        OAuthLoginOptions routed = options;
        if (const Config *config = ctx.config();
            config && !routeLoginExchange(&routed, *config, secrets, std::nullopt, &error)) {
            finish(false, error);
            return;
        }
        auto *login = new OAuthLogin(routed);
        m_login = login;
        login->setBrowserOpener([worker, self](const QUrl &url) {
            worker->deliver([self, url] {
                if (self)
                    emit self->loginUrl(url);
            });
            return true;
        });
        login->setCompleter([db, secrets](const AuthTokens &tokens) -> std::pair<bool, QString> {
            QString why;
            const std::optional<SavedLogin> saved = saveLogin(*db, *secrets, tokens, std::nullopt, &why);
            if (!saved)
                return {false, why};
            return {true, saved->email.isEmpty() ? saved->accountId : saved->email};
        });
        QObject::connect(login, &OAuthLogin::finished, login, [login, finish](const OAuthLoginResult &result) {
            finish(result.ok(), result.ok() ? result.detail : result.message);
            login->deleteLater();
        });
        if (!login->start()) {
            finish(false, login->result().message);
            login->deleteLater();
        }
    });
}

void StoreClient::cancelLogin()
{
    if (!m_loginRunning)
        return;
    m_worker->post([this](DbWorker::Context &) {
        if (m_login)
            m_login->cancel();
    });
}

} // namespace sy::ui
