// Issue 10 point 5: crash safety. `switchyard serve` is killed with SIGKILL in the middle of heavy streaming,
// again and again on the same data dir, and restarted. After every kill:
//  - the SQLite file passes PRAGMA integrity_check (read through a read-only connection of the test's own);
//  - every turn whose completion reached its client (response.completed and an x-request-id) has its row in
//    the request log (`switchyard requests --json`), completed, with exactly the usage the upstream sent;
//  - the restarted replica has reclaimed the killed incarnation's slots before it serves (owner_slots and
//    `switchyard status --json` show none of them), and its turns then hold every slot at once.
// At the end the whole durable state must satisfy the ownership invariants (DurableStateChecker).
//
// No keychain: tokens are sealed in the database (SWITCHYARD_SECRET_BACKEND=database).
// Knobs: SWITCHYARD_CRASH_CYCLES (default 20), SWITCHYARD_CRASH_SEED (default random, printed).
#include "lib/TestFiles.h"
#include "lib/DurableStateChecker.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/HttpTestClient.h"
#include "lib/ProxyProcess.h"
#include "lib/TurnTraffic.h"

#include <QDateTime>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRandomGenerator>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>
#include <memory>

using namespace sy;
using namespace sy::test;

namespace {

constexpr int kAccounts = 4;
constexpr int kSlotsPerAccount = 6;
constexpr int kSlots = kAccounts * kSlotsPerAccount;
constexpr int kClients = 64; // more than the slots: the gate always has waiters too

int envInt(const char *name, int fallback)
{
    bool ok = false;
    const int v = qEnvironmentVariableIntValue(name, &ok);
    return ok ? v : fallback;
}

bool spinUntil(const std::function<bool()> &done, int timeoutMs)
{
    QDeadlineTimer deadline(timeoutMs);
    while (!done()) {
        if (deadline.hasExpired())
            return false;
        QTest::qWait(20);
    }
    return true;
}

// Another connection holding the database's write lock (BEGIN IMMEDIATE): to the proxy a disk that stalls its
// commits (it waits up to its busy timeout of 5 s). A kill while it is held lands exactly where a completion
// flushed before its commit would be lost.
class WriteLockHolder
{
public:
    explicit WriteLockHolder(const QString &path)
    {
        m_db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), m_name);
        m_db.setDatabaseName(path);
        m_db.setConnectOptions(QStringLiteral("QSQLITE_BUSY_TIMEOUT=5000"));
    }
    ~WriteLockHolder()
    {
        release();
        m_db = QSqlDatabase();
        QSqlDatabase::removeDatabase(m_name);
    }
    bool take(QString *error)
    {
        QSqlQuery q(m_db);
        if (!m_db.open() || !q.exec(QStringLiteral("BEGIN IMMEDIATE"))) {
            *error = m_db.lastError().text() + q.lastError().text();
            return false;
        }
        return true;
    }
    void release()
    {
        if (!m_db.isOpen())
            return;
        QSqlQuery(m_db).exec(QStringLiteral("ROLLBACK"));
        m_db.close();
    }

private:
    QString m_name = QStringLiteral("crash-write-lock");
    QSqlDatabase m_db;
};

} // namespace

