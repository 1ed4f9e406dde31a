#include "lib/HttpTestClient.h"

#include <QElapsedTimer>
#include <QEventLoop>
#include <QNetworkAccessManager>
#include <QNetworkProxy>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QTimer>

namespace sy::test {

namespace {

HttpResult run(const QByteArray &method, const QUrl &url, const HttpHeaderList &headers, const QByteArray &body,
               int timeoutMs, qint64 *firstByteMs)
{
    QNetworkAccessManager manager;
    manager.setProxy(QNetworkProxy::NoProxy);
    QNetworkRequest request(url);
    bool haveContentType = false;
    for (const HttpHeader &h : headers) {
        request.setRawHeader(h.first, h.second);
        haveContentType = haveContentType || headerNameEquals(h.first, "content-type");
    }
    if (!body.isEmpty() && !haveContentType)
        request.setHeader(QNetworkRequest::ContentTypeHeader, QByteArrayLiteral("application/json"));
    request.setAttribute(QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::ManualRedirectPolicy);

    QElapsedTimer clock;
    clock.start();
    QNetworkReply *reply = manager.sendCustomRequest(request, method, body);
    QEventLoop loop;
    QTimer timer;
    timer.setSingleShot(true);
    bool timedOut = false;
    QByteArray received;
    QObject::connect(reply, &QNetworkReply::readyRead, &loop, [&] {
        if (firstByteMs && *firstByteMs < 0)
            *firstByteMs = clock.elapsed();
        received += reply->readAll();
    });
    QObject::connect(reply, &QNetworkReply::finished, &loop, &QEventLoop::quit);
    QObject::connect(&timer, &QTimer::timeout, &loop, [&] {
        timedOut = true;
        loop.quit();
    });
    timer.start(timeoutMs);
    if (!reply->isFinished())
        loop.exec();

    HttpResult result;
    result.timedOut = timedOut;
    if (timedOut)
        reply->abort();
    if (reply->isOpen())
        received += reply->readAll();
    result.elapsedMs = clock.elapsed();
    result.status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
    for (const QNetworkReply::RawHeaderPair &pair : reply->rawHeaderPairs())
        result.headers.append({pair.first.toLower(), pair.second});
    result.body = received;
    if (reply->error() != QNetworkReply::NoError && result.status == 0)
        result.error = reply->errorString();
    if (timedOut)
        result.error = QStringLiteral("timed out after %1 ms").arg(timeoutMs);
    delete reply;
    return result;
}

} // namespace

QByteArray HttpResult::header(QByteArrayView name) const
{
    for (const HttpHeader &h : headers) {
        if (headerNameEquals(h.first, name))
            return h.second;
    }
    return {};
}

HttpResult httpRequest(const QByteArray &method, const QUrl &url, const HttpHeaderList &headers, const QByteArray &body,
                       int timeoutMs)
{
    return run(method, url, headers, body, timeoutMs, nullptr);
}

QList<SseEvent> parseSse(const QByteArray &stream)
{
    QList<SseEvent> events;
    SseEvent current;
    bool haveData = false;
    qsizetype pos = 0;
    while (pos < stream.size()) {
        // Lines end with CRLF, LF or CR.
        qsizetype end = pos;
        while (end < stream.size() && stream.at(end) != '\n' && stream.at(end) != '\r')
            ++end;
        if (end == stream.size())
            break; // incomplete trailing line
        const QByteArray line = stream.mid(pos, end - pos);
        pos = end + ((stream.at(end) == '\r' && end + 1 < stream.size() && stream.at(end + 1) == '\n') ? 2 : 1);
        if (line.isEmpty()) {
            if (haveData) {
                if (current.event.isEmpty())
                    current.event = "message";
                events.append(current);
            }
            current = SseEvent();
            haveData = false;
            continue;
        }
        if (line.startsWith(':'))
            continue;
        const qsizetype colon = line.indexOf(':');
        const QByteArray field = colon < 0 ? line : line.left(colon);
        QByteArray value = colon < 0 ? QByteArray() : line.mid(colon + 1);
        if (value.startsWith(' '))
            value.remove(0, 1);
        if (field == "event") {
            current.event = value;
        } else if (field == "data") {
            current.data = haveData ? current.data + '\n' + value : value;
            haveData = true;
        }
    }
    return events;
}

QList<QByteArray> SseResult::eventTypes() const
{
    QList<QByteArray> types;
    for (const SseEvent &e : events)
        types.append(e.event);
    return types;
}

SseEvent SseResult::first(const QByteArray &type) const
{
    for (const SseEvent &e : events) {
        if (e.event == type)
            return e;
    }
    return {};
}

SseResult sseRequest(const QByteArray &method, const QUrl &url, const HttpHeaderList &headers, const QByteArray &body,
                     int timeoutMs)
{
    SseResult result;
    HttpHeaderList all = headers;
    bool haveAccept = false;
    for (const HttpHeader &h : headers)
        haveAccept = haveAccept || headerNameEquals(h.first, "accept");
    if (!haveAccept)
        all.append(HttpHeader("accept", "text/event-stream"));
    static_cast<HttpResult &>(result) = run(method, url, all, body, timeoutMs, &result.firstByteMs);
    result.events = parseSse(result.body);
    return result;
}

} // namespace sy::test
