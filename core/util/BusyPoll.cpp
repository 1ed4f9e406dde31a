#include "util/BusyPoll.h"

#include <QByteArray>
#include <chrono>

namespace sy {

namespace {

struct ThreadPollState
{
    int holds = 0;
    qint64 taken = 0;
    qint64 untilNs = 0;
    // The latest hand-off (noteHandOff()): the helper's jobs taken then; its steps as last seen, and since when
    // (the hand-off, or the latest step seen since).
    std::shared_ptr<const BusyPollHelper> helper;
    quint64 helperTakenAtHandOff = 0;
    quint64 helperStepsSeen = 0;
    qint64 helperQuietSinceNs = 0;
};

thread_local ThreadPollState t_state;

// The clock EpollEventDispatcher compares with (CLOCK_MONOTONIC, which steady_clock is on Linux).
qint64 monotonicNs()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

} // namespace

int busyWaitUsFromEnvironment(const char *name, int defaultUs)
{
    bool ok = false;
    const int value = qEnvironmentVariableIntValue(name, &ok);
    return ok ? qBound(0, value, 100'000) : defaultUs;
}

int BusyPollHold::windowUs()
{
    static const int us = busyWaitUsFromEnvironment("SWITCHYARD_BUSY_POLL_US", 1000);
    return us;
}

int BusyPollHold::helperGraceUs()
{
    static const int us = busyWaitUsFromEnvironment("SWITCHYARD_BUSY_POLL_HELPER_GRACE_US", 200);
    return us;
}

void BusyPollHold::noteHandOff(const std::shared_ptr<const BusyPollHelper> &helper)
{
    if (!helper)
        return;
    const quint64 taken = helper->jobsTaken.load(std::memory_order_relaxed);
    ThreadPollState &state = t_state;
    if (state.helper == helper && state.helperTakenAtHandOff == taken)
        return; // no job taken since the earlier hand-off: that one's time counts
    state.helper = helper;
    state.helperTakenAtHandOff = taken;
    state.helperStepsSeen = helper->steps.load(std::memory_order_relaxed);
    state.helperQuietSinceNs = monotonicNs();
}

bool BusyPollHold::helperStalled(qint64 nowNs)
{
    ThreadPollState &state = t_state;
    const int graceUs = helperGraceUs();
    if (graceUs <= 0 || !state.helper ||
        state.helper->jobsTaken.load(std::memory_order_relaxed) != state.helperTakenAtHandOff)
        return false;
    const bool working = state.helper->working.load(std::memory_order_acquire); // before `steps`: see beginUnit()
    const quint64 steps = state.helper->steps.load(std::memory_order_relaxed);
    if (steps != state.helperStepsSeen) { // it ran since it was last seen: quiet from now on, if at all
        state.helperStepsSeen = steps;
        state.helperQuietSinceNs = nowNs;
        return false;
    }
    return !working && nowNs - state.helperQuietSinceNs >= qint64(graceUs) * 1000;
}

void BusyPollHold::acquire()
{
    if (windowUs() <= 0)
        return;
    if (!m_held) {
        m_held = true;
        ++t_state.holds;
        ++t_state.taken;
    }
    t_state.untilNs = monotonicNs() + qint64(windowUs()) * 1000;
}

void BusyPollHold::release()
{
    if (!m_held)
        return;
    m_held = false;
    --t_state.holds;
}

qint64 BusyPollHold::pollUntilNs()
{
    return t_state.holds > 0 ? t_state.untilNs : 0;
}

int BusyPollHold::heldOnThisThread()
{
    return t_state.holds;
}

qint64 BusyPollHold::takenOnThisThread()
{
    return t_state.taken;
}

} // namespace sy
