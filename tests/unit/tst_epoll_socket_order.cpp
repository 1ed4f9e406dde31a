// The order in which the proxy thread's epoll dispatcher handles ready sockets (EpollEventDispatcher::setPriority):
// the sockets a client's first byte waits on go first in each pass, and a long pass looks for them again between
// its other sockets. Like tst_epoll_dispatcher, this test runs its main thread on that dispatcher.
#include "lib/EpollTestMain.h"
#include "lib/RawHttpServer.h"
#include "lib/UpstreamRecorder.h"
#include "upstream/UpstreamClient.h"
#include "util/EpollEventDispatcher.h"

#include <QCoreApplication>
#include <QScopeGuard>
#include <QSocketNotifier>
#include <QStringList>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTest>
#include <QThread>
#include <array>
#include <memory>
#include <sys/socket.h>
#include <unistd.h>
#include <vector>

using sy::EpollEventDispatcher;

namespace {

EpollEventDispatcher *installed()
{
    return dynamic_cast<EpollEventDispatcher *>(QAbstractEventDispatcher::instance());
}

} // namespace

class TestEpollSocketOrder : public QObject
{
    Q_OBJECT

private slots:
    void aMarkedSocketGoesFirstInItsPass();
    void anAcceptedConnectionCanBeMarkedAtOnce();
    void aMarkedSocketReadyDuringALongPassGoesBeforeItsRest();
    void anUpstreamCallIsMarkedFromItsSendToItsFirstEvent();
};

void TestEpollSocketOrder::aMarkedSocketGoesFirstInItsPass()
{
    // With a few hundred streams open, a new request (or the upstream's answer to one) is one ready socket among
    // many in a pass: marked, it is handled first, the marked ones in the kernel's order, then the others in
    // theirs. Four socket pairs a, b, c, d become ready in that order; b and d are marked.
    QStringList order;
    int pairs[4][2] = {{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}};
    std::vector<std::unique_ptr<QSocketNotifier>> notifiers;
    const auto close = qScopeGuard([&] {
        notifiers.clear();
        for (auto &p : pairs) {
            for (int fd : p) {
                if (fd >= 0)
                    ::close(fd);
            }
        }
    });
    const QStringList names{QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c"), QStringLiteral("d")};
    for (int i = 0; i < 4; ++i) {
        QCOMPARE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, pairs[i]), 0);
        const int fd = pairs[i][0];
        auto notifier = std::make_unique<QSocketNotifier>(fd, QSocketNotifier::Read);
        connect(notifier.get(), &QSocketNotifier::activated, this, [fd, &order, name = names[i]] {
            char c;
            if (::read(fd, &c, 1) == 1)
                order << name;
        });
        notifiers.push_back(std::move(notifier));
    }
    QCoreApplication::processEvents(); // the notifiers join the epoll set before the next wait
    const auto makeAllReady = [&] {
        for (auto &p : pairs) {
            if (::write(p[1], "x", 1) != 1)
                return false;
        }
        return true;
    };
    installed()->setPriority(pairs[1][0], true);
    installed()->setPriority(pairs[3][0], true);
    QVERIFY(installed()->priority(pairs[1][0]) && installed()->priority(pairs[3][0]));
    QVERIFY(!installed()->priority(pairs[0][0]));
    QVERIFY(makeAllReady());
    QCoreApplication::processEvents(); // one wait finds all four ready
    QCOMPARE(order, QStringList({names[1], names[3], names[0], names[2]}));

    // Unmarked, the order is the kernel's again (which makes the first check meaningful).
    order.clear();
    installed()->setPriority(pairs[1][0], false);
    installed()->setPriority(pairs[3][0], false);
    QVERIFY(makeAllReady());
    QCoreApplication::processEvents();
    QCOMPARE(order, names);
}

void TestEpollSocketOrder::anAcceptedConnectionCanBeMarkedAtOnce()
{
    // HttpConnection marks a client's socket as soon as QTcpServer hands it over, and the dispatcher takes a
    // mark only for a descriptor it watches: Qt must have registered the socket's read notifier by then.
    QTcpServer server;
    QVERIFY(server.listen(QHostAddress::LocalHost));
    installed()->setPriority(int(server.socketDescriptor()), true);
    QVERIFY(installed()->priority(int(server.socketDescriptor())));
    QTcpSocket client;
    client.connectToHost(QHostAddress::LocalHost, server.serverPort());
    QVERIFY(server.waitForNewConnection(5000));
    QTcpSocket *accepted = server.nextPendingConnection();
    QVERIFY(accepted);
    const int fd = int(accepted->socketDescriptor());
    QVERIFY(fd >= 0);
    installed()->setPriority(fd, true);
    QVERIFY(installed()->priority(fd));
    installed()->setPriority(fd, false);
    installed()->setPriority(int(server.socketDescriptor()), false);
    // A number the dispatcher never watched takes no mark (a SOCKS5 engine's made-up descriptor, say).
    installed()->setPriority(1 << 20, true);
    QVERIFY(!installed()->priority(1 << 20));
}

