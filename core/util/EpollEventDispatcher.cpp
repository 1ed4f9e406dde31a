#include "util/EpollEventDispatcher.h"

#include "util/BusyPoll.h"

#include <QCoreApplication>
#include <QSocketNotifier>
#include <QTimerEvent>

#ifdef Q_OS_LINUX
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <ctime>
#include <sched.h>
#include <set>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include <unordered_map>
#include <utility>
#include <vector>
#ifdef SWITCHYARD_HAVE_GLIB
#include <glib.h>
#endif
#endif

namespace sy {

#ifndef Q_OS_LINUX

QAbstractEventDispatcher *EpollEventDispatcher::create()
{
    return nullptr;
}

#else

namespace {

constexpr int kTypes = 3; // QSocketNotifier::Read, Write, Exception, used as indexes
constexpr int kMaxEventsPerWait = 256;
constexpr quint32 kGlibGeneration = 0xffffffffu;

qint64 nowNs()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return qint64(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// epoll's user data for a socket: its descriptor and the generation of its registration. A descriptor that is
// closed and reused while a batch of events is being delivered gets a new generation, so the old socket's
// events are not handed to the new socket's notifiers. Generation 0 marks the wake-up eventfd, kGlibGeneration
// a descriptor of the thread's GLib context.
quint64 eventKey(int fd, quint32 generation)
{
    return (quint64(generation) << 32) | quint32(fd);
}

} // namespace

struct EpollEventDispatcher::State
{
    int epollFd = -1;
    int wakeFd = -1;
    QAtomicInt wakePending;
    QAtomicInt interrupted;
    quint64 controlCalls = 0;
    quint64 busyPolls = 0;    // waits that polled instead of blocking (BusyPoll.h)
    quint64 busyPollHits = 0; // of them, those that found an event before their window ended
    std::vector<std::pair<int, std::function<void()>>> socketHandledHooks;
    int nextHookId = 1;

    struct Socket
    {
        QSocketNotifier *notifiers[kTypes] = {};
        quint32 kernelMask = 0; // the events epoll watches for this descriptor now
        quint32 generation = 0; // 0 while the descriptor is not in the epoll set
        bool dirty = false;     // the wanted events changed; applied before the next wait
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
    std::vector<GPollFD> glibFds{4};            // filled by g_main_context_query()
    std::vector<std::pair<int, quint32>> glibWatched; // (fd, events) in the epoll set for GLib

    void startGlib()
    {
        if (glib)
            return;
        glib = g_main_context_new();
        g_main_context_push_thread_default(glib);
        g_main_context_acquire(glib);
    }

    void stopGlib()
    {
        if (!glib)
            return;
        for (const auto &[fd, events] : glibWatched)
            unwatchGlib(fd);
        glibWatched.clear();
        g_main_context_release(glib);
        g_main_context_pop_thread_default(glib);
        g_main_context_unref(glib);
        glib = nullptr;
    }

    void unwatchGlib(int fd)
    {
        // A Qt socket may own that number now (GLib closed its descriptor, a socket got the number): keep it.
        if (size_t(fd) < sockets.size() && sockets[size_t(fd)].generation != 0)
            return;
        ++controlCalls;
        epoll_ctl(epollFd, EPOLL_CTL_DEL, fd, nullptr);
    }

    // Prepares the GLib context and puts its descriptors in the epoll set; returns how many it has and lowers
    // *timeoutMs to its next timeout (0 when a source is ready now).
    int prepareGlib(gint *priority, int *timeoutMs)
    {
        const bool ready = g_main_context_prepare(glib, priority);
        gint glibTimeout = -1;
        int n = g_main_context_query(glib, *priority, &glibTimeout, glibFds.data(), gint(glibFds.size()));
        if (n > int(glibFds.size())) {
            glibFds.resize(size_t(n));
            n = g_main_context_query(glib, *priority, &glibTimeout, glibFds.data(), n);
        }
        std::vector<std::pair<int, quint32>> wanted;
        for (int i = 0; i < n; ++i)
            wanted.emplace_back(glibFds[size_t(i)].fd, quint32(glibFds[size_t(i)].events)); // G_IO_* == EPOLL*
        if (wanted != glibWatched) {
            for (const auto &[fd, events] : glibWatched) {
                if (std::find_if(wanted.begin(), wanted.end(), [fd = fd](const auto &w) { return w.first == fd; })
                    == wanted.end())
                    unwatchGlib(fd);
            }
            for (const auto &[fd, events] : wanted) {
                epoll_event ev{};
                ev.events = events;
                ev.data.u64 = eventKey(fd, kGlibGeneration);
                ++controlCalls;
                if (epoll_ctl(epollFd, EPOLL_CTL_MOD, fd, &ev) < 0 && epoll_ctl(epollFd, EPOLL_CTL_ADD, fd, &ev) < 0)
                    qWarning("EpollEventDispatcher: cannot watch GLib descriptor %d: %s", fd, strerror(errno));
            }
            glibWatched = std::move(wanted);
        }
        if (ready)
            *timeoutMs = 0;
        else if (glibTimeout >= 0)
            *timeoutMs = *timeoutMs < 0 ? glibTimeout : qMin(*timeoutMs, int(glibTimeout));
        for (int i = 0; i < n; ++i)
            glibFds[size_t(i)].revents = 0;
        return n;
    }

