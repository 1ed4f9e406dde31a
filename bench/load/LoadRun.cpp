#include "LoadRun.h"

#include "BenchNet.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

namespace sy::bench {

LoadRun::LoadRun(LoadOptions options) : m_o(std::move(options))
{
    m_settings.on_status = &LoadRun::onStatus;
    m_settings.on_body = &LoadRun::onBody;
    m_settings.on_message_complete = &LoadRun::onMessageComplete;
}

LoadRun::~LoadRun()
{
    for (auto &c : m_conns) {
        if (c && c->fd >= 0)
            close(c->fd);
    }
    if (m_epoll >= 0)
        close(m_epoll);
}

int LoadRun::onStatus(http_parser *p, const char *, size_t)
{
    static_cast<Conn *>(p->data)->status = int(p->status_code);
    return 0;
}

int LoadRun::onBody(http_parser *p, const char *at, size_t len)
{
    auto *c = static_cast<Conn *>(p->data);
    if (!c->sawFirstByte) {
        c->sawFirstByte = true;
        c->firstByteUs = nowUs();
    }
    if (!c->sawMarker)
        c->tail.append(at, len); // searched after each read, so a marker split across reads is found
    return 0;
}

int LoadRun::onMessageComplete(http_parser *p)
{
    auto *c = static_cast<Conn *>(p->data);
    c->complete = true;
    c->keepAlive = http_should_keep_alive(p) != 0;
    return 0;
}

bool LoadRun::measuring(int64_t startUs) const
{
    return startUs >= m_measureFromUs && startUs < m_measureToUs;
}

void LoadRun::watch(Conn &c, bool writable)
{
    epoll_event ev{};
    ev.events = EPOLLIN | (writable ? EPOLLOUT : 0u);
    ev.data.u32 = uint32_t(c.index);
    epoll_ctl(m_epoll, EPOLL_CTL_MOD, c.fd, &ev);
}

void LoadRun::open(Conn &c)
{
    c.fd = connectLoopback(m_o.port);
    if (c.fd < 0) {
        ++m_r.errors;
        return;
    }
    c.connecting = true;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLOUT;
    ev.data.u32 = uint32_t(c.index);
    epoll_ctl(m_epoll, EPOLL_CTL_ADD, c.fd, &ev);
}

void LoadRun::startRequest(Conn &c)
{
    c.busy = true;
    c.sent = 0;
    c.startUs = nowUs();
    c.sawFirstByte = false;
    c.status = 0;
    c.sawMarker = m_o.marker.empty();
    c.complete = false;
    c.tail.clear();
    http_parser_init(&c.parser, HTTP_RESPONSE);
    c.parser.data = &c;
    send(c);
}

void LoadRun::send(Conn &c)
{
    const size_t total = c.head.size() + m_o.body.size();
    while (c.sent < total) {
        iovec iov[2];
        int n = 0;
        if (c.sent < c.head.size())
            iov[n++] = {const_cast<char *>(c.head.data()) + c.sent, c.head.size() - c.sent};
        const size_t bodyOff = c.sent > c.head.size() ? c.sent - c.head.size() : 0;
        iov[n++] = {const_cast<char *>(m_o.body.data()) + bodyOff, m_o.body.size() - bodyOff};
        const ssize_t w = writev(c.fd, iov, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN) {
                watch(c, true);
                return;
            }
            fail(c);
            return;
        }
        c.sent += size_t(w);
    }
    watch(c, false);
}

void LoadRun::onReadable(Conn &c)
{
    char buf[65536];
    for (;;) {
        const ssize_t n = read(c.fd, buf, sizeof buf);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            if (c.busy) {
                fail(c);
            } else {
                // The server closed an idle keep-alive connection: reopen it for the next request.
                epoll_ctl(m_epoll, EPOLL_CTL_DEL, c.fd, nullptr);
                close(c.fd);
                c.fd = -1;
                if (nowUs() < m_measureToUs) {
                    ++m_r.reconnects;
                    open(c);
                }
            }
            return;
        }
        if (n < 0)
            return;
        if (!c.busy)
            continue; // nothing is expected between answers
        const size_t used = http_parser_execute(&c.parser, &m_settings, buf, size_t(n));
        if (HTTP_PARSER_ERRNO(&c.parser) != HPE_OK || used != size_t(n)) {
            fail(c);
            return;
        }
        if (!c.sawMarker && !m_o.marker.empty()) {
            c.sawMarker = c.tail.find(m_o.marker) != std::string::npos;
            if (!c.sawMarker && c.tail.size() > m_o.marker.size())
                c.tail.erase(0, c.tail.size() - m_o.marker.size());
        }
        if (c.complete) {
            finishRequest(c);
            return;
        }
        if (size_t(n) < sizeof buf)
            return;
    }
}

