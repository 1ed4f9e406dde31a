#pragma once

#include "http/HttpRequest.h"

#include <QByteArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QList>
#include <QString>
#include <QUrl>

// Synchronous HTTP helpers for tests (QNetworkAccessManager + local event loop). Each call uses its own
// manager, so concurrent helpers never share Qt's 6-connections-per-host pool.
namespace sy::test {

struct HttpResult
{
    int status = 0;         // 0: no HTTP response (connection error or timeout)
    HttpHeaderList headers; // names lowercased
    QByteArray body;
    QString error; // network error text, empty on success (HTTP error statuses are not errors)
    bool timedOut = false;
    qint64 elapsedMs = 0;

    QByteArray header(QByteArrayView name) const;
    QJsonObject json() const { return QJsonDocument::fromJson(body).object(); }
    QJsonDocument jsonDocument() const { return QJsonDocument::fromJson(body); }
};

// method: "GET", "POST", ...; a non-empty body without a content-type header is sent as application/json.
HttpResult httpRequest(const QByteArray &method, const QUrl &url, const HttpHeaderList &headers = {},
                       const QByteArray &body = {}, int timeoutMs = 10000);

struct SseEvent
{
    QByteArray event; // "message" when the frame had no event: line
    QByteArray data;  // data: lines joined with '\n'
    QJsonObject json() const { return QJsonDocument::fromJson(data).object(); }
};

// Splits a complete SSE byte stream into events (comments and incomplete trailing frames are skipped).
QList<SseEvent> parseSse(const QByteArray &stream);

struct SseResult : HttpResult
{
    QList<SseEvent> events;
    qint64 firstByteMs = -1; // time from sending to the first body byte
    QList<QByteArray> eventTypes() const;
    // The first event of that type (empty event when absent).
    SseEvent first(const QByteArray &type) const;
};

// Like httpRequest() but also parses the body as SSE. Waits until the stream ends or the timeout passes.
SseResult sseRequest(const QByteArray &method, const QUrl &url, const HttpHeaderList &headers = {},
                     const QByteArray &body = {}, int timeoutMs = 30000);

} // namespace sy::test