    void noteGlibEvent(int fd, quint32 events, int count)
    {
        for (int i = 0; i < count; ++i) {
            if (glibFds[size_t(i)].fd == fd)
                glibFds[size_t(i)].revents = gushort(events & (glibFds[size_t(i)].events | G_IO_ERR | G_IO_HUP));
        }
    }

    bool dispatchGlib(gint priority, int count)
    {
        if (!g_main_context_check(glib, priority, glibFds.data(), count))
            return false;
        g_main_context_dispatch(glib);
        return true;
    }
#endif

    ~State()
    {
#ifdef SWITCHYARD_HAVE_GLIB
        stopGlib();
#endif
        if (wakeFd >= 0)
            ::close(wakeFd);
        if (epollFd >= 0)
            ::close(epollFd);
    }

    static quint32 wantedEvents(const Socket &s)
    {
        return (s.notifiers[QSocketNotifier::Read] ? quint32(EPOLLIN) : 0u)
            | (s.notifiers[QSocketNotifier::Write] ? quint32(EPOLLOUT) : 0u)
            | (s.notifiers[QSocketNotifier::Exception] ? quint32(EPOLLPRI) : 0u);
    }

    // Brings the kernel's interest for fd in line with its notifiers.
    void control(int fd, Socket &s)
    {
        const quint32 want = wantedEvents(s);
        if (want == 0) {
            if (s.generation != 0) {
                ++controlCalls;
                // ENOENT/EBADF: the descriptor was already closed, which removed it from the set.
                epoll_ctl(epollFd, EPOLL_CTL_DEL, fd, nullptr);
            }
            s.generation = 0;
            s.kernelMask = 0;
            return;
        }
        if (s.generation != 0 && want == s.kernelMask)
            return;
        const bool add = s.generation == 0;
        if (add) {
            s.generation = nextGeneration++;
            if (nextGeneration == kGlibGeneration)
                nextGeneration = 1;
        }
        epoll_event ev{};
        ev.events = want;
        ev.data.u64 = eventKey(fd, s.generation);
        ++controlCalls;
        int rc = epoll_ctl(epollFd, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev);
        if (rc < 0 && add && errno == EEXIST)
            rc = epoll_ctl(epollFd, EPOLL_CTL_MOD, fd, &ev);
        else if (rc < 0 && !add && errno == ENOENT)
            rc = epoll_ctl(epollFd, EPOLL_CTL_ADD, fd, &ev);
        if (rc < 0) {
            qWarning("EpollEventDispatcher: cannot watch socket %d: %s", fd, strerror(errno));
            s.generation = 0;
            s.kernelMask = 0;
            return;
        }
        s.kernelMask = want;
    }

    void applyChanges()
    {
        for (int fd : dirtySockets) {
            Socket &s = sockets[size_t(fd)];
            s.dirty = false;
            control(fd, s);
        }
        dirtySockets.clear();
    }

    void markDirty(int fd, Socket &s)
    {
        if (!s.dirty) {
            s.dirty = true;
            dirtySockets.push_back(fd);
        }
    }

    void drainWakeUps()
    {
        quint64 value;
        while (::read(wakeFd, &value, sizeof value) < 0 && errno == EINTR) {
        }
        wakePending.storeRelease(0);
    }

