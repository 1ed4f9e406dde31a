// libhttp-parser callbacks of HttpConnection: they assemble one HttpRequest and refuse bad ones early.
#include "http/BodyDecoder.h"
#include "http/HttpConnection.h"
#include "util/Clock.h"
#include "util/LargeBufferPool.h"
#include "util/LargeBuffers.h"
#include "util/SocketIo.h"

#include <QTcpSocket>
#include <QUrl>
#include <climits>
#include <http_parser.h>

namespace sy {

namespace {

// Room left after a body with a known length: the JSON scan (simdjson) reads up to 64 bytes past the end, so
// with it the body is scanned where it lies.
constexpr qsizetype kBodySlack = 64;
// A body at least this large is received straight from the socket into its reserved space (setDirectBodyRead).
constexpr quint64 kDirectReadMinBodyBytes = 256 * 1024;

QByteArray lowerAscii(QByteArray s)
{
    for (char &c : s) {
        if (c >= 'A' && c <= 'Z')
            c = char(c - 'A' + 'a');
    }
    return s;
}

bool onlyChunkedTransferCoding(const QList<QByteArray> &values)
{
    for (const QByteArray &value : values) {
        for (const QByteArray &token : value.split(',')) {
            if (!headerNameEquals(token.trimmed(), "chunked"))
                return false;
        }
    }
    return true;
}

} // namespace

bool HttpConnection::addHeaderBytes(qsizetype n)
{
    m_headerBytes += n;
    return m_headerBytes <= m_config.maxHeaderBytes;
}

int HttpConnection::reject(int status, QByteArray type, QByteArray code, QString message)
{
    m_error = {status, std::move(type), std::move(code), std::move(message)};
    return -1; // on_headers_complete treats 1 and 2 as "skip body", so use a value every callback reads as error
}

int HttpConnection::onMessageBegin()
{
    m_idleTimer.stop();
    // The head runs on the header timer; the request timer takes over for the body once the head is complete.
    m_requestTimer.stop();
    armHeaderTimer();
    m_building = std::make_shared<HttpRequest>();
    m_building->receivedAtMs = m_config.clock->monotonicMs();
    m_building->receivedAtUs = m_config.clock->monotonicUs();
    m_url.clear();
    m_field.clear();
    m_value.clear();
    m_lastWasValue = false;
    m_headerBytes = 0;
    m_body.clear();
    m_bodyReserved = false;
    m_messageComplete = false;
    return 0;
}

int HttpConnection::onUrl(const char *at, size_t length)
{
    if (!addHeaderBytes(qsizetype(length)))
        return reject(414, "invalid_request_error", "uri_too_long", QStringLiteral("request target is too long"));
    m_url.append(at, qsizetype(length));
    return 0;
}

void HttpConnection::commitHeader()
{
    if (!m_field.isEmpty())
        m_building->headers.append({lowerAscii(m_field), m_value.trimmed()});
    m_field.clear();
    m_value.clear();
}

int HttpConnection::onHeaderField(const char *at, size_t length)
{
    if (!addHeaderBytes(qsizetype(length) + 4))
        return reject(431, "invalid_request_error", "headers_too_large",
                      QStringLiteral("request headers are too large"));
    if (m_lastWasValue) {
        commitHeader();
        if (m_building->headers.size() >= m_config.maxHeaderCount)
            return reject(431, "invalid_request_error", "too_many_headers",
                          QStringLiteral("a request may carry at most %1 header fields").arg(m_config.maxHeaderCount));
    }
    m_lastWasValue = false;
    m_field.append(at, qsizetype(length));
    return 0;
}

int HttpConnection::onHeaderValue(const char *at, size_t length)
{
    if (!addHeaderBytes(qsizetype(length)))
        return reject(431, "invalid_request_error", "headers_too_large",
                      QStringLiteral("request headers are too large"));
    m_lastWasValue = true;
    m_value.append(at, qsizetype(length));
    return 0;
}

bool HttpConnection::parseTarget(HttpRequest &request)
{
    request.target = m_url;
    QByteArray pathAndQuery = m_url;
    if (!m_url.startsWith('/') && m_url != "*") {
        // Absolute-form target ("http://host/path?q"), as sent to proxies.
        const QUrl url = QUrl::fromEncoded(m_url, QUrl::StrictMode);
        if (!url.isValid() || url.scheme().isEmpty())
            return false;
        pathAndQuery = url.path(QUrl::FullyEncoded).toUtf8();
        if (url.hasQuery())
            pathAndQuery += '?' + url.query(QUrl::FullyEncoded).toUtf8();
    }
    const qsizetype hash = pathAndQuery.indexOf('#');
    if (hash >= 0)
        pathAndQuery.truncate(hash);
    const qsizetype q = pathAndQuery.indexOf('?');
    QByteArray rawPath = q >= 0 ? pathAndQuery.left(q) : pathAndQuery;
    if (q >= 0)
        request.rawQuery = pathAndQuery.mid(q + 1);
    if (rawPath.isEmpty())
        rawPath = "/";
    request.path = QString::fromUtf8(QByteArray::fromPercentEncoding(rawPath));
    request.query = QUrlQuery(QString::fromUtf8(request.rawQuery));
    return true;
}

int HttpConnection::onHeadersComplete()
{
    if (m_lastWasValue || !m_field.isEmpty())
        commitHeader();
    m_headerTimer.stop();
    if (m_config.requestTimeoutMs > 0)
        m_requestTimer.start(m_config.requestTimeoutMs);
    HttpRequest &r = *m_building;
    if (r.headers.size() > m_config.maxHeaderCount)
        return reject(431, "invalid_request_error", "too_many_headers",
                      QStringLiteral("a request may carry at most %1 header fields").arg(m_config.maxHeaderCount));
    r.method = http_method_str(http_method(m_parser->method));
    r.httpMajor = m_parser->http_major;
    r.httpMinor = m_parser->http_minor;
    r.peerAddress = m_socket->peerAddress();
    r.peerPort = m_socket->peerPort();
    r.connectionId = m_id;
    r.sequenceOnConnection = m_sequence;
    if (!parseTarget(r))
        return reject(400, "invalid_request_error", "malformed_request", QStringLiteral("invalid request target"));

    const QList<QByteArray> transferCodings = r.headerValues("transfer-encoding");
    if (!transferCodings.isEmpty() && !onlyChunkedTransferCoding(transferCodings))
        return reject(501, "invalid_request_error", "unsupported_transfer_encoding",
                      QStringLiteral("only the chunked transfer-encoding is supported"));
    const QByteArray contentEncoding = r.header("content-encoding");
    if (!isSupportedContentEncoding(contentEncoding))
        return reject(415, "invalid_request_error", "unsupported_content_encoding",
                      QStringLiteral("unsupported content-encoding; use zstd, gzip or deflate"));
    // Decide from Content-Length before reading the body, so an oversized upload is refused at once.
    const bool chunked = (m_parser->flags & F_CHUNKED) != 0;
    if (!chunked && m_parser->content_length != ULLONG_MAX && m_parser->content_length > quint64(m_config.maxBodyBytes))
        return reject(413, "invalid_request_error", "request_too_large",
                      QStringLiteral("request body exceeds %1 bytes").arg(m_config.maxBodyBytes));
    if (r.httpMajor == 1 && r.httpMinor >= 1 && headerNameEquals(r.header("expect"), "100-continue"))
        queueOutput("HTTP/1.1 100 Continue\r\n\r\n");
    if (m_config.headObserver)
        m_config.headObserver(r);
    // CONNECT: http_parser ends the message with its head, whatever its Content-Length says.
    if (!chunked && m_parser->method != HTTP_CONNECT && m_parser->content_length != ULLONG_MAX &&
        m_parser->content_length > 0)
        reserveBody(qsizetype(m_parser->content_length));
    return 0;
}

void HttpConnection::reserveBody(qsizetype contentLength)
{
    // The body's space, taken as soon as its length is known: its first bytes already go there in one copy
    // (readBodyInPlace()), also when the client wrote its head on its own and they come in a later read.
    // Taken at the first body byte instead, those of the read that brings it would first be copied out of Qt's
    // buffer (readAll()), then again into the body (onBody()). A fresh allocation is address space only until
    // the body is written into it (a buffer from the pool is resident already), as it was when one body byte
    // was enough to take it; onHeadersComplete already refused a length above the maximum.
    const qsizetype bytes = contentLength + kBodySlack;
    // A large body goes where the previous one was (its pages are there already), if it fits; a new one gets a
    // little more room, for the next turn of a growing conversation (LargeBufferPool). One exact allocation
    // instead of repeated growth (and its slack kept for the whole turn).
    m_body = LargeBufferPool::local().takeBuffer(bytes);
    if (m_body.isNull()) {
        m_body.reserve(LargeBufferPool::roomFor(bytes));
        adviseLargeBuffer(m_body.data(), m_body.capacity());
    }
    m_bodyReserved = true;
    if (quint64(contentLength) >= kDirectReadMinBodyBytes)
        setDirectBodyRead(true);
}

bool HttpConnection::readBodyInPlace()
{
    // The rest of a body whose length is known and whose space reserveBody() took: read from the socket straight
    // into that space, and let http_parser account for the bytes where they lie. readAll() would first copy
    // them into a fresh buffer of their own, and onBody() again into the body: for a 10 MiB upload that is
    // 10 MiB more copying and a page fault per 4 KiB of the fresh buffer.
    if (m_closing || m_active || !m_building || !m_inbox.isEmpty() || !m_bodyReserved ||
        (m_parser->flags & F_CHUNKED) || m_parser->content_length == ULLONG_MAX || m_parser->content_length == 0)
        return false;
    const qsizetype at = m_body.size();
    // The space after the data (capacity() would also count free space in front of it).
    const qint64 room =
        qMin<qint64>(qint64(m_parser->content_length), m_body.data_ptr().freeSpaceAtEnd() - qsizetype(kBodySlack));
    if (room <= 0)
        return false;
    m_body.resize(at + qsizetype(room)); // within the capacity: no reallocation, the new bytes uninitialised
    char *const into = m_body.data() + at;
    // First what Qt already holds (at most HttpConnection::kQtReadBufferBytes), then what the kernel holds,
    // received where it belongs.
    qint64 got = 0;
    if (m_socket->bytesAvailable() > 0)
        got = qMax<qint64>(0, m_socket->read(into, qMin(room, m_socket->bytesAvailable())));
    if (m_directBodyRead) {
        while (got < room) {
            const qint64 n = receiveNow(m_socket->socketDescriptor(), into + got, room - got);
            if (n <= 0)
                break; // nothing more waiting, or the end of the stream, which Qt's own read reports
            got += n;
        }
    }
    m_body.truncate(at + qsizetype(got));
    if (got == 0)
        return false;
    m_inPlacePending = qsizetype(got);
    // The parser reads the bytes through a view of the body; processInbox() drops the view once it is parsed.
    m_inbox = QByteArray::fromRawData(m_body.constData() + at, qsizetype(got));
    processInbox();
    m_inPlacePending = 0; // whatever the parser did not report (it stopped on an error) is no body anymore
    return true;
}

void HttpConnection::setDirectBodyRead(bool on)
{
    m_directBodyRead = on && socketIoAvailable();
}

int HttpConnection::onBody(const char *at, size_t length)
{
    if (m_inPlacePending > 0) {
        // Read into the body by readBodyInPlace(): already where it belongs, and within Content-Length.
        Q_ASSERT(qsizetype(length) <= m_inPlacePending &&
                 at == m_body.constData() + m_body.size() - m_inPlacePending);
        m_inPlacePending -= qsizetype(length);
        m_building->bodyBytesInPlace += qint64(length);
    } else {
        if (m_body.size() + qint64(length) > m_config.maxBodyBytes)
            return reject(413, "invalid_request_error", "request_too_large",
                          QStringLiteral("request body exceeds %1 bytes").arg(m_config.maxBodyBytes));
        // A body of known length has its space already (reserveBody()); a chunked one grows as it comes.
        m_body.append(at, qsizetype(length));
    }
    if (m_config.requestTimeoutMs > 0)
        m_requestTimer.start(m_config.requestTimeoutMs); // a body that keeps moving is not slow
    return 0;
}

int HttpConnection::onMessageComplete()
{
    m_requestTimer.stop();
    setDirectBodyRead(false);
    m_building->keepAlive = http_should_keep_alive(m_parser.get()) != 0;
    m_building->completedAtUs = m_config.clock->monotonicUs();
    m_messageComplete = true;
    // Stop after this message: the next pipelined request is parsed once this one's response ended.
    http_parser_pause(m_parser.get(), 1);
    return 0;
}

} // namespace sy
