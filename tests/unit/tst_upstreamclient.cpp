#include "lib/RawHttpServer.h"
#include "lib/UpstreamRecorder.h"
#include "upstream/UpstreamClient.h"

#include <QLoggingCategory>
#include <QPointer>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTest>
#include <memory>
#include <optional>

using sy::SseEvent;
using sy::UpstreamCall;
using sy::UpstreamClient;
using sy::UpstreamRequest;
using sy::test::RawHttpServer;
using Recorder = sy::test::UpstreamRecorder;
using Outcome = sy::UpstreamCall::Outcome;

namespace {

const QByteArray sseHead = "Content-Type: text/event-stream; charset=utf-8\r\nTransfer-Encoding: chunked\r\n"
                           "x-codex-primary-used-percent: 12\r\n";

UpstreamRequest turnRequest(const QUrl &url)
{
    UpstreamRequest request;
    request.method = "POST";
    request.url = url;
    request.headers = {{"Authorization", "Bearer secret-token-xyz"},
                       {"chatgpt-account-id", "acct-1"},
                       {"Content-Type", "application/json"},
                       {"Accept", "text/event-stream"},
                       {"accept-encoding", "zstd"},
                       {"Host", "evil.example"},
                       {"Connection", "close"}};
    request.body = R"({"model":"gpt-5","stream":true,"store":false})";
    return request;
}

} // namespace

class TestUpstreamClient : public QObject
{
    Q_OBJECT

private slots:
    void sseEventsArriveIncrementally();
    void sseEventSplitBetweenTheHeadsPartAndTheNextArrivesWhole();
    void sseEventOverTheLimitEndsTheCall_data();
    void sseEventOverTheLimitEndsTheCall();
    void statusHeadersAndBufferedBody_data();
    void statusHeadersAndBufferedBody();
    void getWithoutBody();
    void largeBodyTheKernelTakesInPartArrivesWhole();
    void cookiesAreNeverStoredOrSent();
    void droppedConnection_data();
    void droppedConnection();
    void connectionRefusedIsConnectionFailed();
    void closedBeforeResponseIsConnectionLost();
    void abortEmitsExactlyOneFinishedAndStops();
    void abortFromInsideEventHandler();
    void eventListenerMayAbortOrLeaveFromInsideItsCall();
    void aListenerDestroyedWhileSetDetachesItself();
    void abortAfterFinishedIsNoOp();
    void twentyConcurrentCallsRunAtOnce();
    void pauseStopsDrainingTheSocket();
    void authorizationIsNeverLogged();
};

