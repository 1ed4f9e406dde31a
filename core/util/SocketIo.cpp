#include "util/SocketIo.h"

#ifndef Q_OS_WIN
#include <cerrno>
#include <sys/socket.h>
#include <sys/uio.h>
#endif

namespace sy {

#ifdef Q_OS_WIN
qint64 sendNow(qintptr, const char *, qsizetype)
{
    return -1;
}

qint64 sendBoth(qintptr, QByteArrayView, QByteArrayView)
{
    return -1;
}

qint64 receiveNow(qintptr, char *, qsizetype)
{
    return -1;
}
#else
namespace {

// A send's result: bytes the kernel took, 0 when its buffer is full, -1 when the connection is broken.
template <typename Send> qint64 sendRetrying(Send send)
{
    for (;;) {
        const ssize_t n = send();
        if (n >= 0)
            return qint64(n);
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        return -1;
    }
}

#ifdef MSG_NOSIGNAL
constexpr int kSendFlags = MSG_NOSIGNAL | MSG_DONTWAIT;
#else
constexpr int kSendFlags = MSG_DONTWAIT;
#endif

} // namespace

qint64 sendNow(qintptr fd, const char *data, qsizetype size)
{
    return sendRetrying([&] { return ::send(int(fd), data, size_t(size), kSendFlags); });
}

qint64 sendBoth(qintptr fd, QByteArrayView first, QByteArrayView second)
{
    iovec parts[2] = {{const_cast<char *>(first.data()), size_t(first.size())},
                      {const_cast<char *>(second.data()), size_t(second.size())}};
    msghdr message{};
    message.msg_iov = parts;
    message.msg_iovlen = second.isEmpty() ? 1 : 2;
    return sendRetrying([&] { return ::sendmsg(int(fd), &message, kSendFlags); });
}

qint64 receiveNow(qintptr fd, char *data, qsizetype size)
{
    for (;;) {
        const ssize_t n = ::recv(int(fd), data, size_t(size), MSG_DONTWAIT);
        if (n > 0)
            return qint64(n);
        if (n == 0)
            return -1; // end of stream: left for Qt, whose next read sees it too
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK)
            return 0;
        return -1;
    }
}
#endif

} // namespace sy
