// Downstream HTTP server: request parsing, keep-alive, pipelining, bodies, errors.
#include "ManualClock.h"
#include "http/HttpServer.h"
#include "lib/RawHttpClient.h"
#include "util/LargeBufferPool.h"

#include <QJsonDocument>
#include <QPointer>
#include <QScopeGuard>
#include <QTest>
#include <QTimer>
#include <zlib.h>
#include <zstd.h>

using namespace sy;
using sy::test::ManualClock;
using sy::test::RawHttpClient;
using sy::test::RawResponse;

namespace {

QByteArray gzipCompress(const QByteArray &in, int windowBits)
{
    z_stream zs{};
    deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, windowBits, 8, Z_DEFAULT_STRATEGY);
    QByteArray out(int(deflateBound(&zs, uLong(in.size()))) + 64, Qt::Uninitialized);
    zs.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(in.constData()));
    zs.avail_in = uInt(in.size());
    zs.next_out = reinterpret_cast<Bytef *>(out.data());
    zs.avail_out = uInt(out.size());
    deflate(&zs, Z_FINISH);
    out.resize(qsizetype(zs.total_out));
    deflateEnd(&zs);
    return out;
}

// A streaming frame without a content size, as Codex sends.
QByteArray zstdCompressStreaming(const QByteArray &in)
{
    ZSTD_CCtx *cctx = ZSTD_createCCtx();
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 0);
    QByteArray out(qsizetype(ZSTD_compressBound(size_t(in.size()))) + 64, Qt::Uninitialized);
    ZSTD_inBuffer input{in.constData(), size_t(in.size()), 0};
    ZSTD_outBuffer output{out.data(), size_t(out.size()), 0};
    while (ZSTD_compressStream2(cctx, &output, &input, ZSTD_e_end) != 0) {
    }
    ZSTD_freeCCtx(cctx);
    out.resize(qsizetype(output.pos));
    return out;
}

// Letters in a pattern that does not repeat within a page: a byte lost, doubled or moved shows.
QByteArray patternedBody(qsizetype bytes, int step, int period)
{
    QByteArray body(bytes, Qt::Uninitialized);
    for (qsizetype i = 0; i < body.size(); ++i)
        body[i] = char('a' + (i * step + i / period) % 26);
    return body;
}

QByteArray bigText()
{
    QByteArray text;
    for (int i = 0; i < 40000; ++i)
        text += "line " + QByteArray::number(i) + " of a body that compresses well\n";
    return text; // ~1.5 MB
}

} // namespace

class TestHttpServer : public QObject
{
    Q_OBJECT

private:
    HttpServer *m_server = nullptr;
    QList<HttpRequestPtr> m_requests;
    // Echo handler: 200 with the request body, or per-path behaviour.
    void echoHandler(HttpRequestPtr request, HttpResponse *response)
    {
        m_requests.append(request);
        response->setHeader("X-Path", request->path.toUtf8());
        response->sendFull(200, "application/octet-stream", request->body);
    }

    // The thread's pool of large buffers, emptied and keeping them until the returned guard goes.
    static auto keepingLargeBuffers()
    {
        LargeBufferPool &pool = LargeBufferPool::local();
        pool.clear();
        pool.setKeeping(true);
        return qScopeGuard([&pool] {
            pool.setKeeping(false);
            pool.clear();
        });
    }

    RawResponse roundTrip(RawHttpClient &client, const QByteArray &bytes)
    {
        client.send(bytes);
        const std::optional<RawResponse> r = client.readResponse();
        if (!r)
            return RawResponse();
        return *r;
    }

private slots:
    void init()
    {
        m_requests.clear();
        m_server = new HttpServer(this);
        m_server->setHandler([this](HttpRequestPtr r, HttpResponse *s) { echoHandler(std::move(r), s); });
        QVERIFY(m_server->listen(QHostAddress::LocalHost, 0));
    }

    void cleanup()
    {
        delete m_server;
        m_server = nullptr;
    }

