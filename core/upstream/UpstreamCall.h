#pragma once

#include "upstream/HttpResponseParser.h"
#include "upstream/SseParser.h"
#include "upstream/UpstreamConnection.h"

#include <QByteArray>
#include <QObject>
#include <QPointer>
#include <QUrl>
#include <memory>
#include <optional>

namespace sy {

class UpstreamClient;

// The egress proxy one request goes through (upstream/egress/ picks it). The name is what the request log
// records; connections are pooled per egress, so the one named is the one that carries the request.
struct UpstreamEgress
{
    QString name;
    QNetworkProxy proxy;
};

struct UpstreamRequest
{
    QByteArray method;
    QUrl url;
    // Sent as given, except headers the transport owns (Host, Content-Length, Connection, Keep-Alive,
    // Transfer-Encoding, TE, Upgrade, Proxy-Connection, Expect, Accept-Encoding): the request always says
    // "Accept-Encoding: identity", so bodies arrive (and are handed over) uncompressed.
    HttpHeaders headers;
    QByteArray body;
    // Bound on a buffered (non-SSE) body and on one SSE event; a larger response is cut off as broken.
    qint64 maxBodyBytes = 64 * 1024 * 1024;
    // Through this egress proxy instead of the client's proxy setting.
    std::optional<UpstreamEgress> egress;
    // The head's start, built ahead by upstreamRequestHeadStart() from method, url and the headers of then (a
    // turn builds it while its slot claim is on its way); `headers` are then only those that follow it (the
    // access token). Empty: the whole head is built when the call starts. Content-Length and the transport's
    // own headers are added at the start either way.
    QByteArray preparedHead;
    // The body's last byte is not sent until UpstreamCall::releaseTail(): everything else goes out at once,
    // but the upstream cannot act on a request it does not have whole (its Content-Length says more is coming),
    // so a call aborted before the release leaves it nothing to run. For a request sent while the right to send
    // it is still being decided (a turn's slot claim). A body-less request is sent whole.
    bool holdLastByte = false;
};

// The part of `request`'s head that does not depend on its body or route: the request line, Host and the
// caller's headers (less those the transport owns), for UpstreamRequest::preparedHead.
QByteArray upstreamRequestHeadStart(const UpstreamRequest &request);

class UpstreamCall;

// The one receiver of a call's events (a Turn), called instead of UpstreamCall::sseEvent() (setEventListener()).
// A listener destroyed while it is set detaches itself: the call never reaches a listener that is gone, even if
// its owner forgot to unset it (a call let finish after its turn may outlive that turn by seconds).
class UpstreamEventListener
{
public:
    virtual void upstreamEvent(const SseEvent &event) = 0;

protected:
    UpstreamEventListener() = default;
    UpstreamEventListener(const UpstreamEventListener &) = delete;
    UpstreamEventListener &operator=(const UpstreamEventListener &) = delete;
    virtual ~UpstreamEventListener(); // virtual: UpstreamCall, a friend, could reach it

private:
    friend class UpstreamCall;
    UpstreamCall *m_listenedCall = nullptr; // the call this is set on; cleared by either side's detach
};

// One upstream HTTP/1.1 exchange, created by UpstreamClient::start(). Lives in the client's thread.
//
// Signals, in order: connecting() (at most once, only when a new connection is opened; a reused keep-alive
// connection skips it), requestSent() (at most once, when the kernel took the last byte of the request: end
// of the connect stage; always before headersReceived()), headersReceived() (even while paused; headers are
// not body data), then either sseEvent() / keepaliveComment() as they arrive (2xx text/event-stream; any
// comment line counts as a keepalive) or one bodyReceived() with the complete body (everything else), then
// finished() exactly once. After finished() the call deletes itself (deleteLater), so hold it in a QPointer
// if you keep it. Nothing is emitted from inside start(); the exchange begins from the event loop.
//
// A request is never sent twice. The only retry is invisible to the upstream: when a pooled keep-alive
// connection turns out closed before the kernel took any byte of the request, a new connection is opened
// (and connecting() emitted) instead.
//
// abort() emits finished(Aborted) synchronously, before it returns, unless the call had already finished
// (then it does nothing). Nothing at all is emitted after finished(), whatever the caller does. Handlers may
// call abort() or pause() from inside any signal; delivery stops at once. An aborted call closes its
// connection unless the response had already arrived completely.
class UpstreamCall : public QObject, private UpstreamConnectionReader
{
    Q_OBJECT

public:
    enum class Outcome
    {
        Completed,        // the whole response arrived (any HTTP status; an SSE stream ended between events)
        ConnectionFailed, // the request never fully reached the upstream: refused, DNS, TLS, proxy, or the
                          // connection failed while the request was being written
        ConnectionLost,   // the request was sent, then the response broke: closed before or inside the head,
                          // dropped mid-body, SSE cut inside an event, malformed or oversized response
        Aborted           // abort() was called
    };
    Q_ENUM(Outcome)

