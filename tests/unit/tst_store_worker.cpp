// The store thread: jobs run there in order, onDone arrives on the caller's thread only after the commit,
// failures roll back, and a database that cannot take writes (read-only file, disk full) is reported
// through onDone(false) and writable().
#include "store/Database.h"
#include "store/RequestLogRepository.h"
#include "store/SettingsRepository.h"
#include "store/StoreWorker.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QMutex>
#include <QProcess>
#include <QSignalSpy>
#include <QSqlQuery>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>

using namespace sy;

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

// SQLite's temporary files are unlinked as soon as they are open: only the process's descriptors still show them.
int openTemporaryFiles()
{
    int n = 0;
    const QFileInfoList fds = QDir(QStringLiteral("/proc/self/fd")).entryInfoList(QDir::Files | QDir::System);
    for (const QFileInfo &fd : fds)
        n += fd.symLinkTarget().contains(QLatin1String("etilqs_")) ? 1 : 0;
    return n;
}

// A savepoint that changes 3000 existing rows (about 80 pages, past the 64 KiB SQLite keeps of a savepoint's
// journal in memory by default), and the temporary files open while it is held.
int temporaryFilesDuringALargeSavepoint(Database &db, QString *error)
{
    int files = -1;
    if (db.exec(QStringLiteral("SAVEPOINT large"), error) &&
        db.exec(QStringLiteral("UPDATE request_log SET route = route || '/longer'"), error)) {
        files = openTemporaryFiles();
        db.exec(QStringLiteral("RELEASE large"), error);
    }
    return files;
}

int countRows(Database &db, const QString &where = QString())
{
    QSqlQuery q = db.query();
    if (!q.exec(QStringLiteral("SELECT count(*) FROM request_log") + where) || !q.next())
        return -1;
    return q.value(0).toInt();
}

// Makes a file unwritable even for root (CAP_DAC_OVERRIDE ignores mode bits): mode 0444, plus the
// immutable attribute when running as root. Undone on destruction.
class ReadOnlyFile
{
public:
    explicit ReadOnlyFile(const QString &path) : m_path(path)
    {
        QFile::setPermissions(path, QFile::ReadOwner | QFile::ReadGroup | QFile::ReadOther);
        if (stillWritable() && !QStandardPaths::findExecutable(QStringLiteral("chattr")).isEmpty())
            m_immutable = QProcess::execute(QStringLiteral("chattr"), {QStringLiteral("+i"), path}) == 0;
    }
    ~ReadOnlyFile()
    {
        if (m_immutable)
            QProcess::execute(QStringLiteral("chattr"), {QStringLiteral("-i"), m_path});
        QFile::setPermissions(m_path, QFile::ReadOwner | QFile::WriteOwner);
    }
    bool stillWritable() const
    {
        QFile f(m_path);
        return f.open(QIODevice::ReadWrite | QIODevice::Append);
    }

private:
    QString m_path;
    bool m_immutable = false;
};

} // namespace

class tst_StoreWorker : public QObject
{
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    QString pathFor(const char *name) const
    {
        return m_dir.filePath(QString::fromLatin1(name) + QStringLiteral(".sqlite"));
    }

private slots:
    void jobsRunOnStoreThreadInOrderAndDoneFollowsCommit()
    {
        const QString path = pathFor("order");
        StoreWorker worker;
        QString error;
        QVERIFY2(worker.start(path, &error), qPrintable(error));
        QVERIFY(worker.writable());
        Database reader; // the test thread's own connection, to see what is committed
        QVERIFY(reader.open(path, &error, Database::OpenMode::ReadOnly));

        QMutex mutex;
        QList<int> ran;
        QList<int> done;
        QList<int> visibleAtDone;
        bool wrongThread = false;
        QObject context;
        const int n = 20;
        for (int i = 0; i < n; ++i) {
            worker.submit(
                [&, i](Database &db, QString *jobError) {
                    QMutexLocker lock(&mutex);
                    ran << i;
                    wrongThread |= QThread::currentThread() != worker.storeThread();
                    return RequestLogRepository(db).insert(row(QStringLiteral("req_%1").arg(i)), jobError);
                },
                &context,
                [&, i](bool ok, const QString &doneError) {
                    QVERIFY2(ok, qPrintable(doneError));
                    wrongThread |= QThread::currentThread() != thread();
                    done << i;
                    visibleAtDone << countRows(reader, QStringLiteral(" WHERE request_id = 'req_%1'").arg(i));
                });
        }
        QTRY_COMPARE(done.size(), n);
        QList<int> expected;
        for (int i = 0; i < n; ++i)
            expected << i;
        QCOMPARE(ran, expected);
        QCOMPARE(done, expected);
        QCOMPARE(visibleAtDone, QList<int>(n, 1)); // each row was durable before its onDone ran
        QVERIFY(!wrongThread);
    }

