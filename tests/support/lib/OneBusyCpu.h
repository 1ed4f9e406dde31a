#pragma once

// A busy CPU for tests of the waits that yield it (util/BusyPoll.h, StoreThreadContext::awaitNextJob): the calling
// thread, and every thread it starts while this lives (they inherit the mask), runs on one CPU only, the first
// of its allowed ones, beside a thread that spins there without yielding. A yield of any of them then gives that
// CPU to the spinner until the scheduler takes it back, far longer than the 50 us the waits' rule looks for.
// Linux only; ok() is false where the mask cannot be set (the caller skips).
#include <QElapsedTimer>

#include <atomic>
#include <sched.h>
#include <thread>

namespace sy::test {

class OneBusyCpu
{
public:
    OneBusyCpu()
    {
        if (sched_getaffinity(0, sizeof m_before, &m_before) != 0)
            return;
        int cpu = 0;
        while (cpu < CPU_SETSIZE && !CPU_ISSET(cpu, &m_before))
            ++cpu;
        if (cpu == CPU_SETSIZE)
            return;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        if (sched_setaffinity(0, sizeof one, &one) != 0)
            return;
        m_pinned = true;
        m_spinner = std::thread([this] {
            QElapsedTimer timer; // a bound, should a test end without its destructor (a crash is not a hang)
            timer.start();
            while (m_spin.load(std::memory_order_relaxed) && timer.elapsed() < 30'000) {
            }
        });
    }
    ~OneBusyCpu()
    {
        m_spin = false;
        if (m_spinner.joinable())
            m_spinner.join();
        if (m_pinned)
            sched_setaffinity(0, sizeof m_before, &m_before);
    }
    OneBusyCpu(const OneBusyCpu &) = delete;
    OneBusyCpu &operator=(const OneBusyCpu &) = delete;

    bool ok() const { return m_pinned; }

private:
    cpu_set_t m_before{};
    bool m_pinned = false;
    std::atomic<bool> m_spin{true};
    std::thread m_spinner;
};

} // namespace sy::test
