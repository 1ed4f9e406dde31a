#include "http/WriteCoalescer.h"

#include "http/HttpConnection.h"
#include "util/EpollEventDispatcher.h"

#include <QAbstractEventDispatcher>
#include <QThread>

namespace sy {

namespace {

// Flushing may emit drained(), and a handler may write again right away; those writes get a few more rounds
// in the same pass before the rest waits for a queued pass.
constexpr int kMaxRounds = 8;

} // namespace

WriteCoalescer::WriteCoalescer(QObject *parent) : QObject(parent) {}

WriteCoalescer::~WriteCoalescer()
{
#ifdef Q_OS_LINUX
    if (auto *epoll = dynamic_cast<EpollEventDispatcher *>(m_dispatcher.data())) {
        if (m_socketHook)
            epoll->removeSocketHandledHook(m_socketHook);
        if (m_passHook)
            epoll->removePassHook(m_passHook);
    }
#endif
}

bool WriteCoalescer::hook()
{
    QAbstractEventDispatcher *dispatcher = QAbstractEventDispatcher::instance(thread());
    if (!dispatcher || thread() != QThread::currentThread())
        return false;
    m_dispatcher = dispatcher;
#ifdef Q_OS_LINUX
    if (auto *epoll = dynamic_cast<EpollEventDispatcher *>(dispatcher)) {
        // The same two points, called directly.
        m_passHook = epoll->addPassHook([this] { flushAll(); });
        if (flushMode() != FlushMode::Pass)
            m_socketHook = epoll->addSocketHandledHook([this] { flushAll(); });
        return true;
    }
#endif
    // A loop that may block emits aboutToBlock() before it polls; processEvents() without waiting emits
    // awake() before it polls. Between them every pass of every kind of loop is covered.
    connect(dispatcher, &QAbstractEventDispatcher::aboutToBlock, this, &WriteCoalescer::flushAll);
    connect(dispatcher, &QAbstractEventDispatcher::awake, this, &WriteCoalescer::flushAll);
    return true;
}

WriteCoalescer::FlushMode WriteCoalescer::flushMode()
{
    static const FlushMode mode = [] {
        const QString value = qEnvironmentVariable("SWITCHYARD_WRITE_FLUSH");
        if (value == QLatin1String("pass"))
            return FlushMode::Pass;
        return value == QLatin1String("socket") ? FlushMode::Socket : FlushMode::FirstBytesAtOnce;
    }();
    return mode;
}

bool WriteCoalescer::schedule(HttpConnection *connection)
{
    if (!m_dispatcher && !hook())
        return false;
    m_dirty.append(connection);
    return true;
}

void WriteCoalescer::flushAll()
{
    if (m_flushing || m_dirty.isEmpty())
        return;
    m_flushing = true;
    for (int round = 0; round < kMaxRounds && !m_dirty.isEmpty(); ++round) {
        // Swapping keeps both lists' capacity, so a steady stream of passes allocates nothing.
        m_batch.swap(m_dirty);
        for (const QPointer<HttpConnection> &connection : std::as_const(m_batch)) {
            if (connection)
                connection->flushOutput();
        }
        m_batch.clear();
    }
    m_flushing = false;
    if (!m_dirty.isEmpty() && !m_retryQueued) {
        // A writer that keeps writing from its drained() handler must not hold up the loop, nor be forgotten
        // if the loop goes to sleep next.
        m_retryQueued = true;
        QMetaObject::invokeMethod(
            this,
            [this] {
                m_retryQueued = false;
                flushAll();
            },
            Qt::QueuedConnection);
    }
}

} // namespace sy
