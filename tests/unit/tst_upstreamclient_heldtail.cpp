#include "lib/RawHttpServer.h"
#include "lib/UpstreamRecorder.h"
#include "upstream/UpstreamClient.h"

#include <QTest>

// UpstreamRequest::holdLastByte: a request sent before the right to send it is decided (a turn's slot claim)
// goes out but for its body's last byte, and the upstream has no complete request until releaseTail(). Run on
// the direct socket and (ctest's .qt_socket variant) on QTcpSocket.
using sy::UpstreamCall;
using sy::UpstreamClient;
using sy::UpstreamRequest;
using sy::test::RawHttpServer;
using Recorder = sy::test::UpstreamRecorder;
using Outcome = sy::UpstreamCall::Outcome;

namespace {

QByteArray patterned(qsizetype size)
{
    QByteArray b(size, Qt::Uninitialized);
    for (qsizetype i = 0; i < size; ++i)
        b[i] = char('a' + (i * 7 + i / 4093) % 26);
    return b;
}

UpstreamRequest heldRequest(const QUrl &url, const QByteArray &body)
{
    UpstreamRequest request;
    request.method = "POST";
    request.url = url;
    request.headers = {{"Authorization", "Bearer held-token"}, {"Content-Type", "application/json"}};
    request.body = body;
    request.holdLastByte = true;
    return request;
}

// The head the call writes for heldRequest() (UpstreamCall's own layout), to know how many bytes it sends.
qint64 headBytes(const RawHttpServer &server, const QByteArray &body)
{
    return QByteArray("POST /r HTTP/1.1\r\nHost: 127.0.0.1:" + QByteArray::number(server.port()) +
                      "\r\nAuthorization: Bearer held-token\r\nContent-Type: application/json\r\nContent-Length: " +
                      QByteArray::number(body.size()) +
                      "\r\nAccept-Encoding: identity\r\nConnection: keep-alive\r\n\r\n")
        .size();
}

} // namespace

class TestUpstreamClientHeldTail : public QObject
{
    Q_OBJECT

private slots:
    // Everything but the last byte reaches the upstream at once; the request is complete only after the
    // release, and then it is an ordinary call: sent, answered, its connection kept. Red when the byte is not
    // held (a complete request before the release) or never sent (no request after it).
    void theLastByteWaitsForTheRelease_data()
    {
        QTest::addColumn<qsizetype>("bodyBytes");
        QTest::addColumn<bool>("pooled");
        QTest::newRow("small body, new connection") << qsizetype(40 * 1024) << false;
        QTest::newRow("small body, pooled connection") << qsizetype(40 * 1024) << true;
        QTest::newRow("1 byte") << qsizetype(1) << false;
    }

    void theLastByteWaitsForTheRelease()
    {
        QFETCH(qsizetype, bodyBytes);
        QFETCH(bool, pooled);
        RawHttpServer server;
        UpstreamClient client;
        if (pooled) {
            UpstreamRequest warm = heldRequest(server.url("/warm"), "{}");
            warm.holdLastByte = false;
            Recorder first(client.start(warm));
            QTRY_COMPARE(server.requests.size(), 1);
            RawHttpServer::respond(server.requests[0].socket, "200 OK", "Content-Type: application/json\r\n", "{}");
            QTRY_COMPARE(first.outcomes.size(), 1);
            QCOMPARE(client.idleConnections(), 1);
        }
        const int before = int(server.requests.size());
        const qint64 bytesBefore = server.bytesReceived();
        const QByteArray body = patterned(bodyBytes);
        Recorder rec(client.start(heldRequest(server.url("/r"), body)));
        const qint64 expected = headBytes(server, body) + body.size() - 1;
        QTRY_COMPARE(server.bytesReceived() - bytesBefore, expected);
        QTest::qWait(50); // nothing more comes
        QCOMPARE(server.bytesReceived() - bytesBefore, expected);
        QCOMPARE(server.requests.size(), before);
        QCOMPARE(rec.sent, 0);
        QVERIFY(rec.call->isTailHeld());
        QVERIFY(!rec.call->requestWrittenAll());

        rec.call->releaseTail();
        QVERIFY(!rec.call->isTailHeld());
        QTRY_COMPARE(server.requests.size(), before + 1);
        const RawHttpServer::Request &req = server.requests.constLast();
        QVERIFY(req.body == body);
        QCOMPARE(req.connection, 1); // the pooled one, when there was one
        QTRY_COMPARE(rec.sent, 1);
        RawHttpServer::respond(req.socket, "200 OK", "Content-Type: application/json\r\n", "{\"ok\":1}");
        QTRY_COMPARE(rec.outcomes.size(), 1);
        QCOMPARE(rec.outcomes[0], Outcome::Completed);
        QCOMPARE(rec.body, QByteArray("{\"ok\":1}"));
        QCOMPARE(rec.connecting, pooled ? 0 : 1);
        QCOMPARE(client.idleConnections(), 1);
    }

