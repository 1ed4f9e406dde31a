// StoreWorker::warmUp(): a read job run ahead of a slot claim, only on an idle SQLite store thread, and dropped
// when any other unit of work gets there first: it never goes ahead of a real job.
#include "lib/StoreBlocking.h"
#include "store/Database.h"
#include "store/StoreWorker.h"

#include <QElapsedTimer>
#include <QMutex>
#include <QSemaphore>
#include <QStringList>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <atomic>
#include <functional>

using namespace sy;
using sy::test::blockStoreThread;

class tst_StoreWarmUp : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;

    QString pathFor(const char *name) const
    {
        return m_dir.filePath(QString::fromLatin1(name) + QStringLiteral(".sqlite"));
    }

    // Waits until every job submitted so far has run.
    static void settle(StoreWorker &worker)
    {
        QString error;
        QVERIFY2(worker.runBlocking([](Database &, QString *) { return true; }, &error), qPrintable(error));
    }

    // Spins until `counter` exceeds `before` (a tight loop: a 50 ms step of QTRY could miss a 100 ms wait).
    static bool waitAbove(const std::function<quint64()> &counter, quint64 before)
    {
        QElapsedTimer timer;
        timer.start();
        while (counter() <= before && timer.elapsed() < 5000)
            QThread::yieldCurrentThread();
        return counter() > before;
    }

    // Starts a worker on `name`, runs a warm-up on its idle thread and returns once the thread waits awake after
    // it (a tight loop: a 50 ms step of QTRY could miss the 100 ms wait).
    void startWaitingAwake(StoreWorker &worker, const char *name)
    {
        QString error;
        QVERIFY2(worker.start(pathFor(name), &error), qPrintable(error));
        settle(worker);
        worker.warmUp([](Database &, QString *) { return true; });
        QElapsedTimer timer;
        timer.start();
        while (worker.warmSpins() == 0 && timer.elapsed() < 5000)
            QThread::yieldCurrentThread();
        QCOMPARE(worker.warmSpins(), quint64(1));
        QCOMPARE(worker.warmUps(), quint64(1));
    }

