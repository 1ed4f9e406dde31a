#pragma once

#include "util/Clock.h"

#include <atomic>

namespace sy::test {

// A clock that moves only when a test says so.
class ManualClock final : public Clock
{
public:
    explicit ManualClock(qint64 startEpochMs = 1796000000000) : m_wall(startEpochMs) {}
    qint64 nowMs() const override { return m_wall.load(); }
    qint64 monotonicMs() const override { return m_mono.load(); }
    void advance(qint64 ms)
    {
        m_wall += ms;
        m_mono += ms;
    }

private:
    std::atomic<qint64> m_wall;
    std::atomic<qint64> m_mono{0};
};

} // namespace sy::test
