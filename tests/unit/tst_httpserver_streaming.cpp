// Downstream HTTP server: streaming responses, client disconnects, backpressure, WebSocket upgrade requests.
#include "http/HttpServer.h"
#include "lib/HttpTestClient.h"
#include "lib/RawHttpClient.h"

#include <QPointer>
#include <QSignalSpy>
#include <QTest>
#include <QTimer>

using namespace sy;
using sy::test::RawHttpClient;
using sy::test::RawResponse;

class TestHttpServerStreaming : public QObject
{
    Q_OBJECT

private:
    HttpServer *m_server = nullptr;
    QPointer<HttpResponse> m_response;
    HttpRequestPtr m_request;
    int m_handled = 0;

    // Handler that starts an SSE stream and leaves the rest to the test.
    void installStreamingHandler()
    {
        m_server->setHandler([this](HttpRequestPtr request, HttpResponse *response) {
            ++m_handled;
            m_request = request;
            m_response = response;
            response->setHeader("x-request-id", "req_1");
            response->beginStream(200, "text/event-stream");
            response->write("event: response.created\ndata: {\"n\":1}\n\n");
        });
    }

private slots:
    void init()
    {
        m_handled = 0;
        m_request.reset();
        m_server = new HttpServer(this);
        QVERIFY(m_server->listen(QHostAddress::LocalHost, 0));
    }

    void cleanup()
    {
        delete m_server;
        m_server = nullptr;
    }

    void sseArrivesBeforeHandlerEnds()
    {
        installStreamingHandler();
        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        client.send(RawHttpClient::buildRequest("POST", "/backend-api/codex/responses", {}, "{}"));
        QVERIFY(client.waitForBodyContaining("response.created"));
        QVERIFY(m_response);
        QVERIFY(m_response->isCommitted());
        QVERIFY(!m_response->isFinished());
        const RawResponse &head = client.partial();
        QCOMPARE(head.status, 200);
        QCOMPARE(head.header("content-type"), QByteArray("text/event-stream"));
        QCOMPARE(head.header("cache-control"), QByteArray("no-cache"));
        QCOMPARE(head.header("x-accel-buffering"), QByteArray("no"));
        QCOMPARE(head.header("transfer-encoding"), QByteArray("chunked"));
        QCOMPARE(head.header("x-request-id"), QByteArray("req_1"));
        QVERIFY(head.header("content-length").isEmpty());

        // Each later write shows up on its own, without end().
        QVERIFY(m_response->write("event: response.output_text.delta\ndata: {\"n\":2}\n\n"));
        QVERIFY(client.waitForBodyContaining("\"n\":2"));
        QVERIFY(m_response->write(QByteArray())); // no-op, must not terminate the chunked body
        m_response->end();
        QVERIFY(!m_response->write("late"));
        const std::optional<RawResponse> r = client.readResponse();
        QVERIFY(r);
        QVERIFY(r->complete);
        const QList<sy::test::SseEvent> events = sy::test::parseSse(r->body);
        QCOMPARE(events.size(), 2);
        QCOMPARE(events.at(1).event, QByteArray("response.output_text.delta"));
        QVERIFY(client.isConnected()); // keep-alive after a stream
        QVERIFY(m_response.isNull() || m_response->isFinished());
        QTRY_VERIFY(m_response.isNull()); // deleted later
    }

    void clientDisconnectMidStream()
    {
        installStreamingHandler();
        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        client.send(RawHttpClient::buildRequest("POST", "/s", {}, "{}"));
        QVERIFY(client.waitForBodyContaining("response.created"));
        QVERIFY(m_response);
        QSignalSpy gone(m_response.data(), &HttpResponse::clientDisconnected);
        QSignalSpy finished(m_response.data(), &HttpResponse::finished);
        bool goneInSlot = false;
        bool writeFailedInSlot = false;
        HttpResponse *raw = m_response.data();
        connect(raw, &HttpResponse::clientDisconnected, this, [&] {
            goneInSlot = raw->clientGone() && raw->isFinished();
            writeFailedInSlot = !raw->write("more");
            raw->end(); // harmless after the client left
        });
        client.socket()->abort(); // no request bytes follow; the server must notice on its own
        QTRY_COMPARE(gone.count(), 1);
        QCOMPARE(finished.count(), 1);
        QVERIFY(goneInSlot);
        QVERIFY(writeFailedInSlot);
        QTRY_VERIFY(m_response.isNull()); // deleted later, as documented
        QCOMPARE(gone.count(), 1);
        QTRY_COMPARE(m_server->connectionCount(), 0);
    }

