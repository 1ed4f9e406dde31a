#include "upstream/UpstreamCall.h"

#include <QLoggingCategory>
#include <QNetworkReply>
#include <utility>

namespace sy {

Q_LOGGING_CATEGORY(lcUpstream, "sy.upstream", QtInfoMsg)

namespace {

constexpr qint64 readChunkBytes = 16 * 1024;

// Errors that mean the transport broke. Every other error Qt reports once a status line arrived is Qt's
// translation of the HTTP status (400 -> ProtocolInvalidOperationError, 407 -> ProxyAuthenticationRequired,
// 404 -> ContentNotFoundError, ...), and such a response arrived completely. That translation is spread over
// all of Qt's error ranges, hence the explicit list instead of a range check.
bool isTransportError(QNetworkReply::NetworkError error)
{
    switch (error) {
    case QNetworkReply::ConnectionRefusedError:
    case QNetworkReply::RemoteHostClosedError:
    case QNetworkReply::HostNotFoundError:
    case QNetworkReply::TimeoutError:
    case QNetworkReply::OperationCanceledError:
    case QNetworkReply::SslHandshakeFailedError:
    case QNetworkReply::TemporaryNetworkFailureError:
    case QNetworkReply::NetworkSessionFailedError:
    case QNetworkReply::BackgroundRequestNotAllowedError:
    case QNetworkReply::TooManyRedirectsError:
    case QNetworkReply::InsecureRedirectError:
    case QNetworkReply::UnknownNetworkError:
    case QNetworkReply::ProxyConnectionRefusedError:
    case QNetworkReply::ProxyConnectionClosedError:
    case QNetworkReply::ProxyNotFoundError:
    case QNetworkReply::ProxyTimeoutError:
    case QNetworkReply::UnknownProxyError:
    case QNetworkReply::ProtocolUnknownError:
    case QNetworkReply::ProtocolFailure:
        return true;
    default:
        return false;
    }
}

bool isEventStreamType(const QByteArray &contentType)
{
    const qsizetype semicolon = contentType.indexOf(';');
    const QByteArray mediaType = (semicolon < 0 ? contentType : contentType.first(semicolon)).trimmed().toLower();
    return mediaType == "text/event-stream";
}

} // namespace

UpstreamCall::UpstreamCall(QNetworkReply *reply, const QUrl &url, qint64 maxBodyBytes, QObject *parent)
    : QObject(parent), m_reply(reply), m_url(url), m_maxBodyBytes(maxBodyBytes), m_parser(maxBodyBytes)
{
    // Qt forwards the read buffer size to its HTTP thread only once the request has been handed over there
    // (for a request with a body that happens from the event loop, after start() returned); a size set
    // earlier never reaches the socket reader. So it is set again at the first sign of the transfer.
    reply->setReadBufferSize(readBufferBytes);
    // Qt may open a second socket (IPv4 and IPv6) or resend on a stale keep-alive connection; the stages
    // are measured from the first of each.
    connect(reply, &QNetworkReply::socketStartedConnecting, this, [this] {
        m_reply->setReadBufferSize(readBufferBytes);
        if (!m_done && !std::exchange(m_connectingSeen, true))
            emit connecting();
    });
    connect(reply, &QNetworkReply::requestSent, this, [this] {
        m_reply->setReadBufferSize(readBufferBytes);
        if (!m_done && !std::exchange(m_requestSentSeen, true))
            emit requestSent();
    });
    connect(reply, &QNetworkReply::metaDataChanged, this, [this] { pump(); });
    connect(reply, &QNetworkReply::readyRead, this, [this] { pump(); });
    connect(reply, &QNetworkReply::finished, this, [this] {
        m_replyFinished = true;
        pump();
    });
}

UpstreamCall::~UpstreamCall()
{
    detachReply();
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
    // Bytes Qt already buffered raise no new readyRead, so the drain has to be scheduled here.
    QMetaObject::invokeMethod(
        this, [this] { pump(); }, Qt::QueuedConnection);
}

void UpstreamCall::noteHeaders()
{
    if (m_headersSeen || !m_reply)
        return;
    const QVariant status = m_reply->attribute(QNetworkRequest::HttpStatusCodeAttribute);
    if (!status.isValid())
        return;
    m_headersSeen = true;
    m_status = status.toInt();
    m_eventStream = m_status >= 200 && m_status < 300 && isEventStreamType(m_reply->rawHeader("Content-Type"));
    emit headersReceived(m_status, m_reply->rawHeaderPairs());
}

void UpstreamCall::pump()
{
    // A handler running a nested event loop must not start a second drain of the same reply.
    if (m_pumping || m_done)
        return;
    const QPointer<UpstreamCall> self(this);
    m_pumping = true;
    noteHeaders();
    while (self && !m_done && !m_paused && m_headersSeen) {
        if (m_eventStream && m_parser.hasNext()) {
            const SseParser::Item item = m_parser.takeNext();
            if (item.kind == SseParser::Item::Kind::Event)
                emit sseEvent(item.event);
            else
                emit keepaliveComment();
            continue;
        }
        if (!m_reply || m_reply->bytesAvailable() <= 0)
            break;
        const QByteArray chunk = m_reply->read(readChunkBytes);
        if (m_eventStream) {
            m_parser.feed(chunk);
            if (m_parser.overflowed())
                finish(Outcome::ConnectionLost, QStringLiteral("an SSE event exceeds %1 bytes").arg(m_maxBodyBytes));
        } else if (m_body.size() + chunk.size() > m_maxBodyBytes) {
            finish(Outcome::ConnectionLost, QStringLiteral("response body exceeds %1 bytes").arg(m_maxBodyBytes));
        } else {
            m_body.append(chunk);
        }
    }
    if (!self)
        return;
    m_pumping = false;
    const bool drained = !(m_eventStream && m_parser.hasNext()) && (!m_reply || m_reply->bytesAvailable() <= 0);
    if (!m_done && !m_paused && m_replyFinished && drained)
        complete();
}

void UpstreamCall::complete()
{
    const QNetworkReply::NetworkError error = m_reply->error();
    const QString errorText = m_reply->errorString();
    if (!m_headersSeen) {
        finish(Outcome::ConnectionFailed, error == QNetworkReply::NoError ? QStringLiteral("no response") : errorText);
        return;
    }
    if (isTransportError(error)) {
        finish(Outcome::ConnectionLost, errorText);
        return;
    }
    if (m_eventStream) {
        // A close-delimited body ends without a transport error, so only the parser can tell a cut stream.
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
    // Stop the transfer before anyone hears about it, so the connection slot is free when finished() runs.
    detachReply();
    m_body.clear();
    qCDebug(lcUpstream).noquote() << "upstream call" << m_url.toString(QUrl::RemoveUserInfo | QUrl::RemoveQuery)
                                  << "status" << m_status << outcomeName(outcome) << detail;
    emit finished(outcome, detail);
    deleteLater();
}

void UpstreamCall::detachReply()
{
    if (!m_reply)
        return;
    QNetworkReply *reply = m_reply;
    m_reply = nullptr;
    disconnect(reply, nullptr, this, nullptr);
    if (reply->isRunning())
        reply->abort();
    reply->deleteLater();
}

} // namespace sy
