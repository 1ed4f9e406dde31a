#pragma once

#include "upstream/SseParser.h"

#include <QByteArray>
#include <QList>
#include <QObject>
#include <QPair>
#include <QPointer>
#include <QUrl>

class QNetworkReply;

namespace sy {

using HttpHeaders = QList<QPair<QByteArray, QByteArray>>;

struct UpstreamRequest
{
    QByteArray method;
    QUrl url;
    // Sent as given, except headers the transport owns (Host, Content-Length, Connection, Keep-Alive,
    // Transfer-Encoding, TE, Upgrade, Proxy-Connection, Accept-Encoding): Qt advertises the encodings it can
    // decode (Debian's 6.4: zstd, br, gzip, deflate) and hands over the decoded body, so a client's own
    // Accept-Encoding would only make Qt pass compressed bytes through undecoded.
    HttpHeaders headers;
    QByteArray body;
    // Bound on a buffered (non-SSE) body and on one SSE event; a larger response is cut off as broken.
    qint64 maxBodyBytes = 64 * 1024 * 1024;
};

// One upstream HTTP exchange, created by UpstreamClient::start(). Lives in the client's thread.
//
// Signals, in order: connecting() (at most once, only when a new connection is opened; a reused keep-alive
// connection skips it), requestSent() (at most once: end of the connect stage), headersReceived() (even while
// paused; headers are not body data), then either sseEvent() / keepaliveComment() as they arrive (2xx
// text/event-stream; any comment line counts as a keepalive) or one bodyReceived() with the complete body
// (everything else), then finished() exactly once. After finished() the call deletes itself (deleteLater),
// so hold it in a QPointer if you keep it.
//
// abort() emits finished(Aborted) synchronously, before it returns, unless the call had already finished
// (then it does nothing). Nothing at all is emitted after finished(), whatever the caller does. Handlers may
// call abort() or pause() from inside any signal; delivery stops at once.
class UpstreamCall : public QObject
{
    Q_OBJECT

public:
    enum class Outcome
    {
        Completed,        // the whole response arrived (any HTTP status; an SSE stream ended between events)
        ConnectionFailed, // no response at all: refused, DNS, TLS, proxy, closed before the status line
        ConnectionLost,   // after the headers: dropped mid-body, SSE cut inside an event, oversized response
        Aborted           // abort() was called
    };
    Q_ENUM(Outcome)

    // Qt's own buffer for unread body bytes. While paused nothing is read, so once this fills Qt stops
    // reading the socket and TCP flow control pushes back on the upstream.
    static constexpr qint64 readBufferBytes = 64 * 1024;

    ~UpstreamCall() override;

    void abort(const QString &reason = {});
    // Backpressure: stop delivering (and reading) body data until resume(). Data already buffered is
    // delivered after resume() from the event loop, never synchronously inside resume().
    void pause();
    void resume();

    bool isPaused() const { return m_paused; }
    bool isFinished() const { return m_done; }
    int statusCode() const { return m_status; } // -1 before headers
    bool isEventStream() const { return m_eventStream; }
    const QUrl &url() const { return m_url; }

    static QString outcomeName(Outcome outcome);

signals:
    void connecting();
    void requestSent();
    void headersReceived(int status, const sy::HttpHeaders &headers);
    void sseEvent(const sy::SseEvent &event);
    void keepaliveComment();
    void bodyReceived(const QByteArray &body);
    void finished(sy::UpstreamCall::Outcome outcome, const QString &detail);

private:
    friend class UpstreamClient;
    UpstreamCall(QNetworkReply *reply, const QUrl &url, qint64 maxBodyBytes, QObject *parent);

    void noteHeaders();
    void pump();
    void complete();
    void finish(Outcome outcome, const QString &detail);
    void detachReply();

    QPointer<QNetworkReply> m_reply;
    QUrl m_url;
    qint64 m_maxBodyBytes;
    SseParser m_parser;
    QByteArray m_body;
    int m_status = -1;
    bool m_connectingSeen = false;
    bool m_requestSentSeen = false;
    bool m_headersSeen = false;
    bool m_eventStream = false;
    bool m_replyFinished = false;
    bool m_paused = false;
    bool m_pumping = false;
    bool m_done = false;
};

} // namespace sy
