#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace sy::bench {

struct ColdStartOptions
{
    uint16_t port = 0;
    std::string path;
    std::string body;
    std::string marker;
    int repeat = 5;
    double timeoutS = 20;
    std::string logFile = "/dev/null";
    std::vector<std::string> command; // the server to start; it must listen on `port`
};

// Starts the command `repeat` times; each time measures from the spawn to the end of the first good answer
// to a real turn (connection refused and error answers are retried every millisecond), then stops the
// server with SIGTERM and waits for it. Returns the times in milliseconds; empty on a failure (message
// written to stderr).
std::vector<double> measureColdStart(const ColdStartOptions &options);

} // namespace sy::bench