void TestEpollSocketOrder::aMarkedSocketReadyDuringALongPassGoesBeforeItsRest()
{
    // A pass over a few hundred streams' next events runs for milliseconds; a new request, or the upstream's
    // head, that arrives meanwhile is handled after the socket being handled when the recheck interval
    // (SWITCHYARD_PRIORITY_RECHECK_US, 100 us by default) has passed, not after the whole pass. Each socket is
    // handled once per pass: a marked socket handled at the start that is readable again waits for the next
    // pass, and a socket of the pass's own list that a recheck handled is not handled again when its turn comes.
    // Socket pairs: "first" (marked) is ready when the pass begins, with u0, u1, u2 (unmarked); u0's handler
    // makes "late" (marked) ready and "first" ready again, marks u2, then works for 2 ms. Every activation is
    // logged, whether or not it finds a byte to read.
    // The same reading as the dispatcher's: only a number, and 0, turns the recheck off.
    bool set = false;
    if (qEnvironmentVariableIntValue("SWITCHYARD_PRIORITY_RECHECK_US", &set) == 0 && set)
        QSKIP("SWITCHYARD_PRIORITY_RECHECK_US=0 turns the recheck off");
    const QStringList names{QStringLiteral("first"), QStringLiteral("u0"), QStringLiteral("u1"), QStringLiteral("u2"),
                            QStringLiteral("late")};
    QStringList order;
    std::vector<std::array<int, 2>> pairs(names.size(), {-1, -1});
    std::vector<std::unique_ptr<QSocketNotifier>> notifiers;
    int hook = 0;
    const auto cleanup = qScopeGuard([&] {
        if (hook)
            installed()->removeSocketHandledHook(hook);
        for (const auto &p : pairs) {
            if (p[0] >= 0)
                installed()->setPriority(p[0], false); // no mark left for the next test's descriptors
        }
        notifiers.clear();
        for (auto &p : pairs) {
            for (int fd : p) {
                if (fd >= 0)
                    ::close(fd);
            }
        }
    });
    for (auto &p : pairs)
        QCOMPARE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, p.data()), 0);
    const auto feed = [&](int i) { return ::write(pairs[size_t(i)][1], "x", 1) == 1; };
    bool fedLate = false;
    for (int i = 0; i < int(names.size()); ++i) {
        const int fd = pairs[size_t(i)][0];
        auto notifier = std::make_unique<QSocketNotifier>(fd, QSocketNotifier::Read);
        connect(notifier.get(), &QSocketNotifier::activated, this, [&, fd, i] {
            order << names[i];
            char c;
            if (::read(fd, &c, 1) != 1 || names[i] != QLatin1String("u0"))
                return;
            fedLate = feed(4) && feed(0);
            installed()->setPriority(pairs[3][0], true); // u2: readable already, so behind "late" in the set
            QThread::usleep(2000);
        });
        notifiers.push_back(std::move(notifier));
    }
    hook = installed()->addSocketHandledHook([&] { order << QStringLiteral("hook"); });
    QCoreApplication::processEvents(); // the notifiers join the epoll set before the next wait
    installed()->setPriority(pairs[0][0], true);
    installed()->setPriority(pairs[4][0], true);
    const auto before = installed()->priorityCounts();
    QCOMPARE(before.marked, quint64(2));
    QCOMPARE(before.rechecked, quint64(2));
    for (int i : {0, 1, 2, 3})
        QVERIFY(feed(i));
    QCoreApplication::processEvents(); // one wait finds first, u0, u1 and u2 ready
    QVERIFY(fedLate);
    const QString h = QStringLiteral("hook");
    // The hook after u1 too: u2's entry, skipped, was the last of the pass's list (one flush more, harmless).
    const QStringList pass1{names[0], h, names[1], h, names[4], h, names[3], h, names[2], h};
    QVERIFY2(order == pass1, qPrintable(order.join(QLatin1Char(' '))));
    QCoreApplication::processEvents(); // "first" again
    QCOMPARE(order, pass1 + QStringList{names[0]});
    const auto after = installed()->priorityCounts();
    QVERIFY(after.rechecks > before.rechecks);
    QCOMPARE(after.handledEarly - before.handledEarly, quint64(2));

    // Unmarked, a socket leaves the second set: no recheck finds it.
    for (int i : {0, 3, 4})
        installed()->setPriority(pairs[size_t(i)][0], false);
    QCOMPARE(installed()->priorityCounts().marked, quint64(0));
    QCOMPARE(installed()->priorityCounts().rechecked, quint64(0));
}

// UpstreamCall marks its connection's socket once its request is written (after the write, which is on the way of
// the client's first byte) and unmarks it at the first event: until then a client waits on that socket.
void TestEpollSocketOrder::anUpstreamCallIsMarkedFromItsSendToItsFirstEvent()
{
    sy::test::RawHttpServer server;
    sy::UpstreamClient client;
    sy::UpstreamRequest request;
    request.method = "POST";
    request.url = server.url("/backend-api/codex/responses");
    request.headers = {{"Content-Type", "application/json"}, {"Accept", "text/event-stream"}};
    request.body = R"({"model":"gpt-5","stream":true})";
    const quint64 before = installed()->priorityCounts().marked;
    sy::test::UpstreamRecorder rec(client.start(request));
    QTRY_COMPARE(server.requests.size(), 1);
    QTRY_COMPARE(rec.sent, 1);
    QCOMPARE(installed()->priorityCounts().marked, before + 1);
    QTcpSocket *socket = server.requests[0].socket;
    sy::test::RawHttpServer::writeHead(socket, "200 OK",
                                       "Content-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n");
    QTest::qWait(50);
    QCOMPARE(installed()->priorityCounts().marked, before + 1); // the head is not the first event
    sy::test::RawHttpServer::writeChunk(socket, "event: response.created\ndata: {}\n\n");
    QTRY_COMPARE(rec.events.size(), 1);
    QCOMPARE(installed()->priorityCounts().marked, before);
    sy::test::RawHttpServer::endChunks(socket);
    QTRY_COMPARE(rec.outcomes.size(), 1);
}

int main(int argc, char **argv)
{
    return sy::test::runOnEpollDispatcher<TestEpollSocketOrder>(argc, argv);
}

#include "tst_epoll_socket_order.moc"