void TestUpstreamClient::sseEventsArriveIncrementally()
{
    RawHttpServer server;
    UpstreamClient client;
    Recorder rec(client.start(turnRequest(server.url("/backend-api/codex/responses"))));
    QTRY_COMPARE(server.requests.size(), 1);
    const RawHttpServer::Request &req = server.requests[0];
    QCOMPARE(req.method, QByteArray("POST"));
    QCOMPARE(req.path, QByteArray("/backend-api/codex/responses"));
    QCOMPARE(req.body, QByteArray(R"({"model":"gpt-5","stream":true,"store":false})"));
    QCOMPARE(req.header("authorization"), QByteArray("Bearer secret-token-xyz"));
    QCOMPARE(req.header("chatgpt-account-id"), QByteArray("acct-1"));
    // Transport-owned headers are the client's, not the caller's: responses come uncompressed, on a
    // connection that stays open.
    QCOMPARE(req.header("accept-encoding"), QByteArray("identity"));
    QCOMPARE(req.header("host"), "127.0.0.1:" + QByteArray::number(server.port()));
    QCOMPARE(req.header("connection"), QByteArray("keep-alive"));
    QCOMPARE(req.header("content-length"), QByteArray::number(req.body.size()));
    for (const QByteArray name : {"host", "connection", "accept-encoding", "content-length"}) {
        const auto count = std::count_if(req.headers.begin(), req.headers.end(), [&](const auto &h) {
            return h.first.compare(name, Qt::CaseInsensitive) == 0;
        });
        QCOMPARE(count, 1);
    }
    QTRY_COMPARE(rec.sent, 1);
    QCOMPARE(rec.connecting, 1);

    QTcpSocket *socket = req.socket;
    RawHttpServer::writeHead(socket, "200 OK", sseHead);
    RawHttpServer::writeChunk(socket, "event: response.created\ndata: {\"type\":\"response.created\"}\n\n");
    QTRY_COMPARE(rec.events.size(), 1); // before the server has written anything else
    QCOMPARE(rec.status, 200);
    QCOMPARE(rec.header("x-codex-primary-used-percent"), QByteArray("12"));
    QCOMPARE(rec.events[0].event, QByteArray("response.created"));
    QVERIFY(rec.outcomes.isEmpty());
    QVERIFY(rec.call->isEventStream());

    RawHttpServer::writeChunk(socket, "event: response.output_text.delta\r\ndata: {\"del");
    RawHttpServer::writeChunk(socket, "ta\":\"hi\"}\r\n\r\n: keepalive\n\n");
    QTRY_COMPARE(rec.events.size(), 2);
    QCOMPARE(rec.events[1].data, QByteArray(R"({"delta":"hi"})"));
    QTRY_COMPARE(rec.keepalives, 1);
    RawHttpServer::writeChunk(socket, "event: response.completed\ndata: {}\n\n");
    RawHttpServer::endChunks(socket);
    QTRY_COMPARE(rec.outcomes.size(), 1);
    QCOMPARE(rec.outcomes[0], Outcome::Completed);
    QCOMPARE(rec.events.size(), 3);
    QCOMPARE(rec.keepalives, 1);
    QCOMPARE(rec.bodies, 0);
    QTRY_VERIFY(!rec.call); // deletes itself
    QCOMPARE(client.activeCalls(), 0);
}

void TestUpstreamClient::sseEventSplitBetweenTheHeadsPartAndTheNextArrivesWhole()
{
    // The bytes read with the head are gathered and fed to the SSE parser by the call; the later ones go from the
    // HTTP parser straight to it. An event (and one chunk) split across the two arrives whole and in order.
    RawHttpServer server;
    UpstreamClient client;
    Recorder rec(client.start(turnRequest(server.url("/backend-api/codex/responses"))));
    QTRY_COMPARE(server.requests.size(), 1);
    QTcpSocket *socket = server.requests[0].socket;
    const QByteArray first = "event: response.created\ndata: {\"type\":\"response.created\"}\n\n";
    const QByteArray second = "event: response.output_text.delta\ndata: {\"delta\":\"split\"}\n\n";
    const QByteArray chunk = first + second;
    const qsizetype cut = first.size() + 20; // inside the second event's data line
    socket->write("HTTP/1.1 200 OK\r\n" + sseHead + "\r\n" + QByteArray::number(chunk.size(), 16) + "\r\n" +
                  chunk.first(cut));
    QTRY_COMPARE(rec.events.size(), 1);
    QTest::qWait(20);
    QCOMPARE(rec.events.size(), 1); // the second waits for the rest of its line
    socket->write(chunk.sliced(cut) + "\r\n");
    QTRY_COMPARE(rec.events.size(), 2);
    QCOMPARE(rec.events[0].event, QByteArray("response.created"));
    QCOMPARE(rec.events[1].event, QByteArray("response.output_text.delta"));
    QCOMPARE(rec.events[1].data, QByteArray(R"({"delta":"split"})"));
    RawHttpServer::endChunks(socket);
    QTRY_COMPARE(rec.outcomes.size(), 1);
    QCOMPARE(rec.outcomes[0], Outcome::Completed);
}

void TestUpstreamClient::sseEventOverTheLimitEndsTheCall_data()
{
    QTest::addColumn<bool>("withTheHead");
    // The bytes read with the head are gathered and fed by the call; later ones go from the HTTP parser
    // straight to the SSE parser, and the call checks for an overflow after each part it fed.
    QTest::newRow("in a part after the head") << false;
    QTest::newRow("in the head's part") << true;
}

