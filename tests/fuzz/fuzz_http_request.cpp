// The downstream HTTP/1.1 request parser glue (http/HttpConnectionParsing on libhttp-parser, HttpRequest,
// BodyDecoder), driven through a real HttpServer on a loopback socket, the way a client reaches it. Byte 0
// picks where the rest is cut into writes (one chunk, many tiny ones, or a few large ones); the rest is
// whatever a client sends on one connection: pipelined requests, chunked or compressed bodies, garbage.
// Limits are small (4 KiB of head, 16 KiB of body) so the fuzzer reaches the 413/431 paths.
// Invariants: every request the handler sees is well-formed (method, path, lowercase header names, trimmed
// values, bodies within the limit); everything the server writes back starts as an HTTP/1.1 response;
// after the client ends its side the server closes the connection instead of hanging on to it.
#include "FuzzSupport.h"
#include "http/HttpServer.h"

#include <QAbstractEventDispatcher>
#include <QCoreApplication>
#include <QElapsedTimer>
#include <arpa/inet.h>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

namespace sy::fuzz {

namespace {

constexpr const char *kTarget = "http_request";
constexpr qint64 kMaxHeaderBytes = 4096;
constexpr qint64 kMaxBodyBytes = 16384;
// Wall-clock bound for one input; only a server that never closes the connection comes near it.
constexpr qint64 kCloseDeadlineMs = 5000;
// Every write costs an event-loop pass; past this many the rest of the input goes in one write, so the splits
// stay in the request heads (where they matter) and a run stays fast.
constexpr qsizetype kMaxWrites = 48;

bool isTrimmed(const QByteArray &value)
{
    return value == value.trimmed();
}

void handle(const HttpRequestPtr &request, HttpResponse *response)
{
    const HttpRequest &r = *request;
    SY_FUZZ_CHECK(kTarget, !r.method.isEmpty(), "request without a method");
    SY_FUZZ_CHECK(kTarget, r.path.startsWith(QLatin1Char('/')) || r.target == "*", "request path is not absolute");
    SY_FUZZ_CHECK(kTarget, r.body.size() <= kMaxBodyBytes, "request body beyond the limit");
    SY_FUZZ_CHECK(kTarget, r.wireBodyBytes <= kMaxBodyBytes, "wire body beyond the limit");
    SY_FUZZ_CHECK(kTarget, r.target.size() <= kMaxHeaderBytes, "request target beyond the head limit");
    for (const HttpHeader &h : r.headers) {
        SY_FUZZ_CHECK(kTarget, !h.first.isEmpty(), "empty header name");
        for (const char c : h.first)
            SY_FUZZ_CHECK(kTarget, c < 'A' || c > 'Z', "header name not lowercased");
        SY_FUZZ_CHECK(kTarget, isTrimmed(h.second), "header value not trimmed");
    }
    // Exercise the accessors handlers use.
    r.header("content-type");
    r.headerValues("accept");
    r.isWebSocketUpgrade();
    r.query.queryItems(QUrl::FullyDecoded);

    const QByteArray summary = r.method + ' ' + r.path.toUtf8() + ' ' + QByteArray::number(r.body.size());
    if (r.path.startsWith(QLatin1String("/stream"))) {
        response->setHeader("X-Fuzz", r.header("x-fuzz"));
        response->beginStream(200, "text/event-stream");
        response->write("data: " + summary + "\n\n");
        response->end();
    } else if (r.path.startsWith(QLatin1String("/error"))) {
        response->sendJsonError(400, "invalid_request_error", "fuzz", QString::fromUtf8(r.body.left(64)));
    } else {
        response->sendFull(200, "text/plain", summary);
    }
}

HttpServer &server()
{
    static HttpServer *s = [] {
        ensureCoreApplication();
        auto *srv = new HttpServer;
        srv->setMaxHeaderBytes(kMaxHeaderBytes);
        srv->setMaxBodyBytes(kMaxBodyBytes);
        srv->setLingerMs(50);
        srv->setHandler(handle);
        if (!srv->listen(QHostAddress::LocalHost, 0))
            checkFailed(kTarget, "cannot listen on loopback", __FILE__, __LINE__);
        return srv;
    }();
    return *s;
}

void pump()
{
    QCoreApplication::processEvents(QEventLoop::AllEvents);
    QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
}

// Reads what the server sent so far without blocking; false once the server closed its side.
bool drain(int fd, QByteArray *received)
{
    char buf[16384];
    for (;;) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
        if (n > 0) {
            received->append(buf, qsizetype(n));
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
}

} // namespace

int httpRequest(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    HttpServer &srv = server();
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    SY_FUZZ_CHECK(kTarget, fd >= 0, "socket() failed");
    // Closed with a reset once the server is done: a million runs must not leave a million TIME_WAIT sockets
    // behind, which would use up the loopback's ephemeral ports.
    const linger noTimeWait{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &noTimeWait, sizeof noTimeWait);
    // The server half-closes first after an error answer, so its side may still sit in TIME_WAIT. Rotating
    // the client's source address over 127.1.0.0/16 gives every run fresh 4-tuples.
    static quint32 runs = 0;
    sockaddr_in local{};
    local.sin_family = AF_INET;
    local.sin_addr.s_addr = htonl((127u << 24) | (1u << 16) | (1u + runs++ % 65534u));
    SY_FUZZ_CHECK(kTarget, ::bind(fd, reinterpret_cast<sockaddr *>(&local), sizeof local) == 0, "bind() failed");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(srv.serverPort());
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0) {
        // libFuzzer's timers interrupt a blocking connect(), which then completes in the background.
        pollfd p{fd, POLLOUT, 0};
        int error = errno;
        if (error == EINTR && ::poll(&p, 1, int(kCloseDeadlineMs)) == 1) {
            socklen_t len = sizeof error;
            ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len);
        }
        if (error != 0) {
            std::fprintf(stderr, "connect: %s\n", std::strerror(error));
            checkFailed(kTarget, "connect() failed", __FILE__, __LINE__);
        }
    }

