#pragma once

// Small socket and clock helpers shared by the benchmark's fake upstream and load generator. Plain POSIX on
// purpose: these tools must cost as little CPU as possible so that the proxy under test is what is measured.

#include <cstdint>
#include <string>

namespace sy::bench {

// CLOCK_MONOTONIC in microseconds.
int64_t nowUs();

bool setNonBlocking(int fd);
void setNoDelay(int fd);

// Listens on 127.0.0.1:port (0 = any free port); returns the fd or -1 and sets *error.
int listenLoopback(uint16_t port, uint16_t *boundPort, std::string *error);

// Starts a non-blocking connect to 127.0.0.1:port; returns the fd or -1.
int connectLoopback(uint16_t port);

// Splits "http://127.0.0.1:PORT/path" into port and path; false when it is not such a URL.
bool parseLoopbackUrl(const std::string &url, uint16_t *port, std::string *path);

// Appends one HTTP/1.1 chunk (size line, data, CRLF) to out.
void appendChunk(std::string &out, const char *data, size_t size);

} // namespace sy::bench