void TestUpstreamClient::sseEventOverTheLimitEndsTheCall()
{
    QFETCH(bool, withTheHead);
    RawHttpServer server;
    UpstreamClient client;
    UpstreamRequest request = turnRequest(server.url("/backend-api/codex/responses"));
    request.maxBodyBytes = 1024;
    Recorder rec(client.start(request));
    QTRY_COMPARE(server.requests.size(), 1);
    QTcpSocket *socket = server.requests[0].socket;
    const QByteArray first = "event: response.created\ndata: {\"type\":\"response.created\"}\n\n";
    // One event's data line, never ended, past the limit: the upstream keeps the stream open.
    const QByteArray tooLong = "event: response.output_text.delta\ndata: " + QByteArray(4000, 'x');
    if (withTheHead) {
        socket->write("HTTP/1.1 200 OK\r\n" + sseHead + "\r\n" + QByteArray::number(first.size(), 16) + "\r\n" + first +
                      "\r\n" + QByteArray::number(tooLong.size(), 16) + "\r\n" + tooLong + "\r\n");
    } else {
        RawHttpServer::writeHead(socket, "200 OK", sseHead);
        RawHttpServer::writeChunk(socket, first);
        QTRY_COMPARE(rec.events.size(), 1);
        RawHttpServer::writeChunk(socket, tooLong);
    }
    QTRY_COMPARE(rec.outcomes.size(), 1);
    QCOMPARE(rec.outcomes[0], Outcome::ConnectionLost);
    QVERIFY2(rec.detail.contains(QLatin1String("SSE event exceeds 1024 bytes")), qPrintable(rec.detail));
    // The call ends at the overflow: events parsed from the same part before it are not delivered.
    QCOMPARE(rec.events.size(), withTheHead ? 0 : 1);
    QCOMPARE(client.idleConnections(), 0);
}

void TestUpstreamClient::statusHeadersAndBufferedBody_data()
{
    QTest::addColumn<QByteArray>("statusLine");
    QTest::addColumn<QByteArray>("contentType");
    QTest::addColumn<int>("status");
    QTest::newRow("200 json") << QByteArray("200 OK") << QByteArray("application/json") << 200;
    // Error statuses are complete responses like any other.
    QTest::newRow("400") << QByteArray("400 Bad Request") << QByteArray("application/json") << 400;
    QTest::newRow("401") << QByteArray("401 Unauthorized") << QByteArray("application/json") << 401;
    QTest::newRow("404") << QByteArray("404 Not Found") << QByteArray("application/json") << 404;
    QTest::newRow("429") << QByteArray("429 Too Many Requests") << QByteArray("application/json") << 429;
    QTest::newRow("500") << QByteArray("500 Internal Server Error") << QByteArray("application/json") << 500;
    QTest::newRow("503") << QByteArray("503 Service Unavailable") << QByteArray("application/json") << 503;
    // An error status with an event-stream type is still read as one body.
    QTest::newRow("502 sse") << QByteArray("502 Bad Gateway") << QByteArray("text/event-stream") << 502;
}

void TestUpstreamClient::statusHeadersAndBufferedBody()
{
    QFETCH(QByteArray, statusLine);
    QFETCH(QByteArray, contentType);
    QFETCH(int, status);
    RawHttpServer server;
    UpstreamClient client;
    Recorder rec(client.start(turnRequest(server.url("/x"))));
    QTRY_COMPARE(server.requests.size(), 1);
    const QByteArray body = R"({"error":{"type":"usage_limit_reached","resets_in_seconds":60}})";
    RawHttpServer::respond(server.requests[0].socket, statusLine,
                           "Content-Type: " + contentType + "\r\nRetry-After: 60\r\n", body);
    QTRY_COMPARE(rec.outcomes.size(), 1);
    QCOMPARE(rec.outcomes[0], Outcome::Completed);
    QCOMPARE(rec.status, status);
    QCOMPARE(rec.header("retry-after"), QByteArray("60"));
    QCOMPARE(rec.bodies, 1);
    QCOMPARE(rec.body, body);
    QVERIFY(rec.events.isEmpty());
}

