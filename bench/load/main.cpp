// sy-bench-load: closed-loop HTTP load generator and cold-start timer for the Switchyard benchmark.
// Prints one line of key=value pairs on stdout (times in milliseconds) for bench/run.sh to read.
#include "ColdStart.h"
#include "LoadRun.h"
#include "RequestBody.h"
#include "Stats.h"

#include "BenchNet.h"

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

const char kUsage[] =
    "usage: sy-bench-load --url http://127.0.0.1:PORT/PATH [options]\n"
    "  --kind codex|chat      request shape (default codex: streaming Codex turn; chat: non-streaming\n"
    "                         chat completion)\n"
    "  --body-bytes N         request body size (default 40960, about a real Codex turn)\n"
    "  --concurrency N        keep-alive connections, one request in flight on each (default 1)\n"
    "  --warmup S             seconds not measured at the start (default 1)\n"
    "  --duration S           measured seconds (default 10)\n"
    "  --grace S              how long in-flight requests may finish after the window (default 60)\n"
    "  --session-prefix P     session-id header is P-<connection> (default bench)\n"
    "  --ready-file F         created once every connection has received a first body byte\n"
    "  --cold-start N [--log F] -- CMD ARGS...\n"
    "                         start CMD N times; time from spawn to the first good answer at --url\n";

bool number(const char *text, double *out)
{
    char *end = nullptr;
    *out = std::strtod(text, &end);
    return *text != '\0' && *end == '\0' && *out >= 0;
}

} // namespace

int main(int argc, char **argv)
{
    std::signal(SIGPIPE, SIG_IGN);
    sy::bench::LoadOptions o;
    o.sessionPrefix = "bench";
    std::string url, kind = "codex";
    double bodyBytes = 40960, coldStart = 0;
    sy::bench::ColdStartOptions cold;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool hasValue = i + 1 < argc;
        double v = 0;
        if (a == "--") {
            for (++i; i < argc; ++i)
                cold.command.push_back(argv[i]);
        } else if (a == "--url" && hasValue) {
            url = argv[++i];
        } else if (a == "--kind" && hasValue) {
            kind = argv[++i];
        } else if (a == "--session-prefix" && hasValue) {
            o.sessionPrefix = argv[++i];
        } else if (a == "--ready-file" && hasValue) {
            o.readyFile = argv[++i];
        } else if (a == "--log" && hasValue) {
            cold.logFile = argv[++i];
        } else if (hasValue && number(argv[i + 1], &v) &&
                   (a == "--body-bytes" || a == "--concurrency" || a == "--warmup" || a == "--duration" ||
                    a == "--grace" || a == "--cold-start")) {
            ++i;
            if (a == "--body-bytes")
                bodyBytes = v;
            else if (a == "--concurrency")
                o.concurrency = std::max(1, int(v));
            else if (a == "--warmup")
                o.warmupS = v;
            else if (a == "--duration")
                o.durationS = v;
            else if (a == "--grace")
                o.graceS = v;
            else
                coldStart = v;
        } else {
            std::fputs(kUsage, stderr);
            return 2;
        }
    }
    if (!sy::bench::parseLoopbackUrl(url, &o.port, &o.path) || (kind != "codex" && kind != "chat")) {
        std::fputs(kUsage, stderr);
        return 2;
    }
    const bool chat = kind == "chat";
    o.body = chat ? sy::bench::chatBody(size_t(bodyBytes)) : sy::bench::codexBody(size_t(bodyBytes));
    o.eventStream = !chat;
    o.marker = chat ? "\"chat.completion\"" : "response.completed";

    if (coldStart > 0) {
        if (cold.command.empty()) {
            std::fputs(kUsage, stderr);
            return 2;
        }
        cold.port = o.port;
        cold.path = o.path;
        cold.body = o.body;
        cold.marker = o.marker;
        cold.repeat = int(coldStart);
        std::vector<double> ms = sy::bench::measureColdStart(cold);
        if (ms.empty())
            return 1;
        std::vector<double> sorted = ms;
        std::sort(sorted.begin(), sorted.end());
        std::printf("runs=%zu cold_start_median_ms=%.1f cold_start_min_ms=%.1f cold_start_max_ms=%.1f\n",
                    sorted.size(), sorted[sorted.size() / 2], sorted.front(), sorted.back());
        return 0;
    }

    sy::bench::LoadRun run(o);
    const sy::bench::LoadResult r = run.run();
    using sy::bench::percentileMs;
    std::printf("requests=%lld total=%lld errors=%lld reconnects=%lld rps=%.1f ttfb_p50_ms=%.3f ttfb_p99_ms=%.3f "
                "ttlb_p50_ms=%.3f ttlb_p99_ms=%.3f body_bytes=%zu\n",
                static_cast<long long>(r.completed), static_cast<long long>(r.total), static_cast<long long>(r.errors),
                static_cast<long long>(r.reconnects), double(r.finishedInWindow) / r.seconds, percentileMs(r.ttfbUs, 0.5),
                percentileMs(r.ttfbUs, 0.99), percentileMs(r.ttlbUs, 0.5), percentileMs(r.ttlbUs, 0.99),
                o.body.size());
    return r.completed > 0 ? 0 : 1;
}
