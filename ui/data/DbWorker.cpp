#include "data/DbWorker.h"

#include "accounts/SecretStore.h"
#include "accounts/SecretStoreFactory.h"
#include "store/Database.h"

namespace sy::ui {

class DbWorkerCore : public QObject
{
public:
    DbWorker::Context context;
};

Database *DbWorker::Context::db(QString *error)
{
    if (m_db && m_db->isOpen())
        return m_db.get();
    auto db = std::make_unique<Database>();
    if (!db->open(m_path, error))
        return nullptr;
    m_db = std::move(db);
    return m_db.get();
}

SecretStore *DbWorker::Context::secrets(QString *error)
{
    if (m_secrets)
        return m_secrets.get();
    if (!m_config) {
        if (error)
            *error = QStringLiteral("no secret store configured for this window");
        return nullptr;
    }
    m_secrets.reset(makeSecretStore(*m_config, error));
    return m_secrets.get();
}

DbWorker::DbWorker(const QString &databasePath, const QString &threadName, QObject *parent)
    : QObject(parent), m_path(databasePath)
{
    m_core = new DbWorkerCore;
    m_core->context.m_path = databasePath;
    m_core->moveToThread(&m_thread);
    m_thread.setObjectName(threadName);
    m_thread.start();
}

DbWorker::~DbWorker()
{
    // The connection and the secret store belong to the worker thread: close them there.
    QMetaObject::invokeMethod(
        m_core,
        [core = m_core] {
            core->context.m_secrets.reset();
            core->context.m_db.reset();
        },
        Qt::BlockingQueuedConnection);
    m_thread.quit();
    m_thread.wait();
    delete m_core;
}

void DbWorker::setSecretConfig(const Config &config)
{
    QMetaObject::invokeMethod(
        m_core, [core = m_core, config] { core->context.m_config = config; }, Qt::QueuedConnection);
}

void DbWorker::post(Job job)
{
    ++m_pending;
    QMetaObject::invokeMethod(
        m_core,
        [this, core = m_core, job = std::move(job)] {
            job(core->context);
            --m_pending;
        },
        Qt::QueuedConnection);
}

void DbWorker::deliver(std::function<void()> fn)
{
    QMetaObject::invokeMethod(this, std::move(fn), Qt::QueuedConnection);
}

} // namespace sy::ui
