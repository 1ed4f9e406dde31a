// Issue 10 point 5 on a real filesystem: the SQLite database (and the data dir) live on a small tmpfs that this
// test mounts, so the kernel, not a fault switch, refuses the writes.
//  - diskFull: a filler file takes the tmpfs's last free byte (write() fails with ENOSPC) while four turns
//    stream; the full outage scenario of tst_store_unavailable follows (503 store_unavailable, the streams
//    finish, /api/status and the CLI say "disk full", the proxy resumes by itself once the filler is deleted,
//    the kept rows are written with their usage, PRAGMA integrity_check says ok). Then a serve started on
//    the full disk must say so instead of blaming another instance. It keeps checkpoints inside the commits
//    (SWITCHYARD_WAL_CHECKPOINT=store) so that the outage lasts until the filler goes.
//  - diskFullUnderTheWalCheckpointer: the shipped configuration on a full disk: every turn is served or
//    refused with 503 store_unavailable, and every one of them is in the log once there is room again.
//  - readOnly: `mount -o remount,ro` under a running serve is refused by the kernel (EBUSY: the database is
//    open for writing), so a running SQLite store is never switched to read-only this way and keeps serving.
//    A serve started on the read-only filesystem (its data dir there, or only its database) refuses to start
//    and names the read-only filesystem; after `remount,rw` it starts and serves.
// The whole process runs in a private mount namespace (entered in main() before any thread exists), so the
// mounts vanish with it however it dies. Not root: an unprivileged user namespace is used; if neither works
// the test fails and says why.
#include "lib/TestFiles.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/HttpTestClient.h"
#include "lib/ProxyProcess.h"
#include "lib/StoreOutageScenario.h"
#include "lib/TurnTraffic.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

using namespace sy;
using namespace sy::test;

namespace {

constexpr int kTmpfsMiB = 8;

QString systemError(int err)
{
    return QString::fromLocal8Bit(std::strerror(err));
}

bool writeProcFile(const char *path, const QByteArray &text, QString *error)
{
    const int fd = ::open(path, O_WRONLY | O_CLOEXEC);
    const bool ok = fd >= 0 && ::write(fd, text.constData(), size_t(text.size())) == text.size();
    const int err = errno;
    if (fd >= 0)
        ::close(fd);
    if (!ok)
        *error = QStringLiteral("%1: %2").arg(QString::fromLatin1(path), systemError(err));
    return ok;
}

// Empty on success. unshare(CLONE_NEWUSER) needs a single-threaded process: call before QCoreApplication.
QString enterPrivateMountNamespace()
{
    const uid_t uid = ::geteuid();
    const gid_t gid = ::getegid();
    QString error;
    if (uid == 0) {
        if (::unshare(CLONE_NEWNS) != 0)
            return QStringLiteral("unshare(CLONE_NEWNS) as root: ") + systemError(errno);
    } else {
        if (::unshare(CLONE_NEWUSER | CLONE_NEWNS) != 0)
            return QStringLiteral("unshare(CLONE_NEWUSER | CLONE_NEWNS) as uid %1: %2").arg(uid).arg(systemError(errno));
        if (!writeProcFile("/proc/self/setgroups", "deny", &error) ||
            !writeProcFile("/proc/self/uid_map", QByteArray("0 ") + QByteArray::number(uid) + " 1", &error) ||
            !writeProcFile("/proc/self/gid_map", QByteArray("0 ") + QByteArray::number(gid) + " 1", &error))
            return error;
    }
    // Nothing mounted here may propagate back to the host's mount table.
    if (::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0)
        return QStringLiteral("making / private: ") + systemError(errno);
    return {};
}

// 0 or errno.
int remount(const QString &dir, bool readOnly)
{
    const unsigned long flags = MS_REMOUNT | MS_NOSUID | MS_NODEV | (readOnly ? MS_RDONLY : 0);
    return ::mount(nullptr, QFile::encodeName(dir).constData(), nullptr, flags, nullptr) == 0 ? 0 : errno;
}

// Writes to `path` until the filesystem refuses; returns the bytes written, *err the errno of the refusal.
qint64 fillUntilRefused(const QString &path, int *err)
{
    *err = 0;
    const int fd = ::open(QFile::encodeName(path).constData(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        *err = errno;
        return 0;
    }
    const QByteArray chunk(64 * 1024, 'f');
    qint64 total = 0;
    for (;;) {
        const ssize_t n = ::write(fd, chunk.constData(), size_t(chunk.size()));
        if (n > 0) {
            total += n;
            continue;
        }
        *err = n < 0 ? errno : ENOSPC;
        break;
    }
    ::close(fd);
    return total;
}

AsyncTurn *turn(const ProxyProcess &p, const QString &text)
{
    auto *t = new AsyncTurn(p.port(), turnRequestBytes("/backend-api/codex/responses", codexTurnBody(text)));
    t->start(60000);
    return t;
}

// One complete turn through `p`, logged with its usage.
void serveOneTurn(const ProxyProcess &p, const QString &text)
{
    QList<AsyncTurn *> turns{turn(p, text)};
    const bool done = waitForTurns(turns, 60000);
    const TurnOutcome outcome = turns.first()->outcome();
    qDeleteAll(turns);
    QVERIFY(done);
    QCOMPARE(outcome.status, 200);
    QVERIFY(outcome.sawCompleted);
    const QJsonObject row = p.waitForRequest(outcome.requestId, 20000);
    QCOMPARE(row.value(QLatin1String("status")).toString(), QStringLiteral("completed"));
}

} // namespace

class TestStoreRealFs : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    QTemporaryDir m_tmp;
    QString m_keyFile;
    QString m_mount; // the current test function's tmpfs
    int m_mounts = 0;