void TestUpstreamClient::getWithoutBody()
{
    RawHttpServer server;
    UpstreamClient client;
    UpstreamRequest request;
    request.method = "GET";
    request.url = server.url("/wham/usage");
    Recorder rec(client.start(request));
    QTRY_COMPARE(server.requests.size(), 1);
    QCOMPARE(server.requests[0].method, QByteArray("GET"));
    QVERIFY(server.requests[0].body.isEmpty());
    RawHttpServer::respond(server.requests[0].socket, "200 OK", "Content-Type: application/json\r\n", "{}");
    QTRY_COMPARE(rec.outcomes.size(), 1);
    QCOMPARE(rec.body, QByteArray("{}"));
}

void TestUpstreamClient::largeBodyTheKernelTakesInPartArrivesWhole()
{
    // More than the loopback buffers take at once: the kernel takes the head and part of the body, and Qt
    // writes the rest from a view of the body (UpstreamConnection::write). Shown red by a view that starts one
    // byte off. The test keeps no copy of the body: only the call and the connection hold it.
    const auto pattern = [] {
        QByteArray b(48 * 1024 * 1024 + 5, Qt::Uninitialized);
        for (qsizetype i = 0; i < b.size(); ++i)
            b[i] = char('a' + (i * 7 + i / 4093) % 26);
        return b;
    };
    RawHttpServer server;
    UpstreamClient client;
    UpstreamRequest request = turnRequest(server.url("/big"));
    request.body = pattern();
    Recorder rec(client.start(std::move(request)));
    QTRY_COMPARE_WITH_TIMEOUT(server.requests.size(), 1, 30000);
    const QByteArray received = server.requests[0].body;
    QCOMPARE(received.size(), pattern().size());
    QVERIFY(received == pattern());
    RawHttpServer::respond(server.requests[0].socket, "200 OK", "Content-Type: application/json\r\n", "{}");
    QTRY_COMPARE(rec.outcomes.size(), 1);
    QCOMPARE(rec.outcomes[0], Outcome::Completed);
    QCOMPARE(rec.body, QByteArray("{}"));
}

void TestUpstreamClient::cookiesAreNeverStoredOrSent()
{
    RawHttpServer server;
    UpstreamClient client;
    Recorder first(client.start(turnRequest(server.url("/a"))));
    QTRY_COMPARE(server.requests.size(), 1);
    RawHttpServer::respond(server.requests[0].socket, "200 OK",
                           "Content-Type: application/json\r\nSet-Cookie: __cf_bm=account-one; Path=/\r\n", "{}");
    QTRY_COMPARE(first.outcomes.size(), 1);
    Recorder second(client.start(turnRequest(server.url("/b"))));
    QTRY_COMPARE(server.requests.size(), 2);
    QVERIFY(!server.requests[1].hasHeader("cookie"));
}

void TestUpstreamClient::droppedConnection_data()
{
    QTest::addColumn<QByteArray>("head");
    QTest::addColumn<QByteArray>("firstPart");
    QTest::addColumn<QByteArray>("rest");
    QTest::addColumn<int>("outcome");
    const QByteArray closeDelimited = "Content-Type: text/event-stream\r\nConnection: close\r\n";
    QTest::newRow("chunked, cut mid-stream") << sseHead << QByteArray("event: response.created\ndata: {}\n\n")
                                             << QByteArray("event: x\ndata") << int(Outcome::ConnectionLost);
    QTest::newRow("close-delimited, cut inside an event")
        << closeDelimited << QByteArray("event: response.created\ndata: {}\n\n")
        << QByteArray("event: response.output_text.delta\ndata: {\"delta\"") << int(Outcome::ConnectionLost);
    QTest::newRow("close-delimited, ends between events")
        << closeDelimited << QByteArray("event: response.created\ndata: {}\n\n")
        << QByteArray("event: response.completed\ndata: {}\n\n") << int(Outcome::Completed);
    QTest::newRow("content-length, cut short")
        << QByteArray("Content-Type: text/event-stream\r\nContent-Length: 5000\r\n")
        << QByteArray("event: response.created\ndata: {}\n\n") << QByteArray("event: x\n")
        << int(Outcome::ConnectionLost);
}

