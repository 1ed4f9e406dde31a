// sy-bench-upstream: the load-tuned fake Codex backend. Prints "listening on PORT" once ready.
#include "BenchUpstream.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char **argv)
{
    uint16_t port = 0;
    sy::bench::StreamProfile profile;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--port") == 0 && i + 1 < argc) {
            port = uint16_t(std::atoi(argv[++i]));
        } else {
            std::fprintf(stderr, "usage: %s [--port N]\nThe stream profile is set with POST "
                                 "/bench/profile?events=N&delta_bytes=B&delay_ms=D&first_ms=F&echo_bytes=E\n",
                         argv[0]);
            return 2;
        }
    }
    std::signal(SIGPIPE, SIG_IGN);
    struct sigaction sa{};
    sa.sa_handler = [](int) { sy::bench::BenchUpstream::stop(); };
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);

    sy::bench::BenchUpstream upstream;
    std::string error;
    if (!upstream.listen(port, &error)) {
        std::fprintf(stderr, "sy-bench-upstream: cannot listen: %s\n", error.c_str());
        return 1;
    }
    std::printf("listening on %u\n", unsigned(upstream.port()));
    std::fflush(stdout);
    upstream.run();
    std::fprintf(stderr, "sy-bench-upstream: served %llu turns\n",
                 static_cast<unsigned long long>(upstream.servedTurns()));
    return 0;
}
