#include "ColdStart.h"

#include "BenchNet.h"

#include <http_parser.h>

#include <arpa/inet.h>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <netinet/in.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace sy::bench {

namespace {

struct Answer
{
    int status = 0;
    bool complete = false;
    std::string body;
};

int onStatus(http_parser *p, const char *, size_t)
{
    static_cast<Answer *>(p->data)->status = int(p->status_code);
    return 0;
}

int onBody(http_parser *p, const char *at, size_t len)
{
    static_cast<Answer *>(p->data)->body.append(at, len);
    return 0;
}

int onComplete(http_parser *p)
{
    static_cast<Answer *>(p->data)->complete = true;
    return 0;
}

// One blocking request; true when it was answered 200 with the marker in the body.
bool tryOnce(const ColdStartOptions &o)
{
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return false;
    setNoDelay(fd);
    timeval tv{10, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(o.port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0) {
        close(fd);
        return false;
    }
    const std::string request = "POST " + o.path + " HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                                "accept: text/event-stream\r\nsession-id: cold-start\r\nconnection: close\r\n"
                                "content-length: " + std::to_string(o.body.size()) + "\r\n\r\n" + o.body;
    size_t sent = 0;
    while (sent < request.size()) {
        const ssize_t n = write(fd, request.data() + sent, request.size() - sent);
        if (n <= 0) {
            close(fd);
            return false;
        }
        sent += size_t(n);
    }
    http_parser_settings settings{};
    settings.on_status = onStatus;
    settings.on_body = onBody;
    settings.on_message_complete = onComplete;
    http_parser parser{};
    http_parser_init(&parser, HTTP_RESPONSE);
    Answer answer;
    parser.data = &answer;
    char buf[16384];
    while (!answer.complete) {
        const ssize_t n = read(fd, buf, sizeof buf);
        if (n <= 0)
            break;
        http_parser_execute(&parser, &settings, buf, size_t(n));
        if (HTTP_PARSER_ERRNO(&parser) != HPE_OK)
            break;
    }
    close(fd);
    return answer.complete && answer.status == 200 && answer.body.find(o.marker) != std::string::npos;
}

} // namespace

std::vector<double> measureColdStart(const ColdStartOptions &o)
{
    std::vector<double> times;
    std::vector<char *> argv;
    for (const std::string &arg : o.command)
        argv.push_back(const_cast<char *>(arg.c_str()));
    argv.push_back(nullptr);
    for (int i = 0; i < o.repeat; ++i) {
        if (tryOnce(o)) {
            std::fprintf(stderr, "sy-bench-load: something already answers on port %u\n", unsigned(o.port));
            return {};
        }
        posix_spawn_file_actions_t actions;
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, 1, o.logFile.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        posix_spawn_file_actions_addopen(&actions, 2, o.logFile.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        const int64_t t0 = nowUs();
        pid_t pid = 0;
        const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
        posix_spawn_file_actions_destroy(&actions);
        if (rc != 0) {
            std::fprintf(stderr, "sy-bench-load: cannot start %s: %s\n", argv[0], std::strerror(rc));
            return {};
        }
        bool served = false;
        int64_t t1 = 0;
        while (nowUs() - t0 < int64_t(o.timeoutS * 1e6)) {
            if (tryOnce(o)) {
                t1 = nowUs();
                served = true;
                break;
            }
            int status = 0;
            if (waitpid(pid, &status, WNOHANG) == pid) {
                std::fprintf(stderr, "sy-bench-load: the server exited before serving (see %s)\n", o.logFile.c_str());
                return {};
            }
            usleep(1000);
        }
        kill(pid, SIGTERM);
        int status = 0;
        waitpid(pid, &status, 0);
        if (!served) {
            std::fprintf(stderr, "sy-bench-load: no good answer within %.0f s (see %s)\n", o.timeoutS,
                         o.logFile.c_str());
            return {};
        }
        times.push_back(double(t1 - t0) / 1000.0);
    }
    return times;
}

} // namespace sy::bench
