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

void LargeBufferPool::startSweeping(QObject *owner, int intervalMs, std::function<void()> afterSweep)
{
    const QString setting = qEnvironmentVariable("SWITCHYARD_LARGE_BUFFERS");
    if (setting == QLatin1String("off") || setting == QLatin1String("0"))
        return; // for A/B runs: every large body in fresh memory, as before the pool
    local().setKeeping(true);
    auto *timer = new QTimer(owner);
    timer->setTimerType(Qt::VeryCoarseTimer); // nothing needs it on time
    // The pool of the thread the timer fires on: the owner's.
    QObject::connect(timer, &QTimer::timeout, timer, [afterSweep = std::move(afterSweep)] {
        local().sweep();
        if (afterSweep)
            afterSweep();
    });
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
        // It must hold the body from where its data begins (e.size, see giveBack), and its whole allocation
        // (e.bytes) must not be much larger than the body: HttpConnection squeezes a body with more slack.
        if (e.kind || e.size < bytes || e.bytes - bytes > bytes / 16 + 4096)
            continue;
        if (best < 0 || e.bytes < m_entries.at(best).bytes)
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
    // capacity() counts the free space before the data too (a buffer whose front was removed); the data stays
    // where it begins, so only the space from there on can take a body. Memory is the whole allocation.
    const qsizetype allocated = buffer.capacity();
    const qsizetype usable = allocated - buffer.data_ptr().freeSpaceAtBegin();
    // A raw-data view has no capacity; a shared buffer is still someone else's.
    if (!m_keeping || usable < kMinBytes || allocated > kMaxBufferBytes || !buffer.isDetached())
        return;
    makeRoomForBuffer(allocated);
    Entry e;
    e.buffer = std::move(buffer);
    e.size = usable;
    e.bytes = allocated;
    m_entries.append(std::move(e));
}

std::shared_ptr<void> LargeBufferPool::takeObject(const char *kind, qsizetype jobBytes)
{
    for (int i = 0; i < m_entries.size(); ++i) {
        const Entry &e = m_entries.at(i);
        if (!e.kind || std::strcmp(e.kind, kind) != 0)
            continue;
        if (e.size < jobBytes || e.size / 2 > jobBytes)
            return nullptr;
        ++m_reuses;
        return m_entries.takeAt(i).object;
    }
    return nullptr;
}

void LargeBufferPool::giveBackObject(const char *kind, std::shared_ptr<void> object, qsizetype size,
                                     qsizetype memoryBytes)
{
    if (!m_keeping || !object)
        return;
    for (int i = 0; i < m_entries.size(); ++i) {
        if (m_entries.at(i).kind && std::strcmp(m_entries.at(i).kind, kind) == 0) {
            m_entries.removeAt(i);
            break;
        }
    }
    Entry e;
    e.object = std::move(object);
    e.kind = kind;
    e.size = size;
    e.bytes = memoryBytes;
    m_entries.append(std::move(e));
}

void LargeBufferPool::makeRoomForBuffer(qsizetype bytes)
{
    int buffers = 0;
    qsizetype bufferBytes = 0;
    for (const Entry &e : std::as_const(m_entries)) {
        if (!e.kind) {
            ++buffers;
            bufferBytes += e.bytes;
        }
    }
    // Oldest buffer first; objects are bounded by their kind (one each) and their callers.
    for (int i = 0; i < m_entries.size() && (buffers >= kMaxBuffers || bufferBytes + bytes > kMaxBufferBytes);) {
        if (m_entries.at(i).kind) {
            ++i;
            continue;
        }
        --buffers;
        bufferBytes -= m_entries.at(i).bytes;
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

int LargeBufferPool::objectsKept() const
{
    return int(m_entries.size()) - buffersKept();
}

qsizetype LargeBufferPool::bytesKept() const
{
    qsizetype n = 0;
    for (const Entry &e : m_entries)
        n += e.bytes;
    return n;
}

} // namespace sy