void TestUpstreamClient::droppedConnection()
{
    QFETCH(QByteArray, head);
    QFETCH(QByteArray, firstPart);
    QFETCH(QByteArray, rest);
    QFETCH(int, outcome);
    RawHttpServer server;
    UpstreamClient client;
    Recorder rec(client.start(turnRequest(server.url("/r"))));
    QTRY_COMPARE(server.requests.size(), 1);
    QTcpSocket *socket = server.requests[0].socket;
    RawHttpServer::writeHead(socket, "200 OK", head);
    if (head.contains("chunked")) {
        // One whole chunk, then one that announces more bytes than ever arrive.
        RawHttpServer::writeChunk(socket, firstPart);
        socket->write("40\r\n" + rest);
    } else {
        socket->write(firstPart);
    }
    QTRY_COMPARE(rec.events.size(), 1);
    if (!head.contains("chunked"))
        socket->write(rest);
    socket->flush();
    socket->disconnectFromHost();
    QTRY_COMPARE(rec.outcomes.size(), 1);
    QCOMPARE(int(rec.outcomes[0]), outcome);
    QCOMPARE(rec.eventsAtFinish, outcome == int(Outcome::Completed) ? 2 : 1);
    QVERIFY(!rec.detail.isEmpty() || outcome == int(Outcome::Completed));
}

void TestUpstreamClient::connectionRefusedIsConnectionFailed()
{
    QTcpServer probe;
    QVERIFY(probe.listen(QHostAddress::LocalHost));
    const quint16 port = probe.serverPort();
    probe.close();
    UpstreamClient client;
    UpstreamRequest request = turnRequest(QUrl(QStringLiteral("http://127.0.0.1:%1/x").arg(port)));
    Recorder rec(client.start(request));
    QTRY_COMPARE(rec.outcomes.size(), 1);
    QCOMPARE(rec.outcomes[0], Outcome::ConnectionFailed);
    QCOMPARE(rec.status, -1);
    QCOMPARE(rec.sent, 0);
    QVERIFY(!rec.detail.isEmpty());
    QCOMPARE(client.activeCalls(), 0);
}

void TestUpstreamClient::closedBeforeResponseIsConnectionLost()
{
    // The request went out; the upstream may have acted on it, so it is neither resent nor reported as a
    // connection that never worked.
    RawHttpServer server;
    UpstreamClient client;
    Recorder rec(client.start(turnRequest(server.url("/x"))));
    QTRY_COMPARE(server.requests.size(), 1);
    QTRY_COMPARE(rec.sent, 1);
    server.requests[0].socket->disconnectFromHost();
    QTRY_COMPARE(rec.outcomes.size(), 1);
    QCOMPARE(rec.outcomes[0], Outcome::ConnectionLost);
    QCOMPARE(rec.status, -1);
    QVERIFY(!rec.detail.isEmpty());
    QTest::qWait(300);
    QCOMPARE(server.requests.size(), 1);
    QCOMPARE(server.acceptedConnections(), 1);
}

void TestUpstreamClient::abortEmitsExactlyOneFinishedAndStops()
{
    RawHttpServer server;
    UpstreamClient client;
    Recorder rec(client.start(turnRequest(server.url("/r"))));
    QTRY_COMPARE(server.requests.size(), 1);
    QTcpSocket *socket = server.requests[0].socket;
    QSignalSpy serverSawClose(socket, &QTcpSocket::disconnected);
    RawHttpServer::writeHead(socket, "200 OK", sseHead);
    RawHttpServer::writeChunk(socket, "data: 1\n\n");
    QTRY_COMPARE(rec.events.size(), 1);

    rec.call->abort(QStringLiteral("stream_idle"));
    QCOMPARE(rec.outcomes.size(), 1); // synchronously
    QCOMPARE(rec.outcomes[0], Outcome::Aborted);
    QCOMPARE(rec.detail, QString("stream_idle"));
    QCOMPARE(client.activeCalls(), 0);
    rec.call->abort(); // a second abort is a no-op

    RawHttpServer::writeChunk(socket, "data: 2\n\n");
    QVERIFY(serverSawClose.wait(5000)); // the connection is really closed
    QTest::qWait(50);
    QCOMPARE(rec.events.size(), 1);
    QCOMPARE(rec.outcomes.size(), 1);
    QTRY_VERIFY(!rec.call);
}

