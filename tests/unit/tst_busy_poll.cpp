// util/BusyPoll.h with the epoll dispatcher installed on the main thread: while a BusyPollHold is held, a wait
// polls instead of sleeping and finds what arrives within its window; without one, or past the window, the
// thread sleeps as before and timers still fire on time. A poll for work handed to a helper thread (the store
// thread) stops, and the thread sleeps, while that helper has not run for the grace.
#include "lib/EpollTestMain.h"
#include "store/StoreWorker.h"
#include "util/BusyPoll.h"
#include "util/EpollEventDispatcher.h"

#include <QCoreApplication>
#include <QElapsedTimer>
#include <QEventLoop>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>
#include <chrono>
#include <sys/resource.h>
#include <thread>

using sy::BusyPollHold;
using sy::EpollEventDispatcher;

namespace {

constexpr int kWindowUs = 100'000; // long: a loaded machine (ctest -j2, sanitizers) may delay the poster
constexpr int kGraceUs = 20'000;   // a helper that has not begun after this long stops a poll
// A post this long after a hand-off comes past the grace and well inside the window (the 70 ms left for a
// loaded machine's delays).
constexpr int kPastGraceMs = kGraceUs / 1000 * 3 / 2;

qint64 nowNs()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

EpollEventDispatcher *installed()
{
    return dynamic_cast<EpollEventDispatcher *>(QAbstractEventDispatcher::instance());
}

// Times this thread gave up its CPU to sleep (a blocking wait does; a poll that yields does not).
long voluntarySwitches()
{
    rusage usage{};
    getrusage(RUSAGE_THREAD, &usage);
    return usage.ru_nvcsw;
}

struct WaitResult
{
    bool arrived = false;
    qint64 elapsedMs = 0;
    long sleeps = 0;
    quint64 polls = 0;
    quint64 hits = 0;
};

// Runs an event loop that only a post from another thread, `delayMs` from now, ends.
WaitResult waitForAPostFromAnotherThread(int delayMs)
{
    WaitResult r;
    QObject receiver;
    QEventLoop loop;
    QTimer failsafe; // only ends a hang; `arrived` tells which way it ended
    failsafe.setSingleShot(true);
    QObject::connect(&failsafe, &QTimer::timeout, &loop, &QEventLoop::quit);
    failsafe.start(10'000);
    const EpollEventDispatcher::BusyPollCounts before = installed()->busyPollCounts();
    QElapsedTimer timer;
    timer.start();
    std::thread poster([&] {
        QThread::msleep(ulong(delayMs));
        QMetaObject::invokeMethod(
            &receiver,
            [&] {
                r.arrived = true;
                loop.quit();
            },
            Qt::QueuedConnection);
    });
    const long sleepsBefore = voluntarySwitches();
    loop.exec();
    r.sleeps = voluntarySwitches() - sleepsBefore;
    r.elapsedMs = timer.elapsed();
    poster.join();
    const EpollEventDispatcher::BusyPollCounts after = installed()->busyPollCounts();
    r.polls = after.polls - before.polls;
    r.hits = after.hits - before.hits;
    return r;
}

} // namespace

class TestBusyPoll : public QObject
{
    Q_OBJECT

private slots:
    void theWindowComesFromTheEnvironment()
    {
        QCOMPARE(BusyPollHold::windowUs(), kWindowUs);
        QCOMPARE(BusyPollHold::helperGraceUs(), kGraceUs);
        QVERIFY(!BusyPollHold::helperStalled(nowNs())); // no hand-off yet
    }

    void withoutAHoldTheWaitSleeps()
    {
        QCOMPARE(BusyPollHold::heldOnThisThread(), 0);
        const WaitResult r = waitForAPostFromAnotherThread(5);
        QVERIFY(r.arrived);
        QCOMPARE(r.polls, quint64(0));
        QVERIFY2(r.sleeps >= 1, "a wait of 5 ms without a hold sleeps");
    }

    void aHeldWaitFindsAPostWithoutSleeping()
    {
        BusyPollHold hold;
        hold.acquire();
        QVERIFY(hold.held());
        QCOMPARE(BusyPollHold::heldOnThisThread(), 1);
        const WaitResult r = waitForAPostFromAnotherThread(5);
        QVERIFY(r.arrived);
        QVERIFY(r.polls >= 1);
        QCOMPARE(r.hits, r.polls); // every polled wait ended by what it waited for, within the window
        QCOMPARE(r.sleeps, 0L);
        hold.release();
        QCOMPARE(BusyPollHold::heldOnThisThread(), 0);
        QCOMPARE(BusyPollHold::pollUntilNs(), qint64(0));
    }

