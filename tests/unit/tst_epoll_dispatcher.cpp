// The proxy thread's epoll event dispatcher. This test installs it as the main thread's dispatcher before the
// application exists, so everything below (Qt Test's own waits, nested event loops, QTcpServer, timers) runs on
// it, and each case checks one promise of a Qt event dispatcher against it.
#include "http/HttpServer.h"
#include "lib/EpollTestMain.h"
#include "util/EpollEventDispatcher.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QPointer>
#include <QScopeGuard>
#include <QSignalSpy>
#include <QSocketNotifier>
#include <QTcpServer>
#include <QTcpSocket>
#include <QTest>
#include <QThread>
#include <QTimer>
#include <arpa/inet.h>
#include <atomic>
#include <functional>
#include <glib-unix.h>
#include <glib.h> // the build requires GLib on Linux, the only platform with this dispatcher
#include <memory>
#include <netinet/in.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

using sy::EpollEventDispatcher;

namespace {

EpollEventDispatcher *installed()
{
    return dynamic_cast<EpollEventDispatcher *>(QAbstractEventDispatcher::instance());
}

// Each accepted socket echoes what it reads.
class EchoServer : public QTcpServer
{
public:
    EchoServer()
    {
        connect(this, &QTcpServer::newConnection, this, [this] {
            while (QTcpSocket *s = nextPendingConnection()) {
                connect(s, &QTcpSocket::readyRead, s, [s] { s->write(s->readAll()); });
                connect(s, &QTcpSocket::disconnected, s, &QObject::deleteLater);
            }
        });
    }
};

// Timer events recorded with their order and time since start.
class TimerRecorder : public QObject
{
public:
    QElapsedTimer clock;
    std::vector<std::pair<int, qint64>> fired; // (timer id, ns since start)
    std::function<void(int)> onFire;
    TimerRecorder() { clock.start(); }

protected:
    void timerEvent(QTimerEvent *e) override
    {
        fired.emplace_back(e->timerId(), clock.nsecsElapsed());
        if (onFire)
            onFire(e->timerId());
    }
};

} // namespace

class TestEpollDispatcher : public QObject
{
    Q_OBJECT
private slots:
    void isTheDispatcherOfThisThread();
    void manyClientsEchoConcurrently();
    void largeTransferCompletes();
    void timersFireInDueOrderAndNeverEarly();
    void aTimerStoppedByAnEarlierHandlerDoesNotFire();
    void aZeroTimerDoesNotStarveSockets();
    void aTimerIsNotReenteredFromANestedLoop();
    void remainingTimeAndRegisteredTimers();
    void aPostFromAnotherThreadWakesTheLoop();
    void aPostFromItsOwnThreadArrivesWithoutAnEventfdWrite();
    void aPostMadeDuringAPassComesBeforeItsNextSocket();
    void aPostThatWokeThePassComesBeforeItsSockets();
    void aHookRunsBetweenTwoSocketsOfAPass();
    void aPassHookRunsWhereAwakeAndAboutToBlockAreEmitted();
    void aStreamsFirstBytesLeaveBeforeTheNextSocketOfThePass();
    void quitFromAnotherThreadEndsItsLoop();
    void aReusedDescriptorIsWatchedAgain();
    void togglingANotifierCostsNoSystemCallUntilTheWait();
    void deleteLaterRunsBackInTheLoop();
    void glibSourcesOfThisThreadAreDispatched();
    void glibWorkFromAnotherThreadWakesTheLoop();
    void aGlibDescriptorAddedLaterIsWatched();
};

void TestEpollDispatcher::isTheDispatcherOfThisThread()
{
    // Without this, every other case could pass on Qt's own dispatcher.
    QVERIFY(installed());
}

