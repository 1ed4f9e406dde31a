#include "store/StoreWorker.h"

#include "store/Database.h"
#include "util/Clock.h"

#include <QMutexLocker>
#include <QReadLocker>
#include <QThread>
#include <QTimer>
#include <QWriteLocker>
#include <optional>

namespace sy {

// Lives on the store thread and owns everything that must stay there: the connection and its timers.
class StoreThreadContext : public QObject
{
public:
    explicit StoreThreadContext(StoreWorker *owner) : m_owner(owner) {}

    bool open(const QString &location, QString *error)
    {
        if (!m_db.open(location, error))
            return false;
        m_reprobe = new QTimer(this);
        QObject::connect(m_reprobe, &QTimer::timeout, this, [this] {
            m_db.probeWrite(SystemClock::instance().nowMs(), nullptr);
            syncWritable();
        });
        m_poll = new QTimer(this);
        QObject::connect(m_poll, &QTimer::timeout, this, [this] { pollChangeCounter(); });
        m_lastCounter = m_db.changeCounter();
        syncWritable();
        return true;
    }

    void shutdown()
    {
        delete m_reprobe;
        delete m_poll;
        m_reprobe = m_poll = nullptr;
        m_db.close();
    }

    void setReprobeInterval(int ms)
    {
        m_reprobeMs = ms;
        if (m_reprobe && m_reprobe->isActive())
            m_reprobe->start(m_reprobeMs);
    }

    void setPollInterval(int ms)
    {
        if (!m_poll)
            return;
        if (ms > 0)
            m_poll->start(ms);
        else
            m_poll->stop();
    }

    void run(const StoreWorker::Job &job, bool write, QObject *context, const StoreWorker::Done &onDone)
    {
        QString error;
        bool ok = false;
        {
            Transaction tx(m_db, write ? Transaction::Kind::Write : Transaction::Kind::Read);
            // A job returning false leaves tx uncommitted; its destructor rolls back.
            ok = tx.begin(&error) && job(m_db, &error) && tx.commit(&error);
        }
        if (!ok && error.isEmpty())
            error = QStringLiteral("store job failed");
        syncWritable();
        if (!onDone)
            return;
        if (!context) {
            onDone(ok, error);
            return;
        }
        QMetaObject::invokeMethod(
            context, [onDone, ok, error] { onDone(ok, error); }, Qt::QueuedConnection);
    }

    bool runNow(const StoreWorker::Job &job, bool write, QString *error)
    {
        bool ok = false;
        QString text;
        run(job, write, nullptr, [&](bool jobOk, const QString &jobError) {
            ok = jobOk;
            text = jobError;
        });
        if (!ok && error)
            *error = text;
        return ok;
    }

private:
    void syncWritable()
    {
        const bool writable = m_db.writable();
        m_owner->setWritableState(writable, m_db.unwritableReason());
        if (!m_reprobe)
            return;
        if (writable)
            m_reprobe->stop();
        else if (!m_reprobe->isActive())
            m_reprobe->start(m_reprobeMs);
    }

    void pollChangeCounter()
    {
        const std::optional<qint64> counter = m_db.changeCounter();
        if (!counter || counter == m_lastCounter)
            return;
        m_lastCounter = counter;
        emit m_owner->changeCounterChanged(*counter);
    }

