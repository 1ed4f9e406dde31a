// Downstream HTTP server output path: what a handler writes during one event-loop pass leaves together when
// the pass ends (a stream's last event with its final chunk), except a stream's head and first body bytes,
// which leave at once; backpressure still works when the bytes go straight to the kernel, order survives a
// full kernel buffer, a reset client is noticed by the failed send, and request bodies are kept without
// growth slack.
#include "http/HttpServer.h"
#include "lib/RawHttpClient.h"

#include <QPointer>
#include <QSignalSpy>
#include <QTest>
#include <QTimer>

#include <arpa/inet.h>
#include <cerrno>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace sy;
using sy::test::RawHttpClient;
using sy::test::RawResponse;

namespace {

// A client outside Qt's event loop: nothing reads its socket behind the test's back, so what recv() finds is
// exactly what the server has handed to the kernel so far.
class PlainClient
{
public:
    ~PlainClient()
    {
        if (m_fd >= 0)
            ::close(m_fd);
    }
    bool connectTo(quint16 port)
    {
        m_fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(port);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        return m_fd >= 0 && ::connect(m_fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) == 0;
    }
    bool send(const QByteArray &bytes) { return ::send(m_fd, bytes.constData(), size_t(bytes.size()), 0) == bytes.size(); }
    // Everything available now, without waiting.
    QByteArray readNow()
    {
        QByteArray out;
        char buffer[65536];
        for (;;) {
            const ssize_t n = ::recv(m_fd, buffer, sizeof buffer, MSG_DONTWAIT);
            if (n <= 0)
                return out;
            out.append(buffer, qsizetype(n));
        }
    }
    // Waits (without running Qt's event loop) until `bytes` bytes arrived or the time is up.
    QByteArray readExactly(qsizetype bytes, int timeoutMs = 2000)
    {
        QByteArray out;
        QDeadlineTimer deadline(timeoutMs);
        while (out.size() < bytes && !deadline.hasExpired()) {
            pollfd p{m_fd, POLLIN, 0};
            if (::poll(&p, 1, int(qMax<qint64>(1, deadline.remainingTime()))) <= 0)
                break;
            out += readNow();
        }
        return out;
    }
    // Closes with RST instead of FIN.
    void reset()
    {
        linger l{1, 0};
        ::setsockopt(m_fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
        ::close(m_fd);
        m_fd = -1;
    }

private:
    int m_fd = -1;
};

QByteArray chunk(const QByteArray &payload)
{
    return QByteArray::number(payload.size(), 16) + "\r\n" + payload + "\r\n";
}

} // namespace

class TestHttpServerOutput : public QObject
{
    Q_OBJECT

private:
    HttpServer *m_server = nullptr;
    QPointer<HttpResponse> m_response;

    // Starts an SSE stream and leaves it open.
    void installStreamingHandler()
    {
        m_server->setHandler([this](HttpRequestPtr, HttpResponse *response) {
            m_response = response;
            response->beginStream(200, "text/event-stream");
            response->write("data: first\n\n");
        });
    }

    // Connects a PlainClient, sends a request and reads the head and the first event.
    bool openStream(PlainClient &client)
    {
        if (!client.connectTo(m_server->serverPort()) ||
            !client.send(RawHttpClient::buildRequest("GET", "/s")))
            return false;
        if (!QTest::qWaitFor([this] { return !m_response.isNull(); }, 5000))
            return false;
        const QByteArray firstChunk = chunk("data: first\n\n");
        QByteArray got;
        QDeadlineTimer deadline(5000);
        while (!got.endsWith(firstChunk) && !deadline.hasExpired()) {
            QCoreApplication::processEvents();
            got += client.readNow();
        }
        return got.startsWith("HTTP/1.1 200") && got.endsWith(firstChunk);
    }

private slots:
    void init()
    {
        m_response.clear();
        m_server = new HttpServer(this);
        QVERIFY(m_server->listen(QHostAddress::LocalHost, 0));
    }