void TestEpollDispatcher::manyClientsEchoConcurrently()
{
    EchoServer server;
    QVERIFY(server.listen(QHostAddress::LocalHost));
    constexpr int kClients = 200;
    std::vector<std::unique_ptr<QTcpSocket>> clients;
    std::vector<QByteArray> received(kClients);
    for (int i = 0; i < kClients; ++i) {
        auto c = std::make_unique<QTcpSocket>();
        QTcpSocket *raw = c.get();
        connect(raw, &QTcpSocket::connected, raw, [raw, i] { raw->write(QByteArray(1000 + i, char('a' + i % 26))); });
        connect(raw, &QTcpSocket::readyRead, raw, [raw, &received, i] { received[size_t(i)] += raw->readAll(); });
        c->connectToHost(server.serverAddress(), server.serverPort());
        clients.push_back(std::move(c));
    }
    QTRY_VERIFY_WITH_TIMEOUT(
        [&] {
            for (int i = 0; i < kClients; ++i) {
                if (received[size_t(i)].size() != 1000 + i)
                    return false;
            }
            return true;
        }(),
        20000);
    for (int i = 0; i < kClients; ++i)
        QCOMPARE(received[size_t(i)], QByteArray(1000 + i, char('a' + i % 26)));
}

void TestEpollDispatcher::largeTransferCompletes()
{
    // Far beyond the socket buffers: the writer's write notifier goes on and off many times.
    EchoServer server;
    QVERIFY(server.listen(QHostAddress::LocalHost));
    QTcpSocket client;
    QByteArray payload(8 * 1024 * 1024, '\0');
    for (int i = 0; i < payload.size(); ++i)
        payload[i] = char(i * 131 % 251);
    QByteArray back;
    connect(&client, &QTcpSocket::readyRead, &client, [&] { back += client.readAll(); });
    client.connectToHost(server.serverAddress(), server.serverPort());
    QVERIFY(client.waitForConnected(5000));
    client.write(payload);
    QTRY_COMPARE_WITH_TIMEOUT(back.size(), payload.size(), 30000);
    QVERIFY(back == payload);
}

void TestEpollDispatcher::timersFireInDueOrderAndNeverEarly()
{
    TimerRecorder r;
    r.onFire = [&](int id) { r.killTimer(id); }; // each fires once
    const int t30 = r.startTimer(30, Qt::PreciseTimer);
    const int t10 = r.startTimer(10, Qt::PreciseTimer);
    const int t20 = r.startTimer(20, Qt::PreciseTimer);
    // A real event loop, which sleeps until the next timer is due (QTest::qWait polls every 10 ms and would
    // hide a timer that fired early).
    QEventLoop loop;
    QTimer::singleShot(80, Qt::PreciseTimer, &loop, &QEventLoop::quit);
    loop.exec();
    QCOMPARE(r.fired.size(), size_t(3));
    QCOMPARE(r.fired[0].first, t10);
    QCOMPARE(r.fired[1].first, t20);
    QCOMPARE(r.fired[2].first, t30);
    // Not early (this is the timer's contract, not a speed check: late is allowed, early never).
    QVERIFY2(r.fired[0].second >= 10'000'000, qPrintable(QString::number(r.fired[0].second)));
    QVERIFY(r.fired[1].second >= 20'000'000);
    QVERIFY(r.fired[2].second >= 30'000'000);
}

void TestEpollDispatcher::aTimerStoppedByAnEarlierHandlerDoesNotFire()
{
    TimerRecorder r;
    const int first = r.startTimer(5, Qt::PreciseTimer);
    const int second = r.startTimer(5, Qt::PreciseTimer);
    // Both are due in the same pass: the first one's handler stops the second.
    QTest::qSleep(20);
    r.onFire = [&](int id) {
        if (id == first) {
            r.killTimer(second);
            r.killTimer(first);
        }
    };
    QTest::qWait(50);
    QCOMPARE(r.fired.size(), size_t(1));
    QCOMPARE(r.fired[0].first, first);
}

void TestEpollDispatcher::aZeroTimerDoesNotStarveSockets()
{
    int spins = 0;
    QTimer zero;
    zero.setInterval(0);
    connect(&zero, &QTimer::timeout, this, [&] { ++spins; });
    zero.start();
    EchoServer server;
    QVERIFY(server.listen(QHostAddress::LocalHost));
    QTcpSocket client;
    QByteArray back;
    connect(&client, &QTcpSocket::readyRead, &client, [&] { back += client.readAll(); });
    client.connectToHost(server.serverAddress(), server.serverPort());
    client.write("ping");
    QTRY_COMPARE_WITH_TIMEOUT(back, QByteArray("ping"), 5000);
    QVERIFY(spins > 0);
    // And it keeps firing once per pass.
    const int before = spins;
    QTRY_VERIFY_WITH_TIMEOUT(spins > before + 10, 5000);
}