void TestUpstreamClient::abortFromInsideEventHandler()
{
    RawHttpServer server;
    UpstreamClient client;
    UpstreamCall *call = client.start(turnRequest(server.url("/r")));
    Recorder rec(call);
    QObject::connect(call, &UpstreamCall::sseEvent, call, [call] { call->abort(); });
    QTRY_COMPARE(server.requests.size(), 1);
    QTcpSocket *socket = server.requests[0].socket;
    RawHttpServer::writeHead(socket, "200 OK", sseHead);
    RawHttpServer::writeChunk(socket, "data: 1\n\ndata: 2\n\n: keepalive\n\ndata: 3\n\n");
    RawHttpServer::endChunks(socket);
    QTRY_COMPARE(rec.outcomes.size(), 1);
    QTest::qWait(50);
    QCOMPARE(rec.outcomes, QList<Outcome>{Outcome::Aborted});
    QCOMPARE(rec.events.size(), 1);
    QCOMPARE(rec.keepalives, 0);
}

void TestUpstreamClient::eventListenerMayAbortOrLeaveFromInsideItsCall()
{
    // The listener a turn sets instead of connecting to sseEvent(): called for every event while set, and free
    // to abort the call or unset itself from inside that call (the signal takes the events from then on).
    struct Listener final : sy::UpstreamEventListener
    {
        UpstreamCall *call = nullptr;
        bool abortOnFirst = false;
        QList<QByteArray> seen;
        void upstreamEvent(const sy::SseEvent &event) override
        {
            seen.append(event.data);
            if (abortOnFirst)
                call->abort();
            else
                call->setEventListener(nullptr);
        }
    };
    for (const bool abortOnFirst : {true, false}) {
        RawHttpServer server;
        UpstreamClient client;
        UpstreamCall *call = client.start(turnRequest(server.url("/r")));
        Recorder rec(call);
        Listener listener;
        listener.call = call;
        listener.abortOnFirst = abortOnFirst;
        call->setEventListener(&listener);
        QTRY_COMPARE(server.requests.size(), 1);
        QTcpSocket *socket = server.requests[0].socket;
        RawHttpServer::writeHead(socket, "200 OK", sseHead);
        RawHttpServer::writeChunk(socket, "data: 1\n\ndata: 2\n\ndata: 3\n\n");
        RawHttpServer::endChunks(socket);
        QTRY_COMPARE(rec.outcomes.size(), 1);
        QTest::qWait(50);
        QCOMPARE(listener.seen, QList<QByteArray>{"1"});
        if (abortOnFirst) {
            QCOMPARE(rec.outcomes, QList<Outcome>{Outcome::Aborted});
            QCOMPARE(rec.events.size(), 0);
        } else {
            QCOMPARE(rec.outcomes, QList<Outcome>{Outcome::Completed});
            QCOMPARE(rec.events.size(), 2); // "2" and "3", through the signal
        }
    }
}