    void clientDisconnectBeforeAsyncAnswer()
    {
        m_server->setHandler([this](HttpRequestPtr, HttpResponse *response) { m_response = response; });
        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        client.send(RawHttpClient::buildRequest("GET", "/pending"));
        QTRY_VERIFY(m_response);
        QSignalSpy gone(m_response.data(), &HttpResponse::clientDisconnected);
        client.socket()->disconnectFromHost(); // orderly FIN this time
        QTRY_COMPARE(gone.count(), 1);
        QTRY_VERIFY(m_response.isNull());
    }

    void abortConnectionTruncatesStream()
    {
        installStreamingHandler();
        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        client.send(RawHttpClient::buildRequest("GET", "/t"));
        QVERIFY(client.waitForBodyContaining("response.created"));
        m_response->abortConnection();
        QVERIFY(client.waitForDisconnected());
        QVERIFY(!client.parser().hasComplete()); // no terminating chunk was sent
        QCOMPARE(client.partial().body, QByteArray("event: response.created\ndata: {\"n\":1}\n\n"));
    }

    void http10StreamEndsWithClose()
    {
        installStreamingHandler();
        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        client.send("GET /old HTTP/1.0\r\n\r\n");
        QVERIFY(client.waitForBodyContaining("response.created"));
        QVERIFY(client.partial().header("transfer-encoding").isEmpty());
        m_response->write("tail");
        m_response->end();
        const std::optional<RawResponse> r = client.readResponse();
        QVERIFY(r);
        QVERIFY(r->body.endsWith("tail"));
        QVERIFY(client.waitForDisconnected());
    }

    void backpressureBoundsPendingBytes()
    {
        const qint64 low = 64 * 1024;
        const qint64 high = 256 * 1024;
        const QByteArray chunk(16 * 1024, 'z');
        m_server->setWatermarks(low, high);
        qint64 written = 0;
        qint64 maxPending = 0;
        bool sawCongested = false;
        int drainedCount = 0;
        bool tailStarted = false;
        qint64 tailTarget = 0;
        QPointer<HttpResponse> response;
        // Writes only while not congested; resumes on drained(). Stops once it saw congestion and then
        // wrote 2 MiB more.
        std::function<void()> pumpWrites = [&] {
            while (response && !response->isFinished() && !response->congested()) {
                if (tailStarted && written >= tailTarget) {
                    response->end();
                    return;
                }
                if (written > 512LL * 1024 * 1024)
                    return; // safety net: congestion never came
                response->write(chunk);
                written += chunk.size();
                maxPending = qMax(maxPending, response->pendingBytes());
            }
            if (response && response->congested())
                sawCongested = true;
        };
        m_server->setHandler([&](HttpRequestPtr, HttpResponse *r) {
            response = r;
            connect(r, &HttpResponse::drained, r, [&] {
                ++drainedCount;
                maxPending = qMax(maxPending, response->pendingBytes());
                QTimer::singleShot(0, pumpWrites);
            });
            r->beginStream(200, "application/octet-stream");
            pumpWrites();
        });

        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        client.setReading(false);
        client.send(RawHttpClient::buildRequest("GET", "/big"));
        QTRY_VERIFY_WITH_TIMEOUT(sawCongested, 10000);
        QVERIFY(response->congested());
        // While the client does not read, the writer stays parked and nothing piles up in our process.
        const qint64 writtenWhenCongested = written;
        QTest::qWait(200);
        QCOMPARE(written, writtenWhenCongested);
        QVERIFY2(response->pendingBytes() <= high + chunk.size(),
                 qPrintable(QString::number(response->pendingBytes())));
        QVERIFY(maxPending <= high + chunk.size());

        tailStarted = true;
        tailTarget = written + 2 * 1024 * 1024;
        client.setReading(true);
        const std::optional<RawResponse> r = client.readResponse(20000);
        QVERIFY(r);
        QVERIFY(drainedCount >= 1);
        QCOMPARE(qint64(r->body.size()), written);
        QCOMPARE(written, tailTarget);
        QVERIFY(maxPending <= high + chunk.size());
    }