    void configure(ProxyProcess &p, const QString &dataDir, const QString &database)
    {
        p.setConfig(QJsonObject{{QStringLiteral("slots_per_account"), 4},
                                {QStringLiteral("stream_idle_s"), 20},
                                {QStringLiteral("request_total_s"), 120},
                                {QStringLiteral("stream_max_s"), 120}});
        if (!dataDir.isEmpty())
            p.setDataDir(dataDir);
        p.setEnv(QStringLiteral("SWITCHYARD_DATABASE_URL"), database);
        p.setEnv(QStringLiteral("SWITCHYARD_SECRET_BACKEND"), QStringLiteral("database"));
        p.setEnv(QStringLiteral("SWITCHYARD_SECRET_KEY_FILE"), m_keyFile);
        p.setEnv(QStringLiteral("DBUS_SESSION_BUS_ADDRESS"), QStringLiteral("unix:path=/nonexistent/bus"));
        p.setEnv(QStringLiteral("DISPLAY"), QString());
        p.setSpinEventsWhileStarting(true);
    }

    // A serve on the accounts the first one imported into `database`.
    // Where a test function keeps its files on its tmpfs.
    struct OnTmpfs
    {
        QString dataDir, database, filler;
    };
    OnTmpfs onTmpfs() const
    {
        const QString dataDir = m_mount + QStringLiteral("/data");
        return {dataDir, dataDir + QStringLiteral("/switchyard.sqlite"), m_mount + QStringLiteral("/filler")};
    }

