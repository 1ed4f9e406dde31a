#include "http/HttpResponse.h"

#include "http/HttpConnection.h"
#include "http/WriteCoalescer.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QLoggingCategory>
#include <charconv>
#include <http_parser.h>

namespace sy {

namespace {

Q_LOGGING_CATEGORY(lcHttp, "switchyard.http")

bool isFramingHeader(QByteArrayView name)
{
    return headerNameEquals(name, "content-length") || headerNameEquals(name, "transfer-encoding") ||
           headerNameEquals(name, "connection");
}

bool isSafeHeaderText(const QByteArray &s)
{
    return !s.contains('\r') && !s.contains('\n') && !s.contains('\0');
}

bool statusHasNoBody(int status)
{
    return (status >= 100 && status < 200) || status == 204 || status == 304;
}

} // namespace

HttpResponse::HttpResponse(HttpConnection *connection, HttpRequestPtr request, qint64 lowWatermark,
                           qint64 highWatermark)
    : QObject(connection), m_connection(connection), m_request(std::move(request)), m_lowWatermark(lowWatermark),
      m_highWatermark(highWatermark), m_headOnly(m_request && m_request->method == "HEAD")
{
}

HttpResponse::~HttpResponse() = default;

QByteArray HttpResponse::jsonErrorBody(QByteArrayView type, QByteArrayView code, const QString &message)
{
    QJsonObject error;
    error.insert(QStringLiteral("message"), message);
    error.insert(QStringLiteral("type"), QString::fromUtf8(type));
    error.insert(QStringLiteral("code"), QString::fromUtf8(code));
    return QJsonDocument(QJsonObject{{QStringLiteral("error"), error}}).toJson(QJsonDocument::Compact);
}

QByteArray HttpResponse::reasonPhrase(int status)
{
    const char *text = http_status_str(http_status(status));
    if (!text || text[0] == '<')
        return QByteArrayLiteral("Status");
    return QByteArray(text);
}

void HttpResponse::setHeader(QByteArray name, QByteArray value)
{
    if (m_committed) {
        qCWarning(lcHttp) << "header set after the response head was sent:" << name;
        return;
    }
    if (name.isEmpty() || !isSafeHeaderText(name) || name.contains(':') || !isSafeHeaderText(value)) {
        qCWarning(lcHttp) << "refusing a header with a control character in its name or value:" << name.left(64);
        return;
    }
    m_headers.append({std::move(name), std::move(value)});
}

bool HttpResponse::wantsClose() const
{
    return !m_request || !m_request->keepAlive;
}

QByteArray HttpResponse::head(int status, const QByteArray &contentType, qint64 contentLength, bool chunked)
{
    QByteArray h;
    h.reserve(256);
    h += "HTTP/1.1 " + QByteArray::number(status) + ' ' + reasonPhrase(status) + "\r\n";
    for (const HttpHeader &header : std::as_const(m_headers)) {
        if (isFramingHeader(header.first) || (!contentType.isEmpty() && headerNameEquals(header.first, "content-type")))
            continue;
        h += header.first + ": " + header.second + "\r\n";
    }
    if (!contentType.isEmpty())
        h += "Content-Type: " + contentType + "\r\n";
    if (chunked)
        h += "Transfer-Encoding: chunked\r\n";
    else if (contentLength >= 0)
        h += "Content-Length: " + QByteArray::number(contentLength) + "\r\n";
    if (wantsClose())
        h += "Connection: close\r\n";
    else if (m_request->httpMinor == 0)
        h += "Connection: keep-alive\r\n";
    h += "\r\n";
    return h;
}

bool HttpResponse::sendRaw(QByteArrayView a, QByteArrayView b, QByteArrayView c)
{
    if (m_clientGone)
        return false;
    return m_connection->queueOutput(a, b, c);
}

void HttpResponse::sendFull(int status, QByteArray contentType, QByteArray body)
{
    if (m_committed || m_finished) {
        if (!m_clientGone)
            qCWarning(lcHttp) << "sendFull() on a response that was already sent; status" << status;
        return;
    }
    m_committed = true;
    m_status = status;
    const bool noBody = statusHasNoBody(status);
    if (noBody)
        body.clear();
    m_bodyBytes = body.size();
    sendRaw(head(status, contentType, noBody ? -1 : body.size(), false), m_headOnly ? QByteArrayView() : body);
    finish(wantsClose());
}

void HttpResponse::sendJsonError(int status, QByteArray type, QByteArray code, QString message)
{
    sendFull(status, QByteArrayLiteral("application/json"), jsonErrorBody(type, code, message));
}

void HttpResponse::beginStream(int status, QByteArray contentType)
{
    if (m_committed || m_finished) {
        if (!m_clientGone)
            qCWarning(lcHttp) << "beginStream() on a response that was already sent; status" << status;
        return;
    }
    if (statusHasNoBody(status)) {
        sendFull(status, contentType, {});
        return;
    }
    if (contentType.startsWith("text/event-stream")) {
        m_headers.append(HttpHeader("Cache-Control", "no-cache"));
        m_headers.append(HttpHeader("X-Accel-Buffering", "no"));
    }
    m_committed = true;
    m_streaming = true;
    m_status = status;
    // HTTP/1.0 has no chunked coding: the body runs until the connection closes.
    m_chunked = m_request && !(m_request->httpMajor == 1 && m_request->httpMinor == 0);
    sendRaw(head(status, contentType, -1, m_chunked));
    updateCongestion();
}

bool HttpResponse::write(QByteArray data)
{
    if (!m_streaming || m_finished || m_clientGone)
        return false;
    if (data.isEmpty())
        return true; // an empty chunk would terminate the chunked body
    // A stream's first body bytes leave at once, with the head: the client's time to first byte does not wait
    // for the rest of the pass (at c=1 the upstream's first read brings several events, whose handling came
    // in front of the first byte). Later writes of the pass are still coalesced.
    const bool firstBytes = m_bodyBytes == 0;
    m_bodyBytes += data.size();
    if (m_headOnly)
        return true;
    bool ok;
    if (m_chunked) {
        // Framing and payload are queued as they are: no concatenated copy of the payload.
        // std::to_chars, not snprintf: this runs for every event of every stream (snprintf was ~700
        // instructions a call, 3 % of the proxy thread's in bench/instructions.sh).
        char sizeLine[24];
        char *end = std::to_chars(sizeLine, sizeLine + sizeof sizeLine - 2, static_cast<unsigned long long>(data.size()), 16).ptr;
        *end++ = '\r';
        *end++ = '\n';
        ok = sendRaw(QByteArrayView(sizeLine, end - sizeLine), data, "\r\n");
    } else {
        ok = sendRaw(data);
    }
    if (ok && firstBytes && !m_clientGone && WriteCoalescer::flushMode() == WriteCoalescer::FlushMode::FirstBytesAtOnce)
        m_connection->flushQueuedNow();
    updateCongestion();
    return ok && !m_clientGone;
}

void HttpResponse::end()
{
    if (m_finished)
        return;
    if (!m_streaming) {
        qCWarning(lcHttp) << "end() without beginStream(); use sendFull() for complete bodies";
        return;
    }
    if (m_chunked && !m_headOnly)
        sendRaw("0\r\n\r\n"); // leaves in the same send() as whatever was written just before
    finish(wantsClose() || !m_chunked);
}

void HttpResponse::abortConnection()
{
    if (m_finished)
        return;
    finish(true);
}

qint64 HttpResponse::pendingBytes() const
{
    return m_clientGone ? 0 : m_connection->pendingBytes();
}

void HttpResponse::finish(bool closeConnection)
{
    m_finished = true;
    m_congested = false;
    emit finished();
    m_connection->responseFinished(this, closeConnection);
}

void HttpResponse::markClientGone()
{
    m_clientGone = true;
    if (m_finished)
        return;
    m_finished = true;
    m_congested = false;
    emit clientDisconnected();
    emit finished();
}

void HttpResponse::updateCongestion()
{
    if (!m_congested && !m_finished && pendingBytes() > m_highWatermark)
        m_congested = true;
}

void HttpResponse::checkDrained()
{
    if (!m_congested || m_finished || pendingBytes() > m_lowWatermark)
        return;
    m_congested = false;
    if (m_connection->inWrite()) {
        // Reached from inside write(): let the writer return before it is asked for more.
        QMetaObject::invokeMethod(
            this,
            [this] {
                if (!m_finished && !m_congested)
                    emit drained();
            },
            Qt::QueuedConnection);
        return;
    }
    emit drained();
}

} // namespace sy