void TestUpstreamClient::aListenerDestroyedWhileSetDetachesItself()
{
    // A call let finish after its turn's terminal event may outlive that turn: a listener destroyed while it is
    // still set must never be called again; the events go to the signal then. Red when ~UpstreamEventListener
    // does not detach: the call reaches the destroyed listener (counted below, or an abort in a pure virtual
    // call, as the compiler leaves the object), and nothing reaches the signal.
    struct Listener final : sy::UpstreamEventListener
    {
        bool *alive = nullptr;
        int *calledWhileDead = nullptr;
        QList<QByteArray> seen;
        ~Listener() { *alive = false; }
        void upstreamEvent(const sy::SseEvent &event) override
        {
            if (!*alive)
                ++*calledWhileDead;
            else
                seen.append(event.data);
        }
    };
    RawHttpServer server;
    UpstreamClient client;
    UpstreamCall *call = client.start(turnRequest(server.url("/r")));
    Recorder rec(call);
    bool alive = true;
    int calledWhileDead = 0;
    std::optional<Listener> listener(std::in_place);
    listener->alive = &alive;
    listener->calledWhileDead = &calledWhileDead;
    call->setEventListener(&*listener);
    QTRY_COMPARE(server.requests.size(), 1);
    QTcpSocket *socket = server.requests[0].socket;
    RawHttpServer::writeHead(socket, "200 OK", sseHead);
    RawHttpServer::writeChunk(socket, "data: 1\n\n");
    QTRY_COMPARE(listener->seen, QList<QByteArray>{"1"});
    listener.reset();
    QVERIFY(!alive);
    RawHttpServer::writeChunk(socket, "data: 2\n\n");
    RawHttpServer::endChunks(socket);
    QTRY_COMPARE(rec.outcomes.size(), 1);
    QCOMPARE(rec.outcomes, QList<Outcome>{Outcome::Completed});
    QCOMPARE(calledWhileDead, 0);
    QCOMPARE(rec.events.size(), 1); // "2", through the signal

    // Set on a second call, a listener leaves the first: destroying it later touches neither.
    UpstreamCall *first = client.start(turnRequest(server.url("/r")));
    UpstreamCall *second = client.start(turnRequest(server.url("/r")));
    Recorder firstRec(first);
    Recorder secondRec(second);
    alive = true;
    listener.emplace();
    listener->alive = &alive;
    listener->calledWhileDead = &calledWhileDead;
    first->setEventListener(&*listener);
    second->setEventListener(&*listener);
    QTRY_COMPARE(server.requests.size(), 3);
    for (int i : {1, 2}) {
        RawHttpServer::writeHead(server.requests[i].socket, "200 OK", sseHead);
        RawHttpServer::writeChunk(server.requests[i].socket, "data: x\n\n");
    }
    QTRY_COMPARE(listener->seen.size() + firstRec.events.size(), 2);
    QCOMPARE(listener->seen.size(), 1);
    QCOMPARE(firstRec.events.size(), 1);
    first->abort();
    listener.reset();
    second->abort();
    QCOMPARE(calledWhileDead, 0);
}

void TestUpstreamClient::abortAfterFinishedIsNoOp()
{
    RawHttpServer server;
    UpstreamClient client;
    UpstreamCall *call = client.start(turnRequest(server.url("/r")));
    Recorder rec(call);
    QObject::connect(call, &UpstreamCall::finished, call, [call] { call->abort(); });
    QTRY_COMPARE(server.requests.size(), 1);
    RawHttpServer::respond(server.requests[0].socket, "200 OK", "Content-Type: application/json\r\n", "{}");
    QTRY_VERIFY(!rec.call);
    QCOMPARE(rec.outcomes, QList<Outcome>{Outcome::Completed});
}

void TestUpstreamClient::twentyConcurrentCallsRunAtOnce()
{
    RawHttpServer server;
    UpstreamClient client;
    std::vector<std::unique_ptr<Recorder>> recs;
    for (int i = 0; i < 20; ++i)
        recs.push_back(std::make_unique<Recorder>(client.start(turnRequest(server.url("/r")))));
    QCOMPARE(client.activeCalls(), 20);
    // Nothing is answered until all 20 requests are in: a queued 7th would never arrive.
    QTRY_COMPARE_WITH_TIMEOUT(server.requests.size(), 20, 10000);
    QCOMPARE(server.openConnections(), 20);
    QCOMPARE(server.acceptedConnections(), 20);
    QSet<QTcpSocket *> sockets;
    for (const auto &req : std::as_const(server.requests))
        sockets.insert(req.socket);
    QCOMPARE(sockets.size(), 20);
    for (const auto &req : std::as_const(server.requests)) {
        RawHttpServer::writeHead(req.socket, "200 OK", sseHead);
        RawHttpServer::writeChunk(req.socket, "event: response.completed\ndata: {}\n\n");
        RawHttpServer::endChunks(req.socket);
    }
    for (const auto &rec : recs) {
        QTRY_COMPARE(rec->outcomes.size(), 1);
        QCOMPARE(rec->outcomes[0], Outcome::Completed);
        QCOMPARE(rec->events.size(), 1);
    }
    QCOMPARE(client.activeCalls(), 0);
    QCOMPARE(client.idleConnections(), 20); // every one ended cleanly and stays open for the next call
}

