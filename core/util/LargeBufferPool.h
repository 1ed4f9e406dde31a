#pragma once

#include <QByteArray>
#include <QList>
#include <functional>
#include <memory>

class QObject;

namespace sy {

// Large buffers kept on a thread for its next large request. A request body of MiB lives in memory that glibc
// maps for it and unmaps after it (app/main.cpp sets the mmap threshold so that RSS falls back after a large
// upload), and so does its JSON parser's: every request wrote its MiB into fresh pages, each a page fault and
// a page the kernel zeroes first. On a virtual machine that was most of a 10 MiB upload's time (bench/HISTORY.md).
// A thread that serves requests keeps what their last holder gave back (buffers of kMinBytes or more, one
// parser or other object of each kind) until one full sweep interval passes without anyone taking it: between
// one and two intervals after its last use, memory is back to what it was without the pool. An object is taken
// only for a job of at most twice the size it was kept for, so one huge upload does not keep a huge parser
// alive through a stream of ordinary ones.
//
// One pool per thread (local()), used only on that thread. It keeps nothing until startSweeping() ran on that
// thread: a thread that never sweeps never holds memory for later.
class LargeBufferPool
{
public:
    static constexpr qsizetype kMinBytes = 256 * 1024;
    static constexpr int kMaxBuffers = 4;
    static constexpr qsizetype kMaxBufferBytes = 96LL * 1024 * 1024; // the buffers' capacities together

    // The calling thread's pool.
    static LargeBufferPool &local();

    // Sweeps the calling thread's pool every `intervalMs` for as long as `owner` (living on this thread) does;
    // when owner goes, the pool drops everything and keeps nothing any more. `afterSweep` runs after each sweep
    // (a thread that publishes its pool's figures). SWITCHYARD_LARGE_BUFFERS=off leaves the pool off (A/B runs).
    static void startSweeping(QObject *owner, int intervalMs, std::function<void()> afterSweep = {});

    bool keeping() const { return m_keeping; }
    void setKeeping(bool on);

    // How much room to reserve for a new large buffer of `bytes` that will be given back: a little more, so
    // that the next, slightly larger body of a growing conversation still fits it.
    static qsizetype roomFor(qsizetype bytes);
    // An empty buffer (size 0) with room for `bytes` from where its data begins and a capacity of at most
    // bytes + bytes / 16 + 4 KiB (so a request that keeps its body whole does not squeeze it: HttpConnection),
    // taken out of the pool; a null QByteArray when none is kept that fits.
    QByteArray takeBuffer(qsizetype bytes);
    // Keeps `buffer` (its contents do not matter) if it is large, not shared with anyone and there is room;
    // the oldest buffer makes way for it.
    void giveBack(QByteArray buffer);

    // The object of `kind` (one per kind: a parser) kept with giveBackObject() for a job of `jobBytes`, if it
    // was kept with a size from jobBytes to 2 x jobBytes; null otherwise (the one kept stays until one given
    // back replaces it, or a sweep drops it).
    std::shared_ptr<void> takeObject(const char *kind, qsizetype jobBytes);
    // Keeps `object` as the one of its kind. `size` is what it can take (a parser: its capacity), `memoryBytes`
    // what it may hold (its buffers' address space; the caller bounds it), counted in bytesKept().
    void giveBackObject(const char *kind, std::shared_ptr<void> object, qsizetype size, qsizetype memoryBytes);

    // Drops what was not taken or given back since the previous sweep.
    void sweep();
    void clear();

    // What is kept (tests and status): bytesKept() counts the buffers' capacities and the objects' memory.
    int buffersKept() const;
    int objectsKept() const;
    qsizetype bytesKept() const;
    quint64 reuses() const { return m_reuses; }

private:
    struct Entry
    {
        QByteArray buffer; // a kept buffer, or null for an object
        std::shared_ptr<void> object;
        const char *kind = nullptr;
        qsizetype size = 0;  // a buffer's usable capacity (from its data on); an object's size for takeObject()
        qsizetype bytes = 0; // memory counted in bytesKept()
        bool usedSinceSweep = true;
    };
    void makeRoomForBuffer(qsizetype bytes);

    QList<Entry> m_entries; // oldest first
    bool m_keeping = false;
    quint64 m_reuses = 0;
};

} // namespace sy
