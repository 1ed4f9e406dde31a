#pragma once

#include "UpstreamContent.h"

#include <http_parser.h>

#include <cstdint>
#include <memory>
#include <queue>
#include <string>
#include <vector>

namespace sy::bench {

// A single-threaded epoll HTTP/1.1 server that answers like the ChatGPT Codex backend, fast enough that the
// proxy in front of it is what a benchmark measures. Keep-alive, chunked SSE, no TLS.
class BenchUpstream
{
public:
    bool listen(uint16_t port, std::string *error);
    uint16_t port() const { return m_port; }
    // Runs until stop() is called from a signal handler.
    void run();
    static void stop();
    uint64_t servedTurns() const { return m_served; }

private:
    enum class Answer { None, Stream, Chat };
    struct Conn
    {
        int fd = -1;
        uint64_t gen = 0;
        http_parser parser{};
        std::string url;
        int64_t bodyBytes = 0;
        bool requestComplete = false;
        bool keepAlive = true;
        std::string in; // bytes not parsed yet while an answer is in progress
        std::string out;
        size_t outOff = 0;
        bool watchingWrite = false;
        Answer answer = Answer::None;
        std::unique_ptr<TurnContent> content;
        int nextDelta = 0;
        int64_t dueUs = 0; // when the current answer's last step was due
        bool closeWhenFlushed = false;
    };
    struct Timer
    {
        int64_t dueUs;
        int fd;
        uint64_t gen;
        bool operator>(const Timer &o) const { return dueUs > o.dueUs; }
    };

    static int onUrl(http_parser *p, const char *at, size_t len);
    static int onBody(http_parser *p, const char *at, size_t len);
    static int onMessageComplete(http_parser *p);

    void accept();
    void onReadable(Conn &c);
    void parse(Conn &c);
    void handleRequest(Conn &c);
    void step(Conn &c);
    void finishAnswer(Conn &c);
    // False when the connection was closed (c is gone then).
    bool flush(Conn &c);
    void closeConn(Conn &c);
    void schedule(Conn &c, int delayMs);
    void fireTimers();
    void armTimer();

    int m_epoll = -1;
    int m_listen = -1;
    int m_timerFd = -1;
    int64_t m_armedUs = -1;
    uint16_t m_port = 0;
    std::vector<std::unique_ptr<Conn>> m_conns; // by fd
    std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> m_timers;
    http_parser_settings m_settings{};
    StreamProfile m_profile;
    uint64_t m_serial = 0;
    uint64_t m_gen = 0;
    uint64_t m_served = 0;
};

} // namespace sy::bench
