// sy-bench-gaps THREADS SECONDS: how much of the machine a busy thread actually gets (bench/README.md, "Tools").
//
// Each thread spins for SECONDS, reading CLOCK_MONOTONIC and, beside it, how often its kernel has switched it
// out (getrusage RUSAGE_THREAD). With no more threads than allowed CPUs, thread i is held on the i-th of them, so
// that two of them never take turns on one CPU. A jump between two clock readings longer than 50 us is a gap:
// time the thread did not run. A gap of 1 ms or more with no switch counted across it was not spent on another
// thread of this machine: the virtual CPU itself did not run (taken by the host), or an interrupt ran that long.
// Prints one line per thread and a summary line; asserts nothing.
#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <thread>
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
    long long over1msUnswitched = 0; // of those, with no switch of this thread counted across the gap
    long long lostNs = 0;            // in gaps over 50 us
    long long lostUnswitchedNs = 0;  // in gaps over 1 ms without a switch
    long long longestNs = 0;
};

Gaps spin(long long durationNs)
{
    Gaps g;
    // Every look at the clock is followed by a look at the switch count: a switch inside the span between two
    // clock readings shows in the difference of the two counts that follow them.
    long long prev = nowNs();
    long long switchesAtPrev = switchesSoFar();
    const long long end = prev + durationNs;
    for (;;) {
        const long long t = nowNs();
        const long long switches = switchesSoFar();
        const long long gap = t - prev;
        const bool switched = switches != switchesAtPrev;
        prev = t;
        switchesAtPrev = switches;
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
        if (!switched) {
            ++g.over1msUnswitched;
            g.lostUnswitchedNs += gap;
        }
    }
    return g;
}

double percent(long long part, long long whole)
{
    return whole > 0 ? 100.0 * double(part) / double(whole) : 0.0;
}

bool parseArgs(int argc, char **argv, long &threads, double &seconds)
{
    if (argc != 3)
        return false;
    char *endT = nullptr;
    char *endS = nullptr;
    errno = 0;
    threads = std::strtol(argv[1], &endT, 10);
    seconds = std::strtod(argv[2], &endS);
    return errno == 0 && endT != argv[1] && *endT == '\0' && endS != argv[2] && *endS == '\0' && threads >= 1 &&
           threads <= 64 && std::isfinite(seconds) && seconds > 0 && seconds <= 3600;
}

} // namespace

int main(int argc, char **argv)
{
    long threads = 0;
    double seconds = 0;
    if (!parseArgs(argc, argv, threads, seconds)) {
        std::fputs("usage: sy-bench-gaps THREADS SECONDS   (1-64 threads, up to 3600 s)\n", stderr);
        return 2;
    }
    const long long durationNs = static_cast<long long>(seconds * 1e9);
    // The CPUs this process may run on, in order: thread i is held on the i-th.
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    std::vector<int> cpus;
    if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
        for (int c = 0; c < CPU_SETSIZE; ++c)
            if (CPU_ISSET(c, &allowed))
                cpus.push_back(c);
    }
    const bool pinning = threads <= static_cast<long>(cpus.size());
    std::atomic<int> pinned{0};
    std::vector<Gaps> results(static_cast<size_t>(threads));
    std::vector<std::thread> workers;
    for (long i = 0; i < threads; ++i)
        workers.emplace_back([&, i] {
            if (pinning) {
                cpu_set_t one;
                CPU_ZERO(&one);
                CPU_SET(cpus[static_cast<size_t>(i)], &one);
                if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) == 0)
                    ++pinned;
            }
            results[static_cast<size_t>(i)] = spin(durationNs);
        });
    for (std::thread &w : workers)
        w.join();
    Gaps all;
    for (long i = 0; i < threads; ++i) {
        const Gaps &g = results[static_cast<size_t>(i)];
        std::printf("thread %ld: gaps > 50 us %lld, > 1 ms %lld (%lld with no switch), longest %.2f ms, "
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
    std::printf("gaps: %ld thread(s)%s x %.1f s: lost %.2f %% in gaps > 50 us; %lld gaps > 1 ms, %lld of them with no "
                "switch (%.2f %% of the time); longest %.2f ms\n",
                threads, pinned.load() == threads ? " (one per CPU)" : " (not pinned)", seconds,
                percent(all.lostNs, totalNs), all.over1ms, all.over1msUnswitched,
                percent(all.lostUnswitchedNs, totalNs), double(all.longestNs) / 1e6);
    return 0;
}
