#include <QtGlobal>

#ifdef Q_OS_LINUX

#include "util/BusyPoll.h"
#include "util/EpollEventDispatcher_p.h"

#include <QCoreApplication>
#include <QTimerEvent>
#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <sched.h>
#include <unistd.h>

namespace sy {

using namespace epolldispatch;

EpollEventDispatcher::State::~State()
{
#ifdef SWITCHYARD_HAVE_GLIB
    stopGlib();
#endif
    if (wakeFd >= 0)
        ::close(wakeFd);
    if (priorityEpollFd >= 0)
        ::close(priorityEpollFd);
    if (epollFd >= 0)
        ::close(epollFd);
}

quint32 EpollEventDispatcher::State::wantedEvents(const Socket &s)
{
    return (s.notifiers[QSocketNotifier::Read] ? quint32(EPOLLIN) : 0u) |
           (s.notifiers[QSocketNotifier::Write] ? quint32(EPOLLOUT) : 0u) |
           (s.notifiers[QSocketNotifier::Exception] ? quint32(EPOLLPRI) : 0u);
}

void EpollEventDispatcher::State::putPriorityFirst(epoll_event *events, int n) const
{
    const auto first = [this](const epoll_event &e) {
        const quint32 generation = quint32(e.data.u64 >> 32);
        if (generation == 0)
            return true; // the wake-up: events posted to this thread (a slot claim's answer)
        if (generation == kGlibGeneration)
            return false;
        const size_t fd = size_t(quint32(e.data.u64));
        return fd < sockets.size() && sockets[fd].generation == generation && sockets[fd].priority;
    };
    int firstOther = 0;
    while (firstOther < n && first(events[firstOther]))
        ++firstOther;
    int next = firstOther + 1;
    while (next < n && !first(events[next]))
        ++next;
    if (next >= n)
        return; // already in order: the usual case
    epoll_event later[kMaxEventsPerWait];
    int ahead = firstOther, behind = 0;
    for (int i = firstOther; i < n; ++i) {
        if (first(events[i]))
            events[ahead++] = events[i];
        else
            later[behind++] = events[i];
    }
    std::copy(later, later + behind, events + ahead);
}

void EpollEventDispatcher::State::control(int fd, Socket &s)
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
        syncPriority(fd, s);
        return;
    }
    if (s.generation != 0 && want == s.kernelMask)
        return;
    const bool add = s.generation == 0;
    if (add) {
        s.handledPass = 0; // a new registration: not the socket a pass may have handled under this number
        s.generation = nextGeneration++;
        if (nextGeneration == kGlibGeneration)
            nextGeneration = 1;
    }
    epoll_event ev{};
    ev.events = want;
    ev.data.u64 = eventKey(fd, s.generation);
    ++controlCalls;
    int rc = epoll_ctl(epollFd, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev);
    if (rc < 0 && add && errno == EEXIST) {
        rc = epoll_ctl(epollFd, EPOLL_CTL_MOD, fd, &ev);
    } else if (rc < 0 && !add && errno == ENOENT) {
        // The descriptor was closed and its number reused: the kernel dropped the old one from the set (and from
        // the second one, syncPriority() finds out by the same fallback).
        rc = epoll_ctl(epollFd, EPOLL_CTL_ADD, fd, &ev);
        if (s.priorityMask != 0) {
            --prioritized;
            s.priorityMask = 0;
            s.priorityKey = 0;
        }
    }
    if (rc < 0) {
        qWarning("EpollEventDispatcher: cannot watch socket %d: %s", fd, strerror(errno));
        s.generation = 0;
        s.kernelMask = 0;
        syncPriority(fd, s);
        return;
    }
    s.kernelMask = want;
    syncPriority(fd, s);
}

