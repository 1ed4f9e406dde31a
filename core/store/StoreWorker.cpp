#include "store/StoreWorker.h"

#include "store/StoreThreadContext.h"

#include <QLoggingCategory>
#include <QMutexLocker>
#include <QReadLocker>
#include <QSemaphore>
#include <QThread>
#include <QWriteLocker>

Q_LOGGING_CATEGORY(lcStore, "switchyard.store")

namespace sy {

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
    if (m_jobSpinUs >= 0)
        m_context->setJobSpinUs(m_jobSpinUs);
    m_context->moveToThread(m_thread);
    m_thread->start();

    bool opened = false;
    QString openError;
    const int reprobeMs = m_reprobeIntervalMs;
    const int pollMs = m_changePollIntervalMs;
    const int groupJobs = m_groupMaxJobs;
    const int groupMs = m_groupMaxMs;
    StoreThreadContext *context = m_context;
    QMetaObject::invokeMethod(
        m_context,
        [&, context] {
            opened = context->open(databaseLocation, &openError);
            if (opened) {
                context->setReprobeInterval(reprobeMs);
                context->setPollInterval(pollMs);
                context->setGroupLimits(groupJobs, groupMs);
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
    // Runs every job already queued (they still commit), then closes the database.
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
    std::vector<StoreQueuedJob> waiting;
    {
        QMutexLocker lock(&m_retainedMutex);
        waiting.swap(m_retained);
    }
    for (const StoreQueuedJob &job : waiting)
        dropRetained(job.retainLabel, QStringLiteral("the store was still unavailable at shutdown"));
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

void StoreWorker::submitUrgent(Job job, QObject *context, Done onDone)
{
    enqueue(std::move(job), true, context, std::move(onDone), {}, true);
}

void StoreWorker::submitRead(Job job, QObject *context, Done onDone)
{
    enqueue(std::move(job), false, context, std::move(onDone));
}

void StoreWorker::announceClaim()
{
    QReadLocker lock(&m_lifecycle);
    if (m_running)
        m_context->announceClaim();
}

void StoreWorker::warmUp(Job job)
{
    QReadLocker lock(&m_lifecycle);
    if (m_running)
        m_context->pushWarmUp(std::move(job));
}

void StoreWorker::submitRetained(Job job, const QString &label, QObject *context, Done onDone, bool followUpLikely)
{
    enqueue(std::move(job), true, context, std::move(onDone), label.isEmpty() ? QStringLiteral("write") : label, false,
            followUpLikely);
}

void StoreWorker::enqueue(Job job, bool write, QObject *context, Done onDone, const QString &retainLabel, bool urgent,
                          bool followUpLikely)
{
    QReadLocker lock(&m_lifecycle);
    if (!m_running) {
        lock.unlock();
        if (!onDone)
            return;
        const QString error = QStringLiteral("store is not running");
        if (context)
            m_contexts.post(m_contexts.watch(context), [onDone, error] { onDone(false, error); });
        else
            onDone(false, error);
        return;
    }
    StoreQueuedJob queued{std::move(job), write, m_contexts.watch(context), context == nullptr, std::move(onDone)};
    queued.retainLabel = retainLabel;
    queued.followUpLikely = followUpLikely && !retainLabel.isEmpty();
    queued.urgent = urgent;
    m_context->push(std::move(queued));
}

int StoreWorker::pendingWrites() const
{
    QMutexLocker lock(&m_retainedMutex);
    return int(m_retained.size());
}

void StoreWorker::retain(StoreQueuedJob job)
{
    job.context = nullptr;
    job.onStoreThread = true;
    job.onDone = {}; // the caller heard of the failure already; a retry only writes
    job.followUpLikely = false; // no client waits to send its next turn after a retry
    if (m_writable.load()) {
        m_context->push(std::move(job));
        return;
    }
    QMutexLocker lock(&m_retainedMutex);
    if (m_retained.size() >= size_t(kMaxRetainedWrites)) {
        lock.unlock();
        dropRetained(job.retainLabel, QStringLiteral("%1 writes already wait for the store").arg(kMaxRetainedWrites));
        return;
    }
    const bool first = m_retained.empty();
    m_retained.push_back(std::move(job));
    if (first)
        qCWarning(lcStore).noquote() << "store unavailable (" + unwritableReason() +
                                            "): keeping request-log writes in memory until it is writable again";
}

void StoreWorker::dropRetained(const QString &label, const QString &why)
{
    ++m_lostWrites;
    qCWarning(lcStore).noquote() << "LOST" << label << "- not written to the store:" << why;
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
    // Through the queue like every other job, so it runs after everything submitted before it.
    bool ok = false;
    QString text;
    QSemaphore done;
    m_context->push(StoreQueuedJob{std::move(job), write, nullptr, true, [&](bool jobOk, const QString &jobError) {
                                       ok = jobOk;
                                       text = jobError;
                                       done.release();
                                   }});
    done.acquire();
    if (!ok && error)
        *error = text;
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

void StoreWorker::setWriteGroupLimits(int maxJobs, int maxMs)
{
    m_groupMaxJobs = qMax(1, maxJobs);
    m_groupMaxMs = qMax(0, maxMs);
    QReadLocker lock(&m_lifecycle);
    if (m_running)
        m_context->setGroupLimits(m_groupMaxJobs, m_groupMaxMs);
}

void StoreWorker::setJobSpinUs(int us)
{
    m_jobSpinUs = qMax(0, us);
    QReadLocker lock(&m_lifecycle);
    if (m_running)
        m_context->setJobSpinUs(m_jobSpinUs); // atomic: read by the store thread after each unit
}

void StoreWorker::setWritableState(bool writable, const QString &reason)
{
    {
        QMutexLocker lock(&m_reasonMutex);
        m_reason = writable ? QString() : reason;
    }
    if (m_writable.exchange(writable) == writable)
        return;
    emit writableChanged(writable, writable ? QString() : reason);
    if (!writable || !m_context)
        return;
    // Back (on the store thread, after a successful probe write): the retained writes are queued again, in
    // their order, behind what is queued already.
    std::vector<StoreQueuedJob> waiting;
    {
        QMutexLocker lock(&m_retainedMutex);
        waiting.swap(m_retained);
    }
    if (!waiting.empty())
        qCInfo(lcStore).noquote() << "store writable again: writing" << waiting.size() << "retained request-log writes";
    for (StoreQueuedJob &job : waiting)
        m_context->push(std::move(job));
}

} // namespace sy
