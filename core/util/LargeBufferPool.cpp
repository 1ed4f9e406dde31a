#include "util/LargeBufferPool.h"

#include <QObject>
#include <QThread>
#include <QTimer>
#include <cstring>

namespace sy {

LargeBufferPool &LargeBufferPool::local()
{
    thread_local LargeBufferPool pool;
    return pool;
}

void LargeBufferPool::startSweeping(QObject *owner, int intervalMs)
{
    if (qEnvironmentVariable("SWITCHYARD_LARGE_BUFFERS") == QLatin1String("off"))
        return; // for A/B runs: every large body in fresh memory, as before the pool
    local().setKeeping(true);
    auto *timer = new QTimer(owner);
    timer->setTimerType(Qt::VeryCoarseTimer); // nothing needs it on time
    // The pool of the thread the timer fires on: the owner's.
    QObject::connect(timer, &QTimer::timeout, timer, [] { local().sweep(); });
    // Only on the pool's own thread: after that thread has ended, its pool is gone with it.
    QObject::connect(timer, &QObject::destroyed, [thread = QThread::currentThread()] {
        if (QThread::currentThread() == thread)
            local().setKeeping(false);
    });
    timer->start(intervalMs);
}

void LargeBufferPool::setKeeping(bool on)
{
    m_keeping = on;
    if (!on)
        clear();
}

qsizetype LargeBufferPool::roomFor(qsizetype bytes)
{
    return bytes < kMinBytes ? bytes : bytes + bytes / 16;
}

QByteArray LargeBufferPool::takeBuffer(qsizetype bytes)
{
    if (bytes < kMinBytes)
        return QByteArray();
    int best = -1;
    for (int i = 0; i < m_entries.size(); ++i) {
        const Entry &e = m_entries.at(i);
        const qsizetype capacity = e.buffer.capacity();
        if (e.kind || capacity < bytes || capacity - bytes > bytes / 16 + 4096)
            continue;
        if (best < 0 || capacity < m_entries.at(best).buffer.capacity())
            best = i;
    }
    if (best < 0)
        return QByteArray();
    QByteArray buffer = m_entries.takeAt(best).buffer;
    buffer.resize(0); // keeps the capacity (the buffer is not shared)
    ++m_reuses;
    return buffer;
}

void LargeBufferPool::giveBack(QByteArray buffer)
{
    const qsizetype capacity = buffer.capacity();
    // A raw-data view has no capacity; a shared buffer is still someone else's.
    if (!m_keeping || capacity < kMinBytes || capacity > kMaxKeptBytes || !buffer.isDetached())
        return;
    makeRoom(capacity, true);
    Entry e;
    e.buffer = std::move(buffer);
    e.bytes = capacity;
    m_entries.append(std::move(e));
}

std::shared_ptr<void> LargeBufferPool::takeObject(const char *kind, qsizetype minBytes)
{
    for (int i = 0; i < m_entries.size(); ++i) {
        const Entry &e = m_entries.at(i);
        if (e.kind && std::strcmp(e.kind, kind) == 0 && e.bytes >= minBytes) {
            ++m_reuses;
            return m_entries.takeAt(i).object;
        }
    }
    return nullptr;
}

void LargeBufferPool::giveBackObject(const char *kind, std::shared_ptr<void> object, qsizetype bytes)
{
    if (!m_keeping || !object || bytes > kMaxKeptBytes)
        return;
    for (int i = 0; i < m_entries.size(); ++i) {
        if (m_entries.at(i).kind && std::strcmp(m_entries.at(i).kind, kind) == 0) {
            m_entries.removeAt(i);
            break;
        }
    }
    makeRoom(bytes, false);
    Entry e;
    e.object = std::move(object);
    e.kind = kind;
    e.bytes = bytes;
    m_entries.append(std::move(e));
}

void LargeBufferPool::makeRoom(qsizetype bytes, bool forBuffer)
{
    int buffers = 0;
    for (const Entry &e : std::as_const(m_entries))
        buffers += e.kind ? 0 : 1;
    // Oldest first: a buffer only counts against kMaxBuffers, an object only against the bytes.
    for (int i = 0; i < m_entries.size();) {
        const bool tooMany = forBuffer && !m_entries.at(i).kind && buffers >= kMaxBuffers;
        if (bytesKept() + bytes <= kMaxKeptBytes && !tooMany) {
            ++i;
            continue;
        }
        buffers -= m_entries.at(i).kind ? 0 : 1;
        m_entries.removeAt(i);
    }
}

void LargeBufferPool::sweep()
{
    for (int i = 0; i < m_entries.size();) {
        if (m_entries.at(i).usedSinceSweep) {
            m_entries[i].usedSinceSweep = false;
            ++i;
        } else {
            m_entries.removeAt(i);
        }
    }
}

void LargeBufferPool::clear()
{
    m_entries.clear();
}

int LargeBufferPool::buffersKept() const
{
    int n = 0;
    for (const Entry &e : m_entries)
        n += e.kind ? 0 : 1;
    return n;
}

qsizetype LargeBufferPool::bytesKept() const
{
    qsizetype n = 0;
    for (const Entry &e : m_entries)
        n += e.bytes;
    return n;
}

} // namespace sy
