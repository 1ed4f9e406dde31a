#include "util/BusyPoll.h"

#include <QByteArray>
#include <ctime>

namespace sy {

namespace {

struct ThreadPollState
{
    int holds = 0;
    qint64 untilNs = 0;
};

thread_local ThreadPollState t_state;

qint64 monotonicNs()
{
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return qint64(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
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
    if (m_held || windowUs() <= 0)
        return;
    m_held = true;
    ++t_state.holds;
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

} // namespace sy
