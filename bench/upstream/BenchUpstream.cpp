#include "BenchUpstream.h"

#include "BenchNet.h"

#include <cerrno>
#include <csignal>
#include <cstring>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

namespace sy::bench {

namespace {

volatile std::sig_atomic_t g_stop = 0;

bool endsWith(const std::string &s, const char *suffix)
{
    const size_t n = std::strlen(suffix);
    return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

} // namespace

void BenchUpstream::stop()
{
    g_stop = 1;
}

bool BenchUpstream::listen(uint16_t port, std::string *error)
{
    m_listen = listenLoopback(port, &m_port, error);
    if (m_listen < 0)
        return false;
    m_epoll = epoll_create1(EPOLL_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.fd = m_listen;
    epoll_ctl(m_epoll, EPOLL_CTL_ADD, m_listen, &ev);
    // A timerfd armed to the next due event paces the deltas to the microsecond, where an epoll timeout in
    // whole milliseconds would add up to 1 ms of slack to every pause.
    m_timerFd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    ev.data.fd = m_timerFd;
    epoll_ctl(m_epoll, EPOLL_CTL_ADD, m_timerFd, &ev);
    m_settings.on_url = &BenchUpstream::onUrl;
    m_settings.on_body = &BenchUpstream::onBody;
    m_settings.on_message_complete = &BenchUpstream::onMessageComplete;
    return true;
}

int BenchUpstream::onUrl(http_parser *p, const char *at, size_t len)
{
    static_cast<Conn *>(p->data)->url.append(at, len);
    return 0;
}

int BenchUpstream::onBody(http_parser *p, const char *, size_t len)
{
    static_cast<Conn *>(p->data)->bodyBytes += int64_t(len);
    return 0;
}

int BenchUpstream::onMessageComplete(http_parser *p)
{
    auto *c = static_cast<Conn *>(p->data);
    c->requestComplete = true;
    c->keepAlive = http_should_keep_alive(p) != 0;
    // One request at a time per connection: the rest of the input waits until the answer is out.
    http_parser_pause(p, 1);
    return 0;
}

void BenchUpstream::run()
{
    std::vector<epoll_event> events(512);
    while (!g_stop) {
        fireTimers();
        armTimer();
        const int n = epoll_wait(m_epoll, events.data(), int(events.size()), 500);
        if (n < 0 && errno != EINTR)
            break;
        for (int i = 0; i < n; ++i) {
            const int fd = events[size_t(i)].data.fd;
            if (fd == m_listen) {
                accept();
                continue;
            }
            if (fd == m_timerFd) {
                uint64_t expirations = 0;
                (void)!read(m_timerFd, &expirations, sizeof expirations);
                continue;
            }
            if (size_t(fd) >= m_conns.size() || !m_conns[size_t(fd)])
                continue;
            Conn &c = *m_conns[size_t(fd)];
            const uint32_t e = events[size_t(i)].events;
            if (e & (EPOLLERR | EPOLLHUP)) {
                closeConn(c);
                continue;
            }
            if ((e & EPOLLOUT) && !flush(c))
                continue;
            if (e & EPOLLIN)
                onReadable(c);
        }
    }
}

void BenchUpstream::accept()
{
    for (;;) {
        const int fd = accept4(m_listen, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        setNoDelay(fd);
        if (m_conns.size() <= size_t(fd))
            m_conns.resize(size_t(fd) + 1);
        auto c = std::make_unique<Conn>();
        c->fd = fd;
        c->gen = ++m_gen;
        http_parser_init(&c->parser, HTTP_REQUEST);
        c->parser.data = c.get();
        m_conns[size_t(fd)] = std::move(c);
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.fd = fd;
        epoll_ctl(m_epoll, EPOLL_CTL_ADD, fd, &ev);
    }
}

void BenchUpstream::onReadable(Conn &c)
{
    char buf[65536];
    for (;;) {
        const ssize_t n = read(c.fd, buf, sizeof buf);
        if (n == 0) {
            closeConn(c);
            return;
        }
        if (n < 0) {
            if (errno != EAGAIN && errno != EINTR)
                closeConn(c);
            break;
        }
        c.in.append(buf, size_t(n));
        const int fd = c.fd;
        if (c.answer == Answer::None)
            parse(c);
        if (m_conns[size_t(fd)].get() != &c || size_t(n) < sizeof buf)
            break;
    }
}

void BenchUpstream::parse(Conn &c)
{
    while (!c.in.empty() && c.answer == Answer::None && !c.closeWhenFlushed) {
        const size_t used = http_parser_execute(&c.parser, &m_settings, c.in.data(), c.in.size());
        const http_errno err = HTTP_PARSER_ERRNO(&c.parser);
        if (err != HPE_OK && err != HPE_PAUSED) {
            closeConn(c);
            return;
        }
        c.in.erase(0, used);
        if (!c.requestComplete)
            return;
        c.requestComplete = false;
        http_parser_pause(&c.parser, 0);
        const int fd = c.fd;
        handleRequest(c);
        if (m_conns[size_t(fd)].get() != &c)
            return;
    }
}

void BenchUpstream::handleRequest(Conn &c)
{
    const size_t q = c.url.find('?');
    const std::string path = c.url.substr(0, q);
    const std::string query = q == std::string::npos ? std::string() : c.url.substr(q + 1);
    const bool post = c.parser.method == HTTP_POST;
    const int64_t bodyBytes = c.bodyBytes;
    c.url.clear();
    c.bodyBytes = 0;
    if (!c.keepAlive)
        c.closeWhenFlushed = true;

    c.dueUs = nowUs();
    if (post && endsWith(path, "/codex/responses")) {
        ++m_served;
        c.answer = Answer::Stream;
        c.content = std::make_unique<TurnContent>(++m_serial, m_profile, bodyBytes);
        c.nextDelta = 0;
        c.out += streamHead(m_serial);
        if (m_profile.firstMs > 0) {
            // Head and first event leave together, so "first byte" means the same for every target.
            schedule(c, m_profile.firstMs);
            return;
        }
        step(c);
        return;
    }
    if (post && path == "/v1/chat/completions") {
        ++m_served;
        c.answer = Answer::Chat;
        c.content = std::make_unique<TurnContent>(++m_serial, m_profile, bodyBytes);
        // Due when a streamed answer sends its last delta: both shapes of the answer take equally long.
        schedule(c, m_profile.firstMs + (m_profile.events - 1) * m_profile.delayMs);
        return;
    }
    std::string body;
    int status = 200;
    if (endsWith(path, "/wham/usage"))
        body = usageJson();
    else if (path == "/bench/profile" && (query.empty() || applyProfileQuery(query, &m_profile)))
        body = profileJson(m_profile);
    else if (path == "/bench/profile")
        status = 400, body = "{\"error\":\"bad profile\"}";
    else if (path == "/health")
        body = "{\"status\":\"ok\"}";
    else
        status = 404, body = "{\"error\":\"not found\"}";
    c.out += jsonResponse(status, body, c.keepAlive);
    flush(c);
}

void BenchUpstream::step(Conn &c)
{
    if (c.answer == Answer::Chat) {
        c.out += jsonResponse(200, c.content->chatCompletionJson(), c.keepAlive);
        finishAnswer(c);
        return;
    }
    const TurnContent &t = *c.content;
    const int events = m_profile.events;
    if (c.nextDelta == 0) {
        const std::string opening = t.openingFrames();
        appendChunk(c.out, opening.data(), opening.size());
    }
    // Without a delay every delta goes at once; otherwise one delta per tick.
    do {
        const std::string delta = t.deltaFrame(c.nextDelta++);
        appendChunk(c.out, delta.data(), delta.size());
    } while (m_profile.delayMs == 0 && c.nextDelta < events);
    if (c.nextDelta < events) {
        if (flush(c))
            schedule(c, m_profile.delayMs);
        return;
    }
    const std::string closing = t.closingFrames();
    appendChunk(c.out, closing.data(), closing.size());
    c.out += "0\r\n\r\n";
    finishAnswer(c);
}

void BenchUpstream::finishAnswer(Conn &c)
{
    c.answer = Answer::None;
    c.content.reset();
    if (flush(c))
        parse(c); // a request that arrived while we were answering
}

bool BenchUpstream::flush(Conn &c)
{
    while (c.outOff < c.out.size()) {
        const ssize_t n = write(c.fd, c.out.data() + c.outOff, c.out.size() - c.outOff);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            if (errno != EAGAIN) {
                closeConn(c);
                return false;
            }
            break;
        }
        c.outOff += size_t(n);
    }
    const bool pending = c.outOff < c.out.size();
    if (!pending) {
        c.out.clear();
        c.outOff = 0;
        if (c.closeWhenFlushed && c.answer == Answer::None) {
            closeConn(c);
            return false;
        }
    }
    if (pending != c.watchingWrite) {
        c.watchingWrite = pending;
        epoll_event ev{};
        ev.events = EPOLLIN | (pending ? EPOLLOUT : 0u);
        ev.data.fd = c.fd;
        epoll_ctl(m_epoll, EPOLL_CTL_MOD, c.fd, &ev);
    }
    return true;
}

void BenchUpstream::closeConn(Conn &c)
{
    const int fd = c.fd;
    epoll_ctl(m_epoll, EPOLL_CTL_DEL, fd, nullptr);
    close(fd);
    m_conns[size_t(fd)].reset();
}

void BenchUpstream::schedule(Conn &c, int delayMs)
{
    // Due times follow the answer's own timeline, not the moment the previous step ran: scheduling jitter on a
    // busy machine then cannot pile up over 50 ticks and make one target's answers longer than another's.
    c.dueUs += int64_t(delayMs) * 1000;
    m_timers.push({c.dueUs, c.fd, c.gen});
}

void BenchUpstream::fireTimers()
{
    const int64_t now = nowUs();
    while (!m_timers.empty() && m_timers.top().dueUs <= now) {
        const Timer t = m_timers.top();
        m_timers.pop();
        if (size_t(t.fd) >= m_conns.size() || !m_conns[size_t(t.fd)] || m_conns[size_t(t.fd)]->gen != t.gen)
            continue; // the connection went away meanwhile
        Conn &c = *m_conns[size_t(t.fd)];
        if (c.answer != Answer::None)
            step(c);
    }
}

void BenchUpstream::armTimer()
{
    const int64_t due = m_timers.empty() ? 0 : m_timers.top().dueUs;
    if (due == m_armedUs)
        return;
    m_armedUs = due;
    itimerspec spec{};
    if (due > 0) {
        spec.it_value.tv_sec = due / 1000000;
        spec.it_value.tv_nsec = long(due % 1000000) * 1000;
    }
    timerfd_settime(m_timerFd, TFD_TIMER_ABSTIME, &spec, nullptr);
}

} // namespace sy::bench