    void simpleGet()
    {
        ManualClock clock(1796000000000);
        clock.advance(4242);
        m_server->setClock(&clock);
        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        const RawResponse r = roundTrip(
            client, RawHttpClient::buildRequest("GET", "/backend-api/codex/models%20x?client_version=0.171.0&a=b%20c",
                                                {{"X-Custom", "  Value  "}}));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("content-length"), QByteArray("0"));
        QCOMPARE(r.header("x-path"), QByteArray("/backend-api/codex/models x"));
        QCOMPARE(m_requests.size(), 1);
        const HttpRequest &req = *m_requests.first();
        QCOMPARE(req.method, QByteArray("GET"));
        QCOMPARE(req.rawQuery, QByteArray("client_version=0.171.0&a=b%20c"));
        QCOMPARE(req.query.queryItemValue(QStringLiteral("client_version")), QStringLiteral("0.171.0"));
        QCOMPARE(req.query.queryItemValue(QStringLiteral("a"), QUrl::FullyDecoded), QStringLiteral("b c"));
        QCOMPARE(req.header("x-custom"), QByteArray("Value"));
        QCOMPARE(req.header("X-CUSTOM"), QByteArray("Value"));
        QCOMPARE(req.headers.at(1).first, QByteArray("x-custom")); // names lowercased, Host first
        QCOMPARE(req.peerAddress, QHostAddress(QHostAddress::LocalHost));
        QCOMPARE(req.receivedAtMs, qint64(4242));
        QVERIFY(req.keepAlive);
        QVERIFY(!req.isWebSocketUpgrade());
    }

    void keepAliveSequential()
    {
        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        const RawResponse a = roundTrip(client, RawHttpClient::buildRequest("POST", "/one", {}, "first"));
        const RawResponse b = roundTrip(client, RawHttpClient::buildRequest("POST", "/two", {}, "second"));
        QCOMPARE(a.body, QByteArray("first"));
        QCOMPARE(b.body, QByteArray("second"));
        QVERIFY(a.header("connection").isEmpty());
        QVERIFY(client.isConnected());
        QCOMPARE(m_requests.size(), 2);
        QCOMPARE(m_requests.at(0)->connectionId, m_requests.at(1)->connectionId);
        QCOMPARE(m_requests.at(0)->sequenceOnConnection, 0);
        QCOMPARE(m_requests.at(1)->sequenceOnConnection, 1);
        QCOMPARE(m_server->connectionCount(), 1);
    }

    void pipelinedInOrder()
    {
        // The first request is answered asynchronously; the second must wait for it.
        QStringList events;
        m_server->setHandler([&events](HttpRequestPtr request, HttpResponse *response) {
            events << QStringLiteral("start ") + request->path;
            QPointer<HttpResponse> guarded(response);
            const int delay = request->path == QLatin1String("/slow") ? 100 : 0;
            QTimer::singleShot(delay, [guarded, request, &events] {
                if (!guarded)
                    return;
                events << QStringLiteral("end ") + request->path;
                guarded->sendFull(200, "text/plain", request->path.toUtf8());
            });
        });
        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        client.send(RawHttpClient::buildRequest("GET", "/slow") +
                    RawHttpClient::buildRequest("POST", "/fast", {}, "x") +
                    RawHttpClient::buildRequest("GET", "/third"));
        const std::optional<RawResponse> a = client.readResponse();
        const std::optional<RawResponse> b = client.readResponse();
        const std::optional<RawResponse> c = client.readResponse();
        QVERIFY(a && b && c);
        QCOMPARE(a->body, QByteArray("/slow"));
        QCOMPARE(b->body, QByteArray("/fast"));
        QCOMPARE(c->body, QByteArray("/third"));
        QCOMPARE(events,
                 (QStringList{"start /slow", "end /slow", "start /fast", "end /fast", "start /third", "end /third"}));
    }

    void largeBodyInPiecesThenAPipelinedRequest()
    {
        // A body with a Content-Length is read from the socket straight into its reserved space once it has
        // begun (HttpConnection::readBodyInPlace): it must arrive whole and once, whether its first bytes came
        // with the head or not, and bytes past its end (the next request, in the same write as the body's
        // tail) must still be parsed although Qt signals no new data for them.
        const QByteArray body = patternedBody(3 * 1024 * 1024 + 7, 7, 4093);
        for (const bool headAlone : {false, true}) {
            m_requests.clear();
            RawHttpClient client;
            QVERIFY(client.connectTo(m_server->serverPort()));
            const QByteArray head = "POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: " +
                                    QByteArray::number(body.size()) + "\r\n\r\n";
            const qsizetype first = headAlone ? 0 : 1000;
            client.send(head + body.left(first));
            QTest::qWait(20);
            client.send(body.mid(first, 1024 * 1024));
            QTest::qWait(20);
            client.send(body.mid(first + 1024 * 1024) + RawHttpClient::buildRequest("GET", "/next"));
            const std::optional<RawResponse> a = client.readResponse();
            const std::optional<RawResponse> b = client.readResponse();
            QVERIFY(a && b);
            QCOMPARE(a->header("x-path"), QByteArray("/big"));
            QCOMPARE(a->body.size(), body.size());
            QVERIFY(a->body == body);
            QCOMPARE(b->header("x-path"), QByteArray("/next"));
            QCOMPARE(m_requests.size(), 2);
            QCOMPARE(m_requests.first()->wireBodyBytes, qint64(body.size()));
        }
    }

    void aHeadAndItsBodyInOneWriteThenAPipelinedRequest_data()
    {
        QTest::addColumn<int>("headerBytes");
        QTest::addColumn<int>("bodyBytes");
        QTest::addColumn<int>("nextBodyBytes");
        QTest::addColumn<bool>("answerLater");
        QTest::newRow("codex-sized body") << 600 << 42 * 1024 << 0 << false;
        QTest::newRow("codex-sized body, answered later") << 600 << 42 * 1024 << 0 << true;
        QTest::newRow("body just past the head's piece") << 100 << 4 * 1024 << 0 << false;
        QTest::newRow("head longer than the piece") << 6 * 1024 << 42 * 1024 << 0 << false;
        QTest::newRow("request ends inside the piece, the next crosses it") << 100 << 2 * 1024 << 8 * 1024 << false;
        QTest::newRow("request ends inside the piece, answered later") << 100 << 2 * 1024 << 8 * 1024 << true;
        QTest::newRow("both under the piece: read whole, as before") << 100 << 1024 << 0 << false;
    }

    void aHeadAndItsBodyInOneWriteThenAPipelinedRequest()
    {
        // A request whose head and body arrive together with more than a piece (4 KiB): its head is read in a piece
        // of its own, the rest of its body straight into its place (HttpConnection::onReadyRead). Both bodies must
        // arrive whole and once, and the next request, in the same write, must still be parsed although Qt signals
        // no new data for it: whether the first request ends after the piece or inside it (the piece's rest then
        // holds the next request's start), and whether it is answered at once or while the rest is read.
        QFETCH(int, headerBytes);
        QFETCH(int, bodyBytes);
        QFETCH(int, nextBodyBytes);
        QFETCH(bool, answerLater);
        if (answerLater) {
            m_server->setHandler([this](HttpRequestPtr request, HttpResponse *response) {
                m_requests.append(request);
                QPointer<HttpResponse> guarded(response);
                QTimer::singleShot(request->path == QLatin1String("/codex") ? 50 : 0, [guarded, request] {
                    if (!guarded)
                        return;
                    guarded->setHeader("X-Path", request->path.toUtf8());
                    guarded->sendFull(200, "application/octet-stream", request->body);
                });
            });
        }
        const QByteArray body = patternedBody(bodyBytes, 11, 509);
        const QByteArray nextBody = patternedBody(nextBodyBytes, 7, 509);
        const QByteArray head = "POST /codex HTTP/1.1\r\nHost: x\r\nX-Filler: " + QByteArray(headerBytes, 'h') +
                                "\r\nContent-Length: " + QByteArray::number(body.size()) + "\r\n\r\n";
        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        client.send(head + body +
                    RawHttpClient::buildRequest(nextBody.isEmpty() ? "GET" : "POST", "/next", {}, nextBody));
        const std::optional<RawResponse> a = client.readResponse();
        const std::optional<RawResponse> b = client.readResponse();
        QVERIFY(a && b);
        QCOMPARE(a->header("x-path"), QByteArray("/codex"));
        QCOMPARE(a->body.size(), body.size());
        QVERIFY(a->body == body);
        QCOMPARE(b->header("x-path"), QByteArray("/next"));
        QCOMPARE(b->body.size(), nextBody.size());
        QVERIFY(b->body == nextBody);
        QCOMPARE(m_requests.size(), 2);
        QCOMPARE(m_requests.first()->wireBodyBytes, qint64(body.size()));
        // Copied once: all of the body but what the head's piece held went from Qt's buffer straight into the
        // body's memory. Provided the first read holds the whole head (here one write over loopback, far below
        // Qt's read buffer), in one read or several, no more than the piece's part of the body may have come
        // through a read buffer; with the piece gone, all that arrived together with the head would.
        const qint64 inPlace = m_requests.first()->bodyBytesInPlace;
        QVERIFY(inPlace >= 0 && inPlace <= body.size());
        const qsizetype piece = 4 * 1024;
        if (head.size() < piece && head.size() + body.size() > piece)
            QVERIFY2(inPlace >= body.size() - (piece - head.size()),
                     qPrintable(QStringLiteral("%1 of %2 body bytes read in place").arg(inPlace).arg(body.size())));
    }

    void aHeadWrittenOnItsOwnThenItsBody_data()
    {
        QTest::addColumn<int>("bodyBytes");
        QTest::newRow("codex-sized body") << 42 * 1024;
        QTest::newRow("a body larger than Qt's read buffer") << 300 * 1024;
        QTest::newRow("one byte") << 1;
    }

    void aHeadWrittenOnItsOwnThenItsBody()
    {
        // A client that writes its head, then its body (httpx, under the openai Python SDK, sends them in
        // separate calls): the body's space is taken once the head is parsed (HttpConnection::reserveBody), so
        // every body byte, the first read's included, goes from Qt's buffer straight into it; taken at the first
        // body byte, the first read's bytes (up to 64 KiB, the whole of a Codex body) would be copied twice. The
        // body must still arrive whole and once, and the next request on the connection must be read and
        // answered as usual.
        QFETCH(int, bodyBytes);
        bool headSeen = false;
        m_server->setHeadObserver([&headSeen](const HttpRequest &) { headSeen = true; });
        const QByteArray body = patternedBody(bodyBytes, 13, 509);
        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        client.send("POST /codex HTTP/1.1\r\nHost: x\r\nContent-Length: " + QByteArray::number(body.size()) +
                    "\r\n\r\n");
        QTRY_VERIFY(headSeen); // parsed before any body byte was sent
        client.send(body);
        client.send(RawHttpClient::buildRequest("POST", "/next", {}, "{}"));
        const std::optional<RawResponse> a = client.readResponse();
        const std::optional<RawResponse> b = client.readResponse();
        QVERIFY(a && b);
        QVERIFY(a->body == body);
        QCOMPARE(b->body, QByteArray("{}"));
        QCOMPARE(m_requests.size(), 2);
        QCOMPARE(m_requests.first()->bodyBytesInPlace, qint64(body.size()));
        QCOMPARE(m_requests.last()->wireBodyBytes, qint64(2));
    }

    void aBodyCutShortGivesItsMemoryBackWhenTheCloseBegins()
    {
        // A body that stops coming is answered 408 and its connection lingers before it is torn down. The body's
        // space, taken with its head (1 MiB here), must go back when the close begins (to the thread's pool,
        // which keeps it), not with the connection up to the linger later.
        const auto keeping = keepingLargeBuffers();
        LargeBufferPool &pool = LargeBufferPool::local();
        m_server->setRequestTimeoutMs(150);
        m_server->setLingerMs(10 * 1000);
        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        client.send("POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: " + QByteArray::number(1024 * 1024) + "\r\n\r\n" +
                    patternedBody(300 * 1024, 5, 509));
        const std::optional<RawResponse> r = client.readResponse(3000);
        QVERIFY(r);
        QCOMPARE(r->status, 408);
        QCOMPARE(pool.buffersKept(), 1);
        QVERIFY(pool.bytesKept() >= 1024 * 1024);
        QVERIFY(m_requests.isEmpty());
    }

    void aConnectRequestTakesNoBodySpace()
    {
        // http_parser ends a CONNECT request with its head, whatever its Content-Length says: no body comes, so
        // no space may be taken for one. Taken, it would be a large buffer out of the thread's pool (here the one
        // kept), lost with the empty body.
        const auto keeping = keepingLargeBuffers();
        LargeBufferPool &pool = LargeBufferPool::local();
        QByteArray kept; // the room a 1 MiB body would take (its length and the scan's slack of 64 bytes)
        kept.reserve(LargeBufferPool::roomFor(1024 * 1024 + 64));
        pool.giveBack(std::move(kept));
        QCOMPARE(pool.buffersKept(), 1);
        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        client.send("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nContent-Length: " +
                    QByteArray::number(1024 * 1024) + "\r\n\r\n");
        QTRY_COMPARE(m_requests.size(), 1);
        QCOMPARE(m_requests.first()->method, QByteArray("CONNECT"));
        QVERIFY(m_requests.first()->body.isEmpty());
        QCOMPARE(pool.buffersKept(), 1);
    }

    void aLargeBodyGoesIntoTheMemoryTheLastOneGaveBack()
    {
        // LargeBufferPool: the next large body is received in place into the memory the previous one's
        // holder gave back (same pages), whole, with nothing of the previous body left in it, and not squeezed
        // into a new copy when the request is completed. A little larger (a growing conversation) or a little
        // smaller body fits too.
        LargeBufferPool &pool = LargeBufferPool::local();
        pool.setKeeping(true);
        const auto stopKeeping = qScopeGuard([&pool] { pool.setKeeping(false); });
        const void *previous = nullptr;
        for (int i = 0; i < 3; ++i) {
            // A little larger, then a little smaller than the one before: no byte of that one may show.
            const QByteArray body = patternedBody(1024 * 1024 + (i == 1 ? 3000 : i * 500), i + 3, 4093);
            m_requests.clear();
            RawHttpClient client;
            QVERIFY(client.connectTo(m_server->serverPort()));
            client.send("POST /big HTTP/1.1\r\nHost: x\r\nContent-Length: " + QByteArray::number(body.size()) +
                        "\r\n\r\n" + body);
            const std::optional<RawResponse> r = client.readResponse();
            QVERIFY(r);
            QVERIFY(r->body == body);
            QCOMPARE(m_requests.size(), 1);
            const void *memory = m_requests.first()->body.constData();
            if (previous)
                QCOMPARE(memory, previous);
            previous = memory;
            QByteArray received = m_requests.first()->body;
            m_requests.first()->releaseBody();
            m_requests.clear();
            pool.giveBack(std::move(received)); // what a turn does when it ends
            QCOMPARE(pool.buffersKept(), 1);
        }
    }

    void chunkedRequestBody()
    {
        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        client.send("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
        QTest::qWait(20);
        client.send("7;ext=1\r\n, world\r\n0\r\n\r\n");
        const std::optional<RawResponse> r = client.readResponse();
        QVERIFY(r);
        QCOMPARE(r->body, QByteArray("hello, world"));
        QCOMPARE(m_requests.first()->wireBodyBytes, qint64(12));
    }

    void encodedBodies_data()
    {
        QTest::addColumn<QByteArray>("encoding");
        QTest::addColumn<QByteArray>("payload");
        const QByteArray text = bigText();
        QTest::newRow("gzip") << QByteArray("gzip") << gzipCompress(text, 15 + 16);
        QTest::newRow("deflate-zlib") << QByteArray("deflate") << gzipCompress(text, 15);
        QTest::newRow("deflate-raw") << QByteArray("deflate") << gzipCompress(text, -15);
        QTest::newRow("zstd") << QByteArray("zstd") << zstdCompressStreaming(text);
        QTest::newRow("zstd-then-gzip") << QByteArray("zstd, gzip")
                                        << gzipCompress(zstdCompressStreaming(text), 15 + 16);
    }

    void encodedBodies()
    {
        QFETCH(QByteArray, encoding);
        QFETCH(QByteArray, payload);
        const QByteArray text = bigText();
        if (encoding == "zstd")
            QCOMPARE(ZSTD_getFrameContentSize(payload.constData(), size_t(payload.size())), ZSTD_CONTENTSIZE_UNKNOWN);
        QVERIFY(payload.size() < text.size() / 4);
        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        const RawResponse r =
            roundTrip(client, RawHttpClient::buildRequest("POST", "/e", {{"Content-Encoding", encoding}}, payload));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.body.size(), text.size());
        QVERIFY(r.body == text);
        QCOMPARE(m_requests.first()->contentEncoding, encoding);
        QCOMPARE(m_requests.first()->wireBodyBytes, qint64(payload.size()));
    }

    void bodyErrors_data()
    {
        QTest::addColumn<QByteArray>("request");
        QTest::addColumn<int>("status");
        QTest::addColumn<QString>("code");
        const QByteArray big(5000, 'x');
        QTest::newRow("content-length too large")
            << RawHttpClient::buildRequest("POST", "/b", {}, big) << 413 << "request_too_large";
        QTest::newRow("chunked too large")
            << QByteArray("POST /b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n1388\r\n" + big + "\r\n0\r\n\r\n")
            << 413 << "request_too_large";
        QTest::newRow("zstd bomb") << RawHttpClient::buildRequest("POST", "/b", {{"Content-Encoding", "zstd"}},
                                                                  zstdCompressStreaming(QByteArray(1 << 20, 'a')))
                                   << 413 << "request_too_large";
        QTest::newRow("unknown encoding")
            << RawHttpClient::buildRequest("POST", "/b", {{"Content-Encoding", "br"}}, "abc") << 415
            << "unsupported_content_encoding";
        QTest::newRow("corrupt gzip") << RawHttpClient::buildRequest("POST", "/b", {{"Content-Encoding", "gzip"}},
                                                                     "\x1f\x8b not really gzip")
                                      << 400 << "invalid_body_encoding";
        QTest::newRow("truncated zstd") << RawHttpClient::buildRequest("POST", "/b", {{"Content-Encoding", "zstd"}},
                                                                       zstdCompressStreaming(bigText()).left(100))
                                        << 400 << "invalid_body_encoding";
        QTest::newRow("garbage") << QByteArray("HELLO THERE\r\n\r\n") << 400 << "malformed_request";
        QTest::newRow("bad header") << QByteArray("GET / HTTP/1.1\r\nBad Header\r\n\r\n") << 400 << "malformed_request";
        QTest::newRow("unknown transfer-encoding")
            << QByteArray("POST /b HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n") << 501
            << "unsupported_transfer_encoding";
        QTest::newRow("headers too large")
            << RawHttpClient::buildRequest("GET", "/h", {{"X-Big", QByteArray(20000, 'h')}}) << 431
            << "headers_too_large";
    }

    void bodyErrors()
    {
        QFETCH(QByteArray, request);
        QFETCH(int, status);
        QFETCH(QString, code);
        m_server->setMaxBodyBytes(4096);
        m_server->setMaxHeaderBytes(8192);
        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        const RawResponse r = roundTrip(client, request);
        QCOMPARE(r.status, status);
        QCOMPARE(r.header("content-type"), QByteArray("application/json"));
        QCOMPARE(r.header("connection"), QByteArray("close"));
        const QJsonObject error = r.json().value(QStringLiteral("error")).toObject();
        QCOMPARE(error.value(QStringLiteral("code")).toString(), code);
        QCOMPARE(error.value(QStringLiteral("type")).toString(), QStringLiteral("invalid_request_error"));
        QVERIFY(!error.value(QStringLiteral("message")).toString().isEmpty());
        QVERIFY(m_requests.isEmpty());
        QVERIFY(client.waitForDisconnected());
    }

    void connectionCloseHonoured()
    {
        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        const RawResponse r = roundTrip(client, RawHttpClient::buildRequest("GET", "/bye", {{"Connection", "close"}}));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.header("connection"), QByteArray("close"));
        QVERIFY(client.waitForDisconnected());
        QTRY_COMPARE(m_server->connectionCount(), 0);
    }

    void http10()
    {
        RawHttpClient plain;
        QVERIFY(plain.connectTo(m_server->serverPort()));
        const RawResponse a = roundTrip(plain, "GET /old HTTP/1.0\r\n\r\n");
        QCOMPARE(a.status, 200);
        QCOMPARE(a.header("connection"), QByteArray("close"));
        QVERIFY(plain.waitForDisconnected());

        RawHttpClient keep;
        QVERIFY(keep.connectTo(m_server->serverPort()));
        const RawResponse b = roundTrip(keep, "GET /old HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        QCOMPARE(b.header("connection"), QByteArray("keep-alive"));
        const RawResponse c = roundTrip(keep, "GET /again HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
        QCOMPARE(c.header("x-path"), QByteArray("/again"));
        QVERIFY(keep.isConnected());
    }

    void headAndExpectContinue()
    {
        RawHttpClient client;
        QVERIFY(client.connectTo(m_server->serverPort()));
        client.setHeadRequest(true);
        m_server->setHandler(
            [](HttpRequestPtr, HttpResponse *response) { response->sendFull(200, "text/plain", "twelve bytes"); });
        const RawResponse h = roundTrip(client, RawHttpClient::buildRequest("HEAD", "/h"));
        QCOMPARE(h.header("content-length"), QByteArray("12"));
        QVERIFY(h.body.isEmpty());
        client.setHeadRequest(false);

        // Expect: 100-continue gets an interim response before the client sends the body.
        client.send("POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
        QTRY_VERIFY(client.bytesReceived() >= 25);
        client.send("hello");
        const std::optional<RawResponse> r = client.readResponse();
        QVERIFY(r);
        QCOMPARE(r->body, QByteArray("twelve bytes"));
    }

    void timeouts()
    {
        m_server->setIdleTimeoutMs(150);
        m_server->setRequestTimeoutMs(150);
        m_server->setLingerMs(100);
        RawHttpClient idle;
        QVERIFY(idle.connectTo(m_server->serverPort()));
        QCOMPARE(roundTrip(idle, RawHttpClient::buildRequest("GET", "/a")).status, 200);
        QVERIFY(idle.waitForDisconnected(3000));

        RawHttpClient slow;
        QVERIFY(slow.connectTo(m_server->serverPort()));
        slow.send("GET /slow HTTP/1.1\r\nHost: x\r\nX-Partial: ");
        const std::optional<RawResponse> r = slow.readResponse(3000);
        QVERIFY(r);
        QCOMPARE(r->status, 408);
        QVERIFY(slow.waitForDisconnected(3000));
        QCOMPARE(m_requests.size(), 1);
    }
};

QTEST_GUILESS_MAIN(TestHttpServer)
#include "tst_httpserver.moc"
