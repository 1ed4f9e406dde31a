// WAL checkpoints of a SQLite store run on the WalCheckpointer's thread, not inside the store thread's COMMITs:
// the store connection's own threshold is raised, the checkpointer copies committed frames back soon after
// each write, and so the WAL file stays small under a steady stream of writes.
#include "store/Database.h"
#include "store/StoreWorker.h"
#include "store/WalCheckpointer.h"

#include <QFile>
#include <QFileInfo>
#include <QScopeGuard>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>
#include <QtEndian>

using namespace sy;

namespace {

// The store connection's PRAGMA wal_autocheckpoint, read on the store thread.
int storeAutoCheckpoint(StoreWorker &worker)
{
    int pages = -1;
    QString error;
    const bool ok = worker.runBlocking(
        [&pages](Database &db, QString *) {
            QSqlQuery q = db.query();
            if (!q.exec(QStringLiteral("PRAGMA wal_autocheckpoint")) || !q.next())
                return false;
            pages = q.value(0).toInt();
            return true;
        },
        &error, false);
    return ok ? pages : -1;
}

// How many times the store connection compiled SQL so far (Database::compiledStatements), read on the store thread.
qint64 compiledOnStore(StoreWorker &worker)
{
    qint64 compiled = -1;
    QString error;
    const bool ok = worker.runBlocking(
        [&compiled](Database &db, QString *) {
            compiled = qint64(db.compiledStatements());
            return true;
        },
        &error, false);
    return ok ? compiled : -1;
}

// One write job of about `bytes` bytes in a table of its own (about bytes / 4096 WAL frames).
bool writeBlob(StoreWorker &worker, int bytes)
{
    QString error;
    return worker.runBlocking(
        [bytes](Database &db, QString *e) {
            return db.exec(QStringLiteral("CREATE TABLE IF NOT EXISTS ballast (b BLOB)"), e) &&
                   db.exec(QStringLiteral("INSERT INTO ballast (b) VALUES (randomblob(%1))").arg(bytes), e);
        },
        &error);
}

// The WAL header's checkpoint sequence number (bytes 12-15, big-endian): SQLite adds one each time it starts the
// WAL over, in the header the first write after that writes (and, with synchronous=NORMAL, syncs).
qint64 walStartCount(const QString &path)
{
    QFile wal(path + QStringLiteral("-wal"));
    if (!wal.open(QIODevice::ReadOnly))
        return -1;
    const QByteArray head = wal.read(16);
    return head.size() == 16 ? qint64(qFromBigEndian<quint32>(head.constData() + 12)) : -1;
}

qint64 walBytes(const QString &path)
{
    return QFileInfo(path + QStringLiteral("-wal")).size();
}

// A database file of its own for each test function, in one directory for the whole run.
QString pathFor(const char *name)
{
    static QTemporaryDir dir;
    return dir.filePath(QLatin1String(name) + QLatin1String(".sqlite"));
}

} // namespace

class tst_WalCheckpointer : public QObject
{
    Q_OBJECT

private slots:
    void storeConnectionLeavesCheckpointsToTheCheckpointer()
    {
        StoreWorker worker;
        QString error;
        QVERIFY2(worker.start(pathFor("threshold"), &error), qPrintable(error));
        QCOMPARE(storeAutoCheckpoint(worker), WalCheckpointer::kStoreFallbackPages);
    }

    void committedWritesAreCopiedBackSoonAfter()
    {
        StoreWorker worker;
        QString error;
        QVERIFY2(worker.start(pathFor("copied"), &error), qPrintable(error));
        const WalCheckpointStats &stats = worker.walCheckpointStats();
        QVERIFY(writeBlob(worker, 64 * 1024));
        QTRY_VERIFY_WITH_TIMEOUT(stats.passes.load() > 0, 10000);
        QVERIFY(stats.walFrames.load() >= 16);
        QCOMPARE(stats.backlogFrames.load(), 0);
        QCOMPARE(stats.failures.load(), 0);
        // Nothing written, nothing to do: no further pass is scheduled.
        const qint64 passes = stats.passes.load();
        QTest::qWait(3 * WalCheckpointer::kDefaultDelayMs);
        QCOMPARE(stats.passes.load(), passes);
    }

    void walStaysSmallUnderSteadyWrites()
    {
        const QString path = pathFor("steady");
        StoreWorker worker;
        QString error;
        QVERIFY2(worker.start(path, &error), qPrintable(error));
        const WalCheckpointStats &stats = worker.walCheckpointStats();
        // 12 writes of 1 MiB, each copied back before the next: once the WAL is all copied, the next write starts
        // it from the beginning again. Without the checkpointer the store's raised threshold (40 MiB) would
        // let it grow to 12 MiB; with SQLite's default threshold it would reach about 5 MiB.
        constexpr int kWrite = 1024 * 1024;
        qint64 largest = 0;
        for (int i = 0; i < 12; ++i) {
            const qint64 passes = stats.passes.load();
            QVERIFY(writeBlob(worker, kWrite));
            largest = qMax(largest, walBytes(path));
            QTRY_VERIFY_WITH_TIMEOUT(stats.passes.load() > passes, 10000);
            QVERIFY(stats.walFrames.load() >= kWrite / 4096);
            QCOMPARE(stats.backlogFrames.load(), 0);
        }
        QVERIFY2(largest <= 3 * kWrite, qPrintable(QStringLiteral("WAL reached %1 bytes").arg(largest)));
    }