    StoreWorker *m_owner;
    Database m_db;
    QTimer *m_reprobe = nullptr;
    QTimer *m_poll = nullptr;
    int m_reprobeMs = 5000;
    std::optional<qint64> m_lastCounter;
};

StoreWorker::StoreWorker(QObject *parent) : QObject(parent) {}

StoreWorker::~StoreWorker()
{
    stop();
}

bool StoreWorker::start(const QString &databaseLocation, QString *error)
{
    if (m_thread) {
        if (error)
            *error = QStringLiteral("store already started");
        return false;
    }
    m_thread = new QThread;
    m_thread->setObjectName(QStringLiteral("store"));
    m_context = new StoreThreadContext(this);
    m_context->moveToThread(m_thread);
    m_thread->start();

    bool opened = false;
    QString openError;
    const int reprobeMs = m_reprobeIntervalMs;
    const int pollMs = m_changePollIntervalMs;
    StoreThreadContext *context = m_context;
    QMetaObject::invokeMethod(
        m_context,
        [&, context] {
            opened = context->open(databaseLocation, &openError);
            if (opened) {
                context->setReprobeInterval(reprobeMs);
                context->setPollInterval(pollMs);
            }
        },
        Qt::BlockingQueuedConnection);
    if (!opened) {
        if (error)
            *error = openError;
        m_thread->quit();
        m_thread->wait();
        delete m_context;
        delete m_thread;
        m_context = nullptr;
        m_thread = nullptr;
        return false;
    }
    QWriteLocker lock(&m_lifecycle);
    m_running = true;
    return true;
}

void StoreWorker::stop()
{
    {
        QWriteLocker lock(&m_lifecycle);
        if (!m_running)
            return;
        m_running = false;
    }
    // Queued behind every job already posted, so those still run and commit.
    StoreThreadContext *context = m_context;
    QMetaObject::invokeMethod(
        m_context, [context] { context->shutdown(); }, Qt::BlockingQueuedConnection);
    m_thread->quit();
    m_thread->wait();
    // The thread has finished, so the context may be deleted from here.
    delete m_context;
    delete m_thread;
    m_context = nullptr;
    m_thread = nullptr;
    setWritableState(false, QStringLiteral("store stopped"));
}

bool StoreWorker::isRunning() const
{
    QReadLocker lock(&m_lifecycle);
    return m_running;
}

void StoreWorker::submit(Job job, QObject *context, Done onDone)
{
    enqueue(std::move(job), true, context, std::move(onDone));
}

void StoreWorker::submitRead(Job job, QObject *context, Done onDone)
{
    enqueue(std::move(job), false, context, std::move(onDone));
}

void StoreWorker::enqueue(Job job, bool write, QObject *context, Done onDone)
{
    QReadLocker lock(&m_lifecycle);
    if (!m_running) {
        lock.unlock();
        if (!onDone)
            return;
        const QString error = QStringLiteral("store is not running");
        if (context)
            QMetaObject::invokeMethod(
                context, [onDone, error] { onDone(false, error); }, Qt::QueuedConnection);
        else
            onDone(false, error);
        return;
    }
    StoreThreadContext *storeContext = m_context;
    QMetaObject::invokeMethod(
        m_context,
        [storeContext, job = std::move(job), write, context, onDone = std::move(onDone)] {
            storeContext->run(job, write, context, onDone);
        },
        Qt::QueuedConnection);
}

bool StoreWorker::runBlocking(Job job, QString *error, bool write)
{
    if (QThread::currentThread() == m_thread) {
        if (error)
            *error = QStringLiteral("runBlocking called on the store thread");
        return false;
    }
    // Held while waiting: other threads keep submitting (shared lock), stop() waits for this call.
    QReadLocker lock(&m_lifecycle);
    if (!m_running) {
        if (error)
            *error = QStringLiteral("store is not running");
        return false;
    }
    bool ok = false;
    StoreThreadContext *storeContext = m_context;
    QMetaObject::invokeMethod(
        m_context, [&, storeContext] { ok = storeContext->runNow(job, write, error); }, Qt::BlockingQueuedConnection);
    return ok;
}

QString StoreWorker::unwritableReason() const
{
    QMutexLocker lock(&m_reasonMutex);
    return m_reason;
}

void StoreWorker::setReprobeIntervalMs(int ms)
{
    m_reprobeIntervalMs = ms;
    QReadLocker lock(&m_lifecycle);
    if (m_running) {
        StoreThreadContext *context = m_context;
        QMetaObject::invokeMethod(
            m_context, [context, ms] { context->setReprobeInterval(ms); }, Qt::QueuedConnection);
    }
}

void StoreWorker::setChangePollIntervalMs(int ms)
{
    m_changePollIntervalMs = ms;
    QReadLocker lock(&m_lifecycle);
    if (m_running) {
        StoreThreadContext *context = m_context;
        QMetaObject::invokeMethod(
            m_context, [context, ms] { context->setPollInterval(ms); }, Qt::QueuedConnection);
    }
}

void StoreWorker::setWritableState(bool writable, const QString &reason)
{
    {
        QMutexLocker lock(&m_reasonMutex);
        m_reason = writable ? QString() : reason;
    }
    if (m_writable.exchange(writable) != writable)
        emit writableChanged(writable, writable ? QString() : reason);
}

} // namespace sy
