#include "http/HttpConnection.h"

#include "http/BodyDecoder.h"
#include "http/HttpResponse.h"
#include "http/WriteCoalescer.h"
#include "util/ByteAppend.h"
#include "util/Clock.h"
#include "util/EpollEventDispatcher.h"
#include "util/LargeBufferPool.h"
#include "util/SocketIo.h"

#include <QPointer>
#include <QTcpSocket>
#include <http_parser.h>
#include <utility>

#ifdef Q_OS_WIN
#include <winsock2.h>
#else
#include <sys/socket.h>
#endif

namespace sy {

namespace {

// Output this large leaves at once instead of at the end of the event-loop pass: it bounds what a connection
// holds before the socket's own accounting (and the backpressure built on it) sees it.
constexpr qsizetype kFlushNowBytes = 64 * 1024;
// Between passes a connection keeps an output buffer up to this size, so a steady stream of small events
// reuses it; anything bigger (a response head, a large event) is given back, since hundreds of open streams
// would otherwise each pin their largest pass.
constexpr qsizetype kKeepOutputCapacity = 1024;
// A new request's first piece when more than this waits in Qt's buffer: enough for a usual head, so that the
// body after it is read straight into its place (HttpConnection::readBodyInPlace) and not copied twice.
constexpr qint64 kHeadPieceBytes = 4 * 1024;

HttpConnection *self(http_parser *p)
{
    return static_cast<HttpConnection *>(p->data);
}

const http_parser_settings &parserSettings()
{
    static const http_parser_settings settings = [] {
        http_parser_settings s;
        http_parser_settings_init(&s);
        s.on_message_begin = [](http_parser *p) { return self(p)->onMessageBegin(); };
        s.on_url = [](http_parser *p, const char *at, size_t n) { return self(p)->onUrl(at, n); };
        s.on_header_field = [](http_parser *p, const char *at, size_t n) { return self(p)->onHeaderField(at, n); };
        s.on_header_value = [](http_parser *p, const char *at, size_t n) { return self(p)->onHeaderValue(at, n); };
        s.on_headers_complete = [](http_parser *p) { return self(p)->onHeadersComplete(); };
        s.on_body = [](http_parser *p, const char *at, size_t n) { return self(p)->onBody(at, n); };
        s.on_message_complete = [](http_parser *p) { return self(p)->onMessageComplete(); };
        return s;
    }();
    return settings;
}

} // namespace

HttpConnection::HttpConnection(QTcpSocket *socket, quint64 id, const HttpServerConfig &config,
                               HttpDispatcher dispatcher, QObject *parent)
    : QObject(parent), m_socket(socket), m_id(id), m_config(config), m_dispatcher(std::move(dispatcher)),
      m_parser(std::make_unique<http_parser>()), m_coalescer(m_config.coalescer)
{
    if (!m_config.clock)
        m_config.clock = &SystemClock::instance();
    m_socket->setParent(this);
    // Qt reads what the kernel holds into its own buffer before readyRead(): during an upload that could be
    // megabytes in fresh memory, copied again into the body. Bounded, the rest of a large body is received
    // straight into its place (readBodyInPlace()).
    if (socketIoAvailable())
        m_socket->setReadBufferSize(kQtReadBufferBytes);
    http_parser_init(m_parser.get(), HTTP_REQUEST);
    m_parser->data = this;

    m_idleTimer.setSingleShot(true);
    m_requestTimer.setSingleShot(true);
    m_headerTimer.setSingleShot(true);
    m_closeTimer.setSingleShot(true);
    connect(&m_idleTimer, &QTimer::timeout, this, &HttpConnection::beginClose);
    connect(&m_requestTimer, &QTimer::timeout, this, [this] {
        failRequest(
            {408, "invalid_request_error", "request_timeout", QStringLiteral("request was not received in time")});
    });
    connect(&m_headerTimer, &QTimer::timeout, this, &HttpConnection::onHeaderTimeout);
    connect(&m_closeTimer, &QTimer::timeout, this, &HttpConnection::teardown);

    connect(m_socket, &QTcpSocket::readyRead, this, &HttpConnection::onReadyRead);
    connect(m_socket, &QTcpSocket::bytesWritten, this, &HttpConnection::onBytesWritten);
    connect(m_socket, &QTcpSocket::disconnected, this, &HttpConnection::teardown);
    connect(m_socket, &QTcpSocket::errorOccurred, this, [this](QAbstractSocket::SocketError e) {
        if (e != QAbstractSocket::SocketTimeoutError && e != QAbstractSocket::TemporaryError)
            teardown();
    });
    // Qt enters ClosingState on its own when the peer sends EOF; a client that closes its side is gone,
    // even while a handler streams and no request bytes arrive.
    connect(m_socket, &QTcpSocket::stateChanged, this, [this](QAbstractSocket::SocketState state) {
        if (state == QAbstractSocket::ClosingState || state == QAbstractSocket::UnconnectedState)
            teardown();
    });
    // A client's next request waits on this socket (a streaming response rarely makes it ready otherwise): its
    // events go first in a pass of the proxy thread's loop.
    EpollEventDispatcher::setSocketPriority(m_socket->socketDescriptor(), true);
    armIdleTimer();
    // The first request's head is due from the accept on: a connection that only trickles (or holds) bytes is
    // not kept for the whole idle timeout.
    armHeaderTimer();
    if (m_socket->bytesAvailable() > 0)
        QMetaObject::invokeMethod(this, &HttpConnection::onReadyRead, Qt::QueuedConnection);
}

HttpConnection::~HttpConnection() = default;

void HttpConnection::abort()
{
    teardown();
}

void HttpConnection::refuse(int status, QByteArray type, QByteArray code, QString message)
{
    failRequest({status, std::move(type), std::move(code), std::move(message)});
}

void HttpConnection::armIdleTimer()
{
    if (m_config.idleTimeoutMs > 0)
        m_idleTimer.start(m_config.idleTimeoutMs);
}

void HttpConnection::armHeaderTimer()
{
    int ms = m_config.headerTimeoutMs;
    if (m_config.requestTimeoutMs > 0 && (ms <= 0 || m_config.requestTimeoutMs < ms))
        ms = m_config.requestTimeoutMs;
    if (ms > 0)
        m_headerTimer.start(ms);
}

void HttpConnection::onHeaderTimeout()
{
    if (m_active)
        return;
    if (!m_building && m_inbox.isEmpty()) {
        beginClose(); // nothing of a request arrived: there is no one to answer
        return;
    }
    failRequest({408, "invalid_request_error", "request_header_timeout",
                 QStringLiteral("request headers were not received in time")});
}

void HttpConnection::onReadyRead()
{
    if (m_gone)
        return;
    // Bytes past the body (a pipelined request) are left for readAll(): Qt does not signal them again.
    const auto bodyReadInPlaceAndNothingLeft = [this] {
        return readBodyInPlace() && (m_gone || m_socket->bytesAvailable() == 0);
    };
    if (bodyReadInPlaceAndNothingLeft())
        return;
    // A new request with more than its head waiting: its head first, in a piece of its own. Once the head is
    // parsed the body has its space, and the rest of it goes there from Qt's buffer in one copy; read with the
    // head (readAll) it would be copied out of Qt's buffer, then again into the body (onBody), 40 KiB each for a
    // Codex turn. A head longer than the piece is read on below with what follows it, whose body bytes are
    // copied twice as before; a request that ends inside the piece leaves the piece's rest in the inbox, ahead of what
    // readAll() adds to it.
    if (!m_closing && !m_active && !m_building && m_inbox.isEmpty() && m_body.isEmpty() &&
        m_socket->bytesAvailable() > kHeadPieceBytes) {
        m_inbox = m_socket->read(kHeadPieceBytes);
        processInbox();
        if (m_gone || bodyReadInPlaceAndNothingLeft())
            return;
    }
    const QByteArray data = m_socket->readAll();
    if (m_closing)
        return; // lingering close: drain and discard what the client still sends
    m_inbox.append(data);
    if (m_active) {
        // Pipelined bytes wait for the current response; refuse to hoard more than one maximal request.
        if (m_inbox.size() > m_config.maxHeaderBytes + m_config.maxBodyBytes + 64 * 1024) {
            m_inbox.clear();
            m_closeAfterActive = true;
        }
        return;
    }
    processInbox();
}

void HttpConnection::processInbox()
{
    while (!m_active && !m_closing && !m_gone && !m_inbox.isEmpty()) {
        m_error = {};
        const size_t parsed =
            http_parser_execute(m_parser.get(), &parserSettings(), m_inbox.constData(), size_t(m_inbox.size()));
        // All of it parsed (the usual case): drop the bytes without remove(), which would first copy a
        // buffer still shared with the socket's read (megabytes during a large upload) only to empty it.
        if (qsizetype(parsed) >= m_inbox.size())
            m_inbox.clear();
        else
            m_inbox.remove(0, qsizetype(parsed));
        const auto err = HTTP_PARSER_ERRNO(m_parser.get());
        if (err == HPE_PAUSED) {
            http_parser_pause(m_parser.get(), 0);
            dispatchCompleted();
            continue;
        }
        if (m_error.status == 0 && err != HPE_OK) {
            if (err == HPE_HEADER_OVERFLOW)
                m_error = {431, "invalid_request_error", "headers_too_large",
                           QStringLiteral("request headers are too large")};
            else if (err == HPE_INVALID_TRANSFER_ENCODING)
                m_error = {501, "invalid_request_error", "unsupported_transfer_encoding",
                           QStringLiteral("unsupported transfer-encoding")};
            else
                m_error = {
                    400, "invalid_request_error", "malformed_request",
                    QStringLiteral("malformed HTTP request: %1").arg(QString::fromLatin1(http_errno_description(err)))};
        }
        if (m_error.status != 0) {
            failRequest(m_error);
            return;
        }
        if (m_messageComplete) {
            // An upgrade request makes the parser stop right after the head; the rest is the next request.
            dispatchCompleted();
            continue;
        }
        if (parsed == 0)
            break;
    }
    // remove() keeps the capacity of the largest read this keep-alive connection ever saw; give it back.
    if (m_inbox.isEmpty())
        m_inbox.clear();
}

void HttpConnection::dispatchCompleted()
{
    m_messageComplete = false;
    std::shared_ptr<HttpRequest> request = std::move(m_building);
    m_building.reset();
    if (!request)
        return;
    ++m_sequence;
    request->wireBodyBytes = m_body.size();
    request->contentEncoding = request->header("content-encoding");
    BodyDecodeResult decoded = decodeContentEncoding(request->contentEncoding, m_body, m_config.maxBodyBytes);
    m_body.clear();
    m_bodyReserved = false;
    switch (decoded.status) {
    case BodyDecodeResult::Ok:
        break;
    case BodyDecodeResult::TooLarge:
        failRequest({413, "invalid_request_error", "request_too_large", decoded.detail});
        return;
    case BodyDecodeResult::Unsupported:
        failRequest({415, "invalid_request_error", "unsupported_content_encoding", decoded.detail});
        return;
    case BodyDecodeResult::Corrupt:
        failRequest({400, "invalid_request_error", "invalid_body_encoding", decoded.detail});
        return;
    }
    request->body = std::move(decoded.body);
    // The request keeps its body for the whole turn: no growth slack (chunked or decoded bodies) rides along.
    if (request->body.capacity() - request->body.size() > request->body.size() / 8)
        request->body.squeeze();
    if (m_closeAfterActive)
        request->keepAlive = false;

    auto *response = new HttpResponse(this, request, m_config.lowWatermark, m_config.highWatermark);
    m_active = response;
    m_dispatcher(std::move(request), response);
}

bool HttpConnection::queueOutput(QByteArrayView a, QByteArrayView b, QByteArrayView c)
{
    if (m_gone || m_socket->state() != QAbstractSocket::ConnectedState)
        return false;
    if (a.isEmpty() && b.isEmpty() && c.isEmpty())
        return true;
    appendPieces(m_out, {a, b, c});
    if (m_out.size() >= kFlushNowBytes) {
        ++m_writeDepth;
        flushOutput();
        --m_writeDepth;
        return !m_gone;
    }
    if (!m_flushScheduled) {
        m_flushScheduled = true;
        if (!m_coalescer || !m_coalescer->schedule(this)) {
            ++m_writeDepth;
            flushOutput();
            --m_writeDepth;
        }
    }
    return !m_gone;
}

void HttpConnection::flushQueuedNow()
{
    if (!m_flushScheduled || m_gone)
        return;
    // As for a large queue in queueOutput(): a drained() this may bring waits until the writer returned. The
    // coalescer still holds this connection for the end of the pass, when there is nothing left to send.
    ++m_writeDepth;
    flushOutput();
    --m_writeDepth;
}

void HttpConnection::flushOutput()
{
    m_flushScheduled = false;
    if (m_gone)
        return;
    if (!m_out.isEmpty() && !sendOutput()) {
        teardown();
        return;
    }
    if (m_active)
        m_active->checkDrained();
    maybeHalfClose();
}

bool HttpConnection::sendOutput()
{
    qsizetype sent = 0;
#ifndef Q_OS_WIN
    // While the socket's buffer is empty the bytes go straight to the kernel: no copy into Qt's buffer and no
    // write notifier switched on and off (each switch wakes the event loop).
    if (m_socket->bytesToWrite() == 0) {
        const qint64 n = sendNow(m_socket->socketDescriptor(), m_out.constData(), m_out.size());
        if (n < 0)
            return false;
        sent = qsizetype(n);
    }
#endif
    if (sent < m_out.size()) {
        // The kernel's buffer is full (or older bytes still wait in Qt's): Qt writes the rest, in order, when
        // the socket becomes writable and reports it through bytesWritten().
        if (m_socket->write(m_out.constData() + sent, m_out.size() - sent) < 0)
            return false;
#ifdef Q_OS_WIN
        m_socket->flush();
#endif
    }
    releaseOutput();
    return true;
}

void HttpConnection::releaseOutput()
{
    if (m_out.capacity() > kKeepOutputCapacity)
        m_out = QByteArray();
    else
        m_out.resize(0); // keeps the capacity
}

qint64 HttpConnection::pendingBytes() const
{
    return m_gone ? 0 : m_out.size() + m_socket->bytesToWrite();
}

void HttpConnection::onBytesWritten()
{
    if (m_active)
        m_active->checkDrained();
    maybeHalfClose();
}

void HttpConnection::responseFinished(HttpResponse *response, bool closeConnection)
{
    if (response != m_active)
        return;
    m_active = nullptr;
    response->deleteLater();
    if (m_gone)
        return;
    if (closeConnection || m_closeAfterActive) {
        beginClose();
        return;
    }
    if (m_inbox.isEmpty())
        armIdleTimer();
    else
        QMetaObject::invokeMethod(this, &HttpConnection::processInbox, Qt::QueuedConnection);
}

void HttpConnection::failRequest(const PendingError &error)
{
    if (m_gone || m_closing)
        return;
    if (m_active) {
        // Only reachable for a request timeout racing a dispatch; the active response decides.
        return;
    }
    const QByteArray body = HttpResponse::jsonErrorBody(error.type, error.code, error.message);
    QByteArray head = "HTTP/1.1 " + QByteArray::number(error.status) + ' ' + HttpResponse::reasonPhrase(error.status) +
                      "\r\nContent-Type: application/json\r\nContent-Length: " + QByteArray::number(body.size()) +
                      "\r\nConnection: close\r\n\r\n";
    queueOutput(head, body);
    beginClose();
}

void HttpConnection::beginClose()
{
    if (m_closing || m_gone)
        return;
    m_closing = true;
    setDirectBodyRead(false); // the lingering drain reads what is left through Qt
    m_idleTimer.stop();
    m_requestTimer.stop();
    m_headerTimer.stop();
    m_inbox.clear();
    // A request still being read is never dispatched now: its body's memory (taken with its head, up to the
    // body limit) goes back at once, to this thread's pool if it keeps large buffers, not at the teardown, up to
    // requestTimeoutMs or lingerMs later. (A dispatched request's body left m_body in dispatchCompleted.)
    LargeBufferPool::local().giveBack(std::exchange(m_body, QByteArray()));
    m_bodyReserved = false;
    // A client that never reads what is left must not keep the connection forever.
    m_closeTimer.start(qMax(m_config.requestTimeoutMs, m_config.lingerMs));
    maybeHalfClose();
}

void HttpConnection::maybeHalfClose()
{
    if (!m_closing || m_halfClosed || m_gone || pendingBytes() > 0)
        return;
    m_halfClosed = true;
    // Send FIN but keep reading for a moment: closing with unread input would reset the connection and
    // could destroy an error response the client has not read yet.
    const qintptr fd = m_socket->socketDescriptor();
    if (fd >= 0) {
#ifdef Q_OS_WIN
        ::shutdown(SOCKET(fd), SD_SEND);
#else
        ::shutdown(int(fd), SHUT_WR);
#endif
    }
    m_closeTimer.start(m_config.lingerMs);
}

void HttpConnection::teardown()
{
    if (m_gone)
        return;
    // A server shutting down drops its connections at once; what they were given still goes out, as it
    // would have with writes that reach the kernel at once (Qt's own buffer is discarded, as before).
    if (!m_out.isEmpty() && m_socket->state() == QAbstractSocket::ConnectedState && m_socket->bytesToWrite() == 0) {
#ifndef Q_OS_WIN
        sendNow(m_socket->socketDescriptor(), m_out.constData(), m_out.size());
#endif
    }
    m_gone = true;
    EpollEventDispatcher::setSocketPriority(m_socket->socketDescriptor(), false);
    m_idleTimer.stop();
    m_requestTimer.stop();
    m_headerTimer.stop();
    m_closeTimer.stop();
    m_inbox.clear();
    m_out.clear();
    HttpResponse *active = m_active;
    m_active = nullptr;
    if (active)
        active->m_clientGone = true; // from now on write() fails, even before the signal is delivered
    auto notify = [active = QPointer<HttpResponse>(active)] {
        if (active) {
            active->markClientGone();
            active->deleteLater();
        }
    };
    // The socket may report the loss from inside a handler's write(); tell the handler after it returned.
    if (m_writeDepth > 0)
        QMetaObject::invokeMethod(this, notify, Qt::QueuedConnection);
    else
        notify();
    // Aborting from inside the socket's own signal emission is avoided by deferring it.
    QMetaObject::invokeMethod(
        this,
        [this] {
            if (m_socket->state() != QAbstractSocket::UnconnectedState)
                m_socket->abort();
            emit closed(this);
            deleteLater();
        },
        Qt::QueuedConnection);
}

} // namespace sy
