#include "BenchNet.h"

#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

namespace sy::bench {

int64_t nowUs()
{
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return int64_t(ts.tv_sec) * 1000000 + ts.tv_nsec / 1000;
}

bool setNonBlocking(int fd)
{
    const int flags = fcntl(fd, F_GETFL, 0);
    return flags >= 0 && fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

void setNoDelay(int fd)
{
    // SSE events are small writes: without TCP_NODELAY Nagle would hold them back and be measured as latency.
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

int listenLoopback(uint16_t port, uint16_t *boundPort, std::string *error)
{
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        *error = std::strerror(errno);
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 || listen(fd, 4096) != 0) {
        *error = std::strerror(errno);
        close(fd);
        return -1;
    }
    socklen_t len = sizeof addr;
    getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len);
    *boundPort = ntohs(addr.sin_port);
    setNonBlocking(fd);
    return fd;
}

int connectLoopback(uint16_t port)
{
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    setNoDelay(fd);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 && errno != EINPROGRESS) {
        close(fd);
        return -1;
    }
    return fd;
}

bool parseLoopbackUrl(const std::string &url, uint16_t *port, std::string *path)
{
    const std::string prefix = "http://127.0.0.1:";
    if (url.compare(0, prefix.size(), prefix) != 0)
        return false;
    const size_t slash = url.find('/', prefix.size());
    const std::string portText = url.substr(prefix.size(), slash == std::string::npos ? std::string::npos
                                                                                      : slash - prefix.size());
    char *end = nullptr;
    const long p = std::strtol(portText.c_str(), &end, 10);
    if (portText.empty() || *end != '\0' || p <= 0 || p > 65535)
        return false;
    *port = uint16_t(p);
    *path = slash == std::string::npos ? std::string("/") : url.substr(slash);
    return true;
}

void appendChunk(std::string &out, const char *data, size_t size)
{
    char head[24];
    const int n = std::snprintf(head, sizeof head, "%zx\r\n", size);
    out.append(head, size_t(n));
    out.append(data, size);
    out.append("\r\n", 2);
}

} // namespace sy::bench