    // Released while most of a large body still waits to be written (the kernel takes a few MiB at once):
    // the byte goes behind the rest, never ahead of it or in place of it.
    void aReleaseWhileTheBodyIsStillBeingWrittenKeepsItsOrder()
    {
        RawHttpServer server;
        UpstreamClient client;
        const QByteArray body = patterned(48 * 1024 * 1024 + 3);
        Recorder rec(client.start(heldRequest(server.url("/r"), body)));
        QTRY_VERIFY(server.bytesReceived() > 0);
        QVERIFY(server.bytesReceived() < body.size() / 2);
        rec.call->releaseTail();
        QTRY_COMPARE_WITH_TIMEOUT(server.requests.size(), 1, 30000);
        QCOMPARE(server.requests[0].body.size(), body.size());
        QVERIFY(server.requests[0].body == body);
        QTRY_COMPARE(rec.sent, 1);
        RawHttpServer::respond(server.requests[0].socket, "200 OK", "Content-Type: application/json\r\n", "{}");
        QTRY_COMPARE(rec.outcomes.size(), 1);
        QCOMPARE(rec.outcomes[0], Outcome::Completed);
    }

    // Aborted before the release: the connection closes with the request incomplete, so the upstream has
    // nothing to run; it is never pooled.
    void anAbortBeforeTheReleaseLeavesTheUpstreamNoRequest()
    {
        RawHttpServer server;
        UpstreamClient client;
        const QByteArray body = patterned(4096);
        Recorder rec(client.start(heldRequest(server.url("/r"), body)));
        QTRY_COMPARE(server.bytesReceived(), headBytes(server, body) + body.size() - 1);
        QCOMPARE(server.openConnections(), 1);
        rec.call->abort();
        QCOMPARE(rec.outcomes, QList<Outcome>{Outcome::Aborted});
        QTRY_COMPARE(server.openConnections(), 0);
        QCOMPARE(server.requests.size(), 0);
        QCOMPARE(server.bytesReceived(), headBytes(server, body) + body.size() - 1);
        QCOMPARE(client.idleConnections(), 0);
    }

    // An upstream that answers (or closes) before it has the whole request: nothing of it is delivered, the
    // call ends as a connection that failed, and the release that may still come does nothing.
    void anAnswerBeforeTheReleaseEndsTheCallUndelivered_data()
    {
        QTest::addColumn<bool>("answer");
        QTest::newRow("answers") << true;
        QTest::newRow("closes") << false;
    }

    void anAnswerBeforeTheReleaseEndsTheCallUndelivered()
    {
        QFETCH(bool, answer);
        RawHttpServer server;
        UpstreamClient client;
        const QByteArray body = patterned(4096);
        Recorder rec(client.start(heldRequest(server.url("/r"), body)));
        QTRY_COMPARE(server.bytesReceived(), headBytes(server, body) + body.size() - 1);
        QTcpSocket *socket = server.sockets().constFirst();
        if (answer) {
            RawHttpServer::respond(socket, "413 Payload Too Large", "Content-Type: application/json\r\n", "{}");
            socket->flush();
        } else {
            socket->disconnectFromHost();
        }
        QTRY_COMPARE(rec.outcomes.size(), 1);
        QCOMPARE(rec.outcomes[0], Outcome::ConnectionFailed);
        QCOMPARE(rec.status, -1);
        QCOMPARE(rec.sent, 0);
        QCOMPARE(rec.order, QStringList({QStringLiteral("connecting"), QStringLiteral("finished")}));
        QVERIFY(!rec.detail.isEmpty());
        if (rec.call)
            rec.call->releaseTail();
        QCOMPARE(client.idleConnections(), 0);
    }
};

QTEST_GUILESS_MAIN(TestUpstreamClientHeldTail)
#include "tst_upstreamclient_heldtail.moc"
