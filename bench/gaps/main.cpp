// sy-bench-gaps THREADS SECONDS: how much of the machine a busy thread actually gets (bench/README.md, "Tools").
//
// Each thread spins on CLOCK_MONOTONIC for SECONDS, thread i held on CPU i when there are no more threads than
// CPUs (so that two of them never take turns on one CPU). A jump between two readings longer than 50 us is a gap: time
// the thread did not run. After a gap of at least 1 ms the thread asks the kernel (getrusage RUSAGE_THREAD)
// whether it was switched out since its last look. A gap without a switch was not spent on another thread of this
// machine: the virtual CPU itself did not run (taken by the host), or an interrupt ran that long. With nothing else
// running and one spinning thread per CPU, such gaps are what a process on this machine loses whatever it does.
// Prints one line per thread and a summary line; asserts nothing.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace {

long long nowNs()
{
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

long long switchesSoFar()
{
    rusage u{};
    getrusage(RUSAGE_THREAD, &u);
    return u.ru_nvcsw + u.ru_nivcsw;
}

struct Gaps
{
    long long over50us = 0;
    long long over1ms = 0;
    long long over1msUnswitched = 0; // of those, with no switch of this thread seen by its kernel
    long long lostNs = 0;            // in gaps over 50 us
    long long lostUnswitchedNs = 0;  // in gaps over 1 ms without a switch
    long long longestNs = 0;
};

Gaps spin(long long durationNs)
{
    Gaps g;
    long long switches = switchesSoFar();
    long long prev = nowNs();
    const long long end = prev + durationNs;
    for (;;) {
        const long long t = nowNs();
        const long long gap = t - prev;
        prev = t;
        if (t >= end)
            break;
        if (gap <= 50000)
            continue;
        ++g.over50us;
        g.lostNs += gap;
        g.longestNs = std::max(g.longestNs, gap);
        if (gap < 1000000)
            continue;
        ++g.over1ms;
        const long long now = switchesSoFar();
        if (now == switches) {
            ++g.over1msUnswitched;
            g.lostUnswitchedNs += gap;
        }
        switches = now;
        prev = nowNs(); // the system call's own time is not a gap
    }
    return g;
}

double percent(long long part, long long whole)
{
    return whole > 0 ? 100.0 * double(part) / double(whole) : 0.0;
}

} // namespace

int main(int argc, char **argv)
{
    const int threads = argc == 3 ? std::atoi(argv[1]) : 0;
    const double seconds = argc == 3 ? std::atof(argv[2]) : 0;
    if (threads < 1 || threads > 64 || seconds <= 0 || seconds > 3600) {
        std::fputs("usage: sy-bench-gaps THREADS SECONDS   (1-64 threads, up to 3600 s)\n", stderr);
        return 2;
    }
    const long long durationNs = static_cast<long long>(seconds * 1e9);
    std::vector<Gaps> results(static_cast<size_t>(threads));
    std::vector<std::thread> workers;
    const bool pinned = threads <= sysconf(_SC_NPROCESSORS_ONLN);
    for (int i = 0; i < threads; ++i)
        workers.emplace_back([&results, i, durationNs, pinned] {
            if (pinned) {
                cpu_set_t cpus;
                CPU_ZERO(&cpus);
                CPU_SET(i, &cpus);
                pthread_setaffinity_np(pthread_self(), sizeof cpus, &cpus);
            }
            results[static_cast<size_t>(i)] = spin(durationNs);
        });
    for (std::thread &w : workers)
        w.join();
    Gaps all;
    for (int i = 0; i < threads; ++i) {
        const Gaps &g = results[static_cast<size_t>(i)];
        std::printf("thread %d: gaps > 50 us %lld, > 1 ms %lld (%lld with no switch seen), longest %.2f ms, "
                    "lost %.2f %% (%.2f %% in gaps > 1 ms with no switch)\n",
                    i, g.over50us, g.over1ms, g.over1msUnswitched, double(g.longestNs) / 1e6,
                    percent(g.lostNs, durationNs), percent(g.lostUnswitchedNs, durationNs));
        all.over50us += g.over50us;
        all.over1ms += g.over1ms;
        all.over1msUnswitched += g.over1msUnswitched;
        all.lostNs += g.lostNs;
        all.lostUnswitchedNs += g.lostUnswitchedNs;
        all.longestNs = std::max(all.longestNs, g.longestNs);
    }
    const long long totalNs = durationNs * threads;
    std::printf("gaps: %d thread(s)%s x %.1f s: lost %.2f %% in gaps > 50 us; %lld gaps > 1 ms, %lld of them with no "
                "switch seen (%.2f %% of the time); longest %.2f ms\n",
                threads, pinned ? " (one per CPU)" : "", seconds, percent(all.lostNs, totalNs), all.over1ms,
                all.over1msUnswitched, percent(all.lostUnswitchedNs, totalNs), double(all.longestNs) / 1e6);
    return 0;
}
