// Group commit on the store thread: write jobs queued back to back share one transaction with a savepoint
// each. A failing job loses only its own changes, a storage failure fails the whole group, every onDone waits
// for the shared COMMIT, groups stay within their job and time limits, and urgent jobs (slot claims) go first.
#include "lib/StoreBlocking.h"
#include "store/Database.h"
#include "store/RequestLogRepository.h"
#include "store/StoreWorker.h"

#include <QMutex>
#include <QScopeGuard>
#include <QSemaphore>
#include <QSignalSpy>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <atomic>
#include <functional>
#include <optional>

using namespace sy;
using sy::test::blockStoreThread;

namespace {

RequestLogRecord row(const QString &id, const QString &route = QStringLiteral("/v1/responses"))
{
    RequestLogRecord r;
    r.requestId = id;
    r.startedAtMs = 1796000000000;
    r.route = route;
    r.status = QStringLiteral("completed");
    return r;
}

int countRows(Database &db, const QString &where = QString())
{
    QSqlQuery q = db.query();
    if (!q.exec(QStringLiteral("SELECT count(*) FROM request_log") + where) || !q.next())
        return -1;
    return q.value(0).toInt();
}

QString whereId(const QString &id)
{
    return QStringLiteral(" WHERE request_id = '%1'").arg(id);
}

// What another connection sees: committed rows only. Opened and closed on the calling thread.
int committedRows(const QString &path)
{
    Database probe;
    QString error;
    if (!probe.open(path, &error, Database::OpenMode::ReadOnly))
        return -2;
    return countRows(probe);
}

struct Outcome
{
    bool ok = false;
    QString error;
};

// The order store jobs ran in, and how many rows were committed when each started.
struct JobTrace
{
    QString path;
    QMutex mutex;
    QStringList order;
    QMap<QString, int> committedAtStart;

    // A job that records itself, runs `also`, and (insert) logs a row named after itself.
    StoreWorker::Job job(const QString &id, bool insert = true, std::function<void()> also = {})
    {
        return [this, id, insert, also](Database &db, QString *e) {
            const int committed = committedRows(path);
            {
                QMutexLocker lock(&mutex);
                order.append(id);
                committedAtStart[id] = committed;
            }
            if (also)
                also();
            return !insert || RequestLogRepository(db).insert(row(id), e);
        };
    }
};

} // namespace

class tst_StoreWorkerGroup : public QObject
{
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString pathFor(const char *name) const
    {
        return m_dir.filePath(QString::fromLatin1(name) + QStringLiteral(".sqlite"));
    }

private slots:
    void failingJobInTheMiddleLosesOnlyItsOwnRow()
    {
        const QString path = pathFor("middle");
        StoreWorker worker;
        worker.setWriteGroupLimits(64, 10000); // the slow last job must not close the group early
        QString error;
        QVERIFY2(worker.start(path, &error), qPrintable(error));
        Database reader;
        QVERIFY(reader.open(path, &error, Database::OpenMode::ReadOnly));

        QSemaphore gate;
        QSemaphore entered;
        blockStoreThread(worker, gate, entered);
        QObject context;
        QList<std::optional<Outcome>> outcomes(5);
        QList<int> allVisibleAtDone(5, -1);
        for (int i = 0; i < 5; ++i) {
            worker.submit(
                [i](Database &db, QString *jobError) {
                    if (!RequestLogRepository(db).insert(row(QStringLiteral("req_%1").arg(i)), jobError))
                        return false;
                    if (i == 2) {
                        *jobError = QStringLiteral("job 2 refuses");
                        return false;
                    }
                    if (i == 4)
                        QThread::msleep(200); // a separate commit of job 0 would be seen long before this
                    return true;
                },
                &context,
                [&, i](bool ok, const QString &doneError) {
                    outcomes[i] = Outcome{ok, doneError};
                    allVisibleAtDone[i] = countRows(reader);
                });
        }
        gate.release();
        QTRY_VERIFY(std::all_of(outcomes.cbegin(), outcomes.cend(), [](const auto &o) { return o.has_value(); }));

        for (int i = 0; i < 5; ++i)
            QCOMPARE(outcomes[i]->ok, i != 2);
        QCOMPARE(outcomes[2]->error, QStringLiteral("job 2 refuses"));
        QCOMPARE(countRows(reader), 4);
        QCOMPARE(countRows(reader, whereId(QStringLiteral("req_2"))), 0);
        // One shared COMMIT: when the first onDone ran, the last job's row was durable as well.
        QCOMPARE(allVisibleAtDone, QList<int>(5, 4));
        QVERIFY(worker.writable());
    }