private slots:
    void initTestCase()
    {
        // Long enough that a job submitted 5 ms after the warm-up still finds the store thread awake (the limit is
        // read once per process).
        qputenv("SWITCHYARD_STORE_WARM_SPIN_US", "100000");
        // No waiting awake after other jobs (SWITCHYARD_STORE_SPIN_US) unless a test asks for it: the warm-up cases
        // below need a thread that sleeps after their settle().
        qputenv("SWITCHYARD_STORE_SPIN_US", "0");
    }

    void aWarmUpRunsOnAnIdleStoreThread()
    {
        StoreWorker worker;
        QString error;
        QVERIFY2(worker.start(pathFor("idle"), &error), qPrintable(error));
        settle(worker);

        std::atomic<QThread *> ranOn{nullptr};
        worker.warmUp([&](Database &, QString *) {
            ranOn = QThread::currentThread();
            return true;
        });
        QTRY_COMPARE(worker.warmUps(), quint64(1));
        QCOMPARE(ranOn.load(), worker.storeThread());
    }

    void aWarmUpIsDroppedWhileTheStoreThreadWorks()
    {
        StoreWorker worker;
        QString error;
        QVERIFY2(worker.start(pathFor("busy"), &error), qPrintable(error));
        QSemaphore gate;
        QSemaphore entered;
        blockStoreThread(worker, gate, entered);

        std::atomic<int> warmRuns{0};
        worker.warmUp([&](Database &, QString *) { return ++warmRuns > 0; });
        gate.release();
        settle(worker);
        QCOMPARE(warmRuns.load(), 0);
        QCOMPARE(worker.warmUps(), quint64(0));

        // Idle again: the next hint runs.
        worker.warmUp([&](Database &, QString *) { return ++warmRuns > 0; });
        QTRY_COMPARE(worker.warmUps(), quint64(1));
        QCOMPARE(warmRuns.load(), 1);
    }

    void aWarmUpThatAClaimOvertakesIsDropped()
    {
        StoreWorker worker;
        QString error;
        QVERIFY2(worker.start(pathFor("overtaken"), &error), qPrintable(error));
        settle(worker);

        // Hold the store thread's event loop outside any unit of work: to warmUp() the thread is idle (as when
        // it has posted a unit's callbacks and lost its CPU before going back to sleep).
        QObject *onStoreThread = nullptr;
        QVERIFY(worker.runBlocking(
            [&](Database &, QString *) {
                onStoreThread = new QObject;
                return true;
            },
            &error));
        QSemaphore gate;
        QSemaphore entered;
        QMetaObject::invokeMethod(
            onStoreThread,
            [&] {
                entered.release();
                gate.acquire();
            },
            Qt::QueuedConnection);
        entered.acquire();

        QMutex mutex;
        QStringList order;
        auto record = [&](const QString &what) {
            return [&, what](Database &, QString *) {
                QMutexLocker lock(&mutex);
                order << what;
                return true;
            };
        };
        worker.warmUp(record(QStringLiteral("warm")));
        worker.submitUrgent(record(QStringLiteral("claim")), nullptr, nullptr);
        gate.release();
        settle(worker);
        onStoreThread->deleteLater();

        QMutexLocker lock(&mutex);
        QCOMPARE(order, QStringList{QStringLiteral("claim")});
        QCOMPARE(worker.warmUps(), quint64(0));
    }

    // After a warm-up the store thread stays awake for the claim it announced: the claim is found by that wait,
    // not by a drain posted to (and waking) the thread.
    void aJobSubmittedAfterAWarmUpFindsTheThreadAwake()
    {
        StoreWorker worker;
        startWaitingAwake(worker, "awake");
        if (QTest::currentTestFailed())
            return;
        std::atomic<int> ran{0};
        worker.submitUrgent([&](Database &, QString *) { return ++ran > 0; }, nullptr, nullptr);
        QTRY_COMPARE(ran.load(), 1);
        QCOMPARE(worker.warmSpins(), quint64(1));
        QCOMPARE(worker.warmSpinHits(), quint64(1));
    }

    // While the thread waits awake for the claim of one warm-up, the next turn's warm-up is refused: it would only
    // make that claim wait behind it.
    void noWarmUpWhileTheThreadWaitsAwake()
    {
        StoreWorker worker;
        startWaitingAwake(worker, "no-second");
        if (QTest::currentTestFailed())
            return;
        std::atomic<int> secondRuns{0};
        worker.warmUp([&](Database &, QString *) { return ++secondRuns > 0; });
        // The claim comes a little later, well inside the 100 ms wait: an accepted second warm-up would have
        // ended the wait and run by then.
        QThread::msleep(10);
        std::atomic<int> ran{0};
        worker.submitUrgent([&](Database &, QString *) { return ++ran > 0; }, nullptr, nullptr);
        QTRY_COMPARE(ran.load(), 1);
        settle(worker);
        QCOMPARE(secondRuns.load(), 0);
        QCOMPARE(worker.warmUps(), quint64(1));
        QCOMPARE(worker.warmSpinHits(), quint64(1)); // found by the claim, not by a second warm-up
    }

    // A wait that nothing ended leaves the queue as it found it: the next job still gets a drain and runs.
    void aJobAfterAWaitThatEndedEmptyStillRuns()
    {
        StoreWorker worker;
        QString error;
        QVERIFY2(worker.start(pathFor("after-wait"), &error), qPrintable(error));
        settle(worker);

        worker.warmUp([](Database &, QString *) { return true; });
        QTRY_COMPARE(worker.warmSpins(), quint64(1));
        QTest::qWait(150); // past the 100 ms limit
        std::atomic<int> ran{0};
        worker.submit([&](Database &, QString *) { return ++ran > 0; }, nullptr, nullptr);
        QTRY_COMPARE(ran.load(), 1);
        QCOMPARE(worker.warmSpinHits(), quint64(0));
        // Jobs without a warm-up ahead of them never make the thread wait awake.
        settle(worker);
        QCOMPARE(worker.warmSpins(), quint64(1));
    }

    // After a settlement the store thread waits awake for the next job (SWITCHYARD_STORE_SPIN_US): the next claim
    // is found by that wait, not by a drain posted to (and waking) the thread; a warm-up asked for meanwhile is
    // refused (the thread is awake already). After a plain job it sleeps at once. Switched off, it never waits.
    void aJobSoonAfterASettlementFindsTheThreadAwake()
    {
        StoreWorker worker;
        worker.setJobSpinUs(100'000);
        QString error;
        QVERIFY2(worker.start(pathFor("job-spin"), &error), qPrintable(error));
        settle(worker);
        QTest::qWait(150); // past any wait of the start's units

        // A plain write, no claim announced: no job is likely to follow, so the thread sleeps at once.
        const quint64 spins = worker.jobSpins();
        const quint64 none = worker.jobSpinsSkipped();
        std::atomic<int> ran{0};
        worker.submit([&](Database &, QString *) { return ++ran > 0; }, nullptr, nullptr);
        QTRY_COMPARE(ran.load(), 1);
        QVERIFY(waitAbove([&] { return worker.jobSpinsSkipped(); }, none));
        QCOMPARE(worker.jobSpins(), spins);

        // A settlement (a retained write): its client's next claim often follows, so the thread waits awake.
        worker.submitRetained([&](Database &, QString *) { return ++ran > 0; }, QStringLiteral("row"), nullptr,
                              nullptr);
        QVERIFY(waitAbove([&] { return worker.jobSpins(); }, spins));
        const quint64 hitsBefore = worker.jobSpinHits();
        std::atomic<int> warmRuns{0};
        worker.warmUp([&](Database &, QString *) { return ++warmRuns > 0; }); // refused while it waits awake
        const quint64 skippedBeforeClaim = worker.jobSpinsSkipped();
        worker.submitUrgent([&](Database &, QString *) { return ++ran > 0; }, nullptr, nullptr);
        QTRY_COMPARE(ran.load(), 3);
        QCOMPARE(worker.jobSpinHits(), hitsBefore + 1);
        QCOMPARE(warmRuns.load(), 0);
        QCOMPARE(worker.warmUps(), quint64(0));
        QVERIFY(worker.awakeWaitUs() > 0);

        // The claim used the warm-up's announcement up: the thread sleeps after it.
        QVERIFY(waitAbove([&] { return worker.jobSpinsSkipped(); }, skippedBeforeClaim));

        // A settlement whose client's next turn is not expected at once (a large body's: kClaimSoonMaxBodyBytes):
        // the thread sleeps after it too.
        const quint64 skippedBefore = worker.jobSpinsSkipped();
        const quint64 spinsBefore = worker.jobSpins();
        worker.submitRetained([&](Database &, QString *) { return ++ran > 0; }, QStringLiteral("row"), nullptr, nullptr,
                              false);
        QTRY_COMPARE(ran.load(), 4);
        QVERIFY(waitAbove([&] { return worker.jobSpins() + worker.jobSpinsSkipped(); }, spinsBefore + skippedBefore));
        QCOMPARE(worker.jobSpins(), spinsBefore);
        QCOMPARE(worker.jobSpinsSkipped(), skippedBefore + 1);

        // Switched off, the thread sleeps after a job: no wait, and the next job is run by a posted drain.
        worker.setJobSpinUs(0);
        QTest::qWait(150); // past the announcement of the warm-up above (its claim used it up anyway)
        const quint64 spinsOff = worker.jobSpins();
        worker.submitRetained([&](Database &, QString *) { return ++ran > 0; }, QStringLiteral("row"), nullptr,
                              nullptr);
        worker.submit([&](Database &, QString *) { return ++ran > 0; }, nullptr, nullptr);
        QTRY_COMPARE(ran.load(), 6);
        settle(worker);
        QCOMPARE(worker.jobSpins(), spinsOff);
        QCOMPARE(worker.jobSpinHits(), hitsBefore + 1);
    }

    // A job found while the thread waits awake runs at once, before events posted to the thread meanwhile: it
    // is not handed to the thread's event loop first (a post, a poll and a read on the way of a claim).
    void aJobFoundAwakeRunsBeforeWhatWasPostedMeanwhile()
    {
        StoreWorker worker;
        worker.setJobSpinUs(100'000);
        QString error;
        QVERIFY2(worker.start(pathFor("job-found-awake"), &error), qPrintable(error));
        settle(worker);
        QTest::qWait(150);
        QObject onStoreThread;
        onStoreThread.moveToThread(worker.storeThread());
        QMutex mutex;
        QStringList order;
        auto note = [&](const QString &what) {
            QMutexLocker lock(&mutex);
            order << what;
        };
        const quint64 spins = worker.jobSpins();
        const quint64 hits = worker.jobSpinHits();
        worker.submitRetained([&](Database &, QString *) { return true; }, QStringLiteral("row"), nullptr, nullptr);
        QVERIFY(waitAbove([&] { return worker.jobSpins(); }, spins)); // waiting awake now, for up to 100 ms
        QMetaObject::invokeMethod(
            &onStoreThread, [&] { note(QStringLiteral("posted")); }, Qt::QueuedConnection);
        worker.submitUrgent(
            [&](Database &, QString *) {
                note(QStringLiteral("job"));
                return true;
            },
            nullptr, nullptr);
        const auto noted = [&] {
            QMutexLocker lock(&mutex);
            return order.size();
        };
        QTRY_COMPARE(noted(), qsizetype(2));
        QCOMPARE(worker.jobSpinHits(), hits + 1);
        QCOMPARE(order, QStringList({QStringLiteral("job"), QStringLiteral("posted")}));
        settle(worker);
        // Moved back before it is destroyed here (the store thread ends with the worker).
        QMetaObject::invokeMethod(
            &onStoreThread, [&] { onStoreThread.moveToThread(QCoreApplication::instance()->thread()); },
            Qt::BlockingQueuedConnection);
    }

    void aClaimAnnouncedDuringAUnitKeepsTheThreadAwakeAfterIt()
    {
        StoreWorker worker;
        worker.setJobSpinUs(100'000);
        QString error;
        QVERIFY2(worker.start(pathFor("announced"), &error), qPrintable(error));
        settle(worker);
        QTest::qWait(150);

        // The thread is busy, so the announcement's warm-up is dropped; the announcement itself still counts.
        QSemaphore gate, entered;
        blockStoreThread(worker, gate, entered);
        const quint64 spins = worker.jobSpins();
        const quint64 none = worker.jobSpinsSkipped();
        worker.warmUp([](Database &, QString *) { return true; });
        gate.release();
        QVERIFY(waitAbove([&] { return worker.jobSpins(); }, spins));
        QCOMPARE(worker.jobSpinsSkipped(), none);
        const quint64 hitsBefore = worker.jobSpinHits();
        std::atomic<int> ran{0};
        const quint64 noneBefore = worker.jobSpinsSkipped();
        worker.submitUrgent([&](Database &, QString *) { return ++ran > 0; }, nullptr, nullptr); // the claim
        QTRY_COMPARE(ran.load(), 1);
        QCOMPARE(worker.jobSpinHits(), hitsBefore + 1);
        QCOMPARE(worker.warmUps(), quint64(0));
        // The claim used the announcement up: after it the thread sleeps at once, though the announcement is
        // younger than the wait's limit.
        QVERIFY(waitAbove([&] { return worker.jobSpinsSkipped(); }, noneBefore));
        QCOMPARE(worker.jobSpins(), spins + 1);

        // An announcement alone (API keys required: no warm-up) makes the thread wait after the next unit too.
        worker.announceClaim();
        worker.submit([&](Database &, QString *) { return ++ran > 0; }, nullptr, nullptr); // the key check
        QVERIFY(waitAbove([&] { return worker.jobSpins(); }, spins + 1));
        worker.submitUrgent([&](Database &, QString *) { return ++ran > 0; }, nullptr, nullptr);
        QTRY_COMPARE(ran.load(), 3);
        QCOMPARE(worker.jobSpinHits(), hitsBefore + 2);
    }

    void noWarmUpAfterStop()
    {
        StoreWorker worker;
        QString error;
        QVERIFY2(worker.start(pathFor("stopped"), &error), qPrintable(error));
        worker.stop();
        std::atomic<int> warmRuns{0};
        worker.warmUp([&](Database &, QString *) { return ++warmRuns > 0; });
        QTest::qWait(20);
        QCOMPARE(warmRuns.load(), 0);
    }
};

QTEST_GUILESS_MAIN(tst_StoreWarmUp)
#include "tst_store_warmup.moc"