    void configureAgain(ProxyProcess &p, const ProxyProcess &first, const QString &dataDir, const QString &database)
    {
        configure(p, dataDir, database);
        p.adoptAccounts(first.accounts());
    }

private slots:
    void initTestCase()
    {
        QVERIFY2(!qEnvironmentVariableIsEmpty("SWITCHYARD_BIN"), "run through ctest (SWITCHYARD_BIN)");
        QVERIFY(m_tmp.isValid());
        QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString()));
        // The key stays off the small filesystem: a full or read-only store must not also lose its key.
        m_keyFile = m_tmp.filePath(QStringLiteral("secrets.key"));
        QVERIFY(writeSecretKeyFile(m_keyFile));
    }

    void init()
    {
        QVERIFY(m_fake.reset());
        m_mount = m_tmp.filePath(QStringLiteral("fs%1").arg(++m_mounts));
        QVERIFY(QDir().mkpath(m_mount));
        const QByteArray options = "size=" + QByteArray::number(kTmpfsMiB) + "m,mode=0700";
        QVERIFY2(::mount("tmpfs", QFile::encodeName(m_mount).constData(), "tmpfs", MS_NOSUID | MS_NODEV,
                         options.constData()) == 0,
                 qPrintable(QStringLiteral("mount -t tmpfs %1: %2").arg(m_mount, systemError(errno))));
    }

    void cleanup()
    {
        // Lazily: a serve that failed the test may still hold files there; the namespace ends with us anyway.
        ::umount2(QFile::encodeName(m_mount).constData(), MNT_DETACH);
    }

    void diskFull()
    {
        const OnTmpfs at = onTmpfs();
        const QString &dataDir = at.dataDir, &database = at.database, &filler = at.filler;
        ProxyProcess proxy;
        configure(proxy, dataDir, database);
        // The scenario needs an outage that lasts until the filler goes. A full disk refuses a commit only when
        // the WAL must grow; once a checkpoint has copied the WAL back, later commits reuse its pages and
        // succeed (diskFullUnderTheWalCheckpointer below). So checkpoints stay inside commits past 1000 pages,
        // which this small workload never reaches.
        proxy.setEnv(QStringLiteral("SWITCHYARD_WAL_CHECKPOINT"), QStringLiteral("store"));
        StoreOutage outage;
        outage.takeAway = [&] {
            int err = 0;
            const qint64 bytes = fillUntilRefused(filler, &err);
            QVERIFY2(err == ENOSPC, qPrintable(QStringLiteral("filling the tmpfs: %1").arg(systemError(err))));
            qInfo("the filler took %lld bytes of the %d MiB tmpfs", bytes, kTmpfsMiB);
        };
        outage.giveBack = [&] { QVERIFY(QFile::remove(filler)); };
        outage.cause = QStringLiteral("disk full");
        outage.database = database;
        outage.warmupTurns = 3;
        runStoreOutageScenario(proxy, m_fake, outage);
        if (QTest::currentTestFailed())
            return;

        // A serve started on the full disk says so (it cannot even write its lock file there).
        int err = 0;
        fillUntilRefused(filler, &err);
        QCOMPARE(err, ENOSPC);
        ProxyProcess onFull;
        configureAgain(onFull, proxy, dataDir, database);
        QVERIFY(!onFull.start(m_fake.baseUrl(), 30000));
        QVERIFY2(onFull.errorString().contains(QLatin1String("disk full")), qPrintable(onFull.errorString()));
        QVERIFY2(!onFull.errorString().contains(QLatin1String("already running")), qPrintable(onFull.errorString()));
        qInfo("data dir on the full disk: %s", qPrintable(onFull.errorString().trimmed()));
        // Only the database on the full disk (the data dir elsewhere): serve must register its incarnation
        // durably before it routes anything (docs/OWNERSHIP.md), so it does not start either, and says why.
        ProxyProcess dbOnFull;
        configureAgain(dbOnFull, proxy, QString(), database);
        QVERIFY(!dbOnFull.start(m_fake.baseUrl(), 30000));
        QVERIFY2(dbOnFull.errorString().contains(QLatin1String("store unavailable: disk full")),
                 qPrintable(dbOnFull.errorString()));
        qInfo("database on the full disk: %s", qPrintable(dbOnFull.errorString().trimmed()));
        QVERIFY(QFile::remove(filler));
        ProxyProcess again;
        configureAgain(again, proxy, dataDir, database);
        QVERIFY2(again.start(m_fake.baseUrl(), 30000), qPrintable(again.errorString()));
        serveOneTurn(again, QStringLiteral("after the restart"));
        QCOMPARE(again.stop(30000), 0);
        QString error;
        QCOMPARE(readSqliteColumn(database, QStringLiteral("PRAGMA integrity_check"), &error),
                 QStringList{QStringLiteral("ok")});
        QVERIFY2(error.isEmpty(), qPrintable(error));
    }

    // The shipped configuration on a full disk: the WAL checkpointer copies the WAL back 200 ms after writes,
    // so commits reuse its pages and often succeed, and a checkpoint may itself fail for want of space. Each
    // turn is then either served and logged, or refused with 503 store_unavailable and logged once the disk
    // has room again; no row is lost and the file stays intact.
    void diskFullUnderTheWalCheckpointer()
    {
        const OnTmpfs at = onTmpfs();
        const QString &database = at.database, &filler = at.filler;
        ProxyProcess proxy;
        configure(proxy, at.dataDir, database);
        QVERIFY2(proxy.addAccounts(2), qPrintable(proxy.errorString()));
        QVERIFY2(proxy.start(m_fake.baseUrl(), 30000), qPrintable(proxy.errorString()));
        for (int i = 0; i < 3; ++i)
            serveOneTurn(proxy, QStringLiteral("before %1").arg(i));
        int err = 0;
        fillUntilRefused(filler, &err);
        QCOMPARE(err, ENOSPC);
        QHash<QString, int> answered; // request id -> HTTP status
        for (int i = 0; i < 12; ++i) {
            QList<AsyncTurn *> turns{turn(proxy, QStringLiteral("on the full disk %1").arg(i))};
            const bool done = waitForTurns(turns, 60000);
            const TurnOutcome outcome = turns.first()->outcome();
            qDeleteAll(turns);
            QVERIFY(done);
            QVERIFY2(outcome.status == 200 || (outcome.status == 503 && outcome.errorCode == u"store_unavailable"),
                     qPrintable(QStringLiteral("turn %1: %2 %3").arg(i).arg(outcome.status).arg(outcome.errorCode)));
            if (outcome.status == 200)
                QVERIFY(outcome.sawCompleted);
            QVERIFY(!outcome.requestId.isEmpty());
            answered.insert(outcome.requestId, outcome.status);
        }
        qInfo("on the full disk: %lld of 12 turns served", qlonglong(std::count(answered.cbegin(), answered.cend(), 200)));
        QVERIFY(QFile::remove(filler));
        const auto status = [&proxy] {
            return httpRequest("GET", QUrl(proxy.url(QStringLiteral("/api/status"))), {}, {}, 5000).json();
        };
        QTRY_VERIFY_WITH_TIMEOUT(status().value(QLatin1String("store_writable")).toBool(), 30000);
        QTRY_COMPARE_WITH_TIMEOUT(status().value(QLatin1String("store_pending_writes")).toInt(-1), 0, 20000);
        QCOMPARE(status().value(QLatin1String("store_lost_writes")).toInteger(-1), 0);
        serveOneTurn(proxy, QStringLiteral("after"));
        if (QTest::currentTestFailed())
            return;
        for (auto it = answered.cbegin(); it != answered.cend(); ++it) {
            const QJsonObject row = proxy.waitForRequest(it.key(), 20000);
            QCOMPARE(row.value(QLatin1String("status")).toString(),
                     it.value() == 200 ? QStringLiteral("completed") : QStringLiteral("rejected"));
        }
        QCOMPARE(proxy.stop(30000), 0);
        QString error;
        QCOMPARE(readSqliteColumn(database, QStringLiteral("PRAGMA integrity_check"), &error),
                 QStringList{QStringLiteral("ok")});
        QVERIFY2(error.isEmpty(), qPrintable(error));
    }

    void readOnly()
    {
        const OnTmpfs at = onTmpfs();
        const QString &dataDir = at.dataDir, &database = at.database;
        ProxyProcess proxy;
        configure(proxy, dataDir, database);
        QVERIFY2(proxy.addAccounts(2), qPrintable(proxy.errorString()));
        QVERIFY2(proxy.start(m_fake.baseUrl(), 30000), qPrintable(proxy.errorString()));
        serveOneTurn(proxy, QStringLiteral("before"));
        if (QTest::currentTestFailed())
            return;

        // The kernel refuses to make a filesystem read-only while a file on it is open for writing, which the
        // running store's database is: the store stays writable and serving. (A filesystem the kernel forces
        // read-only after an error is not remounted writable without fsck; its writes fail with EIO here.)
        QCOMPARE(remount(m_mount, true), EBUSY);
        serveOneTurn(proxy, QStringLiteral("remount refused"));
        if (QTest::currentTestFailed())
            return;
        QCOMPARE(proxy.stop(30000), 0);

        QCOMPARE(remount(m_mount, true), 0);
        // The data dir on the read-only filesystem: no lock file can be made there.
        ProxyProcess onReadOnly;
        configureAgain(onReadOnly, proxy, dataDir, database);
        QVERIFY(!onReadOnly.start(m_fake.baseUrl(), 30000));
        QVERIFY2(onReadOnly.errorString().contains(QLatin1String("read-only")), qPrintable(onReadOnly.errorString()));
        QVERIFY2(!onReadOnly.errorString().contains(QLatin1String("already running")),
                 qPrintable(onReadOnly.errorString()));
        qInfo("data dir read-only: %s", qPrintable(onReadOnly.errorString().trimmed()));
        // Only the database there (the data dir elsewhere): SQLite cannot open a WAL database it cannot write.
        ProxyProcess databaseReadOnly;
        configureAgain(databaseReadOnly, proxy, QString(), database);
        QVERIFY(!databaseReadOnly.start(m_fake.baseUrl(), 30000));
        QVERIFY2(databaseReadOnly.errorString().contains(QLatin1String("read-only")),
                 qPrintable(databaseReadOnly.errorString()));
        qInfo("database read-only: %s", qPrintable(databaseReadOnly.errorString().trimmed()));

        QCOMPARE(remount(m_mount, false), 0);
        ProxyProcess again;
        configureAgain(again, proxy, dataDir, database);
        QVERIFY2(again.start(m_fake.baseUrl(), 30000), qPrintable(again.errorString()));
        serveOneTurn(again, QStringLiteral("writable again"));
        if (QTest::currentTestFailed())
            return;
        QCOMPARE(again.stop(30000), 0);
        QString error;
        QCOMPARE(readSqliteColumn(database, QStringLiteral("PRAGMA integrity_check"), &error),
                 QStringList{QStringLiteral("ok")});
        QVERIFY2(error.isEmpty(), qPrintable(error));
    }
};

int main(int argc, char **argv)
{
    const QString nsError = enterPrivateMountNamespace();
    if (!nsError.isEmpty()) {
        std::fprintf(stderr,
                     "FAIL: tst_store_realfs mounts a small tmpfs and needs a private mount namespace for it "
                     "(run as root, or where unprivileged user namespaces are allowed): %s\n",
                     qPrintable(nsError));
        return 1;
    }
    QCoreApplication app(argc, argv);
    TestStoreRealFs test;
    return QTest::qExec(&test, argc, argv);
}

#include "tst_store_realfs.moc"