    // The store thread's connection keeps a savepoint's journal in memory (a group commit runs every job in one);
    // another connection of this build, with SQLite's default, spills it to a file.
    void aLargeSavepointWritesNoTemporaryFile()
    {
        if (!QFileInfo(QStringLiteral("/proc/self/fd")).isDir())
            QSKIP("needs /proc/self/fd");
        const QString path = pathFor("savepoint");
        QString error;
        {
            // What this compares depends on how SQLite was built: with TEMP_STORE=1 (SQLite's default, Debian's)
            // temporary data goes to files unless a connection asks for memory; 0 ignores the request, 2 and 3
            // keep every connection's in memory.
            Database probe;
            QVERIFY2(probe.open(path, &error), qPrintable(error));
            QSqlQuery options = probe.query();
            QVERIFY(options.exec(QStringLiteral("PRAGMA compile_options")));
            while (options.next()) {
                const QString option = options.value(0).toString();
                if (option.startsWith(QLatin1String("TEMP_STORE=")) && option != QLatin1String("TEMP_STORE=1"))
                    QSKIP(qPrintable(QStringLiteral("SQLite built with %1").arg(option)));
            }
        }
        StoreWorker worker;
        QVERIFY2(worker.start(path, &error), qPrintable(error));
        QVERIFY2(worker.runBlocking(
                     [](Database &db, QString *e) {
                         RequestLogRepository log(db);
                         for (int i = 0; i < 3000; ++i) {
                             if (!log.insert(row(QStringLiteral("req_%1").arg(i, 8, 10, QLatin1Char('0'))), e))
                                 return false;
                         }
                         return true;
                     },
                     &error),
                 qPrintable(error));
        int onStoreThread = -1;
        QVERIFY2(worker.runBlocking(
                     [&](Database &db, QString *e) {
                         onStoreThread = temporaryFilesDuringALargeSavepoint(db, e);
                         return onStoreThread >= 0;
                     },
                     &error),
                 qPrintable(error));
        QCOMPARE(onStoreThread, 0);

        Database other;
        QVERIFY2(other.open(path, &error), qPrintable(error));
        QVERIFY2(other.exec(QStringLiteral("BEGIN IMMEDIATE"), &error), qPrintable(error));
        const int elsewhere = temporaryFilesDuringALargeSavepoint(other, &error);
        QVERIFY2(other.exec(QStringLiteral("ROLLBACK"), &error), qPrintable(error));
        QCOMPARE(elsewhere, 1); // the check can see one
    }

    void failedJobRollsBack()
    {
        StoreWorker worker;
        QString error;
        QVERIFY(worker.start(pathFor("rollback"), &error));
        QObject context;
        std::optional<QPair<bool, QString>> result;
        worker.submit(
            [](Database &db, QString *jobError) {
                if (!RequestLogRepository(db).insert(row(QStringLiteral("req_rolled_back")), jobError))
                    return false;
                *jobError = QStringLiteral("upstream settlement failed");
                return false;
            },
            &context, [&](bool ok, const QString &e) { result = qMakePair(ok, e); });
        QTRY_VERIFY(result.has_value());
        QVERIFY(!result->first);
        QCOMPARE(result->second, QStringLiteral("upstream settlement failed"));
        int rows = -1;
        QVERIFY(worker.runBlocking(
            [&](Database &db, QString *) {
                rows = countRows(db);
                return true;
            },
            &error, false));
        QCOMPARE(rows, 0);
        QVERIFY(worker.writable()); // a job's own failure says nothing about the disk
    }

    void doneIsDroppedWithItsContext()
    {
        StoreWorker worker;
        QString error;
        QVERIFY(worker.start(pathFor("context"), &error));
        bool called = false;
        auto *context = new QObject;
        worker.submit([](Database &, QString *) { return true; }, context,
                      [&](bool, const QString &) { called = true; });
        QVERIFY(worker.runBlocking([](Database &, QString *) { return true; }, &error)); // the job has run
        delete context;
        QTest::qWait(50);
        QVERIFY(!called);
    }

