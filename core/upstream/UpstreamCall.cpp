#include "upstream/UpstreamCall.h"

#include "upstream/ConnectionPool.h"
#include "upstream/UpstreamClient.h"
#include "util/EpollEventDispatcher.h"
#include "util/Faults.h"

#include <QLoggingCategory>
#include <utility>

namespace sy {

Q_LOGGING_CATEGORY(lcUpstream, "sy.upstream", QtInfoMsg)

namespace {

constexpr qint64 readChunkBytes = 16 * 1024;

// Headers the transport sets itself; forwarding a client's copy would corrupt framing or compression.
bool isTransportHeader(const QByteArray &name)
{
    static constexpr const char *owned[] = {"host",   "content-length",    "connection", "keep-alive",
                                            "te",     "transfer-encoding", "upgrade",    "proxy-connection",
                                            "expect", "accept-encoding"};
    // Compared in place, ASCII case ignored (no lower-cased copy of every header name of every request).
    for (const char *o : owned) {
        if (qstrnicmp(name.constData(), name.size(), o) == 0)
            return true;
    }
    return false;
}

bool isSafeHeader(const QByteArray &name, const QByteArray &value)
{
    return !name.isEmpty() && !name.contains(':') && !name.contains('\r') && !name.contains('\n') &&
           !name.contains(' ') && !value.contains('\r') && !value.contains('\n');
}

QByteArray hostHeader(const QUrl &url, bool tls)
{
    QByteArray host = url.host(QUrl::FullyEncoded).toLatin1();
    if (host.contains(':'))
        host = '[' + host + ']';
    const int port = url.port();
    if (port >= 0 && port != (tls ? 443 : 80))
        host += ':' + QByteArray::number(port);
    return host;
}

bool isPostLike(const QByteArray &method)
{
    return method == "POST" || method == "PUT" || method == "PATCH";
}

void appendHeaders(QByteArray &out, const HttpHeaders &headers)
{
    for (const auto &[name, value] : headers) {
        if (!isTransportHeader(name) && isSafeHeader(name, value))
            out.append(name).append(": ").append(value).append("\r\n");
    }
}

qsizetype headersSize(const HttpHeaders &headers)
{
    qsizetype size = 0;
    for (const auto &[name, value] : headers)
        size += name.size() + value.size() + 4;
    return size;
}

// The head up to its caller's headers; `reserve`: room for what follows.
QByteArray requestHeadStart(const UpstreamRequest &request, const QByteArray &method, qsizetype reserve)
{
    const bool tls = UpstreamEndpoint::usesTls(request.url);
    QByteArray target = request.url.path(QUrl::FullyEncoded).toLatin1();
    if (target.isEmpty())
        target = "/";
    if (request.url.hasQuery())
        target += '?' + request.url.query(QUrl::FullyEncoded).toLatin1();
    // Appended piece by piece into one reserved buffer: no temporary per header (a turn sends about 15).
    QByteArray out;
    out.reserve(method.size() + target.size() + 100 + headersSize(request.headers) + reserve);
    out.append(method).append(' ').append(target).append(" HTTP/1.1\r\nHost: ").append(hostHeader(request.url, tls));
    out.append("\r\n");
    appendHeaders(out, request.headers);
    return out;
}

// The request head; the body follows it in a second write of the caller's own (shared) bytes.
QByteArray requestHead(const UpstreamRequest &request, const QByteArray &method)
{
    constexpr qsizetype endBytes = 80; // Content-Length and the two lines below
    QByteArray out;
    if (request.preparedHead.isEmpty()) {
        out = requestHeadStart(request, method, endBytes);
    } else {
        out.reserve(request.preparedHead.size() + headersSize(request.headers) + endBytes);
        out.append(request.preparedHead);
        appendHeaders(out, request.headers);
    }
    if (!request.body.isEmpty() || isPostLike(method))
        out.append("Content-Length: ").append(QByteArray::number(request.body.size())).append("\r\n");
    out.append("Accept-Encoding: identity\r\nConnection: keep-alive\r\n\r\n");
    return out;
}

bool isEventStreamType(const QByteArray &contentType)
{
    const qsizetype semicolon = contentType.indexOf(';');
    const QByteArray mediaType = (semicolon < 0 ? contentType : contentType.first(semicolon)).trimmed().toLower();
    return mediaType == "text/event-stream";
}

} // namespace

QByteArray upstreamRequestHeadStart(const UpstreamRequest &request)
{
    return requestHeadStart(request, request.method.toUpper(), 0);
}

UpstreamCall::UpstreamCall(UpstreamClient *client, const UpstreamRequest &request,
                           const UpstreamEndpoint &endpoint, const QSslConfiguration &tls)
    : QObject(client), m_client(client), m_url(request.url), m_endpoint(endpoint), m_tls(tls),
      m_maxBodyBytes(request.maxBodyBytes), m_parser(request.maxBodyBytes)
{
    const QByteArray method = request.method.toUpper();
    m_headRequest = method == "HEAD";
    m_requestHead = requestHead(request, method);
    m_requestBody = request.body;
    m_tailHeld = request.holdLastByte && !request.body.isEmpty();
    m_http = std::make_unique<HttpResponseParser>(m_headRequest);
}

UpstreamEventListener::~UpstreamEventListener()
{
    if (m_listenedCall)
        m_listenedCall->setEventListener(nullptr);
}

void UpstreamCall::setEventListener(UpstreamEventListener *listener)
{
    if (m_eventListener)
        m_eventListener->m_listenedCall = nullptr;
    if (listener && listener->m_listenedCall && listener->m_listenedCall != this)
        listener->m_listenedCall->setEventListener(nullptr); // one call per listener
    m_eventListener = listener;
    if (listener)
        listener->m_listenedCall = this;
}

UpstreamCall::~UpstreamCall()
{
    setEventListener(nullptr);
    // Only reached without finish() when the client goes away: close, never pool, a half-used connection.
    if (m_connection)
        m_connection->close();
}

QString UpstreamCall::outcomeName(Outcome outcome)
{
    switch (outcome) {
    case Outcome::Completed:
        return QStringLiteral("completed");
    case Outcome::ConnectionFailed:
        return QStringLiteral("connection_failed");
    case Outcome::ConnectionLost:
        return QStringLiteral("connection_lost");
    case Outcome::Aborted:
        return QStringLiteral("aborted");
    }
    return {};
}

void UpstreamCall::abort(const QString &reason)
{
    finish(Outcome::Aborted, reason.isEmpty() ? QStringLiteral("aborted by the proxy") : reason);
}

void UpstreamCall::releaseTail()
{
    if (m_done || !std::exchange(m_tailHeld, false))
        return;
    // A connection still opening (or opened again) gets the whole request when it is open.
    if (std::exchange(m_heldOnConnection, false) && m_connection)
        m_connection->releaseHeld();
}

void UpstreamCall::pause()
{
    if (!m_done)
        m_paused = true;
}

void UpstreamCall::resume()
{
    if (m_done || !m_paused)
        return;
    m_paused = false;
    // Bytes already buffered raise no new readyRead, so the drain has to be scheduled here.
    QMetaObject::invokeMethod(
        this, [this] { pump(); }, Qt::QueuedConnection);
}

void UpstreamCall::begin()
{
    if (m_done)
        return;
    if (!supportedUrl()) {
        finish(Outcome::ConnectionFailed, QStringLiteral("unsupported upstream URL"));
        return;
    }
    if (!takeIdleConnection(true))
        openConnection();
}

bool UpstreamCall::beginOnIdleConnection()
{
    return !m_done && supportedUrl() && takeIdleConnection(false);
}

bool UpstreamCall::supportedUrl() const
{
    return !m_endpoint.host.isEmpty() && (m_url.scheme() == QLatin1String("http") || m_endpoint.tls);
}

bool UpstreamCall::takeIdleConnection(bool fromLoop)
{
    UpstreamConnection *pooled = m_client->m_pool->take(m_endpoint.key());
    if (!pooled)
        return false;
    qCDebug(lcUpstream) << "upstream call reuses connection" << pooled->id();
    attach(pooled);
    // Outside the loop only a plain connection writes at once (to the kernel, signalling later); Qt's socket
    // path (TLS, proxies) waits for the loop, like every other signal of the call.
    if (fromLoop || pooled->isPlainDirect())
        sendRequest();
    else
        QMetaObject::invokeMethod(this, &UpstreamCall::sendRequest, Qt::QueuedConnection);
    return true;
}

void UpstreamCall::openConnection()
{
    auto *connection = new UpstreamConnection(m_endpoint, m_tls, this);
    attach(connection);
    if (!std::exchange(m_connectingSeen, true)) {
        const QPointer<UpstreamCall> self(this);
        emit connecting();
        if (!self || m_done)
            return;
    }
    qCDebug(lcUpstream) << "upstream call opens connection" << connection->id();
    connection->open();
}

void UpstreamCall::attach(UpstreamConnection *connection)
{
    m_connection = connection;
    m_heldOnConnection = false;
    connection->setParent(this);
    connect(connection, &UpstreamConnection::opened, this, &UpstreamCall::sendRequest);
    connect(connection, &UpstreamConnection::written, this, &UpstreamCall::onWritten);
    // A direct call rather than a connection to readyRead(): a stream's every part passes here. The connection is
    // this call's child until releaseConnection() unsets it.
    connection->setReader(this);
    connect(connection, &UpstreamConnection::closed, this, &UpstreamCall::onConnectionClosed);
}

void UpstreamCall::sendRequest()
{
    if (m_done || !m_connection || !m_connection->isOpen())
        return;
    m_requestWriteBegun = true;
    m_heldOnConnection = m_tailHeld;
    UpstreamConnection *const connection = m_connection;
    const QPointer<UpstreamCall> self(this);
    connection->write(m_requestHead, m_requestBody, m_tailHeld ? 1 : 0);
    // Until its first event is forwarded, a client waits on this socket: its events go first in a pass. Marked
    // after the write (the mark is a system call; no pass looks at it before the next wait), so that the
    // request leaves sooner.
    if (self && !m_done && m_connection == connection && !m_firstEventSeen)
        EpollEventDispatcher::setSocketPriority(connection->socketDescriptor(), true);
}

bool UpstreamCall::requestWrittenAll() const
{
    return m_requestWriteBegun && m_connection && m_connection->writtenAll();
}

void UpstreamCall::onWritten()
{
    if (!m_done && m_connection && m_connection->writtenAll())
        noteRequestSent();
}

bool UpstreamCall::noteRequestSent()
{
    if (std::exchange(m_requestSentSeen, true))
        return true;
    // Only a retry before the first byte left would have needed them.
    m_requestHead = QByteArray();
    m_requestBody = QByteArray();
    const QPointer<UpstreamCall> self(this);
    emit requestSent();
    return self && !m_done;
}

void UpstreamCall::onConnectionClosed()
{
    if (m_done || !m_connection)
        return;
    UpstreamConnection *connection = m_connection;
    const QString error = connection->errorString();
    if (!m_receivedAny && connection->exchanges() > 0 && !connection->writtenAny()) {
        // A pooled connection the upstream had already closed: not one byte of the request reached the kernel,
        // so nothing was sent and a new connection is safe.
        qCDebug(lcUpstream) << "upstream connection" << connection->id() << "was closed while pooled; reconnecting";
        releaseConnection();
        openConnection();
        return;
    }
    if (!m_receivedAny && !m_requestSentSeen) {
        finish(Outcome::ConnectionFailed, error);
        return;
    }
    m_peerClosed = true;
    pump();
}

void UpstreamCall::noteHeaders()
{
    if (m_headersSeen || !m_http->headComplete())
        return;
    // The head proves the upstream has what it needed, even if the kernel is still taking the request's tail.
    if (!noteRequestSent())
        return;
    m_headersSeen = true;
    m_status = m_http->status();
    QByteArray contentType;
    for (const auto &[name, value] : m_http->headers()) {
        if (name.compare("content-type", Qt::CaseInsensitive) == 0)
            contentType = value;
    }
    m_eventStream = m_status >= 200 && m_status < 300 && !m_headRequest && isEventStreamType(contentType);
    if (m_eventStream) {
        // An event stream's body goes straight from the HTTP parser into the SSE parser: one copy and one
        // allocation less per received part. What it gathered with the head pump() feeds first, before it
        // feeds the parser again; an overflow is acted on once feed() has returned.
        m_http->setBodyConsumer([this](QByteArrayView bytes) { m_parser.feed(bytes); });
    }
    emit headersReceived(m_status, m_http->headers());
}

void UpstreamCall::takeBody()
{
    if (!m_http->hasBody())
        return;
    const QByteArray chunk = m_http->takeBody();
    if (m_eventStream) {
        m_parser.feed(chunk);
        if (m_parser.overflowed())
            finish(Outcome::ConnectionLost, sseOverflowDetail());
    } else if (m_body.size() + chunk.size() > m_maxBodyBytes) {
        finish(Outcome::ConnectionLost, QStringLiteral("response body exceeds %1 bytes").arg(m_maxBodyBytes));
    } else {
        m_body.append(chunk);
    }
}

QString UpstreamCall::sseOverflowDetail() const
{
    return QStringLiteral("an SSE event exceeds %1 bytes").arg(m_maxBodyBytes);
}

void UpstreamCall::pump()
{
    // A handler running a nested event loop must not start a second drain of the same connection.
    if (m_pumping || m_done || !m_connection)
        return;
    if (m_tailHeld && m_connection->bytesAvailable() > 0) {
        finish(Outcome::ConnectionFailed, QStringLiteral("the upstream answered before it had the whole request"));
        return;
    }
    const QPointer<UpstreamCall> self(this);
    m_pumping = true;
    while (self && !m_done) {
        if (!m_headersSeen && m_http->headComplete()) {
            noteHeaders();
            continue;
        }
        if (m_headersSeen && m_http->hasBody()) {
            takeBody();
            continue;
        }
        if (m_headersSeen && !m_paused && m_eventStream && m_parser.hasNext()) {
            const SseParser::Item item = m_parser.takeNext();
            if (item.kind == SseParser::Item::Kind::Event) {
                if (!std::exchange(m_firstEventSeen, true))
                    EpollEventDispatcher::setSocketPriority(m_connection->socketDescriptor(), false);
                if (m_eventListener)
                    m_eventListener->upstreamEvent(item.event);
                else
                    emit sseEvent(item.event);
            } else
                emit keepaliveComment();
            continue;
        }
        // Headers are read even while paused; the body waits.
        if ((m_paused && m_headersSeen) || m_http->isComplete() || m_http->hasError())
            break;
        if (const qint64 available = m_connection->bytesAvailable(); available > 0) {
            // Parsed where they lie (the SSE parser copies what it keeps of them), not in a buffer of their own
            // per part: no allocation and no copy on the way.
            const QByteArrayView chunk = m_connection->beginRead(qMin(available, readChunkBytes));
            m_receivedAny = true;
            if (m_http->feed(chunk.data(), chunk.size()) < chunk.size() && m_http->isComplete())
                m_trailingBytes = true;
            m_connection->endRead();
            if (m_eventStream && m_parser.overflowed())
                finish(Outcome::ConnectionLost, sseOverflowDetail());
        } else if (m_peerClosed && !m_eofFed) {
            m_eofFed = true;
            m_http->feedEof();
        } else {
            break;
        }
    }
    if (!self)
        return;
    m_pumping = false;
    if (m_done || (m_paused && m_headersSeen) || (m_eventStream && m_parser.hasNext()))
        return;
    if (m_http->hasError())
        finish(Outcome::ConnectionLost, m_http->errorString());
    else if (m_http->isComplete() && m_headersSeen)
        complete();
}

void UpstreamCall::complete()
{
    if (m_eventStream) {
        if (m_parser.finish() != SseParser::EndState::Clean)
            finish(Outcome::ConnectionLost, QStringLiteral("event stream ended inside an event"));
        else
            finish(Outcome::Completed, {});
        return;
    }
    const QPointer<UpstreamCall> self(this);
    emit bodyReceived(m_body);
    if (self)
        finish(Outcome::Completed, {});
}

void UpstreamCall::finish(Outcome outcome, const QString &detail)
{
    if (m_done)
        return;
    m_done = true;
    m_paused = false;
    setEventListener(nullptr); // nothing is delivered after finished(); its listener may be gone soon after
    // Give the connection back (or close it) before anyone hears about it.
    releaseConnection();
    m_body.clear();
    qCDebug(lcUpstream).noquote() << "upstream call" << m_url.toString(QUrl::RemoveUserInfo | QUrl::RemoveQuery)
                                  << "status" << m_status << outcomeName(outcome) << detail;
    emit finished(outcome, detail);
    deleteLater();
}

void UpstreamCall::releaseConnection()
{
    if (!m_connection)
        return;
    UpstreamConnection *connection = m_connection;
    m_connection = nullptr;
    disconnect(connection, nullptr, this, nullptr);
    connection->setReader(nullptr); // idle in the pool, its readyRead() tells the pool to drop it
    EpollEventDispatcher::setSocketPriority(connection->socketDescriptor(), false);
    // Reusable only after a complete exchange that both sides meant to keep alive, with nothing left over.
    // (Fault build only: misroute-producer reuses a connection whose response was not read to its end.)
    const bool reusable = SY_FAULT("misroute-producer")
                              ? connection->isOpen() && m_requestSentSeen
                              : m_http->isComplete() && m_http->keepAlive() && !m_trailingBytes && m_requestSentSeen &&
                                    connection->writtenAll() && connection->isOpen() && connection->bytesAvailable() == 0;
    if (reusable) {
        connection->noteExchangeDone();
        m_client->m_pool->release(connection);
    } else {
        connection->close();
        connection->deleteLater();
    }
}

} // namespace sy
