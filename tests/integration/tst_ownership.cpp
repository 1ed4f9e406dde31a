// Issue 4 point 8: the ownership protocol's invariants (spec/CoreOwnership.pml, Inv1AnchorCurrent ...
// Inv11PreResponseBudget), checked on the durable state that real `serve` processes leave behind.
//
// Every invN test runs one focused, seeded scenario twice: with the product build (the durable-state checker
// must find nothing) and with the test-only fault build (SWITCHYARD_FAULTS_BIN) with the one fault switch that
// removes the guard of that invariant (the checker must name the invariant). The two stress tests run two
// replica processes on one database (a shared SQLite file; a throwaway PostgreSQL server) under a seeded
// random client mix with cancels, upstream stalls, drops and 500s, kill -9 one replica mid-stream and restart
// it on the same data dir, stop both gracefully, and then require a clean durable state plus compare-and-set
// conflicts and lease reclaims above zero (zero would mean the races were never exercised).
//
// No keychain is involved: the replicas share their tokens sealed in the database
// (SWITCHYARD_SECRET_BACKEND=database with one 0600 key file).
//
// Environment knobs: SWITCHYARD_STRESS_SEED (default: random, printed), SWITCHYARD_STRESS_SECONDS (default 50),
// SWITCHYARD_STRESS_MIN_TURNS (default 2000).
#include "lib/TestFiles.h"
#include "lib/DurableStateChecker.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/HttpTestClient.h"
#include "lib/PostgresServer.h"
#include "lib/ProxyProcess.h"
#include "lib/RawHttpClient.h"
#include "lib/TurnTraffic.h"

#include <QDateTime>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <future>
#include <memory>
#include <vector>

using namespace sy;
using namespace sy::test;

namespace {

constexpr int kLeaseTtlS = 3;

qint64 nowMs()
{
    return QDateTime::currentMSecsSinceEpoch();
}

int envInt(const char *name, int fallback)
{
    bool ok = false;
    const int v = qEnvironmentVariableIntValue(name, &ok);
    return ok ? v : fallback;
}

// Replica settings shared by the scenarios: short budgets so kills happen in seconds.
QJsonObject baseConfig(int slotCount)
{
    return QJsonObject{{QStringLiteral("slots_per_account"), slotCount}, {QStringLiteral("gate_wait_s"), 8},
                       {QStringLiteral("connect_s"), 3},               {QStringLiteral("keepalive_interval_s"), 1},
                       {QStringLiteral("keepalive_max"), 2},           {QStringLiteral("stream_idle_s"), 10},
                       {QStringLiteral("request_total_s"), 20},        {QStringLiteral("stream_max_s"), 60},
                       {QStringLiteral("drain_s"), 5}};
}

CheckerBudgets budgetsOf(const QJsonObject &config)
{
    CheckerBudgets b;
    b.gateWaitS = config.value(QLatin1String("gate_wait_s")).toInt();
    b.connectS = config.value(QLatin1String("connect_s")).toInt();
    b.requestTotalS = config.value(QLatin1String("request_total_s")).toInt();
    return b;
}

QString words(int n, const QString &tag)
{
    QStringList w;
    for (int i = 0; i < n; ++i)
        w << QStringLiteral("%1w%2").arg(tag).arg(i);
    return w.join(QLatin1Char(' '));
}

// Spins the event loop (asynchronous clients go on) until `done` or the timeout.
bool spinUntil(const std::function<bool()> &done, int timeoutMs)
{
    QDeadlineTimer deadline(timeoutMs);
    while (!done()) {
        if (deadline.hasExpired())
            return false;
        QTest::qWait(10);
    }
    return true;
}

// One run of a scenario: the replicas' shared database, the checker's verdict, and what the scenario itself
// expected to see on the wire (problems: expectations that did not hold).
struct Run
{
    QString setupError;
    QStringList problems;
    std::unique_ptr<DurableStateChecker> checker;
    QString notes;
    QString describe() const
    {
        QString out;
        if (!setupError.isEmpty())
            out += QStringLiteral("setup failed: ") + setupError + QLatin1Char('\n');
        for (const QString &p : problems)
            out += QStringLiteral("expectation failed: ") + p + QLatin1Char('\n');
        if (!notes.isEmpty())
            out += notes + QLatin1Char('\n');
        if (checker)
            out += checker->report(6);
        return out;
    }
};

#define SETUP(cond, what)                                                                                      \
    do {                                                                                                       \
        if (!(cond)) {                                                                                         \
            run.setupError = (what);                                                                           \
            return run;                                                                                        \
        }                                                                                                      \
    } while (false)

} // namespace

