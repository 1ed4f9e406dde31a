#include "upstream/DirectTcpSocket.h"

#include "util/EpollEventDispatcher.h"
#include "util/SocketIo.h"

#include <QEvent>
#include <QHostInfo>
#include <QSocketNotifier>
#include <QTimer>
#include <cstring>
#include <memory>

#ifndef Q_OS_WIN
#include <cerrno>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>
#endif

namespace sy {

namespace {

// Each readiness reads at most this much; what is left is reported again by the next wait.
constexpr qsizetype kReceiveBytes = 16 * 1024;
// A connection's buffer keeps its capacity once it is read empty, unless a burst made it larger than this.
constexpr qsizetype kKeptCapacity = 4 * 1024;

#ifndef Q_OS_WIN
QString systemError(int error)
{
    return QString::fromLocal8Bit(std::strerror(error));
}
#endif

} // namespace

// A descriptor's readiness handed straight to its DirectTcpSocket: no activated() signal, whose emission (with
// the check for its deprecated overload's receivers) cost more than the call it leads to.
class DirectTcpSocket::Notifier : public QSocketNotifier
{
public:
    Notifier(qintptr fd, Type type, DirectTcpSocket *owner, void (DirectTcpSocket::*handler)())
        : QSocketNotifier(fd, type, owner), m_owner(owner), m_handler(handler)
    {
    }

protected:
    bool event(QEvent *e) override
    {
        if (e->type() == QEvent::SockAct || e->type() == QEvent::SockClose) {
            (m_owner->*m_handler)(); // may delete this notifier: nothing of it is touched after
            return true;
        }
        return QSocketNotifier::event(e);
    }

private:
    DirectTcpSocket *m_owner;
    void (DirectTcpSocket::*m_handler)();
};

DirectTcpSocket::DirectTcpSocket(qint64 readLimit, QObject *parent)
    : QObject(parent), m_readLimit(qMax<qint64>(readLimit, kReceiveBytes))
{
}

DirectTcpSocket::~DirectTcpSocket()
{
    abort();
}

void DirectTcpSocket::connectToHost(const QString &host, quint16 port)
{
    QHostAddress literal;
    if (literal.setAddress(host)) {
        connectToAddresses({literal}, port);
        return;
    }
    m_port = port;
    m_lookupId = QHostInfo::lookupHost(host, this, &DirectTcpSocket::onLookedUp);
}

void DirectTcpSocket::connectToAddresses(const QList<QHostAddress> &addresses, quint16 port)
{
    m_port = port;
    m_addresses = addresses;
    // connected() or closed() never comes from inside this call, as with QTcpSocket.
    QMetaObject::invokeMethod(this, &DirectTcpSocket::connectNext, Qt::QueuedConnection);
}

void DirectTcpSocket::onLookedUp(const QHostInfo &info)
{
    m_lookupId = -1;
    if (m_closed)
        return;
    if (info.error() != QHostInfo::NoError || info.addresses().isEmpty()) {
        fail(info.error() == QHostInfo::NoError ? QStringLiteral("Host not found") : info.errorString());
        return;
    }
    m_addresses = info.addresses();
    connectNext();
}

#ifdef Q_OS_WIN
void DirectTcpSocket::connectNext()
{
    fail(QStringLiteral("direct sockets are not available on this system"));
}
void DirectTcpSocket::onWritable() {}
void DirectTcpSocket::onReadable() {}
void DirectTcpSocket::flushPending() {}
qint64 DirectTcpSocket::write(QByteArrayView, const QByteArray &)
{
    return 0;
}
qint64 DirectTcpSocket::append(const QByteArray &)
{
    return 0;
}
void DirectTcpSocket::closeDescriptor() {}
#else

// The next address of the host: a descriptor, a non-blocking connect, and the write readiness that tells how
// it went. An address that refuses gives way to the next one; the last one's error is the connection's.
void DirectTcpSocket::connectNext()
{
    if (m_closed)
        return;
    closeDescriptor();
    if (m_addresses.isEmpty()) {
        fail(m_error.isEmpty() ? QStringLiteral("Host not found") : m_error);
        return;
    }
    const QHostAddress address = m_addresses.takeFirst();
    sockaddr_storage storage{};
    socklen_t length = 0;
    if (address.protocol() == QAbstractSocket::IPv4Protocol) {
        auto *in = reinterpret_cast<sockaddr_in *>(&storage);
        in->sin_family = AF_INET;
        in->sin_port = htons(m_port);
        in->sin_addr.s_addr = htonl(address.toIPv4Address());
        length = sizeof(sockaddr_in);
    } else {
        auto *in6 = reinterpret_cast<sockaddr_in6 *>(&storage);
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons(m_port);
        const Q_IPV6ADDR bytes = address.toIPv6Address();
        std::memcpy(in6->sin6_addr.s6_addr, bytes.c, sizeof bytes.c);
        // A scope is a number or an interface name (fe80::1%eth0).
        const QString scope = address.scopeId();
        bool numeric = false;
        in6->sin6_scope_id = scope.toUInt(&numeric);
        if (!numeric && !scope.isEmpty())
            in6->sin6_scope_id = ::if_nametoindex(scope.toLocal8Bit().constData());
        length = sizeof(sockaddr_in6);
    }
    m_fd = ::socket(storage.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (m_fd < 0) {
        m_error = systemError(errno);
        connectNext();
        return;
    }
    // A request goes out in one write; don't let Nagle hold back its tail.
    const int one = 1;
    ::setsockopt(m_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int result;
    do {
        result = ::connect(m_fd, reinterpret_cast<const sockaddr *>(&storage), length);
    } while (result < 0 && errno == EINTR);
    if (result < 0 && errno != EINPROGRESS) {
        m_error = systemError(errno);
        // The next address, from the loop: a refusal is reported like any other, never synchronously.
        QMetaObject::invokeMethod(this, &DirectTcpSocket::connectNext, Qt::QueuedConnection);
        return;
    }
    m_writeNotifier = new Notifier(m_fd, QSocketNotifier::Write, this, &DirectTcpSocket::onWritable);
    // An address that never answers gives way to the next one after a while, as with QTcpSocket; the last
    // one is left to the caller's own connect budget.
    if (!m_addresses.isEmpty()) {
        if (!m_attemptTimer) {
            m_attemptTimer = new QTimer(this);
            m_attemptTimer->setSingleShot(true);
            connect(m_attemptTimer, &QTimer::timeout, this, [this] {
                if (m_connected || m_closed)
                    return;
                m_error = QStringLiteral("Connection timed out");
                connectNext();
            });
        }
        m_attemptTimer->start(m_attemptTimeoutMs);
    }
}

void DirectTcpSocket::onWritable()
{
    if (m_closed || m_fd < 0)
        return;
    if (!m_connected) {
        int error = 0;
        socklen_t length = sizeof error;
        if (::getsockopt(m_fd, SOL_SOCKET, SO_ERROR, &error, &length) < 0)
            error = errno;
        if (error != 0) {
            m_error = systemError(error);
            connectNext();
            return;
        }
        m_connected = true;
        if (m_attemptTimer)
            m_attemptTimer->stop();
        m_addresses.clear();
        m_error.clear();
        m_writeNotifier->setEnabled(false);
        m_readNotifier = new Notifier(m_fd, QSocketNotifier::Read, this, &DirectTcpSocket::onReadable);
        emit connected();
        return;
    }
    flushPending();
}

qint64 DirectTcpSocket::write(QByteArrayView head, const QByteArray &body)
{
    if (!isConnected())
        return 0;
    qint64 sent = 0;
    if (bytesToWrite() == 0) {
        sent = sendBoth(m_fd, head, body);
        if (sent < 0) {
            // Reported from the loop, as a failed write of QTcpSocket is.
            const QString error = systemError(errno);
            QMetaObject::invokeMethod(
                this, [this, error] { fail(error); }, Qt::QueuedConnection);
            return 0;
        }
    }
    if (sent < head.size())
        m_pendingHead.append(head.data() + sent, head.size() - sent);
    if (sent < head.size() + body.size()) {
        m_pendingBody = body;
        m_pendingBodyPos = qMax<qint64>(0, sent - head.size());
        m_writeNotifier->setEnabled(true);
    }
    return sent;
}

qint64 DirectTcpSocket::append(const QByteArray &bytes)
{
    if (!isConnected())
        return 0;
    if (bytesToWrite() > 0) {
        m_pendingTail.append(bytes); // after what is still waiting
        return 0;
    }
    return write(bytes, QByteArray());
}

void DirectTcpSocket::flushPending()
{
    if (m_pendingHead.isEmpty() && m_pendingBodyPos >= m_pendingBody.size() && !m_pendingTail.isEmpty()) {
        // The head and the body are out: what append() queued behind them goes next, as a head of its own.
        m_pendingHead = std::exchange(m_pendingTail, QByteArray());
        m_pendingBody = QByteArray();
        m_pendingBodyPos = 0;
    }
    if (bytesToWrite() == 0) {
        m_writeNotifier->setEnabled(false);
        return;
    }
    const QByteArrayView body = QByteArrayView(m_pendingBody).sliced(m_pendingBodyPos);
    const qint64 sent = sendBoth(m_fd, m_pendingHead.isEmpty() ? body : QByteArrayView(m_pendingHead),
                                 m_pendingHead.isEmpty() ? QByteArrayView() : body);
    if (sent < 0) {
        fail(systemError(errno));
        return;
    }
    if (sent == 0)
        return;
    qint64 rest = sent;
    if (!m_pendingHead.isEmpty()) {
        const qint64 fromHead = qMin<qint64>(rest, m_pendingHead.size());
        m_pendingHead.remove(0, fromHead);
        rest -= fromHead;
    }
    m_pendingBodyPos += rest;
    if (bytesToWrite() == 0) {
        m_pendingBody = QByteArray();
        m_pendingBodyPos = 0;
        m_writeNotifier->setEnabled(false);
    }
    emit bytesWritten(sent);
}

void DirectTcpSocket::onReadable()
{
    if (m_closed || m_fd < 0)
        return;
    if (bytesAvailable() >= m_readLimit) {
        // Full: the reader takes from the buffer first, and read() watches the descriptor again.
        m_readNotifier->setEnabled(false);
        return;
    }
    // Received into one scratch buffer per thread and then appended: an event is a few hundred bytes, and 256
    // open streams each holding a 16 KiB buffer for them would cost 4 MiB.
    thread_local std::unique_ptr<char[]> scratch;
    if (!scratch)
        scratch.reset(new char[size_t(kReceiveBytes)]);
    ssize_t n;
    do {
        n = ::recv(m_fd, scratch.get(), size_t(kReceiveBytes), MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n > 0) {
        m_in.append(scratch.get(), qsizetype(n));
        if (m_reader)
            m_reader->directSocketReadable();
        else
            emit readyRead();
        return;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return;
    m_peerClosed = true;
    fail(n == 0 ? QStringLiteral("connection closed") : systemError(errno));
}

void DirectTcpSocket::closeDescriptor()
{
    if (m_attemptTimer)
        m_attemptTimer->stop();
    delete m_readNotifier;
    m_readNotifier = nullptr;
    delete m_writeNotifier;
    m_writeNotifier = nullptr;
    if (m_fd >= 0) {
        EpollEventDispatcher::setSocketPriority(m_fd, false); // the number's next socket starts unmarked
        ::close(m_fd);
    }
    m_fd = -1;
}
#endif

qint64 DirectTcpSocket::bytesToWrite() const
{
    return m_pendingHead.size() + (m_pendingBody.size() - m_pendingBodyPos) + m_pendingTail.size();
}

QByteArray DirectTcpSocket::read(qint64 maxBytes)
{
    const QByteArray out = peek(maxBytes).toByteArray();
    skip(out.size());
    return out;
}

void DirectTcpSocket::skip(qint64 n)
{
    n = qMin(n, bytesAvailable());
    if (n <= 0)
        return;
    m_inPos += n;
    if (m_inPos == m_in.size()) {
        if (m_in.capacity() > kKeptCapacity)
            m_in = QByteArray();
        else
            m_in.resize(0); // keeps the capacity
        m_inPos = 0;
    } else if (m_inPos >= m_in.size() / 2) {
        // Moved down by hand: QByteArray::remove() would keep the space in front and soon reallocate.
        const qsizetype rest = m_in.size() - m_inPos;
        std::memmove(m_in.data(), m_in.constData() + m_inPos, size_t(rest));
        m_in.resize(rest);
        m_inPos = 0;
    }
    if (m_readNotifier && !m_peerClosed && !m_closed && !m_readNotifier->isEnabled() && bytesAvailable() < m_readLimit)
        m_readNotifier->setEnabled(true);
}

void DirectTcpSocket::fail(const QString &error)
{
    if (m_closed)
        return;
    m_closed = true;
    m_error = error;
    // The received bytes stay readable; the descriptor is no use any more.
    closeDescriptor();
    emit closed();
}

void DirectTcpSocket::abort()
{
    if (m_lookupId >= 0)
        QHostInfo::abortHostLookup(m_lookupId);
    m_lookupId = -1;
    m_closed = true;
    closeDescriptor();
    m_pendingHead.clear();
    m_pendingBody = QByteArray();
    m_pendingTail.clear();
}

} // namespace sy