    // Statements are compiled once per connection, not once per job: a group's jobs reuse the statements of
    // the jobs before them, their savepoints' SAVEPOINT and RELEASE included.
    void aGroupCompilesItsStatementsOnce()
    {
        StoreWorker worker;
        worker.setWriteGroupLimits(64, 10000);
        QString error;
        QVERIFY2(worker.start(pathFor("compiled"), &error), qPrintable(error));
        auto compiledInAGroupOf = [&](int jobs) {
            QSemaphore gate;
            QSemaphore entered;
            blockStoreThread(worker, gate, entered);
            QObject context;
            quint64 first = 0;
            quint64 last = 0;
            int done = 0;
            for (int i = 0; i < jobs; ++i) {
                worker.submit(
                    [&, i](Database &db, QString *jobError) {
                        (i == 0 ? first : last) = db.compiledStatements();
                        return RequestLogRepository(db).insert(row(QStringLiteral("req_%1_%2").arg(jobs).arg(i)),
                                                               jobError);
                    },
                    &context, [&](bool ok, const QString &) { done += ok ? 1 : 0; });
            }
            gate.release();
            [&] { QTRY_COMPARE(done, jobs); }();
            return last - first;
        };
        compiledInAGroupOf(2); // warms the cache: the first insert compiles its statements
        const quint64 small = compiledInAGroupOf(3);
        const quint64 large = compiledInAGroupOf(12);
        QCOMPARE(large, small);
        QCOMPARE(large, quint64(0));
    }

    void onDoneWaitsForTheSharedCommit()
    {
        const QString path = pathFor("timing");
        StoreWorker worker;
        // The jobs must form one group however slowly this machine (or a sanitizer build) runs them; the default
        // 5 ms group time limit would split them.
        worker.setWriteGroupLimits(64, 10000);
        QString error;
        QVERIFY(worker.start(path, &error));
        Database reader;
        QVERIFY(reader.open(path, &error, Database::OpenMode::ReadOnly));

        QSemaphore gate;
        QSemaphore entered;
        blockStoreThread(worker, gate, entered);
        QObject context;
        QList<int> doneOrder;
        QList<int> ownRowVisibleAtDone;
        std::atomic<bool> secondRunning{false};
        QSemaphore holdSecond;
        auto unblock = qScopeGuard([&] { holdSecond.release(); }); // also when a check below fails
        for (int i = 0; i < 3; ++i) {
            worker.submit(
                [&, i](Database &db, QString *jobError) {
                    if (!RequestLogRepository(db).insert(row(QStringLiteral("req_%1").arg(i)), jobError))
                        return false;
                    if (i == 1) {
                        secondRunning = true;
                        holdSecond.acquire();
                    }
                    return true;
                },
                &context,
                [&, i](bool ok, const QString &) {
                    QVERIFY(ok);
                    doneOrder << i;
                    ownRowVisibleAtDone << countRows(reader, whereId(QStringLiteral("req_%1").arg(i)));
                });
        }
        gate.release();
        QTRY_VERIFY(secondRunning.load());
        // Job 0 has finished its work, but its transaction is still open: no onDone, nothing visible.
        QTest::qWait(100);
        QVERIFY(doneOrder.isEmpty());
        QCOMPARE(countRows(reader), 0);

        holdSecond.release();
        unblock.dismiss();
        QTRY_COMPARE(doneOrder.size(), 3);
        QCOMPARE(doneOrder, (QList<int>{0, 1, 2}));
        QCOMPARE(ownRowVisibleAtDone, (QList<int>{1, 1, 1}));
    }