    // Bound on the socket bytes Qt reads ahead. While paused nothing is read, so once this fills Qt stops
    // reading the socket and TCP flow control pushes back on the upstream.
    static constexpr qint64 readBufferBytes = 64 * 1024;

    ~UpstreamCall() override;

    void abort(const QString &reason = {});
    // Sends the byte UpstreamRequest::holdLastByte held back; nothing is emitted from inside. Until then the
    // call delivers nothing: a response byte that arrives before it (the upstream answered a request it did not
    // have whole) ends the call with ConnectionFailed, as does a close. The call is sent then as any other.
    void releaseTail();
    bool isTailHeld() const { return m_tailHeld; }
    // Backpressure: stop delivering (and reading) body data until resume(). Data already buffered is
    // delivered after resume() from the event loop, never synchronously inside resume().
    void pause();
    void resume();

    // Called instead of emitting sseEvent() while set: for the one receiver of a stream's events (a Turn), a
    // direct call per event instead of a signal emission (bench/HISTORY.md, "Upstream reads without signals").
    // Whoever sets it unsets it (null) when it stops listening, as it would disconnect; from inside its own call
    // too. A listener set on another call leaves this one; one destroyed while set leaves it too.
    void setEventListener(UpstreamEventListener *listener);

    bool isPaused() const { return m_paused; }
    bool isFinished() const { return m_done; }
    int statusCode() const { return m_status; } // -1 before headers
    // The whole request is in the kernel already (a plain pooled connection writes at once; requestSent()
    // follows from the event loop).
    bool requestWrittenAll() const;
    bool isEventStream() const { return m_eventStream; }
    const QUrl &url() const { return m_url; }
    // The egress proxy carrying this call (empty: direct or the client's proxy setting). Every connection
    // the call uses comes from the pool under a key that includes it.
    const QString &egressName() const { return m_endpoint.egressName; }

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
    UpstreamCall(UpstreamClient *client, const UpstreamRequest &request, const UpstreamEndpoint &endpoint,
                 const QSslConfiguration &tls);

    void begin();
    // begin() for the common case, run inside UpstreamClient::start(): an idle pooled connection is taken and,
    // when it is plain TCP straight to the upstream, the request written at once. False (nothing done) when
    // there is none.
    bool beginOnIdleConnection();
    bool supportedUrl() const;
    // Takes an idle pooled connection for this call and sends on it; false when the pool has none.
    bool takeIdleConnection(bool fromLoop);
    void openConnection();
    void attach(UpstreamConnection *connection);
    void sendRequest();
    void onWritten();
    void onConnectionClosed();
    bool noteRequestSent();
    void noteHeaders();
    void takeBody();
    QString sseOverflowDetail() const;
    void pump();
    void upstreamReadable() override { pump(); }
    void complete();
    void finish(Outcome outcome, const QString &detail);
    void releaseConnection();

    UpstreamClient *m_client;
    QUrl m_url;
    UpstreamEndpoint m_endpoint;
    QSslConfiguration m_tls;
    QByteArray m_requestHead;
    QByteArray m_requestBody; // shares the caller's bytes
    qint64 m_maxBodyBytes;
    UpstreamConnection *m_connection = nullptr;
    std::unique_ptr<HttpResponseParser> m_http;
    SseParser m_parser;
    UpstreamEventListener *m_eventListener = nullptr;
    QByteArray m_body;
    int m_status = -1;
    bool m_headRequest = false;
    bool m_connectingSeen = false;
    bool m_requestSentSeen = false;
    bool m_firstEventSeen = false;    // its socket no longer goes first in a pass (EpollEventDispatcher)
    bool m_requestWriteBegun = false; // sendRequest() wrote this call's request (a pooled connection's flags
                                      // still describe its previous exchange until then)
    bool m_headersSeen = false;
    bool m_eventStream = false;
    bool m_receivedAny = false;  // any response byte on this call's connection
    bool m_peerClosed = false;   // the connection closed after the request went out
    bool m_eofFed = false;
    bool m_trailingBytes = false; // bytes after the response: the connection cannot be reused
    bool m_paused = false;
    bool m_pumping = false;
    bool m_done = false;
    bool m_tailHeld = false;         // UpstreamRequest::holdLastByte, until releaseTail()
    bool m_heldOnConnection = false; // this connection was written to without the body's last byte
};

} // namespace sy
