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
};

thread_local ThreadPollState t_state;

// The clock EpollEventDispatcher compares with (CLOCK_MONOTONIC, which steady_clock is on Linux).
qint64 monotonicNs()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

} // namespace

int BusyPollHold::windowUs()
{
    static const int us = [] {
        bool ok = false;
        const int value = qEnvironmentVariableIntValue("SWITCHYARD_BUSY_POLL_US", &ok);
        return ok ? qBound(0, value, 100'000) : 1000;
    }();
    return us;
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