class TestCrashSafety : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    QTemporaryDir m_tmp;
    QString m_keyFile;

    void configure(ProxyProcess &p, const QString &database)
    {
        p.setDataDir(m_tmp.filePath(QStringLiteral("data")));
        p.setConfig(QJsonObject{{QStringLiteral("slots_per_account"), kSlotsPerAccount},
                                {QStringLiteral("gate_wait_s"), 30},
                                {QStringLiteral("connect_s"), 5},
                                {QStringLiteral("keepalive_interval_s"), 1},
                                {QStringLiteral("stream_idle_s"), 15},
                                {QStringLiteral("request_total_s"), 60},
                                {QStringLiteral("drain_s"), 5}});
        p.setEnv(QStringLiteral("SWITCHYARD_DATABASE_URL"), database);
        p.setEnv(QStringLiteral("SWITCHYARD_SECRET_BACKEND"), QStringLiteral("database"));
        p.setEnv(QStringLiteral("SWITCHYARD_SECRET_KEY_FILE"), m_keyFile);
        p.setEnv(QStringLiteral("DBUS_SESSION_BUS_ADDRESS"), QStringLiteral("unix:path=/nonexistent/bus"));
        p.setEnv(QStringLiteral("DISPLAY"), QString());
        p.setSpinEventsWhileStarting(true);
    }

    static QJsonObject status(const ProxyProcess &p)
    {
        return httpRequest("GET", QUrl(p.url(QStringLiteral("/api/status"))), {}, {}, 5000).json();
    }

    // Slots this incarnation's turns hold right now, per its own /api/status.
    static int heldByMe(const QJsonObject &s)
    {
        const qint64 me = s.value(QLatin1String("replica")).toObject().value(QLatin1String("incarnation")).toInteger();
        int held = 0;
        for (const QJsonValue &v : s.value(QLatin1String("slots")).toArray()) {
            const QJsonObject o = v.toObject();
            held += o.value(QLatin1String("state")).toString() == QLatin1String("held") &&
                            o.value(QLatin1String("owner_incarnation")).toInteger() == me
                        ? 1
                        : 0;
        }
        return held;
    }

    static int streaming(const QJsonObject &s)
    {
        int n = 0;
        for (const QJsonValue &v : s.value(QLatin1String("in_flight")).toArray())
            n += v.toObject().value(QLatin1String("stage")).toString() == QLatin1String("streaming") ? 1 : 0;
        return n;
    }

    // Every completed turn the clients saw must be in the log with the usage they saw. Returns problems.
    static QStringList checkCompletedLogged(const ProxyProcess &p, const QList<TurnOutcome> &outcomes, int *checked)
    {
        QStringList problems;
        const CliResult r = p.cli({QStringLiteral("requests"), QStringLiteral("--json"), QStringLiteral("--limit"),
                                   QString::number(outcomes.size() + 500)});
        if (r.exitCode != 0)
            return {QStringLiteral("switchyard requests failed: ") + QString::fromUtf8(r.err)};
        QHash<QString, QJsonObject> rows;
        for (const QJsonValue &v : r.json().array())
            rows.insert(v.toObject().value(QLatin1String("request_id")).toString(), v.toObject());
        *checked = 0;
        for (const TurnOutcome &o : outcomes) {
            if (!o.sawCompleted || o.requestId.isEmpty() || o.status != 200)
                continue;
            ++*checked;
            const QJsonObject row = rows.value(o.requestId);
            if (row.isEmpty()) {
                problems << QStringLiteral("%1 completed at its client but has no request-log row").arg(o.requestId);
                continue;
            }
            if (row.value(QLatin1String("status")).toString() != QLatin1String("completed"))
                problems << QStringLiteral("%1 completed at its client but is logged as %2")
                                .arg(o.requestId, row.value(QLatin1String("status")).toString());
            const QJsonObject t = row.value(QLatin1String("tokens")).toObject();
            const QJsonObject u = o.completedUsage;
            const qint64 want[] = {u.value(QLatin1String("input_tokens")).toInteger(-1),
                                   u.value(QLatin1String("input_tokens_details"))
                                       .toObject()
                                       .value(QLatin1String("cached_tokens"))
                                       .toInteger(-1),
                                   u.value(QLatin1String("output_tokens")).toInteger(-1),
                                   u.value(QLatin1String("output_tokens_details"))
                                       .toObject()
                                       .value(QLatin1String("reasoning_tokens"))
                                       .toInteger(-1),
                                   u.value(QLatin1String("total_tokens")).toInteger(-1)};
            const qint64 got[] = {
                t.value(QLatin1String("input")).toInteger(-2), t.value(QLatin1String("cached")).toInteger(-2),
                t.value(QLatin1String("output")).toInteger(-2), t.value(QLatin1String("reasoning")).toInteger(-2),
                t.value(QLatin1String("total")).toInteger(-2)};
            if (want[4] <= 0)
                problems << QStringLiteral("%1: the client saw no usage in response.completed").arg(o.requestId);
            for (int i = 0; i < 5; ++i) {
                if (want[i] != got[i]) {
                    problems << QStringLiteral("%1: logged tokens %2 differ from the usage the upstream sent %3")
                                    .arg(o.requestId,
                                         QString::fromUtf8(QJsonDocument(t).toJson(QJsonDocument::Compact)),
                                         QString::fromUtf8(QJsonDocument(u).toJson(QJsonDocument::Compact)));
                    break;
                }
            }
        }
        return problems;
    }

