#pragma once

// The state behind EpollEventDispatcher (Linux only), shared by its three source files:
//   EpollEventDispatcher.cpp       the QAbstractEventDispatcher interface and one pass of the loop
//   EpollEventDispatcherState.cpp  sockets in the epoll set, their delivery, busy polling, timers
//   EpollEventDispatcherGlib.cpp   the thread's GLib main context iterated along with the sockets

#include "util/EpollEventDispatcher.h"

#include <QAtomicInt>
#include <QSocketNotifier>
#include <atomic>
#include <ctime>
#include <functional>
#include <set>
#include <sys/epoll.h>
#include <unordered_map>
#include <utility>
#include <vector>
#ifdef SWITCHYARD_HAVE_GLIB
#include <glib.h>
#endif

namespace sy {

namespace epolldispatch {

constexpr int kTypes = 3; // QSocketNotifier::Read, Write, Exception, used as indexes
constexpr int kMaxEventsPerWait = 256;
constexpr quint32 kGlibGeneration = 0xffffffffu;

inline qint64 nowNs()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return qint64(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// epoll's user data for a socket: its descriptor and the generation of its registration. A descriptor that is
// closed and reused while a batch of events is being delivered gets a new generation, so the old socket's
// events are not handed to the new socket's notifiers. Generation 0 marks the wake-up eventfd, kGlibGeneration
// a descriptor of the thread's GLib context.
inline quint64 eventKey(int fd, quint32 generation)
{
    return (quint64(generation) << 32) | quint32(fd);
}

} // namespace epolldispatch

struct EpollEventDispatcher::State
{
    int epollFd = -1;
    int wakeFd = -1;
    // The marked sockets (setPriority()) again, for reading only, with the same user data: polled without blocking
    // between two sockets of a long pass, so that a marked socket that became ready meanwhile need not wait for
    // the rest of the pass (recheckPriority()).
    int priorityEpollFd = -1;
    int prioritized = 0;      // descriptors in priorityEpollFd
    qint64 recheckNs = 0;     // how long a pass runs before priorityEpollFd is polled (again); 0: never
    quint64 passes = 0;       // numbers the passes (Socket::handledPass)
    quint64 rechecks = 0;     // polls of priorityEpollFd
    quint64 handledEarly = 0; // sockets they found ready and handled before the rest of their pass
    // Set by the first wakeUp() after the last drainWakeUps(): later ones need not write the eventfd again.
    QAtomicInt wakePending;
    // wakePending was set by the dispatcher's own thread, which wrote nothing: it is running, not waiting, so it
    // need only not block in its next wait (processEvents()). Dispatcher's thread only.
    bool wakeWithoutFd = false;
    // The thread that runs processEvents() (null before its first call): its own wake-ups write no eventfd.
    std::atomic<Qt::HANDLE> ownerThread{nullptr};
    std::atomic<quint64> wakeWrites{0}; // eventfd writes by wakeUp(), for tests
    QAtomicInt interrupted;
    quint64 controlCalls = 0;
    quint64 busyPolls = 0;    // waits that polled instead of blocking (BusyPoll.h)
    quint64 busyPollHits = 0; // of them, those that found an event before their window ended
    quint64 busyPollHelperStalls = 0; // of them, those ended early by a stalled helper (BusyPoll.h)
    std::vector<std::pair<int, std::function<void()>>> socketHandledHooks;
    std::vector<std::pair<int, std::function<void()>>> passHooks;
    int nextHookId = 1;

    struct Socket
    {
        QSocketNotifier *notifiers[epolldispatch::kTypes] = {};
        quint32 kernelMask = 0; // the events epoll watches for this descriptor now
        quint32 generation = 0; // 0 while the descriptor is not in the epoll set
        bool dirty = false;     // the wanted events changed; applied before the next wait
        bool priority = false;  // setPriority(): handled first in a pass
        quint32 priorityMask = 0; // the events priorityEpollFd watches for it (EPOLLIN, or 0: not in that set)
        quint64 priorityKey = 0;  // and the user data it has there
        quint64 handledPass = 0;  // the pass that last handled it: handled once per pass at most
    };
    std::vector<Socket> sockets; // indexed by descriptor
    std::vector<int> dirtySockets;
    quint32 nextGeneration = 1;

    struct Timer
    {
        QObject *object = nullptr;
        qint64 intervalMs = 0;
        Qt::TimerType type = Qt::CoarseTimer;
        qint64 dueNs = 0;
        bool firing = false; // its timer event is being delivered: not activated again until that returns
    };
    std::unordered_map<int, Timer> timers;
    std::set<std::pair<qint64, int>> timerQueue; // (due, id), earliest first

#ifdef SWITCHYARD_HAVE_GLIB
    GMainContext *glib = nullptr;
    std::vector<GPollFD> glibFds{4};                  // filled by g_main_context_query()
    std::vector<std::pair<int, quint32>> glibWatched; // (fd, events) in the epoll set for GLib

    void startGlib();
    void stopGlib();
    void unwatchGlib(int fd);
    // Prepares the GLib context and puts its descriptors in the epoll set; returns how many it has and lowers
    // *timeoutMs to its next timeout (0 when a source is ready now).
    int prepareGlib(gint *priority, int *timeoutMs);
    void noteGlibEvent(int fd, quint32 events, int count);
    bool dispatchGlib(gint priority, int count);
#endif

    ~State();

    static quint32 wantedEvents(const Socket &s);
    // Brings the kernel's interest for fd in line with its notifiers.
    void control(int fd, Socket &s);
    void applyChanges();
    void markDirty(int fd, Socket &s);
    void drainWakeUps();
    // Delivers one epoll event to the notifiers of fd that it concerns; the socket is looked up again before
    // each delivery, since a handler may disable notifiers or close and reuse the descriptor.
    int activateSocket(int fd, quint32 generation, quint32 events);
    // Moves the events of marked sockets and of the wake-up descriptor ahead of the rest, keeping the order
    // within each group.
    void putPriorityFirst(epoll_event *events, int n) const;
    // Brings fd's membership of priorityEpollFd in line with its mark and its interest in the epoll set.
    void syncPriority(int fd, Socket &s);
    // Whether a pass (number pass) may hand this event to its socket now: not a socket it handled already.
    // Takes the socket for the pass.
    bool takeForPass(int fd, quint32 generation, quint64 pass);
    // Polls priorityEpollFd without blocking, activates what it finds ready and not yet handled in this pass,
    // and calls afterEach(the notifiers it activated) after each.
    void recheckPriority(quint64 pass, const std::function<void(int)> &afterEach);
    // While a BusyPollHold of this thread wants it: polls without blocking, yielding the CPU between polls,
    // until something is ready, the hold's window (or *timeoutMs, a due timer) ends, or the thread this one
    // handed work to has not run for a while (BusyPollHold::helperStalled()). Returns the events
    // found (0 when none: *timeoutMs is then what is left of the wait).
    int busyPoll(epoll_event *events, int max, int *timeoutMs);
    // Milliseconds until the earliest timer that may fire now is due, rounded up; -1 without one.
    int msUntilNextTimer() const;
    int activateTimers();
};

} // namespace sy