    void aReadersSnapshotIsCopiedOnceItEnds()
    {
        // The dashboard reads while the proxy writes: frames an open read transaction may still need are not
        // copied (a PASSIVE checkpoint never waits for it), and the pass after the next write copies them.
        const QString path = pathFor("reader");
        StoreWorker worker;
        QString error;
        QVERIFY2(worker.start(path, &error), qPrintable(error));
        const WalCheckpointStats &stats = worker.walCheckpointStats();
        QVERIFY(writeBlob(worker, 64 * 1024));
        QTRY_VERIFY_WITH_TIMEOUT(stats.passes.load() > 0 && stats.backlogFrames.load() == 0, 10000);

        Database reader;
        QVERIFY2(reader.open(path, &error, Database::OpenMode::ReadOnly), qPrintable(error));
        {
            Transaction snapshot(reader, Transaction::Kind::Read);
            QVERIFY2(snapshot.begin(&error), qPrintable(error));
            QSqlQuery q = reader.query();
            QVERIFY(q.exec(QStringLiteral("SELECT count(*) FROM ballast")) && q.next()); // the snapshot starts here
            QCOMPARE(q.value(0).toInt(), 1);
            q.finish();
            const qint64 passes = stats.passes.load();
            QVERIFY(writeBlob(worker, 64 * 1024));
            QTRY_VERIFY_WITH_TIMEOUT(stats.passes.load() > passes, 10000);
            QVERIFY2(stats.backlogFrames.load() >= 16,
                     qPrintable(QStringLiteral("backlog %1 frames").arg(stats.backlogFrames.load())));
        }
        const qint64 passes = stats.passes.load();
        QVERIFY(writeBlob(worker, 4096));
        QTRY_VERIFY_WITH_TIMEOUT(stats.passes.load() > passes, 10000);
        QCOMPARE(stats.backlogFrames.load(), 0);
        QCOMPARE(stats.failures.load(), 0);
    }

    void aCopiedWalStartsOverWhileTheStoreIsIdle_data()
    {
        QTest::addColumn<bool>("ahead");
        QTest::newRow("default: the idle store starts it over") << true;
        QTest::newRow("SWITCHYARD_WAL_RESTART=write: the next write does") << false;
    }

    void aCopiedWalStartsOverWhileTheStoreIsIdle()
    {
        // The write that starts a copied WAL over waits inside its COMMIT for the new header's sync. Right after
        // a pass that copied everything, the idle store makes that write itself, so the next job only appends.
        QFETCH(bool, ahead);
        if (!ahead)
            qputenv("SWITCHYARD_WAL_RESTART", "write");
        const auto restore = qScopeGuard([] { qunsetenv("SWITCHYARD_WAL_RESTART"); });
        const QString path = pathFor(ahead ? "restart-ahead" : "restart-on-write");
        StoreWorker worker;
        QString error;
        QVERIFY2(worker.start(path, &error), qPrintable(error));
        const WalCheckpointStats &stats = worker.walCheckpointStats();
        QVERIFY(writeBlob(worker, 64 * 1024));
        QTRY_VERIFY_WITH_TIMEOUT(stats.passes.load() > 0, 10000);
        QCOMPARE(stats.backlogFrames.load(), 0);
        qint64 compiledAfterFirstRestart = -1;
        if (ahead) {
            QTRY_COMPARE_WITH_TIMEOUT(stats.restartsAhead.load(), 1, 10000);
            compiledOnStore(worker); // its own BEGIN is compiled once, here
            compiledAfterFirstRestart = compiledOnStore(worker);
        } else
            QTest::qWait(WalCheckpointer::kDefaultDelayMs); // time enough for a restart that must not come
        const qint64 before = walStartCount(path);
        QVERIFY(before >= 0);

        QVERIFY(writeBlob(worker, 4096));
        QCOMPARE(walStartCount(path), ahead ? before : before + 1);
        // The restart's own write schedules no pass: an idle store stays idle.
        const qint64 passes = stats.passes.load();
        if (ahead) {
            QTRY_VERIFY_WITH_TIMEOUT(stats.passes.load() > passes, 10000); // the job's write is copied back
            QTRY_COMPARE_WITH_TIMEOUT(stats.restartsAhead.load(), 2, 10000);
            // The second restart reuses the statements the first compiled (BEGIN IMMEDIATE, the probe, COMMIT);
            // between the two only the 4 KiB blob's INSERT, whose text is new, was compiled.
            const qint64 compiledSince = compiledOnStore(worker) - compiledAfterFirstRestart;
            QVERIFY2(compiledSince <= 1, qPrintable(QString::number(compiledSince)));
            const qint64 after = stats.passes.load();
            QTest::qWait(3 * WalCheckpointer::kDefaultDelayMs);
            QCOMPARE(stats.passes.load(), after);
            QCOMPARE(stats.restartsAhead.load(), 2);
        } else {
            QCOMPARE(stats.restartsAhead.load(), 0);
        }
        QCOMPARE(stats.failures.load(), 0);
    }

    void storeModeKeepsSqlitesOwnCheckpoints()
    {
        // SWITCHYARD_WAL_CHECKPOINT=store (A/B runs in bench/) leaves everything to SQLite, as before.
        qputenv("SWITCHYARD_WAL_CHECKPOINT", "store");
        const auto restore = qScopeGuard([] { qunsetenv("SWITCHYARD_WAL_CHECKPOINT"); });
        StoreWorker worker;
        QString error;
        QVERIFY2(worker.start(pathFor("store-mode"), &error), qPrintable(error));
        QCOMPARE(storeAutoCheckpoint(worker), 1000);
        QVERIFY(writeBlob(worker, 64 * 1024));
        QTest::qWait(3 * WalCheckpointer::kDefaultDelayMs);
        QCOMPARE(worker.walCheckpointStats().passes.load(), 0);
    }
};

QTEST_GUILESS_MAIN(tst_WalCheckpointer)
#include "tst_wal_checkpointer.moc"