    void aWaitPastItsWindowSleepsAndTimersStillFire()
    {
        BusyPollHold hold;
        hold.acquire();
        // A timer inside the window ends the poll at its due time and fires, not early.
        QElapsedTimer sinceStart;
        sinceStart.start();
        qint64 timerFiredAtMs = -1;
        QTimer::singleShot(20, [&] { timerFiredAtMs = sinceStart.elapsed(); });
        const WaitResult r = waitForAPostFromAnotherThread(300); // 3x the 100 ms window
        QVERIFY(r.arrived);
        QVERIFY(r.elapsedMs >= 300);
        QVERIFY(timerFiredAtMs >= 20);
        QVERIFY(timerFiredAtMs < r.elapsedMs);
        QVERIFY(r.polls >= 1);
        // The timer ended one poll and the window another (the timer's own clean-up may post an event that a
        // third poll finds).
        QVERIFY2(r.hits < r.polls, qPrintable(QStringLiteral("%1 of %2 polls found an event").arg(r.hits).arg(r.polls)));
        QVERIFY2(r.sleeps >= 1, "past its window the wait sleeps");
    }

    void theWindowOfTheLatestHoldCounts()
    {
        const qint64 takenBefore = BusyPollHold::takenOnThisThread();
        BusyPollHold first;
        first.acquire();
        const qint64 firstUntil = BusyPollHold::pollUntilNs();
        QTest::qSleep(2);
        first.acquire(); // held already: the window starts again (a claim after a lost one), counted once
        QCOMPARE(BusyPollHold::heldOnThisThread(), 1);
        QCOMPARE(BusyPollHold::takenOnThisThread(), takenBefore + 1); // a renewal starts no hold
        const qint64 renewedUntil = BusyPollHold::pollUntilNs();
        QVERIFY(renewedUntil > firstUntil);
        QTest::qSleep(2);
        BusyPollHold second;
        second.acquire();
        QCOMPARE(BusyPollHold::heldOnThisThread(), 2);
        QVERIFY(BusyPollHold::pollUntilNs() > renewedUntil);
        second.release();
        second.release(); // twice: counted once
        QCOMPARE(BusyPollHold::heldOnThisThread(), 1);
        QCOMPARE(BusyPollHold::takenOnThisThread(), takenBefore + 2);
        second.acquire(); // released, then held again: a hold started anew
        QCOMPARE(BusyPollHold::takenOnThisThread(), takenBefore + 3);
        second.release();
        {
            BusyPollHold scoped;
            scoped.acquire();
            QCOMPARE(BusyPollHold::heldOnThisThread(), 2);
        }
        QCOMPARE(BusyPollHold::heldOnThisThread(), 1); // a destroyed hold is released
    }

    void aPollForAHelperThatHasNotBegunStopsAndSleeps()
    {
        // Work handed to a helper whose count of jobs taken never moves: past the grace the poll stops and the
        // thread sleeps until the post comes, well inside its window.
        const auto helper = std::make_shared<sy::BusyPollHelper>();
        BusyPollHold hold;
        hold.acquire();
        BusyPollHold::noteHandOff(helper);
        const quint64 stallsBefore = installed()->busyPollCounts().helperStalls;
        const WaitResult r = waitForAPostFromAnotherThread(kGraceUs / 1000 * 3);
        QVERIFY(r.arrived);
        QVERIFY(r.polls >= 1);
        QVERIFY(installed()->busyPollCounts().helperStalls - stallsBefore >= 1);
        QVERIFY2(r.sleeps >= 1, "a poll for a helper that has not begun gives its CPU up");
        QVERIFY(BusyPollHold::helperStalled(nowNs()));
        helper->working = true; // inside a unit: not stalled while it works
        QVERIFY(!BusyPollHold::helperStalled(nowNs()));
        helper->working = false;
        QVERIFY(BusyPollHold::helperStalled(nowNs()));
        helper->jobsTaken.fetch_add(1); // it took the job: the hand-off is not stalled any more
        QVERIFY(!BusyPollHold::helperStalled(nowNs()));
    }

    void aPollForAHelperBusyWithAnEarlierUnitGoesOn()
    {
        // The helper has taken no job since the hand-off but works on an earlier unit: it runs, so the poll
        // goes on (under load a claim often waits behind another turn's unit).
        const auto helper = std::make_shared<sy::BusyPollHelper>();
        helper->working = true;
        BusyPollHold hold;
        hold.acquire();
        BusyPollHold::noteHandOff(helper);
        const quint64 stallsBefore = installed()->busyPollCounts().helperStalls;
        const WaitResult r = waitForAPostFromAnotherThread(kPastGraceMs);
        QVERIFY(r.arrived);
        QCOMPARE(installed()->busyPollCounts().helperStalls, stallsBefore);
        QCOMPARE(r.sleeps, 0L);
        helper->jobsTaken.fetch_add(1);
    }

    void aPollForAHelperThatBeganGoesOn()
    {
        const auto helper = std::make_shared<sy::BusyPollHelper>();
        BusyPollHold hold;
        hold.acquire();
        BusyPollHold::noteHandOff(helper);
        helper->jobsTaken.fetch_add(1); // took the job at once
        const quint64 stallsBefore = installed()->busyPollCounts().helperStalls;
        const WaitResult r = waitForAPostFromAnotherThread(kPastGraceMs);
        QVERIFY(r.arrived);
        QCOMPARE(installed()->busyPollCounts().helperStalls, stallsBefore);
        QCOMPARE(r.hits, r.polls);
        QCOMPARE(r.sleeps, 0L);
    }

