// DirectTcpSocket, the plain upstream connection on a descriptor of its own: connecting by name and by a list
// of addresses, the bounded read-ahead, a write the kernel takes in parts, and the peer's close.
#include "upstream/DirectTcpSocket.h"

#include <QSignalSpy>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTest>
#include <memory>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using sy::DirectTcpSocket;

namespace {

constexpr qint64 kLimit = 64 * 1024;
constexpr qsizetype kLarge = 32 * 1024 * 1024; // more than both kernel buffers of a loopback connection hold

QByteArray pattern(qsizetype size)
{
    QByteArray out(size, Qt::Uninitialized);
    for (qsizetype i = 0; i < size; ++i)
        out[i] = char(i % 251);
    return out;
}

// A listening server on 127.0.0.1 whose accepted sockets the test drives itself.
struct Server
{
    QTcpServer server;
    QList<QTcpSocket *> accepted;

    Server()
    {
        QObject::connect(&server, &QTcpServer::pendingConnectionAvailable, &server, [this] {
            while (QTcpSocket *socket = server.nextPendingConnection())
                accepted.append(socket);
        });
    }
    bool listen() { return server.listen(QHostAddress::LocalHost); }
    quint16 port() const { return server.serverPort(); }
};

// Connects socket to the server (listening on 127.0.0.1 from here on) and returns the server's side of the
// connection, or nullptr.
QTcpSocket *connectToServer(Server &server, DirectTcpSocket &socket)
{
    if (!server.listen())
        return nullptr;
    QSignalSpy connected(&socket, &DirectTcpSocket::connected);
    socket.connectToHost(QStringLiteral("127.0.0.1"), server.port());
    if (!connected.wait(5000) || !QTest::qWaitFor([&] { return server.accepted.size() == 1; }, 5000))
        return nullptr;
    return server.accepted.first();
}

quint16 closedPort()
{
    QTcpServer probe;
    if (!probe.listen(QHostAddress::LocalHost))
        return 0;
    const quint16 port = probe.serverPort();
    probe.close();
    return port;
}

} // namespace

class TestDirectTcpSocket : public QObject
{
    Q_OBJECT

private slots:
    void initTestCase() { QVERIFY(DirectTcpSocket::available()); }
    void connectsByNameAndCarriesBothWays();
    void aRefusingAddressGivesWayToTheNext();
    void refusedEverywhereIsClosedWithTheReason();
    void connectsOverIpv6();
    void anAddressThatNeverAnswersGivesWayAfterTheAttemptTimeout();
    void readingStopsAtTheLimitUntilTheReaderTakes_data();
    void readingStopsAtTheLimitUntilTheReaderTakes();
    void aWriteTheKernelTakesInPartsIsFinishedLater();
    void thePeersCloseLeavesItsLastBytesReadable();
    void abortEmitsNothing();
};

void TestDirectTcpSocket::connectsByNameAndCarriesBothWays()
{
    Server server;
    QVERIFY(server.listen());
    DirectTcpSocket socket(kLimit, nullptr);
    QSignalSpy connected(&socket, &DirectTcpSocket::connected);
    // "localhost" may resolve to ::1 first, which nobody listens on here: then the next address is used.
    socket.connectToHost(QStringLiteral("localhost"), server.port());
    QVERIFY(connected.wait(5000));
    QVERIFY(socket.isConnected());
    QTRY_COMPARE(server.accepted.size(), 1);

    QCOMPARE(socket.write("POST / HTTP/1.1\r\n\r\n", "body"), qint64(23));
    QCOMPARE(socket.bytesToWrite(), qint64(0));
    QTcpSocket *peer = server.accepted.first();
    QTRY_COMPARE(peer->bytesAvailable(), qint64(23));
    QCOMPARE(peer->readAll(), QByteArray("POST / HTTP/1.1\r\n\r\nbody"));

    QSignalSpy ready(&socket, &DirectTcpSocket::readyRead);
    peer->write("HTTP/1.1 200 OK\r\n");
    QVERIFY(ready.wait(5000));
    QCOMPARE(socket.bytesAvailable(), qint64(17));
    // peek() shows without taking, skip() takes without copying.
    QCOMPARE(socket.peek(4), QByteArrayView("HTTP"));
    QCOMPARE(socket.bytesAvailable(), qint64(17));
    socket.skip(4);
    QCOMPARE(socket.read(5), QByteArray("/1.1 "));
    QCOMPARE(socket.peek(100), QByteArrayView("200 OK\r\n"));
    socket.skip(100);
    QCOMPARE(socket.bytesAvailable(), qint64(0));
    peer->write("more");
    QVERIFY(ready.wait(5000));
    QCOMPARE(socket.read(100), QByteArray("more"));
    QCOMPARE(socket.bytesAvailable(), qint64(0));
}