    // Delivers one epoll event to the notifiers of fd that it concerns; the socket is looked up again before
    // each delivery, since a handler may disable notifiers or close and reuse the descriptor.
    int activateSocket(int fd, quint32 generation, quint32 events)
    {
        int delivered = 0;
        for (int type = 0; type < kTypes; ++type) {
            if (size_t(fd) >= sockets.size() || sockets[size_t(fd)].generation != generation)
                return delivered;
            const Socket &s = sockets[size_t(fd)];
            QSocketNotifier *notifier = s.notifiers[type];
            if (!notifier)
                continue;
            bool ready = false;
            switch (type) {
            case QSocketNotifier::Read:
                ready = events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR);
                break;
            case QSocketNotifier::Write:
                // A hang-up with nobody reading would be reported forever: let the writer see it fail.
                ready = (events & (EPOLLOUT | EPOLLERR))
                    || ((events & EPOLLHUP) && !s.notifiers[QSocketNotifier::Read]);
                break;
            default:
                ready = events & EPOLLPRI;
                break;
            }
            if (!ready)
                continue;
            QEvent event(QEvent::SockAct);
            QCoreApplication::sendEvent(notifier, &event);
            ++delivered;
        }
        return delivered;
    }

    // While a BusyPollHold of this thread wants it: polls without blocking, yielding the CPU between polls,
    // until something is ready or the hold's window (or *timeoutMs, a due timer) ends. Returns the events
    // found (0 when none: *timeoutMs is then what is left of the wait).
    int busyPoll(epoll_event *events, int max, int *timeoutMs)
    {
        const qint64 untilNs = BusyPollHold::pollUntilNs();
        qint64 now = nowNs();
        if (untilNs <= now)
            return 0;
        const qint64 startNs = now;
        const qint64 endNs = *timeoutMs < 0 ? untilNs : qMin(untilNs, now + qint64(*timeoutMs) * 1'000'000);
        ++busyPolls;
        int n = 0;
        while ((n = epoll_wait(epollFd, events, max, 0)) == 0 && !interrupted.loadRelaxed()) {
            now = nowNs();
            if (now >= endNs)
                break;
            sched_yield();
        }
        if (n < 0) {
            if (errno != EINTR)
                qWarning("EpollEventDispatcher: epoll_wait: %s", strerror(errno));
            n = 0;
        }
        if (n > 0) {
            ++busyPollHits;
            return n;
        }
        if (interrupted.loadRelaxed()) {
            *timeoutMs = 0;
        } else if (*timeoutMs > 0) {
            // What is left of the wait, rounded up; a timer's own due time, rounded up from now, when that is
            // sooner (the wait was rounded up from it once already).
            const qint64 leftNs = startNs + qint64(*timeoutMs) * 1'000'000 - nowNs();
            int left = int(qMax<qint64>(0, (leftNs + 999'999) / 1'000'000));
            const int timer = msUntilNextTimer();
            if (timer >= 0)
                left = qMin(left, timer);
            *timeoutMs = left;
        }
        return 0;
    }

    // Milliseconds until the earliest timer that may fire now is due, rounded up; -1 without one.
    int msUntilNextTimer() const
    {
        const qint64 now = nowNs();
        for (const auto &[due, id] : timerQueue) {
            auto it = timers.find(id);
            if (it == timers.end() || it->second.firing)
                continue;
            const qint64 left = due - now;
            if (left <= 0)
                return 0;
            return int(qMin<qint64>((left + 999'999) / 1'000'000, INT_MAX));
        }
        return -1;
    }

    int activateTimers()
    {
        if (timerQueue.empty())
            return 0;
        const qint64 now = nowNs();
        // The timers due now, taken before any fires: one restarted by its own handler, or of 0 ms, waits for
        // the next pass, so a pass always ends.
        std::vector<int> due;
        for (auto it = timerQueue.begin(); it != timerQueue.end() && it->first <= now; ++it)
            due.push_back(it->second);
        int fired = 0;
        for (int id : due) {
            auto it = timers.find(id);
            if (it == timers.end() || it->second.firing || it->second.dueNs > now)
                continue; // stopped, running, or restarted by an earlier handler of this pass
            Timer &t = it->second;
            timerQueue.erase({t.dueNs, id});
            const qint64 intervalNs = t.intervalMs * 1'000'000;
            t.dueNs += intervalNs;
            if (t.dueNs < now)
                t.dueNs = now + intervalNs; // late: the next one is an interval from now, not a burst
            timerQueue.emplace(t.dueNs, id);
            t.firing = true;
            QObject *object = t.object;
            QTimerEvent event(id);
            QCoreApplication::sendEvent(object, &event); // may register, stop or restart timers
            ++fired;
            auto again = timers.find(id);
            if (again != timers.end())
                again->second.firing = false;
        }
        return fired;
    }
};

QAbstractEventDispatcher *EpollEventDispatcher::create()
{
    auto state = std::make_unique<State>();
    state->epollFd = epoll_create1(EPOLL_CLOEXEC);
    state->wakeFd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (state->epollFd < 0 || state->wakeFd < 0)
        return nullptr;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = eventKey(state->wakeFd, 0);
    if (epoll_ctl(state->epollFd, EPOLL_CTL_ADD, state->wakeFd, &ev) < 0)
        return nullptr;
    return new EpollEventDispatcher(std::move(state));
}

EpollEventDispatcher::EpollEventDispatcher(std::unique_ptr<State> state) : d(std::move(state)) {}

EpollEventDispatcher::~EpollEventDispatcher() = default;

bool EpollEventDispatcher::processEvents(QEventLoop::ProcessEventsFlags flags)
{
    d->interrupted.storeRelaxed(0);
    emit awake();
    QCoreApplication::sendPostedEvents();

    int timeoutMs = 0;
    const bool mayWait = (flags & QEventLoop::WaitForMoreEvents) && !d->interrupted.loadRelaxed();
    if (mayWait)
        timeoutMs = d->msUntilNextTimer();
#ifdef SWITCHYARD_HAVE_GLIB
    gint glibPriority = 0;
    const int glibCount = d->glib ? d->prepareGlib(&glibPriority, &timeoutMs) : 0;
#endif
    if (mayWait)
        emit aboutToBlock(); // as Qt's dispatchers do, even when a due timer makes the wait short
    if (d->interrupted.loadRelaxed())
        return false;

    d->applyChanges();
    epoll_event events[kMaxEventsPerWait];
    int n = mayWait && timeoutMs != 0 ? d->busyPoll(events, kMaxEventsPerWait, &timeoutMs) : 0;
    if (n == 0)
        n = epoll_wait(d->epollFd, events, kMaxEventsPerWait, timeoutMs);
    if (n < 0) {
        if (errno != EINTR)
            qWarning("EpollEventDispatcher: epoll_wait: %s", strerror(errno));
        n = 0;
    }

    // The socket-handled hooks run between sockets: not after the last one (wake-ups and GLib events aside).
    int lastSocket = -1;
    for (int i = 0; i < n; ++i) {
        const quint32 generation = quint32(events[i].data.u64 >> 32);
        if (generation != 0 && generation != kGlibGeneration)
            lastSocket = i;
    }
    int activity = 0;
    for (int i = 0; i < n; ++i) {
        const quint64 key = events[i].data.u64;
        const int fd = int(quint32(key));
        const quint32 generation = quint32(key >> 32);
        if (generation == 0) {
            // Posted after this pass began (a store answer): delivered now, not after every socket of the pass.
            d->drainWakeUps();
            QCoreApplication::sendPostedEvents();
            ++activity;
            continue;
        }
#ifdef SWITCHYARD_HAVE_GLIB
        if (generation == kGlibGeneration) {
            if (d->glib)
                d->noteGlibEvent(fd, events[i].events, glibCount);
            continue;
        }
#endif
        if (flags & QEventLoop::ExcludeSocketNotifiers)
            continue; // level-triggered: reported again by the next wait that includes them
        activity += d->activateSocket(fd, generation, events[i].events);
        // What was posted while this pass works through its sockets (a store answer: the slot claim a new turn
        // waits on before its first byte) is delivered between two sockets rather than after the last one.
        if (d->wakePending.loadAcquire()) {
            d->drainWakeUps();
            QCoreApplication::sendPostedEvents();
        }
        if (i < lastSocket) {
            // By index: a hook may add or remove hooks.
            for (size_t h = 0; h < d->socketHandledHooks.size(); ++h) {
                const std::function<void()> hook = d->socketHandledHooks[h].second;
                hook();
            }
        }
    }
    if (!(flags & QEventLoop::X11ExcludeTimers))
        activity += d->activateTimers();
#ifdef SWITCHYARD_HAVE_GLIB
    if (d->glib && d->dispatchGlib(glibPriority, glibCount))
        ++activity;
#endif
    return activity > 0;
}

void EpollEventDispatcher::startingUp()
{
#ifdef SWITCHYARD_HAVE_GLIB
    d->startGlib();
#endif
}

void EpollEventDispatcher::closingDown()
{
#ifdef SWITCHYARD_HAVE_GLIB
    d->stopGlib();
#endif
}

void EpollEventDispatcher::registerSocketNotifier(QSocketNotifier *notifier)
{
    const int fd = int(notifier->socket());
    const int type = notifier->type();
    if (fd < 0 || type < 0 || type >= kTypes)
        return;
    if (size_t(fd) >= d->sockets.size())
        d->sockets.resize(size_t(fd) + 1);
    State::Socket &s = d->sockets[size_t(fd)];
    if (s.notifiers[type] && s.notifiers[type] != notifier)
        qWarning("EpollEventDispatcher: socket %d already has a notifier of type %d", fd, type);
    s.notifiers[type] = notifier;
    d->markDirty(fd, s);
}

void EpollEventDispatcher::unregisterSocketNotifier(QSocketNotifier *notifier)
{
    const int fd = int(notifier->socket());
    const int type = notifier->type();
    if (fd < 0 || size_t(fd) >= d->sockets.size() || type < 0 || type >= kTypes)
        return;
    State::Socket &s = d->sockets[size_t(fd)];
    if (s.notifiers[type] != notifier)
        return;
    s.notifiers[type] = nullptr;
    if (State::wantedEvents(s) == 0) {
        // Removed from the set now, not at the next wait: the descriptor is usually closed next, and a new
        // socket that reuses its number must not find a stale registration that looks current.
        d->control(fd, s);
    } else {
        d->markDirty(fd, s);
    }
}

void EpollEventDispatcher::registerTimer(int timerId, qint64 interval, Qt::TimerType timerType, QObject *object)
{
    unregisterTimer(timerId);
    State::Timer t;
    t.object = object;
    t.intervalMs = qMax<qint64>(0, interval);
    t.type = timerType;
    t.dueNs = nowNs() + t.intervalMs * 1'000'000;
    d->timerQueue.emplace(t.dueNs, timerId);
    d->timers.emplace(timerId, t);
}

bool EpollEventDispatcher::unregisterTimer(int timerId)
{
    auto it = d->timers.find(timerId);
    if (it == d->timers.end())
        return false;
    d->timerQueue.erase({it->second.dueNs, timerId});
    d->timers.erase(it);
    return true;
}

bool EpollEventDispatcher::unregisterTimers(QObject *object)
{
    bool any = false;
    for (auto it = d->timers.begin(); it != d->timers.end();) {
        if (it->second.object == object) {
            d->timerQueue.erase({it->second.dueNs, it->first});
            it = d->timers.erase(it);
            any = true;
        } else {
            ++it;
        }
    }
    return any;
}

QList<QAbstractEventDispatcher::TimerInfo> EpollEventDispatcher::registeredTimers(QObject *object) const
{
    QList<TimerInfo> list;
    for (const auto &[id, t] : d->timers) {
        if (t.object == object)
            list.append(TimerInfo(id, int(qMin<qint64>(t.intervalMs, INT_MAX)), t.type));
    }
    return list;
}

int EpollEventDispatcher::remainingTime(int timerId)
{
    auto it = d->timers.find(timerId);
    if (it == d->timers.end())
        return -1;
    const qint64 left = it->second.dueNs - nowNs();
    return left <= 0 ? 0 : int(qMin<qint64>((left + 500'000) / 1'000'000, INT_MAX));
}

void EpollEventDispatcher::wakeUp()
{
    if (d->wakePending.testAndSetAcquire(0, 1)) {
        const quint64 one = 1;
        while (::write(d->wakeFd, &one, sizeof one) < 0 && errno == EINTR) {
        }
    }
}

void EpollEventDispatcher::interrupt()
{
    d->interrupted.storeRelaxed(1);
    wakeUp();
}

quint64 EpollEventDispatcher::controlCalls() const
{
    return d->controlCalls;
}

EpollEventDispatcher::BusyPollCounts EpollEventDispatcher::busyPollCounts() const
{
    return {d->busyPolls, d->busyPollHits};
}

int EpollEventDispatcher::addSocketHandledHook(std::function<void()> hook)
{
    const int id = d->nextHookId++;
    d->socketHandledHooks.emplace_back(id, std::move(hook));
    return id;
}

void EpollEventDispatcher::removeSocketHandledHook(int id)
{
    auto &hooks = d->socketHandledHooks;
    hooks.erase(std::remove_if(hooks.begin(), hooks.end(), [id](const auto &h) { return h.first == id; }), hooks.end());
}

#endif // Q_OS_LINUX

} // namespace sy