    void theEarliestHandOffTheHelperHasNotBegunCounts()
    {
        const auto helper = std::make_shared<sy::BusyPollHelper>();
        BusyPollHold::noteHandOff(helper);
        const qint64 firstNs = nowNs();
        QTest::qSleep(kGraceUs / 1000 + 5);
        BusyPollHold::noteHandOff(helper); // not begun since: the first hand-off's time stays
        QVERIFY(nowNs() - firstNs >= qint64(kGraceUs) * 1000);
        QVERIFY(BusyPollHold::helperStalled(nowNs()));
        helper->jobsTaken.fetch_add(1);
        BusyPollHold::noteHandOff(helper); // begun since: a new hand-off from now
        QVERIFY(!BusyPollHold::helperStalled(nowNs()));
        QVERIFY(BusyPollHold::helperStalled(nowNs() + qint64(kGraceUs) * 1000));
        // Another helper's hand-off replaces the mark.
        const auto other = std::make_shared<sy::BusyPollHelper>();
        BusyPollHold::noteHandOff(other);
        other->jobsTaken.fetch_add(1);
        QVERIFY(!BusyPollHold::helperStalled(nowNs() + qint64(kGraceUs) * 1000));
    }

    void aPollForTheStoreThreadStopsOnlyWhileItIsHeldOutsideAUnit()
    {
        // The store thread wired up. A job pushed while the thread runs a long unit waits, but the thread works:
        // the poll goes on. A job pushed while the thread is held outside a unit (in an earlier job's callback,
        // which runs on the store thread after its unit) is not taken: the poll stops and this thread sleeps.
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        sy::StoreWorker store;
        QString error;
        QVERIFY2(store.start(dir.filePath(QStringLiteral("s.db")), &error), qPrintable(error));
        for (const bool inUnit : {true, false}) {
            std::atomic<bool> held{false};
            std::atomic<bool> release{false};
            auto hold = [&] {
                held = true;
                while (!release)
                    QThread::msleep(1);
            };
            if (inUnit)
                store.submit(
                    [&](sy::Database &, QString *) {
                        hold();
                        return true;
                    },
                    nullptr, [](bool, const QString &) {});
            else
                store.submit([](sy::Database &, QString *) { return true; }, nullptr,
                             [&](bool, const QString &) { hold(); }); // no context: on the store thread
            while (!held)
                QThread::msleep(1);
            BusyPollHold busy;
            busy.acquire();
            QObject receiver;
            QEventLoop loop;
            bool answered = false;
            store.submit([](sy::Database &, QString *) { return true; }, &receiver,
                         [&](bool ok, const QString &) {
                             answered = ok;
                             loop.quit();
                         });
            const quint64 stallsBefore = installed()->busyPollCounts().helperStalls;
            const long sleepsBefore = voluntarySwitches();
            std::thread releaser([&] {
                QThread::msleep(ulong(kGraceUs / 1000 * 3));
                release = true;
            });
            QTimer::singleShot(10'000, &loop, &QEventLoop::quit);
            loop.exec();
            releaser.join();
            QVERIFY(answered);
            const quint64 stalls = installed()->busyPollCounts().helperStalls - stallsBefore;
            if (inUnit) {
                QCOMPARE(stalls, quint64(0));
            } else {
                QVERIFY(stalls >= 1);
                QVERIFY(voluntarySwitches() - sleepsBefore >= 1);
            }
            QVERIFY(!BusyPollHold::helperStalled(nowNs() + qint64(kGraceUs) * 1000)); // the job was taken
        }
        store.stop();
    }

    void holdsBelongToTheirThread()
    {
        int heldThere = -1;
        qint64 takenThere = -1;
        const qint64 takenHere = BusyPollHold::takenOnThisThread();
        std::thread other([&] {
            BusyPollHold hold;
            hold.acquire();
            heldThere = BusyPollHold::heldOnThisThread();
            takenThere = BusyPollHold::takenOnThisThread();
        });
        other.join();
        QCOMPARE(heldThere, 1);
        QCOMPARE(takenThere, qint64(1)); // that thread's own count
        QCOMPARE(BusyPollHold::heldOnThisThread(), 0);
        QCOMPARE(BusyPollHold::takenOnThisThread(), takenHere);
        const WaitResult r = waitForAPostFromAnotherThread(5);
        QVERIFY(r.arrived);
        QCOMPARE(r.polls, quint64(0));
    }
};

int main(int argc, char **argv)
{
    // Read once per process, before anything asks.
    qputenv("SWITCHYARD_BUSY_POLL_US", QByteArray::number(kWindowUs));
    qputenv("SWITCHYARD_BUSY_POLL_HELPER_GRACE_US", QByteArray::number(kGraceUs));
    return sy::test::runOnEpollDispatcher<TestBusyPoll>(argc, argv);
}

#include "tst_busy_poll.moc"
