#pragma once

#include <QAbstractEventDispatcher>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

namespace sy {

// An event dispatcher for the proxy thread built on Linux epoll, eventfd and an ordered timer set.
//
// Qt's own dispatchers on Linux (glib's main loop, or QEventDispatcherUNIX) hand the whole list of socket
// notifiers to poll() on every wake-up and keep timers in a list searched linearly. With a few hundred
// client and upstream sockets open, that per-wake-up scan was the largest single cost of the proxy thread
// (bench/HISTORY.md, "event dispatcher"). Here a wake-up costs the sockets that are ready, and a timer start
// or stop costs O(log n).
//
// Semantics follow Qt's: socket notifiers are level-triggered (a hang-up or error wakes the read notifier,
// an error the write one), timers fire no earlier than their interval and are not re-entered while their
// own handler runs, posted events wake the loop from any thread, interrupt() ends a processEvents() call, and
// GLib sources attached to the thread's default context are dispatched.
class EpollEventDispatcher final : public QAbstractEventDispatcher
{
public:
    // A dispatcher for this platform, or nullptr where epoll is not available (Qt's default is used there).
    static QAbstractEventDispatcher *create();

    ~EpollEventDispatcher() override;

    bool processEvents(QEventLoop::ProcessEventsFlags flags) override;

    void registerSocketNotifier(QSocketNotifier *notifier) override;
    void unregisterSocketNotifier(QSocketNotifier *notifier) override;

    void registerTimer(int timerId, qint64 interval, Qt::TimerType timerType, QObject *object) override;
    bool unregisterTimer(int timerId) override;
    bool unregisterTimers(QObject *object) override;
    QList<TimerInfo> registeredTimers(QObject *object) const override;
    int remainingTime(int timerId) override;

    void wakeUp() override;
    void interrupt() override;

    // The thread's GLib main context is created, made the thread default and iterated along with the sockets
    // (as Qt's GLib dispatcher does): the keychain's libsecret backend answers through it.
    void startingUp() override;
    void closingDown() override;

    // For tests: how many epoll_ctl calls were made (deferred changes that cancel out make none).
    quint64 controlCalls() const;
    // For tests: how many times wakeUp() wrote the eventfd (a post from another thread to this one while it had
    // no wake-up pending; its own thread's posts write none).
    quint64 wakeWrites() const;
    // Waits that polled instead of blocking while a BusyPollHold was held (util/BusyPoll.h), and of those the
    // ones that found an event within their window. Dispatcher's thread only.
    struct BusyPollCounts
    {
        quint64 polls = 0;
        quint64 hits = 0;
        quint64 helperStalls = 0;
    };
    BusyPollCounts busyPollCounts() const;

    // Called after each ready socket's notifiers (and the events posted meanwhile) were handled, before the
    // next socket of the same pass: output coalesced per pass (http/WriteCoalescer) leaves then instead of
    // after the whole pass. Dispatcher's thread only; returns an id for removeSocketHandledHook().
    int addSocketHandledHook(std::function<void()> hook);
    void removeSocketHandledHook(int id);
    // Called where each pass emits awake() and, when it may wait, aboutToBlock(): for a listener of both
    // (http/WriteCoalescer) a direct call instead of two signal emissions per pass, which cost about 500
    // instructions each with a receiver connected (bench/HISTORY.md). Dispatcher's thread only; returns an id for
    // removePassHook().
    int addPassHook(std::function<void()> hook);
    void removePassHook(int id);

    // Sockets a client's time to first byte waits on (the listening socket, a client connection's next request,
    // an upstream answer whose first event has not been forwarded yet): in every pass their events are handled
    // before the other sockets' (each group in the order the kernel reported them), and so are the events
    // posted to the thread. With a few hundred streams open one pass may hold a few hundred ready sockets; a
    // new request used to wait for its place among them, then again for the upstream's head and first event
    // (bench/HISTORY.md, "sockets on the way to a first byte go first"). The owner of the descriptor sets and
    // clears the mark (a closed descriptor's mark would pass to the next socket that gets its number: only an
    // order, never a delivery, and a place in the recheck below). setSocketPriority() marks on the calling
    // thread's dispatcher if it is an EpollEventDispatcher, and does nothing otherwise (Qt's dispatchers, other
    // platforms, and with SWITCHYARD_SOCKET_PRIORITY=off in the environment).
    static void setSocketPriority(qintptr fd, bool priority);
    // The same on this dispatcher (its thread only), for a descriptor it has had a notifier for.
    void setPriority(int fd, bool priority);
    bool priority(int fd) const;
    // A pass that has run for SWITCHYARD_PRIORITY_RECHECK_US (default 100 us; 0: never) looks, between two of its
    // sockets, for marked sockets that became readable since it began (one epoll_wait without blocking on a
    // second epoll set that holds the marked sockets that are watched for reading), handles them at once and
    // looks again after as long again; each socket is handled at most once per pass. Counts for /api/status
    // (this dispatcher's thread only): marked sockets that are watched now, those of them in the second set,
    // the looks, and the sockets they handled ahead of the rest of their pass.
    struct PriorityCounts
    {
        quint64 marked = 0;
        quint64 rechecked = 0;
        quint64 rechecks = 0;
        quint64 handledEarly = 0;
    };
    PriorityCounts priorityCounts() const;

private:
    struct State;
    explicit EpollEventDispatcher(std::unique_ptr<State> state);
    int addHook(std::vector<std::pair<int, std::function<void()>>> &hooks, std::function<void()> hook);
    static void removeHook(std::vector<std::pair<int, std::function<void()>>> &hooks, int id);
    static void runHooks(const std::vector<std::pair<int, std::function<void()>>> &hooks);
    std::unique_ptr<State> d;
};

} // namespace sy