    void cleanup()
    {
        delete m_server;
        m_server = nullptr;
    }

    void writesOfOnePassLeaveWhenThePassEnds()
    {
        installStreamingHandler();
        PlainClient client;
        QVERIFY(openStream(client));

        QVERIFY(m_response->write("data: A\n\n"));
        QVERIFY(m_response->write("data: B\n\n"));
        const QByteArray expected = chunk("data: A\n\n") + chunk("data: B\n\n") + "0\r\n\r\n";
        QCOMPARE(m_response->pendingBytes(), qint64(expected.size() - 5));
        m_response->end();
        // Nothing has reached the kernel yet: the last event waits for the final chunk.
        QCOMPARE(client.readNow(), QByteArray());

        QCoreApplication::processEvents(); // one pass
        QCOMPARE(client.readExactly(expected.size()), expected);
    }

    void aStreamsFirstBytesLeaveBeforeThePassEnds()
    {
        // The head and the first body bytes of a stream go to the kernel inside write(): what the handler does
        // next in the same pass (the other events of the upstream's first read) is not in front of the client's
        // first byte. The next write waits for the end of the pass as before.
        PlainClient client;
        QByteArray seenAfterFirst = "(handler not run)", seenAfterSecond = "(handler not run)";
        m_server->setHandler([&](HttpRequestPtr, HttpResponse *response) {
            m_response = response;
            response->beginStream(200, "text/event-stream");
            response->write("data: first\n\n");
            seenAfterFirst = client.readNow();
            response->write("data: second\n\n");
            seenAfterSecond = client.readNow();
        });
        QVERIFY(client.connectTo(m_server->serverPort()));
        QVERIFY(client.send(RawHttpClient::buildRequest("GET", "/s")));
        QTRY_VERIFY_WITH_TIMEOUT(!m_response.isNull(), 5000);
        QVERIFY2(seenAfterFirst.startsWith("HTTP/1.1 200"), seenAfterFirst.constData());
        QVERIFY2(seenAfterFirst.endsWith(chunk("data: first\n\n")), seenAfterFirst.constData());
        QCOMPARE(seenAfterSecond, QByteArray());
        const QByteArray second = chunk("data: second\n\n");
        QByteArray got;
        QDeadlineTimer deadline(5000);
        while (got.size() < second.size() && !deadline.hasExpired()) {
            QCoreApplication::processEvents();
            got += client.readNow();
        }
        QCOMPARE(got, second);
    }

    void drainedFollowsAFlushThatEmptiedTheQueue()
    {
        m_server->setWatermarks(1024, 4096);
        installStreamingHandler();
        PlainClient client;
        QVERIFY(openStream(client));
        QSignalSpy drained(m_response.data(), &HttpResponse::drained);

        const QByteArray piece(1000, 'x');
        for (int i = 0; i < 8; ++i)
            QVERIFY(m_response->write(piece));
        QVERIFY(m_response->congested());
        QVERIFY(m_response->pendingBytes() >= 8000);

        // The kernel takes all of it in one send; no bytesWritten() follows, yet the writer is told.
        QCoreApplication::processEvents();
        QCOMPARE(m_response->pendingBytes(), qint64(0));
        QVERIFY(!m_response->congested());
        QTRY_COMPARE(drained.count(), 1);
        QCOMPARE(client.readExactly(8 * chunk(piece).size()).size(), 8 * chunk(piece).size());
    }