    void websocketUpgradeReachesHandler()
    {
        m_server->setHandler([this](HttpRequestPtr request, HttpResponse *response) {
            ++m_handled;
            m_request = request;
            if (request->isWebSocketUpgrade()) {
                response->sendJsonError(426, "invalid_request_error", "websocket_unsupported",
                                        QStringLiteral("use HTTP"));
                return;
            }
            response->sendFull(200, "text/plain", "plain");
        });
        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        client.send(RawHttpClient::buildRequest("GET", "/backend-api/codex/responses",
                                                {{"Connection", "Upgrade"},
                                                 {"Upgrade", "websocket"},
                                                 {"Sec-WebSocket-Version", "13"},
                                                 {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
                                                 {"openai-beta", "responses_websockets=2026-02-04"}}) +
                    RawHttpClient::buildRequest("GET", "/after"));
        const std::optional<RawResponse> a = client.readResponse();
        QVERIFY(a);
        QCOMPARE(a->status, 426);
        QCOMPARE(a->json().value(QStringLiteral("error")).toObject().value(QStringLiteral("code")).toString(),
                 QStringLiteral("websocket_unsupported"));
        // The connection goes on as plain HTTP.
        const std::optional<RawResponse> b = client.readResponse();
        QVERIFY(b);
        QCOMPARE(b->body, QByteArray("plain"));
        QCOMPARE(m_handled, 2);
    }

    void oversizedContentLengthRefusedBeforeBody()
    {
        m_server->setMaxBodyBytes(1024);
        m_server->setHandler([this](HttpRequestPtr, HttpResponse *response) {
            ++m_handled;
            response->sendFull(200, "text/plain", "no");
        });
        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        // Only the head is sent; the 413 must not wait for 100 MB that never come.
        client.send("POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100000000\r\n\r\n");
        const std::optional<RawResponse> r = client.readResponse(3000);
        QVERIFY(r);
        QCOMPARE(r->status, 413);
        // A client that keeps sending still gets to read the answer before the close.
        client.send(QByteArray(64 * 1024, 'x'));
        QVERIFY(client.waitForDisconnected(5000));
        QCOMPARE(m_handled, 0);
    }

    void serverDestructionNotifiesHandlers()
    {
        installStreamingHandler();
        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        client.send(RawHttpClient::buildRequest("GET", "/s"));
        QVERIFY(client.waitForBodyContaining("response.created"));
        QSignalSpy gone(m_response.data(), &HttpResponse::clientDisconnected);
        delete m_server;
        m_server = nullptr;
        QCOMPARE(gone.count(), 1);
        QVERIFY(m_response.isNull());
        QVERIFY(client.waitForDisconnected());
    }

    void manyConcurrentStreams()
    {
        QList<QPointer<HttpResponse>> responses;
        m_server->setHandler([&responses](HttpRequestPtr, HttpResponse *response) {
            response->beginStream(200, "text/event-stream");
            response->write("data: start\n\n");
            responses.append(response);
        });
        std::vector<std::unique_ptr<RawHttpClient>> clients;
        for (int i = 0; i < 80; ++i) {
            clients.push_back(std::make_unique<RawHttpClient>());
            QVERIFY(clients.back()->connectTo(m_server->serverPort()));
            clients.back()->send(RawHttpClient::buildRequest("GET", "/s" + QByteArray::number(i)));
        }
        QTRY_COMPARE(responses.size(), 80);
        for (const QPointer<HttpResponse> &r : responses) {
            r->write("data: end\n\n");
            r->end();
        }
        for (auto &c : clients) {
            const std::optional<RawResponse> r = c->readResponse();
            QVERIFY(r);
            QCOMPARE(r->body, QByteArray("data: start\n\ndata: end\n\n"));
        }
    }
};

QTEST_GUILESS_MAIN(TestHttpServerStreaming)
#include "tst_httpserver_streaming.moc"
