#pragma once

#include <QByteArray>
#include <QByteArrayView>
#include <QList>
#include <QPair>
#include <QString>
#include <functional>
#include <memory>
#include <utility>

struct http_parser;

namespace sy {

using HttpHeaders = QList<QPair<QByteArray, QByteArray>>;

// Reads exactly one HTTP/1.x response (libhttp-parser in HTTP_RESPONSE mode): status line, headers and a
// chunked, Content-Length or close-delimited body, decoded into plain body bytes. Interim 1xx responses are
// skipped. Parsing stops at the end of the response, so bytes after it are left unconsumed and show that
// the connection can carry nothing else.
class HttpResponseParser
{
public:
    // A response to HEAD has headers only, whatever its Content-Length says.
    explicit HttpResponseParser(bool headRequest = false);
    ~HttpResponseParser();
    HttpResponseParser(const HttpResponseParser &) = delete;
    HttpResponseParser &operator=(const HttpResponseParser &) = delete;

    // Returns how many bytes belong to this response; fewer than size once it is complete or broken.
    qsizetype feed(const char *data, qsizetype size);
    // The peer closed: ends a close-delimited body, or marks an unfinished response as cut off.
    void feedEof();

    bool headComplete() const { return m_headComplete; }
    int status() const { return m_status; }
    const HttpHeaders &headers() const { return m_headers; }
    // Body bytes decoded since the last call (none while a body consumer is set).
    QByteArray takeBody() { return std::exchange(m_body, QByteArray()); }
    bool hasBody() const { return !m_body.isEmpty(); }
    // Decoded body bytes go to `consumer` as they are decoded, inside feed(), instead of being gathered for
    // takeBody(): a streamed event's bytes are not copied into a buffer of their own on their way to the SSE
    // parser. Bytes gathered before it was set stay for takeBody(). It must not call back into this parser.
    // Null: gathered again.
    void setBodyConsumer(std::function<void(QByteArrayView)> consumer) { m_bodyConsumer = std::move(consumer); }

    bool isComplete() const { return m_complete; }
    // Whether the connection may carry another request after this (complete) response.
    bool keepAlive() const { return m_keepAlive; }
    // Malformed bytes, or the peer closed before the response ended.
    bool hasError() const { return !m_error.isEmpty(); }
    const QString &errorString() const { return m_error; }

private:
    friend struct HttpResponseParserCallbacks;

    void commitHeader();

    std::unique_ptr<http_parser> m_parser;
    bool m_headRequest;
    HttpHeaders m_headers;
    QByteArray m_field;
    QByteArray m_value;
    bool m_lastWasValue = false;
    QByteArray m_body;
    std::function<void(QByteArrayView)> m_bodyConsumer;
    int m_status = -1;
    bool m_headComplete = false;
    bool m_complete = false;
    bool m_keepAlive = false;
    QString m_error;
};

} // namespace sy