    void stopRunsQueuedJobsThenRefuses()
    {
        const QString path = pathFor("stop");
        {
            StoreWorker worker;
            QString error;
            QVERIFY(worker.start(path, &error));
            for (int i = 0; i < 10; ++i) {
                worker.submit(
                    [i](Database &db, QString *e) {
                        return RequestLogRepository(db).insert(row(QStringLiteral("req_%1").arg(i)), e);
                    },
                    nullptr, nullptr);
            }
            worker.stop();
            QVERIFY(!worker.isRunning());
            QObject context;
            std::optional<QString> refusal;
            worker.submit([](Database &, QString *) { return true; }, &context,
                          [&](bool ok, const QString &e) { refusal = ok ? QString() : e; });
            QTRY_VERIFY(refusal.has_value());
            QCOMPARE(*refusal, QStringLiteral("store is not running"));
            QVERIFY(!worker.runBlocking([](Database &, QString *) { return true; }, &error));
        }
        Database db;
        QString error;
        QVERIFY(db.open(path, &error));
        QCOMPARE(countRows(db), 10);
    }

    void startFailsForAFileThatIsNotADatabase()
    {
        const QString path = pathFor("garbage");
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(QByteArray(4096, 'x'));
        f.close();
        StoreWorker worker;
        QString error;
        QVERIFY(!worker.start(path, &error));
        QVERIFY2(error.contains(path), qPrintable(error));
        QVERIFY(!worker.isRunning());
    }

    void diskFullMakesStoreUnwritableUntilAProbeSucceeds()
    {
        StoreWorker worker;
        worker.setReprobeIntervalMs(60000);
        QString error;
        QVERIFY(worker.start(pathFor("full"), &error));
        QSignalSpy writableSpy(&worker, &StoreWorker::writableChanged);
        // SQLite's max_page_count makes the file "full" exactly like a full disk does (SQLITE_FULL).
        QVERIFY(worker.runBlocking(
            [](Database &db, QString *e) { return db.exec(QStringLiteral("PRAGMA max_page_count = 1"), e); },
            &error));
        QObject context;
        std::optional<QPair<bool, QString>> result;
        const QString bigRoute = QString(200000, QLatin1Char('r'));
        worker.submit(
            [&](Database &db, QString *e) {
                return RequestLogRepository(db).insert(row(QStringLiteral("req_big"), bigRoute), e);
            },
            &context, [&](bool ok, const QString &e) { result = qMakePair(ok, e); });
        QTRY_VERIFY(result.has_value());
        QVERIFY(!result->first);
        QVERIFY2(result->second.contains(QStringLiteral("full")), qPrintable(result->second));
        QVERIFY(!worker.writable());
        QVERIFY2(worker.unwritableReason().contains(QStringLiteral("full")), qPrintable(worker.unwritableReason()));
        QTRY_COMPARE(writableSpy.size(), 1);
        QCOMPARE(writableSpy.at(0).at(0).toBool(), false);

        // Space comes back: the next probe notices.
        QVERIFY(worker.runBlocking(
            [](Database &db, QString *) {
                return db.query().exec(QStringLiteral("PRAGMA max_page_count = 1073741823"));
            },
            &error));
        worker.setReprobeIntervalMs(20);
        QTRY_VERIFY(worker.writable());
        QTRY_COMPARE(writableSpy.size(), 2);
        QCOMPARE(writableSpy.at(1).at(0).toBool(), true);
        QVERIFY(worker.unwritableReason().isEmpty());
    }

    void retainedWritesOutliveADiskFullOutage()
    {
        const QString path = pathFor("retained");
        StoreWorker worker;
        worker.setReprobeIntervalMs(60000);
        QString error;
        QVERIFY(worker.start(path, &error));
        QVERIFY(worker.runBlocking(
            [](Database &db, QString *e) { return db.exec(QStringLiteral("PRAGMA max_page_count = 1"), e); }, &error));
        // Rows that need new pages: both fail with SQLITE_FULL, only the retained one is kept.
        const QString route = QString(20000, QLatin1Char('r'));
        QObject context;
        std::optional<QPair<bool, QString>> kept, plain;
        worker.submitRetained(
            [&](Database &db, QString *e) {
                return RequestLogRepository(db).insert(row(QStringLiteral("req_kept"), route), e);
            },
            QStringLiteral("request-log row of req_kept"), &context,
            [&](bool ok, const QString &e) { kept = qMakePair(ok, e); });
        worker.submit(
            [&](Database &db, QString *e) {
                return RequestLogRepository(db).insert(row(QStringLiteral("req_plain"), route), e);
            },
            &context, [&](bool ok, const QString &e) { plain = qMakePair(ok, e); });
        QTRY_VERIFY(kept.has_value() && plain.has_value());
        QVERIFY(!kept->first);
        QVERIFY2(kept->second.contains(QStringLiteral("full")), qPrintable(kept->second));
        QVERIFY(!plain->first);
        QVERIFY(!worker.writable());
        QVERIFY2(worker.unwritableReason().startsWith(QStringLiteral("disk full (")),
                 qPrintable(worker.unwritableReason()));
        QTRY_COMPARE(worker.pendingWrites(), 1);
        QCOMPARE(worker.lostWrites(), 0);

        // Space comes back: the probe notices, the kept row is written, the plain one is not.
        QVERIFY(worker.runBlocking(
            [](Database &db, QString *) {
                return db.query().exec(QStringLiteral("PRAGMA max_page_count = 1073741823"));
            },
            &error));
        worker.setReprobeIntervalMs(20);
        QTRY_VERIFY(worker.writable());
        QTRY_COMPARE(worker.pendingWrites(), 0);
        int keptRows = -1, plainRows = -1;
        QTRY_VERIFY(worker.runBlocking(
            [&](Database &db, QString *) {
                keptRows = countRows(db, QStringLiteral(" WHERE request_id = 'req_kept'"));
                plainRows = countRows(db, QStringLiteral(" WHERE request_id = 'req_plain'"));
                return keptRows == 1;
            },
            &error, false));
        QCOMPARE(keptRows, 1);
        QCOMPARE(plainRows, 0);
        QCOMPARE(worker.lostWrites(), 0);
    }