    QElapsedTimer clock;
    clock.start();
    while (srv.connectionCount() == 0 && clock.elapsed() < kCloseDeadlineMs)
        pump();
    SY_FUZZ_CHECK(kTarget, srv.connectionCount() == 1, "server did not accept the connection");

    QByteArray received;
    bool serverOpen = true;
    const QByteArrayView stream(reinterpret_cast<const char *>(data) + 1, qsizetype(size) - 1);
    for (const QByteArrayView chunk : splitByControlByte(data[0], stream, kMaxWrites)) {
        qsizetype sent = 0;
        while (serverOpen && sent < chunk.size()) {
            const ssize_t n = ::send(fd, chunk.data() + sent, size_t(chunk.size() - sent), MSG_DONTWAIT | MSG_NOSIGNAL);
            if (n > 0)
                sent += n;
            else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                serverOpen = false; // the server closed after an error response: the rest has nowhere to go
            // One pass per write: the server reads what arrived, so the next write is a read of its own.
            pump();
            serverOpen = drain(fd, &received) && serverOpen;
        }
    }
    ::shutdown(fd, SHUT_WR);
    while (srv.connectionCount() > 0 && clock.elapsed() < kCloseDeadlineMs) {
        pump();
        drain(fd, &received);
    }
    SY_FUZZ_CHECK(kTarget, srv.connectionCount() == 0, "server kept the connection after the client's EOF");
    drain(fd, &received);
    ::close(fd);
    pump();

    SY_FUZZ_CHECK(kTarget, received.isEmpty() || received.startsWith("HTTP/1.1 "),
                  "server wrote something other than an HTTP/1.1 response");
    return 0;
}

} // namespace sy::fuzz

SY_FUZZ_ENTRY(httpRequest)