class TestOwnership : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    QTemporaryDir m_tmp;
    QString m_keyFile;
    int m_databases = 0;

    // Replicas of one scenario on one database.
    struct Cluster
    {
        QString database;
        QJsonObject config;
        QString fault; // SWITCHYARD_FAULTS; empty: the product build
        int leaseTtlS = kLeaseTtlS;
        qint64 inFlightSlackMs = 1000; // how late bytes already on the wire may arrive (checker)
        std::vector<std::unique_ptr<ProxyProcess>> replicas;
        QList<FakeAccount> accounts;
        ProxyProcess &at(int i) { return *replicas.at(size_t(i)); }
        void stopAll()
        {
            for (auto &r : replicas)
                r->stop(30000);
        }
    };

    QString newSqliteDatabase(const QString &label)
    {
        return m_tmp.filePath(QStringLiteral("%1-%2.sqlite").arg(label).arg(++m_databases));
    }

    std::unique_ptr<ProxyProcess> makeReplica(const Cluster &c)
    {
        auto p = std::make_unique<ProxyProcess>();
        p->setConfig(c.config);
        p->setEnv(QStringLiteral("SWITCHYARD_DATABASE_URL"), c.database);
        p->setEnv(QStringLiteral("SWITCHYARD_SECRET_BACKEND"), QStringLiteral("database"));
        p->setEnv(QStringLiteral("SWITCHYARD_SECRET_KEY_FILE"), m_keyFile);
        p->setEnv(QStringLiteral("DBUS_SESSION_BUS_ADDRESS"), QStringLiteral("unix:path=/nonexistent/bus"));
        p->setEnv(QStringLiteral("DISPLAY"), QString());
        p->setEnv(QStringLiteral("SWITCHYARD_TEST_LEASE_TTL_S"), QString::number(c.leaseTtlS));
        if (!c.fault.isEmpty()) {
            p->setBinary(qEnvironmentVariable("SWITCHYARD_FAULTS_BIN"));
            p->setEnv(QStringLiteral("SWITCHYARD_FAULTS"), c.fault);
        }
        p->setSpinEventsWhileStarting(true);
        return p;
    }

    // Creates `replicas` processes on c.database, imports `accounts` accounts through the first one's CLI and
    // starts them all against the fake upstream.
    bool startCluster(Cluster &c, int replicas, int accounts, QString *error)
    {
        if (!m_fake.reset()) {
            *error = m_fake.errorString();
            return false;
        }
        for (int i = 0; i < replicas; ++i)
            c.replicas.push_back(makeReplica(c));
        if (!c.at(0).addAccounts(accounts)) {
            *error = QStringLiteral("import: ") + c.at(0).errorString();
            return false;
        }
        c.accounts = c.at(0).accounts();
        for (int i = 0; i < replicas; ++i) {
            c.at(i).adoptAccounts(c.accounts);
            if (!c.at(i).start(m_fake.baseUrl())) {
                *error = QStringLiteral("replica %1: %2").arg(i).arg(c.at(i).errorString());
                return false;
            }
        }
        return true;
    }

    std::unique_ptr<DurableStateChecker> check(const Cluster &c, const QList<TurnOutcome> &outcomes, QString *error)
    {
        auto checker = std::make_unique<DurableStateChecker>(c.database);
        checker->setUpstreamLog(m_fake.log());
        checker->setClientObservations(observationsOf(outcomes));
        checker->setBudgets(budgetsOf(c.config));
        checker->setLeaseTtlMs(qint64(c.leaseTtlS) * 1000);
        checker->setQuiescent(true);
        checker->setInFlightSlackMs(c.inFlightSlackMs);
        if (!checker->run(error))
            return nullptr;
        return checker;
    }

    static AsyncTurn *turn(ProxyProcess &p, const QByteArray &target, const QByteArray &body)
    {
        auto *t = new AsyncTurn(p.port(), turnRequestBytes(target, body));
        t->start(40000);
        return t;
    }

    static QList<TurnOutcome> outcomesOf(const QList<AsyncTurn *> &turns)
    {
        QList<TurnOutcome> out;
        for (const AsyncTurn *t : turns)
            out.append(t->outcome());
        return out;
    }

    // The pair every invN test runs: the product build must leave a clean state, the fault build must make the
    // checker name `invariant`.
    using Scenario = Run (TestOwnership::*)(const QString &fault);
    void normalAndFault(const QString &invariant, const QString &fault, Scenario scenario)
    {
        const Run normal = (this->*scenario)(QString());
        qInfo().noquote() << "== product build ==\n" + normal.describe();
        const Run faulty = (this->*scenario)(fault);
        qInfo().noquote() << QStringLiteral("== fault build, SWITCHYARD_FAULTS=%1 ==\n").arg(fault) + faulty.describe();

        QVERIFY2(normal.setupError.isEmpty() && normal.checker, qPrintable(normal.describe()));
        QVERIFY2(normal.problems.isEmpty(), qPrintable(QStringLiteral("product build: ") + normal.describe()));
        QVERIFY2(normal.checker->violations().isEmpty(),
                 qPrintable(QStringLiteral("product build: the durable state breaks %1:\n%2")
                                .arg(normal.checker->violatedInvariants().join(QStringLiteral(", ")),
                                     normal.describe())));
        QVERIFY2(faulty.setupError.isEmpty() && faulty.checker, qPrintable(faulty.describe()));
        QVERIFY2(faulty.checker->hasViolation(invariant),
                 qPrintable(QStringLiteral("fault build with %1: the checker did not report %2, so the fault switch is "
                                           "missing from the build or does not disable the guard (the faulty binary "
                                           "behaved like the product here):\n%3")
                                .arg(fault, invariant, faulty.describe())));
    }

    // --- Scenarios ------------------------------------------------------------------------------------------

    // Two replicas hammer one account's three slots: compare-and-set conflicts (product) or two owners (fault).
    Run contendedSlots(const QString &fault)
    {
        Run run;
        Cluster c{newSqliteDatabase(QStringLiteral("inv5")), baseConfig(3), fault};
        SETUP(startCluster(c, 2, 1, &run.setupError), run.setupError);
        LoadMix mix;
        mix.seed = 5;
        mix.clients = 10;
        mix.cancelRate = 0;
        mix.responsesRate = 0;
        mix.continuationRate = 0;
        LoadDriver load(mix, [&c] { return QList<quint16>{c.at(0).port(), c.at(1).port()}; });
        load.start();
        QTest::qWait(4500);
        load.stopIssuing();
        SETUP(load.waitIdle(30000), QStringLiteral("turns did not finish"));
        c.stopAll();
        run.notes = load.summary();
        run.checker = check(c, load.outcomes(), &run.setupError);
        if (run.checker && fault.isEmpty() && run.checker->stats().casConflicts == 0)
            run.problems << QStringLiteral("no compare-and-set conflict happened: the race was not exercised");
        return run;
    }

    // An account is paused through another process's CLI while a replica routes turns to it from its snapshot.
    Run pausedDuringLoad(const QString &fault)
    {
        Run run;
        QJsonObject config = baseConfig(4);
        config.insert(QStringLiteral("strategy"), QStringLiteral("round_robin"));
        Cluster c{newSqliteDatabase(QStringLiteral("inv4")), config, fault};
        SETUP(startCluster(c, 1, 2, &run.setupError), run.setupError);
        for (const FakeAccount &a : c.accounts)
            SETUP(m_fake.script(a.chatgptAccountId, {QStringLiteral("slow:5")}, true), m_fake.errorString());
        std::unique_ptr<ProxyProcess> operatorCli = makeReplica(c); // another process, same database
        SETUP(operatorCli->addAccounts(0), operatorCli->errorString()); // writes its config file
        LoadMix mix;
        mix.seed = 4;
        mix.clients = 8;
        mix.cancelRate = 0;
        mix.responsesRate = 0;
        mix.continuationRate = 0;
        LoadDriver load(mix, [&c] { return QList<quint16>{c.at(0).port()}; });
        load.start();
        QTest::qWait(1200);
        auto paused = std::async(std::launch::async, [&operatorCli] {
            return operatorCli->cli({QStringLiteral("accounts"), QStringLiteral("pause"), QStringLiteral("acct1")});
        });
        SETUP(spinUntil([&paused] { return paused.wait_for(std::chrono::seconds(0)) == std::future_status::ready; },
                        20000),
              QStringLiteral("accounts pause did not finish"));
        const CliResult r = paused.get();
        SETUP(r.exitCode == 0, QStringLiteral("accounts pause acct1 failed: ") + QString::fromUtf8(r.err));
        QTest::qWait(2500);
        load.stopIssuing();
        SETUP(load.waitIdle(30000), QStringLiteral("turns did not finish"));
        c.stopAll();
        run.notes = load.summary();
        run.checker = check(c, load.outcomes(), &run.setupError);
        return run;
    }

    // A continuation arrives while its anchor's owner has no free slot.
    Run continuationWhileOwnerBusy(const QString &fault)
    {
        Run run;
        Cluster c{newSqliteDatabase(QStringLiteral("inv10")), baseConfig(1), fault};
        SETUP(startCluster(c, 1, 2, &run.setupError), run.setupError);
        ProxyProcess &p = c.at(0);
        QList<AsyncTurn *> turns{turn(p, "/v1/responses", responsesTurnBody(words(3, QStringLiteral("anchor"))))};
        SETUP(waitForTurns(turns, 20000) && turns.at(0)->outcome().sawCompleted,
              QStringLiteral("the first turn did not complete"));
        const QString anchor = turns.at(0)->outcome().responseId;
        QString owner;
        for (const QJsonValue &v : m_fake.log()) {
            if (v.toObject().value(QLatin1String("response_id")).toString() == anchor)
                owner = v.toObject().value(QLatin1String("chatgpt_account_id")).toString();
        }
        SETUP(!owner.isEmpty(), QStringLiteral("the anchor's account is unknown"));
        SETUP(m_fake.script(owner, {QStringLiteral("slow:250")}), m_fake.errorString());
        // The owner's only slot is busy with a slow continuation...
        turns << turn(p, "/v1/responses", responsesTurnBody(words(6, QStringLiteral("long")), anchor));
        SETUP(spinUntil([&] { return !turns.at(1)->outcome().outputAtMs.isEmpty() || turns.at(1)->isDone(); }, 15000),
              QStringLiteral("the slow continuation did not start"));
        // ... when the next continuation of the same anchor arrives.
        turns << turn(p, "/v1/responses", responsesTurnBody(words(3, QStringLiteral("next")), anchor));
        SETUP(waitForTurns(turns, 30000), QStringLiteral("turns did not finish"));
        if (fault.isEmpty() && !turns.at(2)->outcome().sawCompleted)
            run.problems << QStringLiteral("the continuation should wait for its owner and complete (status %1 %2)")
                                .arg(turns.at(2)->outcome().status)
                                .arg(turns.at(2)->outcome().errorCode);
        c.stopAll();
        run.checker = check(c, outcomesOf(turns), &run.setupError);
        qDeleteAll(turns);
        return run;
    }

    // Replica A is frozen (SIGSTOP) mid-stream for longer than its lease; B takes the slot over; A resumes.
    Run stalledOwner(const QString &fault)
    {
        Run run;
        Cluster c{newSqliteDatabase(QStringLiteral("stall")), baseConfig(1), fault};
        c.config.insert(QStringLiteral("stream_idle_s"), 30);
        SETUP(startCluster(c, 2, 1, &run.setupError), run.setupError);
        ProxyProcess &a = c.at(0);
        ProxyProcess &b = c.at(1);
        SETUP(m_fake.script(c.accounts.at(0).chatgptAccountId, {QStringLiteral("slow:250")}), m_fake.errorString());
        QList<AsyncTurn *> turns{turn(a, "/backend-api/codex/responses", codexTurnBody(words(24, QStringLiteral("s"))))};
        SETUP(spinUntil([&] { return turns.at(0)->outcome().outputAtMs.size() >= 2 || turns.at(0)->isDone(); }, 15000),
              QStringLiteral("the stream on A did not start"));
        SETUP(a.signal(SIGSTOP), QStringLiteral("SIGSTOP failed"));
        const qint64 stoppedAt = nowMs();
        // B needs the slot: it may take it only once A's lease has expired.
        turns << turn(b, "/backend-api/codex/responses", codexTurnBody(words(3, QStringLiteral("b"))));
        const bool takenOver = spinUntil([&] { return turns.at(1)->isDone(); }, 12000);
        QTest::qWait(qMax<qint64>(300, stoppedAt + qint64(kLeaseTtlS) * 1000 + 1500 - nowMs()));
        a.signal(SIGCONT);
        SETUP(waitForTurns(turns, 30000), QStringLiteral("turns did not finish"));
        if (!takenOver || !turns.at(1)->outcome().sawCompleted)
            run.problems << QStringLiteral("B did not take the expired slot over while A was stopped");
        c.stopAll();
        run.notes = QStringLiteral("A stopped for %1 ms; A's client got %2 output events, ended with '%3'")
                        .arg(nowMs() - stoppedAt)
                        .arg(turns.at(0)->outcome().outputAtMs.size())
                        .arg(turns.at(0)->outcome().errorCode);
        run.checker = check(c, outcomesOf(turns), &run.setupError);
        if (run.checker && run.checker->stats().reclaimedExpired == 0)
            run.problems << QStringLiteral("A's claim was not reclaimed as expired");
        qDeleteAll(turns);
        return run;
    }

    // Two turns in a row on one replica, then a clean stop.
    Run twoTurnsThenStop(const QString &fault)
    {
        Run run;
        Cluster c{newSqliteDatabase(QStringLiteral("inv9")), baseConfig(2), fault};
        c.leaseTtlS = 30; // no reclaim sweep hides a leaked slot
        SETUP(startCluster(c, 1, 1, &run.setupError), run.setupError);
        QList<AsyncTurn *> turns;
        for (int i = 0; i < 2; ++i) {
            turns << turn(c.at(0), "/backend-api/codex/responses", codexTurnBody(words(3, QStringLiteral("t"))));
            SETUP(waitForTurns(turns, 20000), QStringLiteral("turn did not finish"));
            if (!turns.last()->outcome().sawCompleted)
                run.problems << QStringLiteral("turn %1 did not complete").arg(i);
        }
        c.stopAll();
        run.checker = check(c, outcomesOf(turns), &run.setupError);
        qDeleteAll(turns);
        return run;
    }

    // One slot, a queue of waiters at the gate, some of whose clients hang up while queued.
    Run cancelledWaiters(const QString &fault)
    {
        Run run;
        Cluster c{newSqliteDatabase(QStringLiteral("inv7")), baseConfig(1), fault};
        c.config.insert(QStringLiteral("gate_wait_s"), 15);
        SETUP(startCluster(c, 1, 1, &run.setupError), run.setupError);
        SETUP(m_fake.script(c.accounts.at(0).chatgptAccountId, {QStringLiteral("slow:50")}, true), m_fake.errorString());
        ProxyProcess &p = c.at(0);
        QList<AsyncTurn *> turns{turn(p, "/backend-api/codex/responses", codexTurnBody(words(4, QStringLiteral("h"))))};
        SETUP(spinUntil([&] { return !turns.at(0)->outcome().outputAtMs.isEmpty() || turns.at(0)->isDone(); }, 15000),
              QStringLiteral("the first turn did not start"));
        for (int i = 0; i < 6; ++i)
            turns << turn(p, "/backend-api/codex/responses", codexTurnBody(words(4, QStringLiteral("q%1").arg(i))));
        for (int i = 4; i < 7; ++i)
            turns.at(i)->cancelAfter(300);
        SETUP(waitForTurns(turns, 40000), QStringLiteral("turns did not finish"));
        int completed = 0;
        for (const AsyncTurn *t : turns)
            completed += t->outcome().sawCompleted ? 1 : 0;
        if (completed != 4)
            run.problems << QStringLiteral("%1 of the 4 turns that stayed should have completed").arg(completed);
        c.stopAll();
        run.checker = check(c, outcomesOf(turns), &run.setupError);
        qDeleteAll(turns);
        return run;
    }

    // SIGTERM while a turn streams; a keep-alive connection opened before sends a new turn during the drain.
    Run turnDuringDrain(const QString &fault)
    {
        Run run;
        Cluster c{newSqliteDatabase(QStringLiteral("inv8")), baseConfig(2), fault};
        c.config.insert(QStringLiteral("drain_s"), 10);
        SETUP(startCluster(c, 1, 1, &run.setupError), run.setupError);
        ProxyProcess &p = c.at(0);
        SETUP(m_fake.script(c.accounts.at(0).chatgptAccountId, {QStringLiteral("slow:150")}), m_fake.errorString());
        RawHttpClient idle;
        SETUP(idle.connectTo(p.port()), QStringLiteral("cannot connect"));
        idle.send(RawHttpClient::buildRequest("GET", "/health/live"));
        const auto live = idle.readResponse();
        SETUP(live && live->status == 200, QStringLiteral("health check failed"));
        QList<AsyncTurn *> turns{turn(p, "/backend-api/codex/responses", codexTurnBody(words(8, QStringLiteral("d"))))};
        SETUP(spinUntil([&] { return !turns.at(0)->outcome().outputAtMs.isEmpty() || turns.at(0)->isDone(); }, 15000),
              QStringLiteral("the streaming turn did not start"));
        p.terminate();
        QTest::qWait(400);
        idle.send(RawHttpClient::buildRequest("POST", "/backend-api/codex/responses",
                                              {{"content-type", "application/json"}},
                                              codexTurnBody(words(3, QStringLiteral("late")))));
        const auto late = idle.readResponse(15000);
        if (fault.isEmpty() && (!late || late->status != 503))
            run.problems << QStringLiteral("a turn sent during the drain should get 503 shutting_down (got %1)")
                                .arg(late ? late->status : 0);
        SETUP(waitForTurns(turns, 20000), QStringLiteral("the streaming turn did not finish"));
        if (!turns.at(0)->outcome().sawCompleted)
            run.problems << QStringLiteral("the turn in flight at SIGTERM should complete during the drain");
        const int exitCode = p.stop(30000);
        if (exitCode != 0)
            run.problems << QStringLiteral("serve exited with %1 after the drain").arg(exitCode);
        run.checker = check(c, outcomesOf(turns), &run.setupError);
        qDeleteAll(turns);
        return run;
    }

    // The upstream accepts the request and never answers: the pre_response budget must kill it under its name.
    Run silentUpstream(const QString &fault)
    {
        Run run;
        Cluster c{newSqliteDatabase(QStringLiteral("inv11")), baseConfig(1), fault};
        SETUP(startCluster(c, 1, 1, &run.setupError), run.setupError);
        SETUP(m_fake.script(c.accounts.at(0).chatgptAccountId, {QStringLiteral("silent")}), m_fake.errorString());
        QList<AsyncTurn *> turns{turn(c.at(0), "/backend-api/codex/responses", codexTurnBody(words(3, QStringLiteral("x"))))};
        SETUP(waitForTurns(turns, 30000), QStringLiteral("the turn did not finish"));
        if (turns.at(0)->outcome().status != 504)
            run.problems << QStringLiteral("a silent upstream should end in 504 (got %1 %2)")
                                .arg(turns.at(0)->outcome().status)
                                .arg(turns.at(0)->outcome().errorCode);
        c.stopAll();
        run.checker = check(c, outcomesOf(turns), &run.setupError);
        qDeleteAll(turns);
        return run;
    }

    // One slot held by a long stream; another turn waits at the gate longer than gate_wait_s allows.
    Run gateWaitBudget(const QString &fault)
    {
        Run run;
        QJsonObject config = baseConfig(1);
        config.insert(QStringLiteral("gate_wait_s"), 1);
        config.insert(QStringLiteral("keepalive_interval_s"), 3); // the waiter is refused before any keepalive commits
        config.insert(QStringLiteral("connect_s"), 2);
        config.insert(QStringLiteral("request_total_s"), 8);
        Cluster c{newSqliteDatabase(QStringLiteral("inv2")), config, fault};
        SETUP(startCluster(c, 1, 1, &run.setupError), run.setupError);
        SETUP(m_fake.script(c.accounts.at(0).chatgptAccountId, {QStringLiteral("slow:250")}), m_fake.errorString());
        ProxyProcess &p = c.at(0);
        QList<AsyncTurn *> turns{turn(p, "/backend-api/codex/responses", codexTurnBody(words(12, QStringLiteral("l"))))};
        SETUP(spinUntil([&] { return !turns.at(0)->outcome().outputAtMs.isEmpty() || turns.at(0)->isDone(); }, 15000),
              QStringLiteral("the long turn did not start"));
        turns << turn(p, "/backend-api/codex/responses", codexTurnBody(words(3, QStringLiteral("w"))));
        SETUP(waitForTurns(turns, 30000), QStringLiteral("turns did not finish"));
        const TurnOutcome &w = turns.at(1)->outcome();
        if (fault.isEmpty() && (w.status != 503 || w.endedAtMs - w.startedAtMs > 4000))
            run.problems << QStringLiteral("the waiter should get 503 after about gate_wait_s (got %1 after %2 ms)")
                                .arg(w.status)
                                .arg(w.endedAtMs - w.startedAtMs);
        c.stopAll();
        run.checker = check(c, outcomesOf(turns), &run.setupError);
        qDeleteAll(turns);
        return run;
    }

    // A client hangs up while the upstream has not answered yet; the next turn follows at once.
    Run abandonedExchange(const QString &fault)
    {
        Run run;
        Cluster c{newSqliteDatabase(QStringLiteral("inv6")), baseConfig(2), fault};
        SETUP(startCluster(c, 1, 1, &run.setupError), run.setupError);
        SETUP(m_fake.script(c.accounts.at(0).chatgptAccountId, {QStringLiteral("delay_first:1500")}),
              m_fake.errorString());
        ProxyProcess &p = c.at(0);
        QList<AsyncTurn *> turns{turn(p, "/backend-api/codex/responses", codexTurnBody(words(4, QStringLiteral("first"))))};
        // The client hangs up once its request has reached the upstream, which answers only 1.5 s later.
        SETUP(spinUntil([&] { return !m_fake.log().isEmpty() || turns.at(0)->isDone(); }, 10000),
              QStringLiteral("the first turn never reached the upstream"));
        turns.at(0)->cancel();
        QTest::qWait(200);
        turns << turn(p, "/backend-api/codex/responses", codexTurnBody(words(4, QStringLiteral("second"))));
        SETUP(waitForTurns(turns, 20000), QStringLiteral("the second turn did not finish"));
        if (fault.isEmpty() && !turns.at(1)->outcome().sawCompleted)
            run.problems << QStringLiteral("the second turn should complete (got %1 %2)")
                                .arg(turns.at(1)->outcome().status)
                                .arg(turns.at(1)->outcome().errorCode);
        QTest::qWait(1500); // the abandoned answer arrives meanwhile
        c.stopAll();
        run.checker = check(c, outcomesOf(turns), &run.setupError);
        qDeleteAll(turns);
        return run;
    }

    // --- The stress run -------------------------------------------------------------------------------------

    void stress(const QString &database, const QString &label)
    {
        const quint32 seed = quint32(envInt("SWITCHYARD_STRESS_SEED", int(QRandomGenerator::global()->bounded(1 << 30))));
        const int seconds = envInt("SWITCHYARD_STRESS_SECONDS", 50);
        const int minTurns = envInt("SWITCHYARD_STRESS_MIN_TURNS", 2000);
        qInfo("stress %s: seed=%u duration=%d s (SWITCHYARD_STRESS_SEED / SWITCHYARD_STRESS_SECONDS)",
              qPrintable(label), seed, seconds);
        QJsonObject config = baseConfig(2);
        config.insert(QStringLiteral("gate_wait_s"), 10);
        config.insert(QStringLiteral("stream_idle_s"), 2);
        config.insert(QStringLiteral("keepalive_max"), 3);
        Cluster c{database, config, QString()};
        c.inFlightSlackMs = 2000; // a loaded machine: the fake upstream may read a request late
        QString error;
        QVERIFY2(startCluster(c, 2, 3, &error), qPrintable(error));
        ProxyProcess &a = c.at(0);
        ProxyProcess &b = c.at(1);

        // Upstream chaos, topped up as the run goes: mostly plain answers, some slow ones, stalls and drops
        // mid-stream, and once a 500 on the third account (a failover; it cools that account for 30 s, so only
        // one account is ever out).
        QRandomGenerator chaos(seed ^ 0x5eed);
        bool scripting = false;
        int tick = 0;
        const int ticks = seconds * 2;
        QTimer topUp;
        connect(&topUp, &QTimer::timeout, this, [&] {
            if (scripting)
                return;
            scripting = true;
            ++tick;
            for (int i = 0; i < c.accounts.size(); ++i) {
                QStringList actions;
                for (int k = 0; k < 8; ++k) {
                    const double r = chaos.generateDouble();
                    actions << (r < 0.03   ? QStringLiteral("stall_mid")
                                : r < 0.06 ? QStringLiteral("drop_mid")
                                : r < 0.16 ? QStringLiteral("slow:40")
                                           : QStringLiteral("ok"));
                }
                if (i == 2 && tick == ticks * 3 / 5)
                    actions.prepend(QStringLiteral("500"));
                m_fake.script(c.accounts.at(i).chatgptAccountId, actions);
            }
            scripting = false;
        });
        topUp.start(500);

        bool aDown = false;
        LoadMix mix;
        mix.seed = seed;
        mix.clients = 32;
        LoadDriver load(mix, [&] { return QList<quint16>{aDown ? quint16(0) : a.port(), b.port()}; });
        const qint64 startedAt = nowMs();
        load.start();

        // kill -9 of A while it streams (preferably a stalled stream, which surely still holds its slot a moment
        // later), then A restarts on the same data dir.
        QTest::qWait(seconds * 1000 * 2 / 5);
        bool streaming = false;
        int polls = 0;
        for (int i = 0; i < 100 && !streaming; ++i, ++polls) {
            const HttpResult s = httpRequest("GET", QUrl(a.url(QStringLiteral("/api/status"))), {}, {}, 3000);
            for (const QJsonValue &v : s.json().value(QLatin1String("in_flight")).toArray()) {
                const QJsonObject t = v.toObject();
                const qint64 idleLeft =
                    t.value(QLatin1String("remaining_ms")).toObject().value(QLatin1String("stream_idle")).toInteger(-1);
                streaming = streaming || (t.value(QLatin1String("stage")).toString() == QLatin1String("streaming") &&
                                          (i >= 60 || (idleLeft >= 0 && idleLeft < 1500)));
            }
            if (!streaming)
                QTest::qWait(50);
        }
        QVERIFY2(streaming, "replica A never had a turn streaming to kill");
        QString replicaA;
        {
            QFile id(a.dataDir() + QStringLiteral("/replica-id"));
            QVERIFY(id.open(QIODevice::ReadOnly));
            replicaA = QString::fromLatin1(id.readAll().trimmed());
        }
        aDown = true;
        const qint64 killedAt = nowMs();
        a.kill();
        QVERIFY2(a.start(m_fake.baseUrl()), qPrintable(a.errorString()));
        const qint64 restartedAt = nowMs();
        aDown = false;

        spinUntil([] { return false; }, int(qMax<qint64>(0, startedAt + seconds * 1000 - nowMs())));
        // A loaded machine serves fewer turns per second: go on (up to 90 s more) until the run has clearly
        // made its thousands of turns, rather than fail on throughput.
        auto dispatched = [&load] {
            int n = 0;
            for (const TurnOutcome &o : load.outcomes())
                n += o.responseId.isEmpty() ? 0 : 1;
            return n;
        };
        spinUntil([&] { return dispatched() >= minTurns + minTurns / 5; }, 90000);
        load.stopIssuing();
        topUp.stop();
        QVERIFY2(load.waitIdle(40000), "client turns did not finish");
        QCOMPARE(a.stop(30000), 0);
        QCOMPARE(b.stop(30000), 0);

        std::unique_ptr<DurableStateChecker> checker = check(c, load.outcomes(), &error);
        QVERIFY2(checker, qPrintable(error));
        const CheckerStats &st = checker->stats();
        // The incarnation that was killed: its slots must be reclaimed at once by its restart (or earlier by B
        // once the lease expired), never left held.
        int deadClaims = 0, lateReclaims = 0;
        for (const DurableStateChecker::Claim &cl : checker->claims()) {
            if (cl.replicaId != replicaA || cl.incarnation != 1 || cl.claimedAtMs > killedAt)
                continue;
            if (cl.released() && cl.releasedAtMs < killedAt)
                continue;
            ++deadClaims;
            if (!cl.released() || cl.releasedAtMs > restartedAt + 2000)
                ++lateReclaims;
        }
        qInfo().noquote() << QStringLiteral("stress %1: seed=%2 ran %3 ms; kill -9 of A at +%4 ms (after %5 status "
                                            "polls), A serving again after %6 ms; %7 claims of the killed incarnation "
                                            "were open, %8 reclaimed late\n%9\n%10")
                                 .arg(label)
                                 .arg(seed)
                                 .arg(nowMs() - startedAt)
                                 .arg(killedAt - startedAt)
                                 .arg(polls)
                                 .arg(restartedAt - killedAt)
                                 .arg(deadClaims)
                                 .arg(lateReclaims)
                                 .arg(load.summary(), checker->report(8));
        qInfo("stress %s: cas_conflicts=%lld lease_reclaims=%lld turns=%d (with a claim: %d) seed=%u", qPrintable(label),
              st.casConflicts, st.leaseReclaims, st.turns, st.requestsWithClaims, seed);
        QVERIFY2(checker->violations().isEmpty(), qPrintable(checker->report(10)));
        QVERIFY2(st.casConflicts > 0, "no compare-and-set conflict: the claim race was never exercised");
        QVERIFY2(st.leaseReclaims > 0, "no lease reclaim: the takeover path was never exercised");
        QVERIFY2(deadClaims > 0, "the killed replica held no slot: the kill did not hit it mid-stream");
        QVERIFY2(lateReclaims == 0, "the restarted replica did not reclaim its previous incarnation's slots at once");
        QVERIFY2(st.requestsWithClaims >= minTurns,
                 qPrintable(QStringLiteral("only %1 turns claimed a slot (need %2)").arg(st.requestsWithClaims).arg(minTurns)));
    }