private slots:
    void initTestCase()
    {
        QVERIFY2(!qEnvironmentVariableIsEmpty("SWITCHYARD_BIN"), "run through ctest (SWITCHYARD_BIN)");
        QVERIFY(m_tmp.isValid());
        QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString()));
        m_keyFile = m_tmp.filePath(QStringLiteral("secrets.key"));
        QVERIFY(writeSecretKeyFile(m_keyFile));
    }

    void killNineDuringHeavyStreaming()
    {
        const int cycles = envInt("SWITCHYARD_CRASH_CYCLES", 20);
        const quint32 seed =
            quint32(envInt("SWITCHYARD_CRASH_SEED", int(QRandomGenerator::global()->bounded(1 << 30))));
        qInfo("crash safety: %d cycles, seed=%u (SWITCHYARD_CRASH_CYCLES / SWITCHYARD_CRASH_SEED)", cycles, seed);
        QRandomGenerator rng(seed);
        const QString database = m_tmp.filePath(QStringLiteral("crash.sqlite"));

        ProxyProcess proxy;
        configure(proxy, database);
        QVERIFY2(proxy.addAccounts(kAccounts), qPrintable(proxy.errorString()));
        QString replicaId;
        // Slow answers (one event every 25 ms, a dozen events a turn): a kill always finds many turns streaming.
        for (const FakeAccount &a : proxy.accounts())
            QVERIFY(m_fake.script(a.chatgptAccountId, {QStringLiteral("slow:25")}, true));

        qint64 deadIncarnation = 0;
        int totalTurns = 0, totalCompleted = 0, totalChecked = 0, totalKilledStreaming = 0;
        for (int cycle = 1; cycle <= cycles; ++cycle) {
            QVERIFY2(proxy.start(m_fake.baseUrl(), 30000), qPrintable(proxy.errorString()));
            if (replicaId.isEmpty()) {
                QFile id(proxy.dataDir() + QStringLiteral("/replica-id"));
                QVERIFY(id.open(QIODevice::ReadOnly));
                replicaId = QString::fromLatin1(id.readAll().trimmed());
            }
            const QJsonObject first = status(proxy);
            const qint64 incarnation =
                first.value(QLatin1String("replica")).toObject().value(QLatin1String("incarnation")).toInteger();
            QVERIFY2(incarnation > deadIncarnation, qPrintable(QString::fromUtf8(QJsonDocument(first).toJson())));
            if (deadIncarnation > 0) {
                // The killed incarnation's slots were reclaimed before this one served: in the durable rows...
                QString error;
                const QStringList stale = readSqliteColumn(
                    database,
                    QStringLiteral("SELECT account_id || '#' || slot_index FROM owner_slots WHERE owner_replica = '%1' "
                                   "AND owner_incarnation = %2")
                        .arg(replicaId)
                        .arg(deadIncarnation),
                    &error);
                QVERIFY2(error.isEmpty(), qPrintable(error));
                QVERIFY2(stale.isEmpty(), qPrintable(QStringLiteral("cycle %1: slots still owned by killed incarnation "
                                                                    "%2: %3")
                                                         .arg(cycle)
                                                         .arg(deadIncarnation)
                                                         .arg(stale.join(QLatin1Char(' ')))));
                // ... and in what the CLI reports.
                const CliResult st = proxy.cli({QStringLiteral("status"), QStringLiteral("--json")});
                QCOMPARE(st.exitCode, 0);
                const QJsonArray slotRows = st.json().object().value(QLatin1String("slots")).toArray();
                QVERIFY2(slotRows.size() >= kSlots, "status --json lists fewer slots than the accounts have");
                for (const QJsonValue &v : slotRows) {
                    const QJsonObject s = v.toObject();
                    QVERIFY2(!(s.value(QLatin1String("owner_replica")).toString() == replicaId &&
                               s.value(QLatin1String("owner_incarnation")).toInteger() == deadIncarnation),
                             qPrintable(QString::fromUtf8(QJsonDocument(s).toJson(QJsonDocument::Compact))));
                }
            }

            bool down = false;
            LoadMix mix;
            mix.seed = rng.generate();
            mix.clients = kClients;
            mix.cancelRate = 0.03;
            mix.cancelMaxMs = 400;
            mix.responsesRate = 0.25;
            mix.continuationRate = 0.05;
            mix.minWords = 4;
            mix.maxWords = 10;
            mix.turnTimeoutMs = 60000;
            LoadDriver load(mix, [&] { return QList<quint16>{down ? quint16(0) : proxy.port()}; });
            load.start();

            // A new incarnation's turns can use every slot: all of them are held at once under this load.
            int maxHeld = 0;
            const bool full = spinUntil(
                [&] {
                    maxHeld = qMax(maxHeld, heldByMe(status(proxy)));
                    return maxHeld >= kSlots;
                },
                30000);
            QVERIFY2(full, qPrintable(QStringLiteral("cycle %1: at most %2 of %3 slots were held at once")
                                          .arg(cycle)
                                          .arg(maxHeld)
                                          .arg(kSlots)));
            // Kill at a random moment once turns have been completing for a while, but only while turns stream
            // (mid-stream is the point).
            QVERIFY(spinUntil(
                [&] {
                    int done = 0;
                    for (const TurnOutcome &o : load.outcomes())
                        done += o.sawCompleted ? 1 : 0;
                    return done >= 20;
                },
                30000));
            QTest::qWait(int(rng.bounded(0, 3000)));
            int live = 0;
            QVERIFY(spinUntil(
                [&] {
                    live = streaming(status(proxy));
                    return live > 0;
                },
                10000));
            totalKilledStreaming += live;
            // Every other cycle the store stalls first (another connection holds the write lock) and the kill
            // comes while completions wait for their commit: none of them may have reached its client.
            std::unique_ptr<WriteLockHolder> stall;
            if (cycle % 2 == 0) {
                stall = std::make_unique<WriteLockHolder>(database);
                QString lockError;
                QVERIFY2(stall->take(&lockError), qPrintable(lockError));
                QTest::qWait(int(rng.bounded(500, 2000)));
            }
            down = true;
            proxy.kill();
            stall.reset();
            deadIncarnation = incarnation;
            load.stopIssuing();
            QVERIFY2(load.waitIdle(20000), "client turns did not end after the kill");

            QString error;
            const QStringList integrity = readSqliteColumn(database, QStringLiteral("PRAGMA integrity_check"), &error);
            QVERIFY2(error.isEmpty(), qPrintable(error));
            QCOMPARE(integrity, QStringList{QStringLiteral("ok")});

            int checked = 0;
            const QStringList problems = checkCompletedLogged(proxy, load.outcomes(), &checked);
            QVERIFY2(problems.isEmpty(), qPrintable(QStringLiteral("cycle %1:\n").arg(cycle) +
                                                    problems.mid(0, 10).join(QLatin1Char('\n'))));
            int completed = 0;
            for (const TurnOutcome &o : load.outcomes())
                completed += o.sawCompleted ? 1 : 0;
            QVERIFY2(checked > 0, qPrintable(QStringLiteral("cycle %1: no turn completed before the kill, nothing was "
                                                            "checked; %2")
                                                 .arg(cycle)
                                                 .arg(load.summary())));
            totalTurns += int(load.outcomes().size());
            totalCompleted += completed;
            totalChecked += checked;
            qInfo("cycle %d: incarnation %lld killed with %d turns streaming%s; %d turns, %d completed and logged "
                  "with their usage",
                  cycle, incarnation, live, cycle % 2 == 0 ? " while its commits stalled" : "",
                  int(load.outcomes().size()), checked);
        }

        // One last start: the last kill's slots are reclaimed too, and a clean stop leaves a quiescent state.
        QVERIFY2(proxy.start(m_fake.baseUrl(), 30000), qPrintable(proxy.errorString()));
        QString error;
        const QStringList stale = readSqliteColumn(
            database,
            QStringLiteral("SELECT slot_index FROM owner_slots WHERE owner_replica = '%1' AND owner_incarnation = %2")
                .arg(replicaId)
                .arg(deadIncarnation),
            &error);
        QVERIFY2(error.isEmpty() && stale.isEmpty(), qPrintable(error + stale.join(QLatin1Char(' '))));
        QCOMPARE(proxy.stop(30000), 0);
        QCOMPARE(readSqliteColumn(database, QStringLiteral("PRAGMA integrity_check"), &error),
                 QStringList{QStringLiteral("ok")});

        DurableStateChecker checker(database);
        checker.setQuiescent(true);
        QVERIFY2(checker.run(&error), qPrintable(error));
        qInfo().noquote() << QStringLiteral("crash safety: %1 cycles, %2 turns, %3 completed (%4 checked against "
                                            "the log), %5 streams cut by kill -9\n%6")
                                 .arg(cycles)
                                 .arg(totalTurns)
                                 .arg(totalCompleted)
                                 .arg(totalChecked)
                                 .arg(totalKilledStreaming)
                                 .arg(checker.report(8));
        QVERIFY2(checker.violations().isEmpty(), qPrintable(checker.report(10)));
        QCOMPARE(checker.stats().kills, cycles);
    }
};

QTEST_GUILESS_MAIN(TestCrashSafety)
#include "tst_crash_safety.moc"