void TestDirectTcpSocket::aRefusingAddressGivesWayToTheNext()
{
    Server server;
    QVERIFY(server.listen());
    DirectTcpSocket socket(kLimit, nullptr);
    QSignalSpy connected(&socket, &DirectTcpSocket::connected);
    QSignalSpy closed(&socket, &DirectTcpSocket::closed);
    // The server is bound to 127.0.0.1 only: 127.0.0.2 refuses on the same port.
    socket.connectToAddresses({QHostAddress(QStringLiteral("127.0.0.2")), QHostAddress::LocalHost}, server.port());
    QCOMPARE(connected.size(), 0);
    QVERIFY(connected.wait(5000));
    QCOMPARE(closed.size(), 0);
    QTRY_COMPARE(server.accepted.size(), 1);
    QCOMPARE(socket.errorString(), QString());
}

void TestDirectTcpSocket::refusedEverywhereIsClosedWithTheReason()
{
    const quint16 port = closedPort();
    QVERIFY(port != 0);
    DirectTcpSocket socket(kLimit, nullptr);
    QSignalSpy connected(&socket, &DirectTcpSocket::connected);
    QSignalSpy closed(&socket, &DirectTcpSocket::closed);
    socket.connectToHost(QStringLiteral("127.0.0.1"), port);
    QCOMPARE(closed.size(), 0); // never from inside the call
    QVERIFY(closed.wait(5000));
    QCOMPARE(connected.size(), 0);
    QVERIFY(socket.isClosed());
    QVERIFY2(socket.errorString().contains(QLatin1String("refused"), Qt::CaseInsensitive),
             qPrintable(socket.errorString()));
    QCOMPARE(socket.write("GET", {}), qint64(0));
}

void TestDirectTcpSocket::connectsOverIpv6()
{
    QTcpServer server;
    if (!server.listen(QHostAddress::LocalHostIPv6))
        QSKIP("no IPv6 loopback on this machine");
    DirectTcpSocket socket(kLimit, nullptr);
    QSignalSpy connected(&socket, &DirectTcpSocket::connected);
    socket.connectToHost(QStringLiteral("::1"), server.serverPort());
    QVERIFY2(connected.wait(5000), qPrintable(socket.errorString()));
    QTRY_VERIFY(server.hasPendingConnections());
    QTcpSocket *peer = server.nextPendingConnection();
    QCOMPARE(peer->peerAddress(), QHostAddress(QHostAddress::LocalHostIPv6));
    QCOMPARE(socket.write("ping", {}), qint64(4));
    QTRY_COMPARE(peer->bytesAvailable(), qint64(4));
}

void TestDirectTcpSocket::anAddressThatNeverAnswersGivesWayAfterTheAttemptTimeout()
{
    // 127.0.0.1:port answers nothing: a listener with a backlog of 0 whose queue two connections fill, so the
    // kernel drops further SYNs and a connect stays in progress.
    const int hole = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    QVERIFY(hole >= 0);
    const std::unique_ptr<int, void (*)(int *)> closeHole(new int(hole), [](int *fd) {
        ::close(*fd);
        delete fd;
    });
    sockaddr_in in{};
    in.sin_family = AF_INET;
    in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    QCOMPARE(::bind(hole, reinterpret_cast<sockaddr *>(&in), sizeof in), 0);
    QCOMPARE(::listen(hole, 0), 0);
    socklen_t length = sizeof in;
    QCOMPARE(::getsockname(hole, reinterpret_cast<sockaddr *>(&in), &length), 0);
    const quint16 port = ntohs(in.sin_port);
    QTcpSocket fill1, fill2;
    fill1.connectToHost(QHostAddress::LocalHost, port);
    fill2.connectToHost(QHostAddress::LocalHost, port);
    QTest::qWait(100);
    // The next address on the same port answers.
    Server server;
    QVERIFY(server.server.listen(QHostAddress(QStringLiteral("127.0.0.2")), port));

    DirectTcpSocket socket(kLimit, nullptr);
    socket.setAttemptTimeout(300);
    QSignalSpy connected(&socket, &DirectTcpSocket::connected);
    socket.connectToAddresses({QHostAddress::LocalHost, QHostAddress(QStringLiteral("127.0.0.2"))}, port);
    QTest::qWait(150);
    QCOMPARE(connected.size(), 0); // still waiting for the first address
    QVERIFY(connected.wait(5000));
    QTRY_COMPARE(server.accepted.size(), 1);
    QCOMPARE(server.accepted.first()->localAddress(), QHostAddress(QStringLiteral("127.0.0.2")));
}

void TestDirectTcpSocket::readingStopsAtTheLimitUntilTheReaderTakes_data()
{
    QTest::addColumn<bool>("peekAndSkip");
    QTest::newRow("read") << false;
    QTest::newRow("peek and skip") << true; // what UpstreamConnection::beginRead() and endRead() do
}

