#include "util/EpollEventDispatcher.h"

#include <QCoreApplication>
#include <QThread>

#ifdef Q_OS_LINUX
#include "util/EpollEventDispatcher_p.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <sys/eventfd.h>
#include <unistd.h>
#endif

namespace sy {

#ifndef Q_OS_LINUX

QAbstractEventDispatcher *EpollEventDispatcher::create()
{
    return nullptr;
}

void EpollEventDispatcher::setSocketPriority(qintptr, bool) {}
void EpollEventDispatcher::setPriority(int, bool) {}
bool EpollEventDispatcher::priority(int) const
{
    return false;
}
EpollEventDispatcher::PriorityCounts EpollEventDispatcher::priorityCounts() const
{
    return {};
}

#else

using namespace epolldispatch;

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
    // SWITCHYARD_PRIORITY_RECHECK_US: how long a pass works through its sockets before it looks for marked ones
    // that became ready meanwhile (default 100 us; 0: never, only at the start of a pass, for A/B runs).
    bool ok = false;
    const int recheckUs = qEnvironmentVariableIntValue("SWITCHYARD_PRIORITY_RECHECK_US", &ok);
    state->recheckNs = qint64(ok ? qBound(0, recheckUs, 1'000'000) : 100) * 1000;
    if (state->recheckNs > 0) {
        state->priorityEpollFd = epoll_create1(EPOLL_CLOEXEC);
        if (state->priorityEpollFd < 0)
            qWarning("EpollEventDispatcher: no second epoll set, so no rechecks of marked sockets: %s",
                     strerror(errno));
    }
    return new EpollEventDispatcher(std::move(state));
}

EpollEventDispatcher::EpollEventDispatcher(std::unique_ptr<State> state) : d(std::move(state)) {}

EpollEventDispatcher::~EpollEventDispatcher() = default;

