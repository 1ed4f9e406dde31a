#pragma once

#include <QByteArray>
#include <QByteArrayView>
#include <QHostAddress>
#include <QList>
#include <QPair>
#include <QString>
#include <QUrlQuery>
#include <memory>

namespace sy {

using HttpHeader = QPair<QByteArray, QByteArray>;
using HttpHeaderList = QList<HttpHeader>;

// Case-insensitive comparison of ASCII header names.
bool headerNameEquals(QByteArrayView a, QByteArrayView b);
// Whether header name `name` starts with `prefix`, ASCII case ignored.
bool headerNameStartsWith(QByteArrayView name, QByteArrayView prefix);

// One complete downstream request. The server fills it in before the handler runs and never changes it
// afterwards, so handlers may keep the shared pointer for as long as they like (e.g. in async work). The one
// exception is the body: the handler that owns the request may release it (releaseBody()) once it has
// taken what it needs, so a long stream does not hold a large upload for its whole life.
struct HttpRequest
{
    QByteArray method;          // "GET", "POST", ... as parsed (upper case)
    QByteArray target;          // raw request target as sent, e.g. "/backend-api/codex/models?client_version=1"
    QString path;               // percent-decoded path without query and fragment
    QByteArray rawQuery;        // query string without '?', still percent-encoded
    QUrlQuery query;            // parsed rawQuery
    HttpHeaderList headers;     // in arrival order; names lowercased, values with surrounding blanks trimmed
    mutable QByteArray body;    // decoded body (content-encoding already removed); see releaseBody()
    QByteArray contentEncoding; // the Content-Encoding the body arrived with ("" for identity)
    qint64 wireBodyBytes = 0;   // body size on the wire (after de-chunking, before decoding)
    qint64 bodyBytesInPlace = 0; // of those, received straight into the body's memory (not copied from a read buffer)
    int httpMajor = 1;
    int httpMinor = 1;
    bool keepAlive = true; // whether the connection may serve another request after this one
    QHostAddress peerAddress;
    quint16 peerPort = 0;
    qint64 receivedAtMs = 0;      // Clock::monotonicMs() when the first byte of this request was parsed
    qint64 receivedAtUs = 0;      // the same in Clock::monotonicUs() (stage latencies, api/TurnStages.h)
    qint64 completedAtUs = 0;     // Clock::monotonicUs() when its last byte was parsed
    quint64 connectionId = 0;     // identifies the downstream connection (unique per server)
    int sequenceOnConnection = 0; // 0 for the first request of a connection, 1 for the next, ...

    // First value of the header, compared case-insensitively; empty when absent.
    QByteArray header(QByteArrayView name) const;
    // Every value of the header in arrival order.
    QList<QByteArray> headerValues(QByteArrayView name) const;
    bool hasHeader(QByteArrayView name) const;
    // True for "Upgrade: websocket" requests. They reach the handler like any other request; the
    // server never switches protocols on its own.
    bool isWebSocketUpgrade() const;
    // Empties body for every holder of this request (wireBodyBytes keeps the size it had).
    void releaseBody() const { body = QByteArray(); }
};

using HttpRequestPtr = std::shared_ptr<const HttpRequest>;

} // namespace sy