    void storageFailureFailsTheWholeGroup()
    {
        const QString path = pathFor("full");
        StoreWorker worker;
        // The jobs must form one group however slowly this machine (or a sanitizer build) runs them; the default
        // 5 ms group time limit would split them.
        worker.setWriteGroupLimits(64, 10000);
        worker.setReprobeIntervalMs(60000);
        QString error;
        QVERIFY(worker.start(path, &error));
        Database reader;
        QVERIFY(reader.open(path, &error, Database::OpenMode::ReadOnly));
        QSignalSpy writableSpy(&worker, &StoreWorker::writableChanged);
        // max_page_count caps the file at its current size: a big row fails with SQLITE_FULL like a full disk.
        QVERIFY(worker.runBlocking(
            [](Database &db, QString *e) { return db.exec(QStringLiteral("PRAGMA max_page_count = 1"), e); },
            &error));

        QSemaphore gate;
        QSemaphore entered;
        blockStoreThread(worker, gate, entered);
        QObject context;
        QList<std::optional<Outcome>> outcomes(3);
        const QString bigRoute = QString(200000, QLatin1Char('r'));
        const QStringList ids{QStringLiteral("req_small_before"), QStringLiteral("req_big"),
                              QStringLiteral("req_small_after")};
        for (int i = 0; i < 3; ++i) {
            worker.submit(
                [&, i](Database &db, QString *e) {
                    return RequestLogRepository(db).insert(i == 1 ? row(ids[i], bigRoute) : row(ids[i]), e);
                },
                &context, [&, i](bool ok, const QString &e) { outcomes[i] = Outcome{ok, e}; });
        }
        gate.release();
        QTRY_VERIFY(std::all_of(outcomes.cbegin(), outcomes.cend(), [](const auto &o) { return o.has_value(); }));

        // The job before the failure had succeeded inside the group, but the group was rolled back.
        QVERIFY(!outcomes[0]->ok);
        QVERIFY2(outcomes[0]->error.contains(QStringLiteral("full")), qPrintable(outcomes[0]->error));
        QCOMPARE(countRows(reader, whereId(ids[0])), 0);
        QVERIFY(!outcomes[1]->ok);
        QVERIFY2(outcomes[1]->error.contains(QStringLiteral("full")), qPrintable(outcomes[1]->error));
        QCOMPARE(countRows(reader, whereId(ids[1])), 0);
        // The job after the failure never ran in that transaction; it ran on its own afterwards, and what it
        // reports matches what is on disk.
        QCOMPARE(countRows(reader, whereId(ids[2])), outcomes[2]->ok ? 1 : 0);
        QVERIFY(!worker.writable());
        QVERIFY2(worker.unwritableReason().contains(QStringLiteral("full")), qPrintable(worker.unwritableReason()));
        QTRY_VERIFY(!writableSpy.isEmpty());
        QCOMPARE(writableSpy.at(0).at(0).toBool(), false);
    }

    void groupsRespectTheJobLimitAndReadsSplitThem()
    {
        const QString path = pathFor("limit");
        StoreWorker worker;
        worker.setWriteGroupLimits(2, 10000);
        QString error;
        QVERIFY(worker.start(path, &error));

        QSemaphore gate;
        QSemaphore entered;
        blockStoreThread(worker, gate, entered);
        QMutex mutex;
        // Rows committed (seen from a second connection) when each job started.
        QMap<QString, int> committedAtStart;
        auto writeJob = [&](const QString &id) {
            worker.submit(
                [&, id](Database &db, QString *e) {
                    const int committed = committedRows(path);
                    {
                        QMutexLocker lock(&mutex);
                        committedAtStart[id] = committed;
                    }
                    return RequestLogRepository(db).insert(row(id), e);
                },
                nullptr, nullptr);
        };
        writeJob(QStringLiteral("w1"));
        writeJob(QStringLiteral("w2"));
        writeJob(QStringLiteral("w3"));
        std::optional<int> readSaw;
        QObject context;
        worker.submitRead(
            [&](Database &, QString *) {
                QMutexLocker lock(&mutex);
                committedAtStart[QStringLiteral("read")] = committedRows(path);
                return true;
            },
            &context, [&](bool ok, const QString &) { readSaw = ok ? 1 : 0; });
        writeJob(QStringLiteral("w4"));
        writeJob(QStringLiteral("w5"));
        gate.release();
        QVERIFY(worker.runBlocking([](Database &, QString *) { return true; }, &error)); // after all of them
        QTRY_VERIFY(readSaw.has_value());

        QMutexLocker lock(&mutex);
        // Groups: [w1 w2] [w3] (the read ends it) read [w4 w5].
        QCOMPARE(committedAtStart.value(QStringLiteral("w1")), 0);
        QCOMPARE(committedAtStart.value(QStringLiteral("w2")), 0);
        QCOMPARE(committedAtStart.value(QStringLiteral("w3")), 2);
        QCOMPARE(committedAtStart.value(QStringLiteral("read")), 3);
        QCOMPARE(committedAtStart.value(QStringLiteral("w4")), 3);
        QCOMPARE(committedAtStart.value(QStringLiteral("w5")), 3);
        QCOMPARE(committedRows(path), 5);
    }