    void retainedWritesStillWaitingAtStopAreCountedLost()
    {
        StoreWorker worker;
        worker.setReprobeIntervalMs(60000);
        QString error;
        QVERIFY(worker.start(pathFor("lost"), &error));
        QVERIFY(worker.runBlocking(
            [](Database &db, QString *e) { return db.exec(QStringLiteral("PRAGMA max_page_count = 1"), e); }, &error));
        const QString route = QString(20000, QLatin1Char('r'));
        QObject context;
        bool done = false;
        worker.submitRetained(
            [&](Database &db, QString *e) {
                return RequestLogRepository(db).insert(row(QStringLiteral("req_lost"), route), e);
            },
            QStringLiteral("request-log row of req_lost"), &context, [&](bool, const QString &) { done = true; });
        QTRY_VERIFY(done);
        QTRY_COMPARE(worker.pendingWrites(), 1);
        worker.stop();
        QCOMPARE(worker.pendingWrites(), 0);
        QCOMPARE(worker.lostWrites(), 1);
    }

    void readOnlyFileOpensUnwritable()
    {
        const QString path = pathFor("readonly");
        {
            Database db;
            QString error;
            QVERIFY(db.open(path, &error));
            QVERIFY(RequestLogRepository(db).insert(row(QStringLiteral("req_old")), &error));
        }
        ReadOnlyFile guard(path);
        if (guard.stillWritable())
            QSKIP("cannot make a file read-only here (root without chattr)");

        StoreWorker worker;
        QString error;
        QVERIFY2(worker.start(path, &error), qPrintable(error));
        QVERIFY(!worker.writable());
        QVERIFY2(worker.unwritableReason().contains(QStringLiteral("readonly")), qPrintable(worker.unwritableReason()));

        QObject context;
        std::optional<QPair<bool, QString>> write;
        worker.submit(
            [](Database &db, QString *e) { return RequestLogRepository(db).insert(row(QStringLiteral("req_new")), e); },
            &context, [&](bool ok, const QString &e) { write = qMakePair(ok, e); });
        QTRY_VERIFY(write.has_value());
        QVERIFY(!write->first);
        QVERIFY2(write->second.contains(QStringLiteral("readonly")), qPrintable(write->second));

        int rows = -1;
        std::optional<bool> read;
        worker.submitRead(
            [&](Database &db, QString *) {
                rows = countRows(db);
                return true;
            },
            &context, [&](bool ok, const QString &) { read = ok; });
        QTRY_VERIFY(read.has_value());
        QVERIFY(*read);
        QCOMPARE(rows, 1);
        QVERIFY(!worker.writable());
    }

    void pollingNoticesOtherConnectionsChanges()
    {
        const QString path = pathFor("poll");
        StoreWorker worker;
        worker.setChangePollIntervalMs(50);
        QString error;
        QVERIFY(worker.start(path, &error));
        QSignalSpy spy(&worker, &StoreWorker::changeCounterChanged);
        QTest::qWait(150);
        QCOMPARE(spy.size(), 0); // nothing changed yet

        Database cli; // another connection, as the CLI in another process would have
        QVERIFY(cli.open(path, &error));
        QVERIFY(SettingsRepository(cli).setStrategy(QStringLiteral("fill_first"), &error));
        QTRY_COMPARE_WITH_TIMEOUT(spy.size(), 1, 1000);
        QCOMPARE(spy.at(0).at(0).toLongLong(), *cli.changeCounter());
        QTest::qWait(150);
        QCOMPARE(spy.size(), 1); // one change, one signal
    }
};

QTEST_GUILESS_MAIN(tst_StoreWorker)
#include "tst_store_worker.moc"
