// GuardedContexts (util/GuardedContexts.h): callbacks posted from one thread to objects of another that may be
// destroyed at any moment. The race test is the store's situation at a shutdown: a worker thread delivering
// results while the objects that asked for them are deleted on their own thread. Without the guard it reads
// freed memory (a crash, or an ASan report in the sanitized unit-test run).
#include "util/GuardedContexts.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QMutex>
#include <QSemaphore>
#include <QTest>
#include <QThread>
#include <atomic>

using namespace sy;

class TestGuardedContexts : public QObject
{
    Q_OBJECT

private slots:
    void postRunsOnTheContextsThread()
    {
        GuardedContexts contexts;
        QThread worker;
        worker.start();
        auto *target = new QObject;
        target->moveToThread(&worker);
        const QPointer<QObject> handle = contexts.watch(target);
        QCOMPARE(contexts.watchedCount(), 1);
        QCOMPARE(contexts.watch(target).data(), target); // watched once, however often it is asked for
        QCOMPARE(contexts.watchedCount(), 1);

        QSemaphore ran;
        QThread *ranOn = nullptr;
        QVERIFY(contexts.post(handle, [&] {
            ranOn = QThread::currentThread();
            ran.release();
        }));
        QVERIFY(ran.tryAcquire(1, 5000));
        QCOMPARE(ranOn, &worker);

        QMetaObject::invokeMethod(
            target, [target] { delete target; }, Qt::BlockingQueuedConnection);
        QCOMPARE(contexts.watchedCount(), 0);
        worker.quit();
        worker.wait();
    }

    void aDestroyedContextGetsNothing()
    {
        GuardedContexts contexts;
        auto *target = new QObject;
        const QPointer<QObject> handle = contexts.watch(target);
        bool ran = false;
        QVERIFY(contexts.post(handle, [&] { ran = true; })); // queued, then the object goes
        delete target;
        QCOMPARE(contexts.watchedCount(), 0);
        QVERIFY(!contexts.post(handle, [&] { ran = true; }));
        QCoreApplication::processEvents();
        QCoreApplication::sendPostedEvents();
        QVERIFY2(!ran, "a callback ran for a destroyed context");
        QVERIFY(!contexts.post(QPointer<QObject>(), [] {}));
        QVERIFY(contexts.watch(nullptr).isNull());
    }

    // Objects come and go on this thread while another thread posts to whichever is current. Every callback
    // that runs must find its object alive; none may run for, or be posted to, a destroyed one.
    void postsRacingTheContextsDestruction()
    {
        GuardedContexts contexts;
        QMutex currentMutex;
        QPointer<QObject> current;
        std::atomic<bool> done{false};
        std::atomic<qint64> posted{0};
        std::atomic<qint64> dropped{0};
        qint64 delivered = 0;
        QObject *alive = nullptr;

        std::unique_ptr<QThread> poster(QThread::create([&] {
            while (!done.load()) {
                QPointer<QObject> target;
                {
                    QMutexLocker lock(&currentMutex);
                    target = current;
                }
                const QObject *expected = target.data();
                if (contexts.post(target, [&, expected] {
                        QCOMPARE(expected, alive); // runs on this thread: alive is the one object not deleted yet
                        ++delivered;
                    }))
                    ++posted;
                else
                    ++dropped;
            }
        }));
        poster->start();
        QElapsedTimer running;
        running.start();
        for (int i = 0; running.elapsed() < 1500; ++i) { // a while, to meet the poster mid-destruction often
            auto *object = new QObject;
            alive = object;
            {
                QMutexLocker lock(&currentMutex);
                current = contexts.watch(object);
            }
            if (i % 4 == 0) {
                // Some delivered, the rest die with their object. So that some are, however the threads are
                // scheduled (a loaded machine, ASan): wait for two more posts; at most the first of them took
                // its target before `current` changed, so the second went to this object.
                const qint64 before = posted.load();
                QElapsedTimer waiting;
                waiting.start();
                while (posted.load() < before + 2 && waiting.elapsed() < 2000)
                    QThread::yieldCurrentThread();
                QCoreApplication::sendPostedEvents();
            }
            if (i % 64 == 0)
                QThread::yieldCurrentThread();
            alive = nullptr;
            delete object; // while the poster may be posting to it
        }
        done = true;
        poster->wait();
        QCoreApplication::sendPostedEvents();
        QVERIFY2(!QTest::currentTestFailed(), "a callback ran for an object other than the live one");
        QCOMPARE(contexts.watchedCount(), 0);
        QVERIFY(posted.load() > 0);
        QVERIFY(delivered > 0);
        QVERIFY(delivered <= posted.load());
        qInfo("posted %lld, delivered %lld, dropped %lld", qint64(posted.load()), delivered, qint64(dropped.load()));
    }
};

QTEST_GUILESS_MAIN(TestGuardedContexts)
#include "tst_guarded_contexts.moc"