private slots:
    void initTestCase()
    {
        QVERIFY2(!qEnvironmentVariableIsEmpty("SWITCHYARD_BIN"), "run through ctest (SWITCHYARD_BIN)");
        QVERIFY2(!qEnvironmentVariableIsEmpty("SWITCHYARD_FAULTS_BIN"), "run through ctest (SWITCHYARD_FAULTS_BIN)");
        QVERIFY(m_tmp.isValid());
        QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString()));
        m_keyFile = m_tmp.filePath(QStringLiteral("replicas.key"));
        QVERIFY(writeSecretKeyFile(m_keyFile));
    }

    void inv1AnchorCurrent()
    {
        normalAndFault(QStringLiteral("Inv1AnchorCurrent"), QStringLiteral("ignore-owner-epoch"),
                       &TestOwnership::stalledOwner);
    }

    void inv2DeadlineOrdering()
    {
        normalAndFault(QStringLiteral("Inv2DeadlineOrdering"), QStringLiteral("single-shared-timeout"),
                       &TestOwnership::gateWaitBudget);
    }

    void inv3ReservationSettledExactlyOnce()
    {
        normalAndFault(QStringLiteral("Inv3ReservationSettledExactlyOnce"), QStringLiteral("double-settle"),
                       &TestOwnership::stalledOwner);
    }

    void inv4FreshSnapshots()
    {
        normalAndFault(QStringLiteral("Inv4FreshSnapshots"), QStringLiteral("stale-route-acquire"),
                       &TestOwnership::pausedDuringLoad);
    }

    void inv5SingleOwnerCas()
    {
        normalAndFault(QStringLiteral("Inv5SingleOwnerCAS"), QStringLiteral("non-atomic-claim"),
                       &TestOwnership::contendedSlots);
    }

    void inv6TerminalIsolation()
    {
        normalAndFault(QStringLiteral("Inv6TerminalIsolation"), QStringLiteral("misroute-producer"),
                       &TestOwnership::abandonedExchange);
    }

    void inv7GateAccounting()
    {
        normalAndFault(QStringLiteral("Inv7GateAccounting"), QStringLiteral("lost-waiter"),
                       &TestOwnership::cancelledWaiters);
    }

    void inv8ShutdownDrain()
    {
        normalAndFault(QStringLiteral("Inv8ShutdownDrain"), QStringLiteral("shutdown-admit"),
                       &TestOwnership::turnDuringDrain);
    }

    void inv9TerminalOwnerReleased()
    {
        normalAndFault(QStringLiteral("Inv9TerminalOwnerReleased"), QStringLiteral("leak-owner-on-terminal"),
                       &TestOwnership::twoTurnsThenStop);
    }

    void inv10AnchorAccountOwnership()
    {
        normalAndFault(QStringLiteral("Inv10AnchorAccountOwnership"), QStringLiteral("cross-account-anchor"),
                       &TestOwnership::continuationWhileOwnerBusy);
    }

    void inv11PreResponseBudget()
    {
        normalAndFault(QStringLiteral("Inv11PreResponseBudget"), QStringLiteral("conflated-timers"),
                       &TestOwnership::silentUpstream);
    }

    void stressTwoReplicasSqlite()
    {
        stress(newSqliteDatabase(QStringLiteral("stress")), QStringLiteral("sqlite"));
    }

    void stressTwoReplicasPostgres()
    {
        PostgresServer pg;
        QString error;
        QVERIFY2(pg.start(&error, QStringLiteral("switchyard_stress")), qPrintable(error));
        // Does this build take a PostgreSQL URL at all?
        Cluster probe{pg.url(), baseConfig(2), QString()};
        std::unique_ptr<ProxyProcess> cli = makeReplica(probe);
        QVERIFY2(cli->addAccounts(0), qPrintable(cli->errorString())); // writes its config file
        const CliResult r = cli->cli({QStringLiteral("accounts"), QStringLiteral("list"), QStringLiteral("--json")});
        if (r.exitCode != 0 && r.err.contains("SWITCHYARD_DATABASE_URL"))
            QFAIL(qPrintable(QStringLiteral("PostgreSQL dialect not available in this build: ") + QString::fromUtf8(r.err)));
        QVERIFY2(r.exitCode == 0, qPrintable(QStringLiteral("switchyard accounts list on PostgreSQL failed: ") +
                                             QString::fromUtf8(r.err)));
        stress(pg.url(), QStringLiteral("postgres"));
    }
};

QTEST_GUILESS_MAIN(TestOwnership)
#include "tst_ownership.moc"