bool EpollEventDispatcher::processEvents(QEventLoop::ProcessEventsFlags flags)
{
    d->ownerThread.store(QThread::currentThreadId(), std::memory_order_relaxed);
    d->interrupted.storeRelaxed(0);
    emit awake();
    runHooks(d->passHooks);
    QCoreApplication::sendPostedEvents();

    int timeoutMs = 0;
    const bool mayWait = (flags & QEventLoop::WaitForMoreEvents) && !d->interrupted.loadRelaxed();
    if (mayWait)
        timeoutMs = d->msUntilNextTimer();
#ifdef SWITCHYARD_HAVE_GLIB
    gint glibPriority = 0;
    const int glibCount = d->glib ? d->prepareGlib(&glibPriority, &timeoutMs) : 0;
#endif
    if (mayWait) {
        emit aboutToBlock(); // as Qt's dispatchers do, even when a due timer makes the wait short
        runHooks(d->passHooks);
    }
    if (d->interrupted.loadRelaxed())
        return false;

    d->applyChanges();
    if (d->wakeWithoutFd)
        timeoutMs = 0; // this thread posted to itself (wakeUp()): no eventfd to end the wait
    epoll_event events[kMaxEventsPerWait];
    int n = mayWait && timeoutMs != 0 ? d->busyPoll(events, kMaxEventsPerWait, &timeoutMs) : 0;
    if (n == 0)
        n = epoll_wait(d->epollFd, events, kMaxEventsPerWait, timeoutMs);
    if (n < 0) {
        if (errno != EINTR)
            qWarning("EpollEventDispatcher: epoll_wait: %s", strerror(errno));
        n = 0;
    }
    int activity = 0;
    if (d->wakeWithoutFd) {
        // What it posted, as a wake-up's eventfd would have had it delivered in this pass.
        d->drainWakeUps();
        QCoreApplication::sendPostedEvents();
        ++activity;
    }

    d->putPriorityFirst(events, n);
    // The socket-handled hooks run between sockets: not after the last one (wake-ups and GLib events aside).
    int lastSocket = -1;
    for (int i = 0; i < n; ++i) {
        const quint32 generation = quint32(events[i].data.u64 >> 32);
        if (generation != 0 && generation != kGlibGeneration)
            lastSocket = i;
    }
    // After each socket: what was posted while this pass works through its sockets (a store answer: the slot
    // claim a new turn waits on before its first byte) is delivered between two sockets rather than after the
    // last one; then the hooks run (not after the pass's last socket: the end of a pass has its own flush).
    const auto afterSocket = [this](bool withHooks) {
        if (d->wakePending.loadAcquire()) {
            d->drainWakeUps();
            QCoreApplication::sendPostedEvents();
        }
        if (!withHooks)
            return;
        runHooks(d->socketHandledHooks);
    };
    const quint64 pass = ++d->passes;
    const bool recheck = d->recheckNs > 0 && d->priorityEpollFd >= 0 && !(flags & QEventLoop::ExcludeSocketNotifiers);
    qint64 recheckAtNs = recheck && n > 1 ? nowNs() + d->recheckNs : 0;
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
        if (!d->takeForPass(fd, generation, pass))
            continue; // a recheck below handled it already
        activity += d->activateSocket(fd, generation, events[i].events);
        afterSocket(i < lastSocket);
        // A long pass (a few hundred streams' next events) looks for marked sockets that became ready since it
        // began, a new request or an upstream's head, and handles them before its remaining sockets.
        if (recheckAtNs != 0 && i < lastSocket && d->prioritized > 0 && nowNs() >= recheckAtNs) {
            d->recheckPriority(pass, [&](int delivered) {
                activity += delivered;
                afterSocket(true);
            });
            recheckAtNs = nowNs() + d->recheckNs;
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
    // A post from the dispatcher's own thread (a deleteLater(), a queued call to itself) finds it running: the
    // next wait is made not to block instead of writing the eventfd (and reading it back after the wait).
    if (QThread::currentThreadId() == d->ownerThread.load(std::memory_order_relaxed)) {
        if (d->wakePending.testAndSetAcquire(0, 1))
            d->wakeWithoutFd = true;
        return;
    }
    if (d->wakePending.testAndSetAcquire(0, 1)) {
        d->wakeWrites.fetch_add(1, std::memory_order_relaxed);
        const quint64 one = 1;
        while (::write(d->wakeFd, &one, sizeof one) < 0 && errno == EINTR) {
        }
    }
}

quint64 EpollEventDispatcher::wakeWrites() const
{
    return d->wakeWrites.load(std::memory_order_relaxed);
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
    return {d->busyPolls, d->busyPollHits, d->busyPollHelperStalls};
}

void EpollEventDispatcher::setSocketPriority(qintptr fd, bool priority)
{
    // SWITCHYARD_SOCKET_PRIORITY=off: every socket in the kernel's order, as before (A/B runs in bench/).
    static const bool off = qEnvironmentVariable("SWITCHYARD_SOCKET_PRIORITY") == QLatin1String("off");
    if (off)
        return;
    if (auto *epoll = dynamic_cast<EpollEventDispatcher *>(QAbstractEventDispatcher::instance()))
        epoll->setPriority(int(fd), priority);
}

void EpollEventDispatcher::setPriority(int fd, bool priority)
{
    // Only a descriptor this dispatcher has seen: a number from elsewhere must not grow the table.
    if (fd < 0 || size_t(fd) >= d->sockets.size())
        return;
    State::Socket &s = d->sockets[size_t(fd)];
    s.priority = priority;
    d->syncPriority(fd, s);
}

bool EpollEventDispatcher::priority(int fd) const
{
    return fd >= 0 && size_t(fd) < d->sockets.size() && d->sockets[size_t(fd)].priority;
}

EpollEventDispatcher::PriorityCounts EpollEventDispatcher::priorityCounts() const
{
    PriorityCounts counts{0, quint64(d->prioritized), d->rechecks, d->handledEarly};
    for (const State::Socket &s : d->sockets) {
        if (s.priority && s.generation != 0)
            ++counts.marked;
    }
    return counts;
}

int EpollEventDispatcher::addSocketHandledHook(std::function<void()> hook)
{
    return addHook(d->socketHandledHooks, std::move(hook));
}

void EpollEventDispatcher::removeSocketHandledHook(int id)
{
    removeHook(d->socketHandledHooks, id);
}

int EpollEventDispatcher::addPassHook(std::function<void()> hook)
{
    return addHook(d->passHooks, std::move(hook));
}

void EpollEventDispatcher::removePassHook(int id)
{
    removeHook(d->passHooks, id);
}

int EpollEventDispatcher::addHook(std::vector<std::pair<int, std::function<void()>>> &hooks, std::function<void()> hook)
{
    const int id = d->nextHookId++;
    hooks.emplace_back(id, std::move(hook));
    return id;
}

void EpollEventDispatcher::removeHook(std::vector<std::pair<int, std::function<void()>>> &hooks, int id)
{
    hooks.erase(std::remove_if(hooks.begin(), hooks.end(), [id](const auto &h) { return h.first == id; }), hooks.end());
}

void EpollEventDispatcher::runHooks(const std::vector<std::pair<int, std::function<void()>>> &hooks)
{
    // By index, each copied before its call: a hook may add or remove hooks.
    for (size_t h = 0; h < hooks.size(); ++h) {
        const std::function<void()> hook = hooks[h].second;
        hook();
    }
}

#endif // Q_OS_LINUX

} // namespace sy
