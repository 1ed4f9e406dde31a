#pragma once

#include <http_parser.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace sy::bench {

struct LoadOptions
{
    uint16_t port = 0;
    std::string path;
    int concurrency = 1;
    double warmupS = 1;
    double durationS = 10;
    double graceS = 60;         // how long requests still in flight at the end may take to finish
    std::string body;
    bool eventStream = true;    // Accept: text/event-stream and Codex-like headers
    std::string marker;         // a response counts as good only if its body contains this
    std::string sessionPrefix;  // session-id is PREFIX-<connection>
    std::string readyFile;      // written once every connection has received a first body byte
};

struct LoadResult
{
    int64_t completed = 0;      // good responses that started and finished inside the window (the samples)
    int64_t finishedInWindow = 0; // good responses that finished inside the window, whenever they started
    int64_t total = 0;          // good responses over the whole run, warm-up and grace included
    int64_t errors = 0;         // bad status, missing marker, broken connection
    int64_t reconnects = 0;
    double seconds = 0;
    std::vector<int64_t> ttfbUs; // request start -> first body byte
    std::vector<int64_t> ttlbUs; // request start -> last body byte
};

// Closed-loop load: `concurrency` keep-alive connections, each sending its next request as soon as the
// previous answer ended. Requests that start during the warm-up are not measured; after the window no new
// request starts and the ones in flight finish (unmeasured) so the target is quiet for the next scenario.
class LoadRun
{
public:
    explicit LoadRun(LoadOptions options);
    ~LoadRun();
    LoadResult run();

private:
    struct Conn
    {
        int fd = -1;
        int index = 0;
        bool connecting = false;
        bool busy = false;
        std::string head;
        size_t sent = 0;
        int64_t startUs = 0;
        int64_t firstByteUs = 0;
        bool sawFirstByte = false;
        http_parser parser{};
        int status = 0;
        bool sawMarker = false;
        bool complete = false;
        bool keepAlive = true;
        std::string tail; // the last bytes of body seen, to find a marker split across reads
    };

    static int onStatus(http_parser *p, const char *, size_t);
    static int onBody(http_parser *p, const char *at, size_t len);
    static int onMessageComplete(http_parser *p);

    void open(Conn &c);
    void startRequest(Conn &c);
    void send(Conn &c);
    void onReadable(Conn &c);
    void finishRequest(Conn &c);
    void fail(Conn &c);
    void watch(Conn &c, bool writable);
    bool measuring(int64_t startUs) const;

    LoadOptions m_o;
    LoadResult m_r;
    int m_epoll = -1;
    std::vector<std::unique_ptr<Conn>> m_conns;
    http_parser_settings m_settings{};
    int64_t m_measureFromUs = 0;
    int64_t m_measureToUs = 0;
    int m_readyCount = 0;
    std::vector<bool> m_gotFirstByte;
};

} // namespace sy::bench
