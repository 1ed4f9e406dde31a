#pragma once

#include "http/HttpRequest.h"

#include <QByteArray>
#include <QHostAddress>
#include <QJsonObject>
#include <QObject>
#include <QTcpSocket>
#include <optional>

namespace sy::test {

// One HTTP/1.1 response as seen on the wire by a test client.
struct RawResponse
{
    int status = 0;
    QByteArray statusLine;
    HttpHeaderList headers; // names lowercased
    QByteArray body;        // de-chunked
    bool chunked = false;
    bool complete = false; // the body's framing ended (final chunk, Content-Length reached or EOF)

    QByteArray header(QByteArrayView name) const;
    QJsonObject json() const;
};

// Incremental parser for responses, written independently of the server so tests check its framing.
// Interim 1xx responses are skipped.
class RawResponseParser
{
public:
    void setHeadRequest(bool head) { m_head = head; }
    void feed(const QByteArray &bytes);
    void feedEof();
    bool hasComplete() const { return !m_done.isEmpty(); }
    RawResponse takeComplete();
    const RawResponse &current() const { return m_current; } // the response being received
    // The response in progress, or the last completed one when none is in progress.
    const RawResponse &latest() const
    {
        return (m_state != State::Head || m_done.isEmpty()) ? m_current : m_done.last();
    }
    bool headComplete() const { return m_state != State::Head; }
    bool malformed() const { return m_malformed; }

private:
    enum class State
    {
        Head,
        FixedBody,
        ChunkSize,
        ChunkData,
        ChunkTrailer,
        UntilEof
    };
    void run();
    void finishCurrent();

    QByteArray m_buffer;
    RawResponse m_current;
    QList<RawResponse> m_done;
    State m_state = State::Head;
    qint64 m_remaining = 0;
    bool m_head = false;
    bool m_malformed = false;
};

// A raw TCP HTTP client for tests that need control over bytes, pipelining, slow reading or disconnects.
// Waiting functions spin the event loop (the server may live in the same thread).
class RawHttpClient : public QObject
{
    Q_OBJECT

public:
    explicit RawHttpClient(QObject *parent = nullptr);

    bool connectTo(quint16 port, const QHostAddress &host = QHostAddress::LocalHost, int timeoutMs = 5000);
    void send(const QByteArray &bytes);
    // Builds a request with Host and (for a non-empty body) Content-Length.
    static QByteArray buildRequest(const QByteArray &method, const QByteArray &target,
                                   const HttpHeaderList &headers = {}, const QByteArray &body = {});
    // Waits for the next complete response.
    std::optional<RawResponse> readResponse(int timeoutMs = 5000);
    // Waits until the response in progress has its head and `bytes` body bytes (streams).
    bool waitForBody(qsizetype bytes, int timeoutMs = 5000);
    bool waitForBodyContaining(const QByteArray &needle, int timeoutMs = 5000);
    bool waitForDisconnected(int timeoutMs = 5000);
    // The response in progress (or the last completed one, until it is read with readResponse()).
    const RawResponse &partial() const { return m_parser.latest(); }
    RawResponseParser &parser() { return m_parser; }
    bool isConnected() const;
    // Stop reading from the socket (slow reader): received bytes stay in the kernel buffer.
    void setReading(bool reading);
    void setHeadRequest(bool head) { m_parser.setHeadRequest(head); }
    QTcpSocket *socket() { return &m_socket; }
    qint64 bytesReceived() const { return m_received; }

private:
    void pump();

    QTcpSocket m_socket;
    RawResponseParser m_parser;
    qint64 m_received = 0;
    bool m_reading = true;
};

} // namespace sy::test