void TestEpollDispatcher::aTimerIsNotReenteredFromANestedLoop()
{
    TimerRecorder r;
    int depth = 0;
    int maxDepth = 0;
    const int id = r.startTimer(1, Qt::PreciseTimer);
    r.onFire = [&](int) {
        ++depth;
        maxDepth = qMax(maxDepth, depth);
        if (r.fired.size() == 1) {
            QEventLoop nested;
            QTimer::singleShot(30, &nested, &QEventLoop::quit);
            nested.exec(); // the 1 ms timer comes due many times in here
        }
        --depth;
    };
    QTRY_VERIFY_WITH_TIMEOUT(r.fired.size() >= 3, 5000);
    r.killTimer(id);
    QCOMPARE(maxDepth, 1);
}

void TestEpollDispatcher::remainingTimeAndRegisteredTimers()
{
    QTimer t;
    t.setTimerType(Qt::PreciseTimer);
    t.start(10'000);
    const int left = t.remainingTime();
    QVERIFY2(left > 9'000 && left <= 10'000, qPrintable(QString::number(left)));
    const QList<QAbstractEventDispatcher::TimerInfo> timers = installed()->registeredTimers(&t);
    QCOMPARE(timers.size(), 1);
    QCOMPARE(timers.first().timerId, t.timerId());
    QCOMPARE(timers.first().interval, 10'000);
    t.stop();
    QVERIFY(installed()->registeredTimers(&t).isEmpty());
    QCOMPARE(installed()->remainingTime(123456), -1);
}

void TestEpollDispatcher::aPostFromAnotherThreadWakesTheLoop()
{
    // No timer and no socket would wake the loop: only the post can.
    QObject receiver;
    bool arrived = false;
    QEventLoop loop;
    std::thread poster([&] {
        QThread::msleep(50);
        QMetaObject::invokeMethod(&receiver, [&] {
            arrived = true;
            loop.quit();
        }, Qt::QueuedConnection);
    });
    QTimer failsafe; // only ends a hang; the check below tells which way it ended
    failsafe.setSingleShot(true);
    connect(&failsafe, &QTimer::timeout, &loop, &QEventLoop::quit);
    failsafe.start(10'000);
    loop.exec();
    poster.join();
    QVERIFY(arrived);
}

void TestEpollDispatcher::aPostFromItsOwnThreadArrivesWithoutAnEventfdWrite()
{
    // Posted from a handler of this loop, as the proxy thread's deleteLater() and queued calls to itself are: the
    // loop is running then, so the post only keeps its next wait from blocking; nothing is written to the eventfd
    // (and read back). A chain of twenty, each posted by the one before, with no timer but the failsafe: red
    // (timed out) if a wait blocks on such a post, red (writes) if it writes.
    QObject receiver;
    QEventLoop loop;
    int arrived = 0;
    bool timedOut = false;
    QTimer failsafe; // only ends a hang; `timedOut` tells which way the loop ended
    failsafe.setSingleShot(true);
    connect(&failsafe, &QTimer::timeout, &loop, [&] {
        timedOut = true;
        loop.quit();
    });
    failsafe.start(10'000);
    const quint64 writesBefore = installed()->wakeWrites();
    std::function<void()> next;
    next = [&] {
        if (++arrived < 20)
            QMetaObject::invokeMethod(&receiver, next, Qt::QueuedConnection);
        else
            loop.quit();
    };
    QMetaObject::invokeMethod(&receiver, next, Qt::QueuedConnection);
    loop.exec();
    QVERIFY(!timedOut);
    QCOMPARE(arrived, 20);
    QCOMPARE(installed()->wakeWrites(), writesBefore);

    // From another thread, the post writes the eventfd: that is what wakes the wait. (The quit above was a post
    // of this thread's own, still pending: drained first, or a slow start of the loop below could find it set
    // and let the other thread's post write nothing.)
    QCoreApplication::processEvents();
    const quint64 writesBeforeOther = installed()->wakeWrites();
    std::thread poster([&] {
        QThread::msleep(50);
        QMetaObject::invokeMethod(
            &receiver, [&] { loop.quit(); }, Qt::QueuedConnection);
    });
    loop.exec();
    poster.join();
    QVERIFY(!timedOut);
    QCOMPARE(installed()->wakeWrites(), writesBeforeOther + 1);
}

// Two socket pairs whose reading ends are watched: each byte that arrives is read and logged as "socket" in
// `order`, then `afterRead` runs. The notifiers go before the descriptors close.
class TwoWatchedSockets
{
public:
    TwoWatchedSockets(QObject *context, QStringList *order, std::function<void()> afterRead = {})
    {
        m_ok = ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, m_a) == 0 &&
               ::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, m_b) == 0;
        if (!m_ok)
            return;
        for (int fd : {m_a[0], m_b[0]}) {
            auto notifier = std::make_unique<QSocketNotifier>(fd, QSocketNotifier::Read);
            QObject::connect(notifier.get(), &QSocketNotifier::activated, context, [fd, order, afterRead] {
                char c;
                if (::read(fd, &c, 1) != 1)
                    return;
                *order << QStringLiteral("socket");
                if (afterRead)
                    afterRead();
            });
            m_notifiers.push_back(std::move(notifier));
        }
        QCoreApplication::processEvents(); // the notifiers join the epoll set before the next wait
    }
    ~TwoWatchedSockets()
    {
        m_notifiers.clear();
        for (int fd : {m_a[0], m_a[1], m_b[0], m_b[1]}) {
            if (fd >= 0)
                ::close(fd);
        }
    }
    bool ok() const { return m_ok; }
    // One byte into each pair, the first pair first (epoll reports them in that order).
    bool makeBothReady() { return ::write(m_a[1], "x", 1) == 1 && ::write(m_b[1], "x", 1) == 1; }

private:
    int m_a[2] = {-1, -1};
    int m_b[2] = {-1, -1};
    bool m_ok = false;
    std::vector<std::unique_ptr<QSocketNotifier>> m_notifiers;
};

void TestEpollDispatcher::aPostMadeDuringAPassComesBeforeItsNextSocket()
{
    // The proxy thread works through bursts of ready sockets; an answer the store thread posts meanwhile (the
    // slot claim a new turn waits on) is delivered between two sockets of the pass, not after its last one.
    QStringList order;
    QObject receiver;
    bool posted = false;
    TwoWatchedSockets sockets(this, &order, [&] {
        if (std::exchange(posted, true))
            return;
        std::thread([&] {
            QMetaObject::invokeMethod(
                &receiver, [&] { order << QStringLiteral("posted"); }, Qt::QueuedConnection);
        }).join();
    });
    QVERIFY(sockets.ok());
    QVERIFY(sockets.makeBothReady());
    QCoreApplication::processEvents(); // one wait finds both sockets ready
    QCoreApplication::processEvents(); // anything still posted
    QCOMPARE(order, QStringList({QStringLiteral("socket"), QStringLiteral("posted"), QStringLiteral("socket")}));
}

void TestEpollDispatcher::aPostThatWokeThePassComesBeforeItsSockets()
{
    // Posted after the pass delivered its posted events but before its wait returned (a store answer arriving
    // just then), and followed by two ready sockets: the wake-up is the first event of the wait, and the post
    // is delivered there, not after every socket of the pass.
    QStringList order;
    QObject receiver;
    TwoWatchedSockets sockets(this, &order);
    QVERIFY(sockets.ok());
    bool wrote = false;
    const QMetaObject::Connection justBeforeTheWait =
        connect(installed(), &QAbstractEventDispatcher::aboutToBlock, this, [&] {
            QMetaObject::invokeMethod(
                &receiver, [&] { order << QStringLiteral("posted"); }, Qt::QueuedConnection);
            wrote = sockets.makeBothReady();
        });
    QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents);
    disconnect(justBeforeTheWait);
    QCoreApplication::processEvents(); // anything still posted
    QVERIFY(wrote);
    QCOMPARE(order, QStringList({QStringLiteral("posted"), QStringLiteral("socket"), QStringLiteral("socket")}));
}

void TestEpollDispatcher::aHookRunsBetweenTwoSocketsOfAPass()
{
    QStringList order;
    TwoWatchedSockets sockets(this, &order);
    QVERIFY(sockets.ok());
    int id = installed()->addSocketHandledHook([&] { order << QStringLiteral("hook"); });
    // A failed check returns early: the hook must not outlive `order`.
    const auto removeHook = qScopeGuard([&] { installed()->removeSocketHandledHook(id); });
    QVERIFY(sockets.makeBothReady());
    QCoreApplication::processEvents(); // one wait finds both sockets ready
    // Between the two, not after the last: the end of the pass has its own flush (aboutToBlock, awake).
    QCOMPARE(order, QStringList({QStringLiteral("socket"), QStringLiteral("hook"), QStringLiteral("socket")}));

    installed()->removeSocketHandledHook(std::exchange(id, 0));
    order.clear();
    QVERIFY(sockets.makeBothReady());
    QCoreApplication::processEvents();
    QCOMPARE(order, QStringList({QStringLiteral("socket"), QStringLiteral("socket")}));
}

void TestEpollDispatcher::aPassHookRunsWhereAwakeAndAboutToBlockAreEmitted()
{
    QStringList order;
    EpollEventDispatcher *dispatcher = installed();
    QVERIFY(dispatcher);
    QObject receiver;
    connect(dispatcher, &QAbstractEventDispatcher::awake, &receiver, [&] { order << QStringLiteral("awake"); });
    connect(dispatcher, &QAbstractEventDispatcher::aboutToBlock, &receiver,
            [&] { order << QStringLiteral("aboutToBlock"); });
    int id = dispatcher->addPassHook([&] { order << QStringLiteral("hook"); });
    const auto removeHook = qScopeGuard([&] { dispatcher->removePassHook(id); });

    // A pass that does not wait: right after awake().
    QCoreApplication::processEvents();
    QCOMPARE(order, QStringList({QStringLiteral("awake"), QStringLiteral("hook")}));

    // A pass that may wait (a timer ends it): after awake() and after aboutToBlock().
    order.clear();
    QTimer::singleShot(1, &receiver, [] {});
    QCoreApplication::processEvents(QEventLoop::WaitForMoreEvents);
    QVERIFY2(order.size() >= 4, qPrintable(order.join(u' ')));
    QCOMPARE(order.mid(0, 4), QStringList({QStringLiteral("awake"), QStringLiteral("hook"),
                                           QStringLiteral("aboutToBlock"), QStringLiteral("hook")}));

    dispatcher->removePassHook(std::exchange(id, 0));
    order.clear();
    QCoreApplication::processEvents();
    QCOMPARE(order, QStringList({QStringLiteral("awake")}));
}

void TestEpollDispatcher::aStreamsFirstBytesLeaveBeforeTheNextSocketOfThePass()
{
    // http/WriteCoalescer on this dispatcher: a stream's first bytes, written while one request of a busy pass
    // is handled, reach the kernel before the pass moves on to the next ready socket (the time to first byte
    // of every turn in a burst would otherwise wait for the whole burst).
    sy::HttpServer server;
    QVERIFY(server.listen(QHostAddress::LocalHost, 0));
    int clients[2] = {-1, -1};
    for (int &fd : clients) {
        fd = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_port = htons(server.serverPort());
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        QCOMPARE(::connect(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr), 0);
    }
    int seenAtSecond = -1;
    int handled = 0;
    server.setHandler([&](sy::HttpRequestPtr request, sy::HttpResponse *response) {
        ++handled;
        if (request->path == QLatin1String("/first")) {
            response->beginStream(200, "text/event-stream");
            response->write("data: one\n\n");
            return; // stays open, like a turn's stream
        }
        char c;
        seenAtSecond = int(::recv(clients[0], &c, 1, MSG_PEEK | MSG_DONTWAIT));
        response->sendFull(200, "text/plain", "ok");
    });
    // Both connections accepted and idle before the requests go out together.
    for (int i = 0; i < 20; ++i)
        QCoreApplication::processEvents(QEventLoop::AllEvents, 10);
    const QByteArray first = "GET /first HTTP/1.1\r\nHost: x\r\n\r\n";
    const QByteArray second = "GET /second HTTP/1.1\r\nHost: x\r\n\r\n";
    QCOMPARE(::send(clients[0], first.constData(), size_t(first.size()), 0), ssize_t(first.size()));
    QCOMPARE(::send(clients[1], second.constData(), size_t(second.size()), 0), ssize_t(second.size()));
    QThread::msleep(20); // both requests are in the server's sockets before its next wait
    QCoreApplication::processEvents();
    QCOMPARE(handled, 2); // one pass handled both
    QCOMPARE(seenAtSecond, 1);
    server.closeAllConnections();
    for (int fd : clients)
        ::close(fd);
}

void TestEpollDispatcher::quitFromAnotherThreadEndsItsLoop()
{
    QThread worker;
    QAbstractEventDispatcher *dispatcher = EpollEventDispatcher::create();
    QVERIFY(dispatcher);
    worker.setEventDispatcher(dispatcher);
    worker.start();
    QTRY_VERIFY(worker.isRunning());
    bool ranThere = false;
    QMetaObject::invokeMethod(dispatcher, [&] { ranThere = QThread::currentThread() == &worker; },
                              Qt::BlockingQueuedConnection);
    QVERIFY(ranThere);
    worker.quit();
    QVERIFY(worker.wait(10'000));
}

void TestEpollDispatcher::aReusedDescriptorIsWatchedAgain()
{
    // An accepted socket is closed and the next accept gets the same descriptor number, with no event-loop pass
    // in between: the new socket must still be watched (a stale "already registered" record would leave it deaf).
    QTcpServer server; // accepts only when told to
    QVERIFY(server.listen(QHostAddress::LocalHost));
    server.pauseAccepting();
    QTcpSocket first;
    first.connectToHost(server.serverAddress(), server.serverPort());
    QVERIFY(first.waitForConnected(5000));
    QVERIFY(server.waitForNewConnection(5000));
    QTcpSocket *accepted = server.nextPendingConnection();
    QVERIFY(accepted);
    QTest::qWait(20); // a pass of the loop: the accepted socket's registration reaches the kernel
    const qintptr oldFd = accepted->socketDescriptor();
    QTcpSocket second;
    second.connectToHost(server.serverAddress(), server.serverPort());
    QVERIFY(second.waitForConnected(5000)); // now queued in the listen backlog
    accepted->abort();                       // frees oldFd; its read notifier goes
    QVERIFY(server.waitForNewConnection(5000));
    QTcpSocket *reused = server.nextPendingConnection();
    QVERIFY(reused);
    if (reused->socketDescriptor() != oldFd)
        QSKIP("the kernel handed out another descriptor number; the case cannot be set up here");
    QByteArray got;
    connect(reused, &QTcpSocket::readyRead, reused, [&] { got += reused->readAll(); });
    second.write("hello");
    QTRY_COMPARE_WITH_TIMEOUT(got, QByteArray("hello"), 5000);
    delete accepted;
}

void TestEpollDispatcher::togglingANotifierCostsNoSystemCallUntilTheWait()
{
    int fds[2];
    QCOMPARE(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
    {
        QSocketNotifier reader(fds[0], QSocketNotifier::Read);
        QSocketNotifier writer(fds[0], QSocketNotifier::Write);
        int writable = 0;
        connect(&writer, &QSocketNotifier::activated, this, [&] {
            ++writable;
            writer.setEnabled(false);
        });
        QTRY_VERIFY(writable == 1);
        QCoreApplication::processEvents(); // applies the disable done in the handler
        const quint64 before = installed()->controlCalls();
        for (int i = 0; i < 1000; ++i)
            writer.setEnabled(i % 2 == 0); // ends disabled, as it started
        QCoreApplication::processEvents();
        QCOMPARE(installed()->controlCalls(), before); // the changes cancelled out before any wait
        writer.setEnabled(true);
        QTRY_VERIFY(writable == 2); // and the notifier still works
        QVERIFY(installed()->controlCalls() > before);
        // The last notifier of a descriptor leaves the set at once (before the descriptor can be closed).
        const quint64 beforeRemove = installed()->controlCalls();
        writer.setEnabled(false);
        reader.setEnabled(false);
        QCOMPARE(installed()->controlCalls(), beforeRemove + 1);
    }
    ::close(fds[0]);
    ::close(fds[1]);
}

void TestEpollDispatcher::deleteLaterRunsBackInTheLoop()
{
    QPointer<QObject> doomed = new QObject;
    doomed->deleteLater();
    QVERIFY(doomed);
    QTRY_VERIFY(!doomed);
}

namespace {
struct GlibCall
{
    QEventLoop *loop = nullptr;
    std::atomic<bool> ran{false};
    QThread *thread = nullptr;
};
gboolean glibCallback(gpointer data)
{
    auto *call = static_cast<GlibCall *>(data);
    call->thread = QThread::currentThread();
    call->ran = true;
    if (call->loop)
        call->loop->quit();
    return G_SOURCE_REMOVE;
}
} // namespace

void TestEpollDispatcher::glibSourcesOfThisThreadAreDispatched()
{
    // libsecret (the keychain backend) attaches its answers to the thread's default context like this.
    GMainContext *context = g_main_context_get_thread_default();
    QVERIFY(context);
    GlibCall call;
    GSource *source = g_timeout_source_new(10);
    g_source_set_callback(source, glibCallback, &call, nullptr);
    g_source_attach(source, context);
    g_source_unref(source);
    QTRY_VERIFY(call.ran);
    QCOMPARE(call.thread, QThread::currentThread());
}

void TestEpollDispatcher::glibWorkFromAnotherThreadWakesTheLoop()
{
    GMainContext *context = g_main_context_get_thread_default();
    QVERIFY(context);
    QEventLoop loop;
    GlibCall call;
    call.loop = &loop;
    bool timedOut = false;
    QTimer failsafe; // only ends a hang: the loop must wake for GLib's own wake-up
    failsafe.setSingleShot(true);
    connect(&failsafe, &QTimer::timeout, &loop, [&] {
        timedOut = true;
        loop.quit();
    });
    failsafe.start(10'000);
    std::thread other([&] {
        QThread::msleep(50);
        g_main_context_invoke(context, glibCallback, &call);
    });
    loop.exec();
    other.join();
    QVERIFY(call.ran);
    QVERIFY(!timedOut);
    QCOMPARE(call.thread, QThread::currentThread());
}

namespace {
gboolean pipeReadable(gint fd, GIOCondition, gpointer data)
{
    char c = 0;
    if (::read(fd, &c, 1) == 1)
        ++*static_cast<int *>(data);
    return G_SOURCE_CONTINUE;
}
} // namespace

// A GLib source with a descriptor of its own joins the context after the loop has run a while: the dispatcher
// must see the context's descriptors change and watch the new one. Red when a pass compares only the descriptors
// it watched before (a longer list looks unchanged).
void TestEpollDispatcher::aGlibDescriptorAddedLaterIsWatched()
{
    GMainContext *context = g_main_context_get_thread_default();
    QVERIFY(context);
    QTest::qWait(20); // some passes with the context's usual descriptors
    int fds[2];
    QCOMPARE(::pipe(fds), 0);
    int reads = 0;
    GSource *source = g_unix_fd_source_new(fds[0], G_IO_IN);
    const auto cleanUp = qScopeGuard([&] {
        g_source_destroy(source);
        g_source_unref(source);
        ::close(fds[0]);
        ::close(fds[1]);
    });
    g_source_set_callback(source, G_SOURCE_FUNC(pipeReadable), &reads, nullptr);
    g_source_attach(source, context);
    QTest::qWait(20);
    QCOMPARE(::write(fds[1], "x", 1), ssize_t(1));
    QTRY_COMPARE(reads, 1);
    QCOMPARE(::write(fds[1], "y", 1), ssize_t(1));
    QTRY_COMPARE(reads, 2);
}

int main(int argc, char **argv)
{
    return sy::test::runOnEpollDispatcher<TestEpollDispatcher>(argc, argv);
}

#include "tst_epoll_dispatcher.moc"