void LoadRun::finishRequest(Conn &c)
{
    const int64_t end = nowUs();
    c.busy = false;
    const bool good = c.status == 200 && c.sawMarker;
    if (!good) {
        ++m_r.errors;
        if (m_r.errors <= 3)
            std::fprintf(stderr, "sy-bench-load: bad answer (status %d, marker %s)\n", c.status,
                         c.sawMarker ? "found" : "missing");
    } else {
        ++m_r.total;
        if (end >= m_measureFromUs && end <= m_measureToUs)
            ++m_r.finishedInWindow;
        if (measuring(c.startUs) && end <= m_measureToUs) {
            ++m_r.completed;
            m_r.ttfbUs.push_back(c.firstByteUs - c.startUs);
            m_r.ttlbUs.push_back(end - c.startUs);
        }
    }
    if (c.sawFirstByte && !m_gotFirstByte[size_t(c.index)]) {
        m_gotFirstByte[size_t(c.index)] = true;
        ++m_readyCount;
    }
    if (!c.keepAlive) {
        epoll_ctl(m_epoll, EPOLL_CTL_DEL, c.fd, nullptr);
        close(c.fd);
        c.fd = -1;
        if (end < m_measureToUs) {
            ++m_r.reconnects;
            open(c);
        }
        return;
    }
    if (end < m_measureToUs)
        startRequest(c);
}

void LoadRun::fail(Conn &c)
{
    ++m_r.errors;
    if (m_r.errors <= 3)
        std::fprintf(stderr, "sy-bench-load: connection %d broke (%s)\n", c.index, std::strerror(errno));
    c.busy = false;
    epoll_ctl(m_epoll, EPOLL_CTL_DEL, c.fd, nullptr);
    close(c.fd);
    c.fd = -1;
    if (nowUs() < m_measureToUs) {
        ++m_r.reconnects;
        open(c);
    }
}

LoadResult LoadRun::run()
{
    m_epoll = epoll_create1(EPOLL_CLOEXEC);
    const int64_t t0 = nowUs();
    m_measureFromUs = t0 + int64_t(m_o.warmupS * 1e6);
    m_measureToUs = m_measureFromUs + int64_t(m_o.durationS * 1e6);
    const int64_t hardStopUs = m_measureToUs + int64_t(m_o.graceS * 1e6);
    m_gotFirstByte.assign(size_t(m_o.concurrency), false);
    bool readyWritten = m_o.readyFile.empty();

    for (int i = 0; i < m_o.concurrency; ++i) {
        auto c = std::make_unique<Conn>();
        c->index = i;
        std::string h = "POST " + m_o.path + " HTTP/1.1\r\nhost: 127.0.0.1:" + std::to_string(m_o.port) +
                        "\r\ncontent-type: application/json\r\nauthorization: Bearer bench-client-key\r\n";
        if (m_o.eventStream)
            h += "accept: text/event-stream\r\noriginator: codex_cli_rs\r\nuser-agent: codex_cli_rs/0.171.0 "
                 "(Debian 12; x86_64) bench\r\nversion: 0.171.0\r\n";
        else
            h += "accept: application/json\r\nuser-agent: bench-openai-client/1.0\r\n";
        h += "session-id: " + m_o.sessionPrefix + "-" + std::to_string(i) + "\r\ncontent-length: " +
             std::to_string(m_o.body.size()) + "\r\n\r\n";
        c->head = std::move(h);
        m_conns.push_back(std::move(c));
        open(*m_conns.back());
    }

    std::vector<epoll_event> events(1024);
    for (;;) {
        const int64_t now = nowUs();
        bool anyBusy = false;
        for (const auto &c : m_conns)
            anyBusy = anyBusy || c->busy || c->connecting;
        if ((now >= m_measureToUs && !anyBusy) || now >= hardStopUs)
            break;
        if (!readyWritten) {
            int firstBytes = m_readyCount;
            for (const auto &c : m_conns)
                firstBytes += (c->busy && c->sawFirstByte && !m_gotFirstByte[size_t(c->index)]) ? 1 : 0;
            if (firstBytes >= m_o.concurrency) {
                if (FILE *f = std::fopen(m_o.readyFile.c_str(), "w"))
                    std::fclose(f);
                readyWritten = true;
            }
        }
        const int n = epoll_wait(m_epoll, events.data(), int(events.size()), 20);
        for (int i = 0; i < n; ++i) {
            Conn &c = *m_conns[events[size_t(i)].data.u32];
            if (c.fd < 0)
                continue;
            const uint32_t e = events[size_t(i)].events;
            if (c.connecting) {
                int err = 0;
                socklen_t len = sizeof err;
                getsockopt(c.fd, SOL_SOCKET, SO_ERROR, &err, &len);
                if (err != 0 || (e & (EPOLLERR | EPOLLHUP))) {
                    c.connecting = false;
                    errno = err;
                    fail(c);
                    continue;
                }
                if (!(e & EPOLLOUT))
                    continue;
                c.connecting = false;
                if (nowUs() < m_measureToUs)
                    startRequest(c);
                else
                    watch(c, false);
                continue;
            }
            if ((e & EPOLLOUT) && c.busy && c.sent < c.head.size() + m_o.body.size())
                send(c);
            if (c.fd >= 0 && (e & (EPOLLIN | EPOLLHUP | EPOLLERR)))
                onReadable(c);
        }
    }
    for (const auto &c : m_conns) {
        if (c->busy)
            ++m_r.errors; // still unfinished after the grace period
    }
    m_r.seconds = m_o.durationS;
    return std::move(m_r);
}

} // namespace sy::bench
