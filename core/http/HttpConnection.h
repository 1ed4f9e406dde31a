#pragma once

#include "http/HttpRequest.h"

#include <QByteArray>
#include <QByteArrayView>
#include <QObject>
#include <QPointer>
#include <QTimer>
#include <functional>
#include <memory>

class QTcpSocket;
struct http_parser;

namespace sy {

class Clock;
class HttpResponse;
class WriteCoalescer;

struct HttpServerConfig
{
    qint64 maxBodyBytes = 32 * 1024 * 1024;
    qint64 maxHeaderBytes = 64 * 1024;
    int idleTimeoutMs = 120 * 1000;   // keep-alive connection without a request in progress
    int requestTimeoutMs = 30 * 1000; // a started request must complete its head (and keep its body moving)
    // A request's head must be complete this long after its first byte, and a new connection's first head this
    // long after the accept (slowloris); the effective bound is the smaller of this and requestTimeoutMs.
    int headerTimeoutMs = 10 * 1000;
    int maxHeaderCount = 100;
    int lingerMs = 2000;              // how long to drain unread input after we stop sending, before closing
    qint64 lowWatermark = 64 * 1024;
    qint64 highWatermark = 256 * 1024;
    const Clock *clock = nullptr;
    // Batches each connection's output into one send per event-loop pass; without one, output leaves at once.
    WriteCoalescer *coalescer = nullptr;
    // HttpServer::setHeadObserver().
    std::function<void(const HttpRequest &)> headObserver;
};

using HttpDispatcher = std::function<void(HttpRequestPtr, HttpResponse *)>;

// One accepted downstream socket: parses requests with libhttp-parser, hands them to the dispatcher one at a
// time (a pipelined request waits until the previous response ended) and owns the HttpResponse objects.
// Internal to the http module; use HttpServer.
class HttpConnection : public QObject
{
    Q_OBJECT

public:
    HttpConnection(QTcpSocket *socket, quint64 id, const HttpServerConfig &config, HttpDispatcher dispatcher,
                   QObject *parent);
    ~HttpConnection() override;

    quint64 id() const { return m_id; }
    // Drops the connection at once (server shutdown); an unfinished response reports clientDisconnected().
    void abort();
    // Answers with a JSON error before any request is read and closes (e.g. too many connections).
    void refuse(int status, QByteArray type, QByteArray code, QString message);

    // Used by HttpResponse. queueOutput() appends the parts to the connection's output, which goes to the
    // kernel in one send() before the event loop polls again (at once when it grows large); false when the
    // client is gone.
    bool queueOutput(QByteArrayView a, QByteArrayView b = {}, QByteArrayView c = {});
    // Hands what is queued to the kernel now instead of at the end of the pass (a stream's first bytes).
    void flushQueuedNow();
    qint64 pendingBytes() const;
    void responseFinished(HttpResponse *response, bool closeConnection);
    bool inWrite() const { return m_writeDepth > 0; }

    // Used by WriteCoalescer: hands the queued output to the kernel (what it does not take, to the socket's
    // buffer, which Qt writes when the socket becomes writable).
    void flushOutput();

    // libhttp-parser callbacks (called through C trampolines).
    int onMessageBegin();
    int onUrl(const char *at, size_t length);
    int onHeaderField(const char *at, size_t length);
    int onHeaderValue(const char *at, size_t length);
    int onHeadersComplete();
    int onBody(const char *at, size_t length);
    int onMessageComplete();

signals:
    void closed(sy::HttpConnection *connection);

private:
    struct PendingError
    {
        int status = 0;
        QByteArray type;
        QByteArray code;
        QString message;
    };

    void onReadyRead();
    void onBytesWritten();
    void processInbox();
    bool readBodyInPlace();
    void setDirectBodyRead(bool on);
    void reserveBody(qsizetype contentLength);
    // What Qt may read from the socket into its own buffer per wake-up (a maximal request head fits).
    static constexpr qint64 kQtReadBufferBytes = 64 * 1024;
    void dispatchCompleted();
    bool addHeaderBytes(qsizetype n);
    void commitHeader();
    bool parseTarget(HttpRequest &request);
    int reject(int status, QByteArray type, QByteArray code, QString message);
    void failRequest(const PendingError &error);
    void beginClose();
    void maybeHalfClose();
    void teardown();
    void armIdleTimer();
    void armHeaderTimer();
    void onHeaderTimeout();
    bool sendOutput();
    void releaseOutput();

    QTcpSocket *m_socket;
    quint64 m_id;
    HttpServerConfig m_config;
    HttpDispatcher m_dispatcher;
    std::unique_ptr<http_parser> m_parser;

    QByteArray m_inbox;
    std::shared_ptr<HttpRequest> m_building;
    QByteArray m_url;
    QByteArray m_field;
    QByteArray m_value;
    bool m_lastWasValue = false;
    qint64 m_headerBytes = 0;
    QByteArray m_body;
    // m_body has the space of a body of known length (reserveBody()), empty or not.
    bool m_bodyReserved = false;
    // Bytes readBodyInPlace() put at the end of m_body that http_parser has yet to report through onBody().
    qsizetype m_inPlacePending = 0;
    // A large body is being received straight from the socket into m_body.
    bool m_directBodyRead = false;
    bool m_messageComplete = false;
    int m_sequence = 0;
    PendingError m_error;

    HttpResponse *m_active = nullptr;
    QTimer m_idleTimer;
    QTimer m_requestTimer;
    QTimer m_headerTimer;
    QTimer m_closeTimer;
    QPointer<WriteCoalescer> m_coalescer;
    QByteArray m_out; // queued for the client, not yet handed to the kernel or the socket's buffer
    bool m_flushScheduled = false;
    int m_writeDepth = 0;
    bool m_closing = false;
    bool m_halfClosed = false;
    bool m_gone = false;
    bool m_closeAfterActive = false;
};

} // namespace sy