void TestDirectTcpSocket::readingStopsAtTheLimitUntilTheReaderTakes()
{
    QFETCH(bool, peekAndSkip);
    Server server;
    DirectTcpSocket socket(kLimit, nullptr);
    QTcpSocket *peer = connectToServer(server, socket);
    QVERIFY(peer);
    const QByteArray sent = pattern(kLarge);
    peer->write(sent);

    // Nobody reads: the buffer fills up to the limit (plus at most one receive), and the rest waits in the
    // kernel and in the peer's buffer.
    QTRY_VERIFY(socket.bytesAvailable() >= kLimit);
    QTest::qWait(200);
    QVERIFY2(socket.bytesAvailable() <= kLimit + 16 * 1024, qPrintable(QString::number(socket.bytesAvailable())));
    QVERIFY(peer->bytesToWrite() > 0);

    // Taking from the buffer lets the rest in, in order.
    QByteArray received;
    QElapsedTimer timer;
    timer.start();
    while (received.size() < sent.size() && timer.elapsed() < 20000) {
        if (peekAndSkip) {
            const QByteArrayView part = socket.peek(7000);
            received += part;
            socket.skip(part.size());
        } else {
            received += socket.read(7000);
        }
        if (socket.bytesAvailable() == 0)
            QTest::qWait(1);
    }
    QCOMPARE(received.size(), sent.size());
    QVERIFY(received == sent);
}

void TestDirectTcpSocket::aWriteTheKernelTakesInPartsIsFinishedLater()
{
    Server server;
    DirectTcpSocket socket(kLimit, nullptr);
    QTcpSocket *peer = connectToServer(server, socket);
    QVERIFY(peer);
    peer->setReadBufferSize(1024); // the peer reads nothing more for now

    QSignalSpy written(&socket, &DirectTcpSocket::bytesWritten);
    const QByteArray head = "PUT /upload HTTP/1.1\r\n\r\n";
    QByteArray body = pattern(kLarge);
    const qint64 atOnce = socket.write(head, body);
    QVERIFY(atOnce > 0);
    QVERIFY2(atOnce < head.size() + kLarge, qPrintable(QString::number(atOnce)));
    QCOMPARE(socket.bytesToWrite(), head.size() + kLarge - atOnce);
    const QByteArray expected = head + body;
    body = QByteArray(); // the socket keeps its own reference to what it still has to send

    peer->setReadBufferSize(0);
    QByteArray received;
    QElapsedTimer timer;
    timer.start();
    while (received.size() < expected.size() && timer.elapsed() < 20000) {
        QTest::qWait(1);
        received += peer->readAll();
    }
    QCOMPARE(received.size(), expected.size());
    QVERIFY(received == expected);
    QTRY_COMPARE(socket.bytesToWrite(), qint64(0));
    qint64 reported = atOnce;
    for (const QList<QVariant> &args : written)
        reported += args.at(0).toLongLong();
    QCOMPARE(reported, qint64(expected.size()));
}

void TestDirectTcpSocket::thePeersCloseLeavesItsLastBytesReadable()
{
    Server server;
    DirectTcpSocket socket(kLimit, nullptr);
    QSignalSpy closed(&socket, &DirectTcpSocket::closed);
    QTcpSocket *peer = connectToServer(server, socket);
    QVERIFY(peer);
    peer->write("last words");
    peer->disconnectFromHost();
    QVERIFY(closed.wait(5000));
    QTest::qWait(50);
    QCOMPARE(closed.size(), 1);
    QVERIFY(!socket.isConnected());
    QCOMPARE(socket.errorString(), QStringLiteral("connection closed"));
    QCOMPARE(socket.bytesAvailable(), qint64(10));
    QCOMPARE(socket.read(100), QByteArray("last words"));
}

void TestDirectTcpSocket::abortEmitsNothing()
{
    Server server;
    QVERIFY(server.listen());
    auto socket = std::make_unique<DirectTcpSocket>(kLimit, nullptr);
    QSignalSpy connected(socket.get(), &DirectTcpSocket::connected);
    QSignalSpy closed(socket.get(), &DirectTcpSocket::closed);
    socket->connectToHost(QStringLiteral("127.0.0.1"), server.port());
    socket->abort(); // before the queued connect attempt
    QTest::qWait(100);
    QCOMPARE(connected.size(), 0);
    QCOMPARE(closed.size(), 0);
    QCOMPARE(server.accepted.size(), 0);
    QCOMPARE(socket->descriptor(), qintptr(-1));
}

QTEST_GUILESS_MAIN(TestDirectTcpSocket)
#include "tst_direct_tcp_socket.moc"
