#include "upstream/UpstreamConnection.h"

#include "upstream/DirectTcpSocket.h"
#include "upstream/UpstreamCall.h"
#include "util/EpollEventDispatcher.h"
#include "util/SocketIo.h"

#include <QNetworkProxyFactory>
#include <QSslSocket>
#include <QStringBuilder>
#include <QTcpSocket>
#include <atomic>

#ifdef Q_OS_UNIX
#include <cerrno>
#include <sys/socket.h>
#endif

namespace sy {

namespace {

std::atomic<quint64> g_nextConnectionId{1};

// SWITCHYARD_UPSTREAM_SOCKET=qt keeps plain direct connections on QTcpSocket too (A/B runs of that change).
bool directSocketsWanted()
{
    static const bool wanted =
        DirectTcpSocket::available() && qEnvironmentVariable("SWITCHYARD_UPSTREAM_SOCKET") != QLatin1String("qt");
    return wanted;
}

} // namespace

bool UpstreamEndpoint::usesTls(const QUrl &url)
{
    return url.scheme().compare(QLatin1String("https"), Qt::CaseInsensitive) == 0;
}

UpstreamEndpoint UpstreamEndpoint::fromUrl(const QUrl &url, const QNetworkProxy &proxy)
{
    UpstreamEndpoint out;
    out.tls = usesTls(url);
    out.host = url.host();
    out.port = quint16(url.port(out.tls ? 443 : 80));
    out.proxy = proxy;
    return out;
}

QString UpstreamEndpoint::key() const
{
    // Built in one piece: every call of a turn looks its pooled connection up by it, and a chain of arg() calls
    // (each a scan of the whole pattern and a new string) was 14,000 instructions of the proxy thread a turn.
    const bool remoteDns = proxy.capabilities().testFlag(QNetworkProxy::HostNameLookupCapability);
    return (tls ? QLatin1String("https://") : QLatin1String("http://")) % host % QLatin1Char(':') %
           QString::number(port) % QLatin1String(" via ") % QString::number(int(proxy.type())) % QLatin1Char(':') %
           proxy.hostName() % QLatin1Char(':') % QString::number(proxy.port()) % QLatin1Char(':') % proxy.user() %
           QLatin1Char(':') % QLatin1Char(remoteDns ? '1' : '0') % QLatin1String(" egress ") % egressName;
}

UpstreamConnection::UpstreamConnection(const UpstreamEndpoint &endpoint, const QSslConfiguration &tls,
                                       QObject *parent)
    : QObject(parent), m_endpoint(endpoint), m_key(endpoint.key()), m_tls(tls), m_id(g_nextConnectionId++)
{
}

UpstreamConnection::~UpstreamConnection()
{
    close();
}

void UpstreamConnection::open()
{
    if (m_socket || m_plain)
        return;
    const QNetworkProxy proxy = effectiveProxy();
    if (!m_endpoint.tls && m_direct && directSocketsWanted()) {
        // Plain TCP straight to the upstream: no TLS, no proxy engine, so nothing of QTcpSocket is needed.
        m_plain = new DirectTcpSocket(UpstreamCall::readBufferBytes, this);
        m_plain->setReader(this);
        connect(m_plain, &DirectTcpSocket::closed, this, &UpstreamConnection::onClosed);
        connect(m_plain, &DirectTcpSocket::connected, this, &UpstreamConnection::onOpened);
        connect(m_plain, &DirectTcpSocket::bytesWritten, this, &UpstreamConnection::onWritten);
        m_plain->connectToHost(m_endpoint.host, m_endpoint.port);
        return;
    }
    if (m_endpoint.tls) {
        m_ssl = new QSslSocket(this);
        m_socket = m_ssl;
    } else {
        m_socket = new QTcpSocket(this);
    }
    // Bounds what Qt reads ahead of the caller: while a call is paused nothing is read, so once this much is
    // buffered Qt stops reading the socket and TCP flow control pushes back on the upstream.
    m_socket->setReadBufferSize(UpstreamCall::readBufferBytes);
    m_socket->setProxy(proxy);
    connect(m_socket, &QIODevice::readyRead, this, &UpstreamConnection::onReadyRead);
    connect(m_socket, &QAbstractSocket::disconnected, this, &UpstreamConnection::onClosed);
    connect(m_socket, &QAbstractSocket::errorOccurred, this, &UpstreamConnection::onClosed);
    if (m_ssl) {
        QSslConfiguration config = m_tls;
        // Only HTTP/1.1 is spoken here; offering h2 could get a connection this client cannot use.
        config.setAllowedNextProtocols({QByteArray(QSslConfiguration::NextProtocolHttp1_1)});
        config.setPeerVerifyMode(QSslSocket::VerifyPeer);
        m_ssl->setSslConfiguration(config);
        connect(m_ssl, &QSslSocket::encrypted, this, &UpstreamConnection::onOpened);
        // For TLS, plaintext "bytesWritten" only means encrypted into Qt's buffer; the kernel has the bytes
        // once the encrypted ones are written.
        connect(m_ssl, &QSslSocket::encryptedBytesWritten, this, &UpstreamConnection::onWritten);
        // The host name is the SNI and the name the certificate must carry.
        m_ssl->connectToHostEncrypted(m_endpoint.host, m_endpoint.port);
    } else {
        connect(m_socket, &QAbstractSocket::connected, this, &UpstreamConnection::onOpened);
        connect(m_socket, &QAbstractSocket::bytesWritten, this, &UpstreamConnection::onWritten);
        m_socket->connectToHost(m_endpoint.host, m_endpoint.port);
    }
}

void UpstreamConnection::onReadyRead()
{
    if (m_reader)
        m_reader->upstreamReadable();
    else
        emit readyRead();
}

QNetworkProxy UpstreamConnection::effectiveProxy()
{
    // Resolved here rather than by the socket, to know whether the socket descriptor is really the
    // connection to the upstream (proxy engines may hand out a placeholder).
    QNetworkProxy proxy = m_endpoint.proxy;
    if (proxy.type() == QNetworkProxy::DefaultProxy) {
        proxy = QNetworkProxy(QNetworkProxy::NoProxy);
        const QNetworkProxyQuery query(m_endpoint.host, m_endpoint.port,
                                       m_endpoint.tls ? QStringLiteral("https") : QStringLiteral("http"),
                                       QNetworkProxyQuery::TcpSocket);
        for (const QNetworkProxy &candidate : QNetworkProxyFactory::proxyForQuery(query)) {
            if (candidate.type() == QNetworkProxy::NoProxy ||
                candidate.capabilities().testFlag(QNetworkProxy::TunnelingCapability)) {
                proxy = candidate;
                break;
            }
        }
    }
    m_direct = proxy.type() == QNetworkProxy::NoProxy;
    return proxy;
}

void UpstreamConnection::onOpened()
{
    if (m_closed || m_open)
        return;
    m_open = true;
    // A request goes out in one write; don't let Nagle hold back its tail (a direct socket set it itself).
    if (m_socket)
        m_socket->setSocketOption(QAbstractSocket::LowDelayOption, 1);
    emit opened();
}

void UpstreamConnection::onWritten(qint64 bytes)
{
    // Handshake records count for nothing: only bytes after write() are the caller's.
    if (bytes <= 0 || !m_writing)
        return;
    if (m_held.isEmpty() && (m_plain ? m_plain->bytesToWrite() == 0 : m_socket && m_socket->bytesToWrite() == 0))
        m_bodyInQt = QByteArray(); // all of it written (for TLS: encrypted, and the rest is ciphertext)
    m_writtenAny = true;
    emit written();
}

void UpstreamConnection::onClosed()
{
    if (m_closed || (!m_socket && !m_plain))
        return;
    m_closed = true;
    if (m_plain) {
        m_error = m_plain->errorString();
        emit closed();
        return;
    }
    m_error = m_socket->error() == QAbstractSocket::UnknownSocketError ? QStringLiteral("connection closed")
                                                                       : m_socket->errorString();
    emit closed();
}

bool UpstreamConnection::isReusable() const
{
    if (!isOpen())
        return false;
    if (m_plain ? !m_plain->isConnected() || m_plain->bytesAvailable() > 0
                : m_socket->state() != QAbstractSocket::ConnectedState || m_socket->bytesAvailable() > 0)
        return false;
#ifdef Q_OS_UNIX
    // Qt learns about a close from the event loop; the kernel may already know. An idle HTTP connection has
    // nothing to say, so unread bytes mean it is done too: a 408 before closing, or for TLS most likely the
    // close_notify alert ahead of the close (records Qt handles itself, like session tickets, are read as
    // soon as they arrive, so seeing one here is rare and only costs a new connection). Through a proxy
    // only Qt's view is available.
    const qintptr fd = m_plain ? m_plain->descriptor() : m_direct ? m_socket->socketDescriptor() : -1;
    if (fd >= 0) {
        char byte = 0;
        const ssize_t n = ::recv(int(fd), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
        if (n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
            return false;
    }
#endif
    return true;
}

qintptr UpstreamConnection::socketDescriptor() const
{
    // Through a SOCKS5 proxy Qt's socketDescriptor() is a number of its own, not a descriptor.
    return m_plain ? m_plain->descriptor() : m_socket && m_direct ? m_socket->socketDescriptor() : -1;
}

void UpstreamConnection::write(const QByteArray &head, const QByteArray &whole, qsizetype holdBack)
{
    m_writtenAny = false;
    m_writing = true;
    holdBack = qBound<qsizetype>(0, holdBack, whole.size());
    m_held = whole.last(holdBack);
    // All but the held-back tail, as a view of the caller's bytes: kept alive in m_bodyInQt until written.
    const QByteArray body = holdBack > 0 ? QByteArray::fromRawData(whole.constData(), whole.size() - holdBack) : whole;
    if (m_plain) {
        // The direct socket keeps what the kernel does not take at once and reports it with bytesWritten().
        const qint64 sent = m_plain->write(head, body);
        m_writtenAny = sent > 0;
        if (sent > 0 && sent == head.size() + body.size()) {
            QMetaObject::invokeMethod(
                this, [this] { emit written(); }, Qt::QueuedConnection);
        } else if (holdBack > 0) {
            m_bodyInQt = whole; // the direct socket holds a view of it
        }
        return;
    }
    if (!m_socket)
        return;
    qint64 sent = 0;
#ifdef Q_OS_UNIX
    // A plain connection with nothing queued in Qt: straight to the kernel in one call, the time to first
    // byte's critical path (Qt would flush the head and the body in two event-loop passes).
    if (!m_ssl && m_direct && m_socket->bytesToWrite() == 0) {
        sent = sendBoth(m_socket->socketDescriptor(), head, body);
        if (sent < 0)
            sent = 0; // Qt meets the same error on its own write and reports the close
    }
#endif
    if (sent > 0) {
        m_writtenAny = true;
        if (sent == head.size() + body.size()) {
            // Qt reports no bytesWritten() for bytes it never saw: tell the call from the loop, as Qt would.
            QMetaObject::invokeMethod(
                this, [this] { emit written(); }, Qt::QueuedConnection);
            return;
        }
    }
    // What the kernel did not take goes through Qt's buffer: the head's rest, then the body. Qt keeps a
    // QByteArray of 4 KiB or more as it is instead of copying it; the rest of a body the kernel took in part is
    // handed over as a view, and the connection keeps the body alive until Qt has written it (m_bodyInQt). A
    // copy of the rest of a 10 MiB upload would cost as much as its page faults.
    m_bodyInQt = whole;
    if (sent < head.size()) {
        m_socket->write(head.constData() + sent, head.size() - sent);
        if (!body.isEmpty())
            m_socket->write(body);
    } else {
        const qint64 bodySent = sent - head.size();
        m_socket->write(QByteArray::fromRawData(body.constData() + bodySent, body.size() - bodySent));
    }
}

void UpstreamConnection::releaseHeld()
{
    if (m_held.isEmpty())
        return;
    const QByteArray tail = std::exchange(m_held, QByteArray());
    if (m_plain) {
        const qint64 sent = m_plain->append(tail);
        if (sent > 0 && m_plain->bytesToWrite() == 0) {
            m_bodyInQt = QByteArray();
            m_writtenAny = true;
            QMetaObject::invokeMethod(
                this, [this] { emit written(); }, Qt::QueuedConnection);
        }
        return;
    }
    if (m_socket)
        m_socket->write(tail); // behind whatever Qt still holds
}

bool UpstreamConnection::writtenAll() const
{
    if (!m_held.isEmpty())
        return false;
    if (m_plain)
        return m_writing && m_writtenAny && m_plain->bytesToWrite() == 0;
    if (!m_socket || !m_writing || !m_writtenAny)
        return false;
    return m_socket->bytesToWrite() == 0 && (!m_ssl || m_ssl->encryptedBytesToWrite() == 0);
}

qint64 UpstreamConnection::bytesAvailable() const
{
    return m_plain ? m_plain->bytesAvailable() : m_socket ? m_socket->bytesAvailable() : 0;
}

QByteArrayView UpstreamConnection::beginRead(qint64 maxBytes)
{
    if (m_plain) {
        const QByteArrayView view = m_plain->peek(maxBytes);
        m_viewed = view.size();
        return view;
    }
    m_viewed = 0;
    if (!m_socket)
        return {};
    thread_local QByteArray scratch;
    scratch.resize(qMin(maxBytes, m_socket->bytesAvailable()));
    const qint64 n = m_socket->read(scratch.data(), scratch.size());
    return QByteArrayView(scratch.constData(), qMax<qint64>(n, 0));
}

void UpstreamConnection::endRead()
{
    if (m_plain)
        m_plain->skip(std::exchange(m_viewed, 0));
}

void UpstreamConnection::close()
{
    if (m_plain) {
        DirectTcpSocket *plain = m_plain;
        m_plain = nullptr;
        m_closed = true;
        disconnect(plain, nullptr, this, nullptr);
        plain->setReader(nullptr);
        plain->abort();       // drops what it still had to write, views of m_bodyInQt included
        plain->deleteLater(); // it may be emitting the signal that led here
        m_bodyInQt = QByteArray();
        m_held = QByteArray();
        return;
    }
    if (!m_socket)
        return;
    QTcpSocket *socket = m_socket;
    if (m_direct)
        EpollEventDispatcher::setSocketPriority(socket->socketDescriptor(), false);
    m_socket = nullptr;
    m_ssl = nullptr;
    m_closed = true;
    disconnect(socket, nullptr, this, nullptr);
    socket->abort(); // discards Qt's write buffer, and with it any view of m_bodyInQt
    m_bodyInQt = QByteArray();
    m_held = QByteArray();
    // The socket may be emitting the signal that led here.
    socket->deleteLater();
}

} // namespace sy
