#pragma once

#include "http/HttpRequest.h"

#include <QByteArray>
#include <QObject>
#include <QString>

namespace sy {

class HttpConnection;

// The answer to one downstream request.
//
// Lifetime: the connection that received the request owns its HttpResponse. The object stays valid until
// the response has ended (sendFull(), sendJsonError(), end() or abortConnection()) or the client has
// disconnected, whichever comes first; it is then deleted with deleteLater(). Code that answers
// asynchronously must therefore hold a QPointer<HttpResponse> and check it before every use, and should
// stop its work on clientDisconnected(). All calls must be made on the server's thread.
//
// Framing is the response's business: Content-Length, Transfer-Encoding and Connection headers given to
// setHeader() are ignored. A response with a body of known size uses sendFull(); a stream uses
// beginStream() + write()... + end() (chunked for HTTP/1.1, raw bytes then close for HTTP/1.0).
class HttpResponse : public QObject
{
    Q_OBJECT

public:
    ~HttpResponse() override;

    HttpRequestPtr request() const { return m_request; }

    // Adds a header line to the response head; calling it twice with one name sends both lines. Ignored
    // (with a warning) once the head has been sent, and for names or values containing CR, LF or NUL.
    void setHeader(QByteArray name, QByteArray value);

    // Sends status, headers and the whole body with Content-Length, and ends the response.
    void sendFull(int status, QByteArray contentType, QByteArray body);
    // sendFull() with {"error":{"message":...,"type":...,"code":...}} as application/json.
    void sendJsonError(int status, QByteArray type, QByteArray code, QString message);

    // Sends status and headers at once and starts a body of unknown length. For text/event-stream the
    // head also carries Cache-Control: no-cache and X-Accel-Buffering: no.
    void beginStream(int status, QByteArray contentType);
    // Queues data for the client; everything written during one event-loop pass leaves in one send() before
    // the loop polls again (large amounts at once). Empty data is a no-op.
    // Returns false when the client is gone, the stream was not begun or has ended. Writing never fails
    // because of congestion: check congested() and wait for drained() to keep memory bounded.
    bool write(QByteArray data);
    // Terminates the stream (final chunk) and ends the response.
    void end();
    // Closes the connection without finishing the response (the client sees a truncated body). Bytes
    // already written are still delivered. Ends the response.
    void abortConnection();

    bool isCommitted() const { return m_committed; } // the status line has been sent
    bool isFinished() const { return m_finished; }
    bool clientGone() const { return m_clientGone; }
    // Bytes accepted by write() that have not yet been handed to the kernel.
    qint64 pendingBytes() const;
    // True after pendingBytes() rose above the high watermark, until it falls below the low watermark.
    bool congested() const { return m_congested; }
    int status() const { return m_status; }
    qint64 bodyBytesWritten() const { return m_bodyBytes; }

    static QByteArray jsonErrorBody(QByteArrayView type, QByteArrayView code, const QString &message);
    static QByteArray reasonPhrase(int status);

signals:
    // Emitted once when the peer closes or resets the connection before this response ended.
    void clientDisconnected();
    // Emitted when pendingBytes() falls below the low watermark after congested() became true.
    void drained();
    // Emitted once when the response ends for any reason (including the client going away).
    void finished();

private:
    friend class HttpConnection;
    HttpResponse(HttpConnection *connection, HttpRequestPtr request, qint64 lowWatermark, qint64 highWatermark);

    QByteArray head(int status, const QByteArray &contentType, qint64 contentLength, bool chunked);
    bool wantsClose() const;
    void finish(bool closeConnection);
    void markClientGone();
    void checkDrained();
    void updateCongestion();
    bool sendRaw(QByteArrayView a, QByteArrayView b = {}, QByteArrayView c = {});

    HttpConnection *m_connection;
    HttpRequestPtr m_request;
    HttpHeaderList m_headers;
    qint64 m_lowWatermark;
    qint64 m_highWatermark;
    qint64 m_bodyBytes = 0;
    int m_status = 0;
    bool m_committed = false;
    bool m_finished = false;
    bool m_streaming = false;
    bool m_chunked = false;
    bool m_clientGone = false;
    bool m_congested = false;
    bool m_headOnly = false;
};

} // namespace sy