void EpollEventDispatcher::State::syncPriority(int fd, Socket &s)
{
    if (priorityEpollFd < 0)
        return;
    // Read readiness only: a first byte waits for what arrives (a request, an upstream's head or first event).
    // A marked socket's write readiness (a client's output that the kernel took only in part) waits for the
    // next pass, as before; mirrored, it would be found by every recheck while the client reads slowly.
    const quint32 want = s.priority && s.generation != 0 ? (s.kernelMask & quint32(EPOLLIN)) : 0u;
    const bool in = want != 0;
    const quint64 key = in ? eventKey(fd, s.generation) : 0u;
    if (want == s.priorityMask && key == s.priorityKey)
        return;
    ++controlCalls;
    if (want == 0) {
        // ENOENT/EBADF: closed already, which removed it.
        epoll_ctl(priorityEpollFd, EPOLL_CTL_DEL, fd, nullptr);
        --prioritized;
        s.priorityMask = 0;
        s.priorityKey = 0;
        return;
    }
    epoll_event ev{};
    ev.events = want;
    ev.data.u64 = key;
    const bool add = s.priorityMask == 0;
    int rc = epoll_ctl(priorityEpollFd, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev);
    if (rc < 0 && add && errno == EEXIST)
        rc = epoll_ctl(priorityEpollFd, EPOLL_CTL_MOD, fd, &ev);
    else if (rc < 0 && !add && errno == ENOENT)
        rc = epoll_ctl(priorityEpollFd, EPOLL_CTL_ADD, fd, &ev);
    if (rc < 0) {
        // Not rechecked mid-pass, still first in its pass: only an order is lost.
        if (!add)
            --prioritized;
        s.priorityMask = 0;
        s.priorityKey = 0;
        return;
    }
    if (add)
        ++prioritized;
    s.priorityMask = want;
    s.priorityKey = key;
}

bool EpollEventDispatcher::State::takeForPass(int fd, quint32 generation, quint64 pass)
{
    if (size_t(fd) >= sockets.size())
        return true; // activateSocket() finds nothing to deliver
    Socket &s = sockets[size_t(fd)];
    if (s.generation != generation)
        return true;
    if (s.handledPass == pass)
        return false;
    s.handledPass = pass;
    return true;
}

void EpollEventDispatcher::State::recheckPriority(quint64 pass, const std::function<void(int)> &afterEach)
{
    Q_ASSERT(prioritized >= 0);
    ++rechecks;
    epoll_event ready[64];
    const int m = epoll_wait(priorityEpollFd, ready, 64, 0);
    for (int i = 0; i < m; ++i) {
        const int fd = int(quint32(ready[i].data.u64));
        const quint32 generation = quint32(ready[i].data.u64 >> 32);
        if (size_t(fd) >= sockets.size() || sockets[size_t(fd)].generation != generation)
            continue; // closed meanwhile (its mark goes with the next registration)
        if (!takeForPass(fd, generation, pass))
            continue; // handled in this pass already: the next wait reports it again if it is still ready
        ++handledEarly;
        afterEach(activateSocket(fd, generation, ready[i].events));
    }
}

void EpollEventDispatcher::State::applyChanges()
{
    for (int fd : dirtySockets) {
        Socket &s = sockets[size_t(fd)];
        s.dirty = false;
        control(fd, s);
    }
    dirtySockets.clear();
}

void EpollEventDispatcher::State::markDirty(int fd, Socket &s)
{
    if (!s.dirty) {
        s.dirty = true;
        dirtySockets.push_back(fd);
    }
}

void EpollEventDispatcher::State::drainWakeUps()
{
    if (wakeWithoutFd) {
        // This thread wrote nothing. Another thread's write may still land now (it won the flag before the last
        // drain and was held up before its write()): the eventfd's own event reads it in a later pass.
        wakeWithoutFd = false;
    } else {
        quint64 value;
        while (::read(wakeFd, &value, sizeof value) < 0 && errno == EINTR) {
        }
    }
    wakePending.storeRelease(0);
}

int EpollEventDispatcher::State::activateSocket(int fd, quint32 generation, quint32 events)
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
            ready = (events & (EPOLLOUT | EPOLLERR)) || ((events & EPOLLHUP) && !s.notifiers[QSocketNotifier::Read]);
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

int EpollEventDispatcher::State::busyPoll(epoll_event *events, int max, int *timeoutMs)
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
        if (BusyPollHold::helperStalled(now)) {
            ++busyPollHelperStalls; // sleep: the helper may be waiting for this CPU
            break;
        }
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

int EpollEventDispatcher::State::msUntilNextTimer() const
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

int EpollEventDispatcher::State::activateTimers()
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

} // namespace sy

#endif