    void orderSurvivesAFullKernelBuffer()
    {
        m_server->setWatermarks(64 * 1024, 256 * 1024);
        QPointer<HttpResponse> response;
        QByteArray expected;
        int next = 0;
        const int pieces = 600; // ~9.6 MB: far more than the kernel buffers hold
        std::function<void()> pump = [&] {
            while (response && !response->isFinished() && !response->congested()) {
                if (next == pieces) {
                    response->end();
                    return;
                }
                // Every piece differs, so a reordering or a lost piece changes the body.
                QByteArray piece = QByteArray::number(next).rightJustified(8, '0') + ':';
                piece += QByteArray(16 * 1024 - piece.size(), char('a' + next % 26));
                expected += piece;
                response->write(piece);
                ++next;
            }
        };
        m_server->setHandler([&](HttpRequestPtr, HttpResponse *r) {
            response = r;
            connect(r, &HttpResponse::drained, r, [&] { QTimer::singleShot(0, pump); });
            r->beginStream(200, "application/octet-stream");
            pump();
        });

        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        client.setReading(false);
        client.send(RawHttpClient::buildRequest("GET", "/big"));
        QTRY_VERIFY(response && response->congested());
        QVERIFY(next < pieces);
        client.setReading(true);
        const std::optional<RawResponse> r = client.readResponse(30000);
        QVERIFY(r);
        QVERIFY(r->complete);
        QCOMPARE(next, pieces);
        QCOMPARE(r->body.size(), expected.size());
        QVERIFY(r->body == expected);
    }

    void resetClientIsNoticedOnSend()
    {
        installStreamingHandler();
        PlainClient client;
        QVERIFY(openStream(client));
        QSignalSpy gone(m_response.data(), &HttpResponse::clientDisconnected);
        client.reset();
        // Whichever notices first, the failed send or the read side, the handler hears it exactly once.
        m_response->write("data: into the void\n\n");
        QTRY_COMPARE(gone.count(), 1);
        QTRY_VERIFY(m_response.isNull());
        QTRY_COMPARE(m_server->connectionCount(), 0);
        QCOMPARE(gone.count(), 1);
    }

    void shutdownStillDeliversWhatWasWritten()
    {
        installStreamingHandler();
        PlainClient client;
        QVERIFY(openStream(client));
        QVERIFY(m_response->write("data: last words\n\n"));
        // No event-loop pass between the write and the shutdown.
        delete m_server;
        m_server = nullptr;
        const QByteArray expected = chunk("data: last words\n\n");
        QCOMPARE(client.readExactly(expected.size()), expected);
    }

    void requestBodiesAreKeptWithoutSlack_data()
    {
        QTest::addColumn<bool>("chunked");
        QTest::newRow("content-length") << false;
        QTest::newRow("chunked") << true;
    }

    void requestBodiesAreKeptWithoutSlack()
    {
        QFETCH(bool, chunked);
        HttpRequestPtr seen;
        m_server->setHandler([&](HttpRequestPtr request, HttpResponse *response) {
            seen = request;
            response->sendFull(200, "text/plain", "ok");
        });
        QByteArray body;
        for (int i = 0; body.size() < 40000; ++i)
            body += QByteArray::number(i) + ',';
        body.truncate(40000);

        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        QByteArray head = "POST /b HTTP/1.1\r\nHost: x\r\n";
        head += chunked ? QByteArray("Transfer-Encoding: chunked\r\n\r\n")
                        : "Content-Length: " + QByteArray::number(body.size()) + "\r\n\r\n";
        client.send(head);
        // The body arrives in pieces, each read on its own, so the buffer has to grow along the way.
        for (qsizetype at = 0; at < body.size(); at += 5000) {
            const QByteArray piece = body.mid(at, 5000);
            client.send(chunked ? chunk(piece) : piece);
            QTest::qWait(5);
        }
        if (chunked)
            client.send("0\r\n\r\n");
        QVERIFY(client.readResponse());
        QVERIFY(seen);
        QCOMPARE(seen->body, body);
        QVERIFY2(seen->body.capacity() - seen->body.size() <= seen->body.size() / 8,
                 qPrintable(QStringLiteral("capacity %1 for %2 bytes").arg(seen->body.capacity()).arg(body.size())));
    }
};

QTEST_GUILESS_MAIN(TestHttpServerOutput)
#include "tst_httpserver_output.moc"
