#pragma once

#include <QDateTime>
#include <QElapsedTimer>

namespace sy {

// All of core asks a Clock for the time, so tests can drive quota windows, cooldowns,
// leases and per-stage deadlines deterministically with a ManualClock.
class Clock
{
public:
    virtual ~Clock() = default;
    // Wall-clock time in milliseconds since the Unix epoch (UTC).
    virtual qint64 nowMs() const = 0;
    // Monotonic milliseconds from an arbitrary origin; use it for durations and deadlines.
    virtual qint64 monotonicMs() const = 0;
    // The same clock in microseconds, for stage latencies below a millisecond (TurnStages). A clock that
    // only counts milliseconds (ManualClock) reports them as whole milliseconds.
    virtual qint64 monotonicUs() const { return monotonicMs() * 1000; }

    QDateTime now() const { return QDateTime::fromMSecsSinceEpoch(nowMs(), Qt::UTC); }
};

class SystemClock final : public Clock
{
public:
    SystemClock() { m_timer.start(); }
    qint64 nowMs() const override { return QDateTime::currentMSecsSinceEpoch(); }
    qint64 monotonicMs() const override { return m_timer.elapsed(); }
    qint64 monotonicUs() const override { return m_timer.nsecsElapsed() / 1000; }

    static SystemClock &instance()
    {
        static SystemClock clock;
        return clock;
    }

private:
    QElapsedTimer m_timer;
};

} // namespace sy