    void urgentJobsGoFirstAndGroupTogether()
    {
        JobTrace trace;
        trace.path = pathFor("urgent");
        StoreWorker worker;
        // The default 5 ms could close the group between u1 and u2 on a slow (sanitized) run; the time limit has
        // its own test (timeLimitClosesAGroupEarly).
        worker.setWriteGroupLimits(64, 60000);
        QString error;
        QVERIFY(worker.start(trace.path, &error));

        QSemaphore gate;
        QSemaphore entered;
        blockStoreThread(worker, gate, entered);
        worker.submit(trace.job(QStringLiteral("w1")), nullptr, nullptr);
        worker.submitRead(trace.job(QStringLiteral("read"), false), nullptr, nullptr);
        worker.submit(trace.job(QStringLiteral("w2")), nullptr, nullptr);
        worker.submitUrgent(trace.job(QStringLiteral("u1")), nullptr, nullptr);
        worker.submitUrgent(trace.job(QStringLiteral("u2")), nullptr, nullptr);
        gate.release();
        QVERIFY(worker.runBlocking([](Database &, QString *) { return true; }, &error)); // after all of them

        QMutexLocker lock(&trace.mutex);
        // The urgent ones overtook everything queued (in their own order) and shared one transaction; the
        // rest kept submission order.
        QCOMPARE(trace.order, (QStringList{QStringLiteral("u1"), QStringLiteral("u2"), QStringLiteral("w1"),
                                           QStringLiteral("read"), QStringLiteral("w2")}));
        QCOMPARE(trace.committedAtStart.value(QStringLiteral("u2")), 0);
        QCOMPARE(trace.committedAtStart.value(QStringLiteral("w1")), 2);
        QCOMPARE(committedRows(trace.path), 4);
    }

    void anUrgentJobEndsTheRunningGroup()
    {
        // A claim submitted while a long group of settlements runs waits for one job, not for the group.
        JobTrace trace;
        trace.path = pathFor("urgent-ends-group");
        StoreWorker worker;
        worker.setWriteGroupLimits(64, 60000);
        QString error;
        QVERIFY(worker.start(trace.path, &error));

        QSemaphore gate;
        QSemaphore entered;
        blockStoreThread(worker, gate, entered);
        worker.submit(trace.job(QStringLiteral("w1"), true,
                                [&] { worker.submitUrgent(trace.job(QStringLiteral("u")), nullptr, nullptr); }),
                      nullptr, nullptr);
        worker.submit(trace.job(QStringLiteral("w2")), nullptr, nullptr);
        worker.submit(trace.job(QStringLiteral("w3")), nullptr, nullptr);
        gate.release();
        QVERIFY(worker.runBlocking([](Database &, QString *) { return true; }, &error));

        QMutexLocker lock(&trace.mutex);
        QCOMPARE(trace.order, (QStringList{QStringLiteral("w1"), QStringLiteral("u"), QStringLiteral("w2"),
                                           QStringLiteral("w3")}));
        QCOMPARE(trace.committedAtStart.value(QStringLiteral("u")), 1); // w1's group committed without w2, w3
        QCOMPARE(trace.committedAtStart.value(QStringLiteral("w2")), 2);
        QCOMPARE(committedRows(trace.path), 4);
    }

    void timeLimitClosesAGroupEarly()
    {
        const QString path = pathFor("time");
        StoreWorker worker;
        worker.setWriteGroupLimits(64, 20);
        QString error;
        QVERIFY(worker.start(path, &error));

        QSemaphore gate;
        QSemaphore entered;
        blockStoreThread(worker, gate, entered);
        QMutex mutex;
        QList<int> committedAtStart;
        for (int i = 0; i < 3; ++i) {
            worker.submit(
                [&, i](Database &db, QString *e) {
                    const int committed = committedRows(path);
                    {
                        QMutexLocker lock(&mutex);
                        committedAtStart << committed;
                    }
                    if (i == 0)
                        QThread::msleep(40); // longer than the group may run
                    return RequestLogRepository(db).insert(row(QStringLiteral("t%1").arg(i)), e);
                },
                nullptr, nullptr);
        }
        gate.release();
        QVERIFY(worker.runBlocking([](Database &, QString *) { return true; }, &error));
        QMutexLocker lock(&mutex);
        // The slow first job used up the group's time: the other two form the next group.
        QCOMPARE(committedAtStart, (QList<int>{0, 1, 1}));
    }
};

QTEST_GUILESS_MAIN(tst_StoreWorkerGroup)
#include "tst_store_worker_group.moc"