void TestUpstreamClient::pauseStopsDrainingTheSocket()
{
    RawHttpServer server;
    UpstreamClient client;
    UpstreamCall *call = client.start(turnRequest(server.url("/r")));
    Recorder rec(call);
    // A slow downstream: the consumer pauses after the first event.
    QObject::connect(call, &UpstreamCall::sseEvent, call, [call] {
        if (!call->isPaused())
            call->pause();
    });
    QTRY_COMPARE(server.requests.size(), 1);
    QTcpSocket *socket = server.requests[0].socket;

    // More than the kernel's loopback buffers can hold (tcp_rmem max 32 MiB + tcp_wmem max 4 MiB here).
    constexpr int eventCount = 16 * 1024;
    const QByteArray payload(4000, 'x');
    QByteArray stream;
    for (int i = 0; i < eventCount; ++i)
        stream += "event: response.output_text.delta\ndata: " + QByteArray::number(i) + payload + "\n\n";
    const qint64 total = stream.size();
    RawHttpServer::writeHead(socket, "200 OK", "Content-Type: text/event-stream\r\nConnection: close\r\n");
    socket->write(stream);

    QTRY_COMPARE(rec.events.size(), 1);
    // Let the transfer settle: while paused, the reader stops and the socket is not drained.
    qint64 pending = socket->bytesToWrite();
    for (int settled = 0; settled < 5;) {
        QTest::qWait(100);
        const qint64 now = socket->bytesToWrite();
        settled = now == pending ? settled + 1 : 0;
        pending = now;
    }
    QCOMPARE(rec.events.size(), 1);
    QVERIFY2(pending > total / 4,
             qPrintable(QStringLiteral("only %1 of %2 bytes left unread").arg(pending).arg(total)));

    call->resume();
    QCOMPARE(rec.events.size(), 1); // resume() never delivers synchronously
    QTRY_COMPARE_WITH_TIMEOUT(rec.events.size(), 2, 5000);
    // Keep the consumer going from now on.
    QObject::connect(call, &UpstreamCall::sseEvent, call, [call] { call->resume(); });
    call->resume();
    QTRY_VERIFY_WITH_TIMEOUT(socket->bytesToWrite() == 0, 30000);
    socket->disconnectFromHost();
    QTRY_COMPARE_WITH_TIMEOUT(rec.outcomes.size(), 1, 30000);
    QCOMPARE(rec.outcomes[0], Outcome::Completed);
    QCOMPARE(rec.events.size(), eventCount);
    QCOMPARE(rec.events.last().data, QByteArray::number(eventCount - 1) + payload);
}

namespace {
QStringList *g_messages = nullptr;
void captureMessage(QtMsgType, const QMessageLogContext &, const QString &message)
{
    if (g_messages)
        g_messages->append(message);
}
} // namespace

void TestUpstreamClient::authorizationIsNeverLogged()
{
    QStringList messages;
    g_messages = &messages;
    QLoggingCategory::setFilterRules(QStringLiteral("sy.upstream.debug=true\nqt.network.*=true"));
    const QtMessageHandler previous = qInstallMessageHandler(captureMessage);

    QStringList details;
    {
        RawHttpServer server;
        UpstreamClient client;
        Recorder ok(client.start(turnRequest(server.url("/r"))));
        QTRY_COMPARE(server.requests.size(), 1);
        RawHttpServer::respond(server.requests[0].socket, "401 Unauthorized", "Content-Type: application/json\r\n",
                               R"({"error":"invalid token"})");
        QTRY_COMPARE(ok.outcomes.size(), 1);
        details << ok.detail;

        QTcpServer probe;
        QVERIFY(probe.listen(QHostAddress::LocalHost));
        const quint16 port = probe.serverPort();
        probe.close();
        Recorder refused(client.start(turnRequest(QUrl(QStringLiteral("http://127.0.0.1:%1/x").arg(port)))));
        QTRY_COMPARE(refused.outcomes.size(), 1);
        details << refused.detail;
    }

    qInstallMessageHandler(previous);
    QLoggingCategory::setFilterRules(QString());
    g_messages = nullptr;
    QVERIFY(!messages.isEmpty()); // logging did happen, so its absence below means something
    for (const QString &text : std::as_const(messages) + details)
        QVERIFY2(!text.contains("secret-token-xyz"), qPrintable(text));
}

QTEST_GUILESS_MAIN(TestUpstreamClient)
#include "tst_upstreamclient.moc"
