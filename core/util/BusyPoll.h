#pragma once

#include <QtGlobal>
#include <atomic>
#include <memory>

namespace sy {

// Busy polling of a thread's event loop while an answer it waits for is due within microseconds.
//
// A streamed turn blocks three times before its client's first byte: for the slot claim's answer from the
// store thread, for the upstream's head and for its first event. On the benchmark's 2-vCPU machine each of
// those sleeps cost tens of microseconds more than the work itself (bench/HISTORY.md, "Busy polling from the
// claim to the first byte"). While a BusyPollHold is held on a thread, EpollEventDispatcher polls instead of
// blocking, for at most the window that began with the latest hold. It yields between two polls
// (sched_yield), which lets a thread waiting for the same CPU run first; it does not give the CPU up to threads
// on the other CPUs, so a poll costs CPU time that the store thread, the upstream and the clients might have
// used (bench/HISTORY.md measured a slower claim commit at c=1). A poll also ends early, and the thread sleeps,
// when the thread it handed work to (the store thread) has not run for a while (BusyPollHold::noteHandOff()).
// Where the thread's dispatcher is not the epoll one, a hold changes nothing.
//
// A busy wait's length in us from the environment variable `name`, 0 to 100 ms, or `defaultUs` when it is unset
// or not a number (the busy poll's settings here, the store thread's awake waits in StoreThreadContext).
int busyWaitUsFromEnvironment(const char *name, int defaultUs);

// What a thread that takes work from others (the store thread) publishes for their polls (BusyPollHold::
// noteHandOff()).
struct BusyPollHelper
{
    std::atomic<quint64> jobsTaken{0}; // times it took work off its queues (a group of jobs counts once)
    std::atomic<bool> working{false};  // inside a unit of work now
    std::atomic<quint64> steps{0};     // units begun and ended so far

    // A step is counted before `working` changes, and a poll reads `working` before `steps`: a poll that sees
    // the end of a unit also sees its step.
    void beginUnit()
    {
        steps.fetch_add(1, std::memory_order_relaxed);
        working.store(true, std::memory_order_release);
    }
    void endUnit()
    {
        steps.fetch_add(1, std::memory_order_relaxed);
        working.store(false, std::memory_order_release);
    }
};

// A hold belongs to the thread that acquired it: acquire, release and destroy it there.
class BusyPollHold
{
public:
    BusyPollHold() = default;
    ~BusyPollHold() { release(); }
    BusyPollHold(const BusyPollHold &) = delete;
    BusyPollHold &operator=(const BusyPollHold &) = delete;

    // Starts a hold on this thread, or renews it (a turn that claims again after a lost claim or a failed
    // attempt): either way the thread's window is windowUs() from now. A hold counts once however often it is
    // acquired. No-op when busy polling is off.
    void acquire();
    void release();
    bool held() const { return m_held; }

    // SWITCHYARD_BUSY_POLL_US, read once: how long a thread polls after the latest hold began (default
    // 1000 us; 0 turns busy polling off, for A/B runs).
    static int windowUs();
    // For the dispatcher of this thread: the monotonic time in ns until which it may poll instead of blocking,
    // or 0 when no hold is held. Never longer than the window that began with the latest hold.
    static qint64 pollUntilNs();
    // Work this thread handed to another thread whose answer it may poll for (a claim for the store thread).
    // While the helper has taken no job since, a poll stops, and the thread sleeps, once the helper has been
    // seen neither inside a unit of work nor beginning or ending one for helperGraceUs(): it has not run, so it
    // is most likely waiting for a CPU, maybe for the one this thread polls on. A woken thread placed on the
    // waker's CPU may wait there for milliseconds behind a poll that yields (bench/results/sched-run45-c1.txt);
    // a thread that sleeps gives that CPU up. A helper busy with earlier units is left to finish them while the
    // poll goes on. Another hand-off to the same helper before it took a job keeps the earlier time.
    static void noteHandOff(const std::shared_ptr<const BusyPollHelper> &helper);
    // For the dispatcher of this thread: true while the latest hand-off is such a stalled one (it notes the
    // helper's steps it sees, so call it with the current time).
    static bool helperStalled(qint64 nowNs);
    // SWITCHYARD_BUSY_POLL_HELPER_GRACE_US, read once: how long a poll goes on for a helper that has not begun
    // (default 200 us; 0: a poll never stops for it, for A/B runs).
    static int helperGraceUs();
    // Holds held on this thread now (tests).
    static int heldOnThisThread();
    // Holds started on this thread since it began (a renewal of a held one does not count).
    static qint64 takenOnThisThread();

private:
    bool m_held = false;
};

} // namespace sy
