#include "ManualClock.h"
#include "upstream/StageBudget.h"

#include <QTest>

using sy::BudgetSettings;
using sy::RequestBudget;
using sy::test::ManualClock;

namespace {
constexpr qint64 s = 1000;
}

class TestBudget : public QObject
{
    Q_OBJECT

private slots:
    void defaultsAreValid();
    void validateCatchesEachContradiction_data();
    void validateCatchesEachContradiction();
    void validateReportsEveryProblem();
    void gateWaitFiresUnderItsOwnName();
    void connectFiresUnderItsOwnName();
    void preResponseFiresUnderItsOwnName();
    void preResponseNeverBelowCadenceFloor();
    void preResponseLabelledRequestTotalWhenRemainingIsShorter();
    void preResponseEqualToRemainingIsRequestTotal();
    void requestTotalFiresBeforeAnyAttempt();
    void requestTotalCarriedAcrossAttempts();
    void streamingIsNotKilledByRequestTotal();
    void streamIdleFiresAfterSilence();
    void streamMaxFiresOnSteadyStream();
    void twoRequestsHaveIndependentBudgets();
    void tieNamesTheBroaderBudget();
    void latenciesRecorded();
    void latenciesUnknownAreMinusOne();
    void snapshotShowsPhaseAndRunningBudgets();
};

void TestBudget::defaultsAreValid()
{
    const BudgetSettings settings;
    QCOMPARE(settings.validate(), QString());
    QCOMPARE(settings.keepaliveCadenceMs(), 60 * s);
}

void TestBudget::validateCatchesEachContradiction_data()
{
    QTest::addColumn<QString>("field");
    QTest::addColumn<int>("value");
    QTest::addColumn<QStringList>("mentions");
    const QStringList keys{"gate_wait_s",   "connect_s",     "gate_retire_s",   "keepalive_interval_s",
                           "keepalive_max", "stream_idle_s", "request_total_s", "stream_max_s"};
    for (const QString &key : keys) {
        QTest::addRow("%s zero", qPrintable(key)) << key << 0 << QStringList{key, "positive"};
        QTest::addRow("%s negative", qPrintable(key)) << key << -5 << QStringList{key, "positive"};
        QTest::addRow("%s huge", qPrintable(key)) << key << 100000000 << QStringList{key, "at most"};
    }
    QTest::newRow("gate_wait > request_total")
        << "gate_wait_s" << 601 << QStringList{"gate_wait_s (601) exceeds request_total_s (600)"};
    QTest::newRow("connect > request_total")
        << "connect_s" << 700 << QStringList{"connect_s (700) exceeds request_total_s (600)"};
    QTest::newRow("request_total < gate_wait")
        << "request_total_s" << 9 << QStringList{"gate_wait_s (10) exceeds request_total_s (9)"};
    QTest::newRow("stream_idle > stream_max")
        << "stream_idle_s" << 7201 << QStringList{"stream_idle_s (7201) exceeds stream_max_s (7200)"};
}

void TestBudget::validateCatchesEachContradiction()
{
    QFETCH(QString, field);
    QFETCH(int, value);
    QFETCH(QStringList, mentions);
    BudgetSettings settings;
    int *target = nullptr;
    if (field == "gate_wait_s")
        target = &settings.gateWaitS;
    else if (field == "connect_s")
        target = &settings.connectS;
    else if (field == "gate_retire_s")
        target = &settings.gateRetireS;
    else if (field == "keepalive_interval_s")
        target = &settings.keepaliveIntervalS;
    else if (field == "keepalive_max")
        target = &settings.keepaliveMax;
    else if (field == "stream_idle_s")
        target = &settings.streamIdleS;
    else if (field == "request_total_s")
        target = &settings.requestTotalS;
    else if (field == "stream_max_s")
        target = &settings.streamMaxS;
    QVERIFY(target);
    *target = value;
    const QString error = settings.validate();
    QVERIFY2(!error.isEmpty(), qPrintable(field));
    for (const QString &m : mentions)
        QVERIFY2(error.contains(m), qPrintable(error));
}

void TestBudget::validateReportsEveryProblem()
{
    BudgetSettings settings;
    settings.gateWaitS = 700;
    settings.connectS = 650;
    settings.keepaliveMax = 0;
    const QString error = settings.validate();
    QVERIFY(error.contains("gate_wait_s (700) exceeds request_total_s (600)"));
    QVERIFY(error.contains("connect_s (650) exceeds request_total_s (600)"));
    QVERIFY(error.contains("keepalive_max must be positive"));
    // Equal budgets are allowed: the tie rule names the broader one.
    BudgetSettings equal;
    equal.gateWaitS = equal.requestTotalS;
    QCOMPARE(equal.validate(), QString());
}

void TestBudget::gateWaitFiresUnderItsOwnName()
{
    ManualClock clock;
    clock.advance(123456); // a budget never assumes the monotonic clock starts at zero
    RequestBudget budget(clock, BudgetSettings{});
    clock.advance(2 * s);
    budget.enterGateWait();
    QCOMPARE(budget.nextDeadline().stage, QString("gate_wait"));
    QCOMPARE(budget.nextDeadline().atMonotonicMs, clock.monotonicMs() + 10 * s);
    clock.advance(10 * s - 1);
    QCOMPARE(budget.expiredStage(), QString());
    QCOMPARE(budget.remainingMs(sy::stage::gateWait), 1);
    clock.advance(1);
    QCOMPARE(budget.expiredStage(), QString("gate_wait"));
}

void TestBudget::connectFiresUnderItsOwnName()
{
    ManualClock clock;
    RequestBudget budget(clock, BudgetSettings{});
    budget.enterGateWait();
    clock.advance(3 * s);
    budget.leaveGateWait();
    QCOMPARE(budget.remainingMs(sy::stage::gateWait), -1);
    budget.beginAttempt();
    QCOMPARE(budget.nextDeadline().stage, QString("connect"));
    clock.advance(8 * s - 1);
    QCOMPARE(budget.expiredStage(), QString());
    clock.advance(1);
    QCOMPARE(budget.expiredStage(), QString("connect"));
    QCOMPARE(budget.nextDeadline().atMonotonicMs, 11 * s);
}

void TestBudget::preResponseFiresUnderItsOwnName()
{
    ManualClock clock;
    RequestBudget budget(clock, BudgetSettings{});
    budget.beginAttempt();
    clock.advance(500);
    budget.connected();
    // Defaults: min(gate_retire 300, cadence 10x6 = 60, stream_idle 300, remaining 599.5) = 60 s.
    QCOMPARE(budget.preResponseBudgetMs(), 60 * s);
    QCOMPARE(budget.nextDeadline().stage, QString("pre_response"));
    QCOMPARE(budget.nextDeadline().atMonotonicMs, 500 + 60 * s);
    clock.advance(60 * s - 1);
    QCOMPARE(budget.expiredStage(), QString());
    clock.advance(1);
    QCOMPARE(budget.expiredStage(), QString("pre_response"));
}

void TestBudget::preResponseNeverBelowCadenceFloor()
{
    ManualClock clock;
    BudgetSettings settings;
    settings.streamIdleS = 5;
    settings.gateRetireS = 7;
    QCOMPARE(settings.validate(), QString());
    RequestBudget budget(clock, settings);
    budget.beginAttempt();
    budget.connected();
    // The derived minimum (5 s) is below min(cadence 60 s, remaining 600 s): the floor wins.
    QCOMPARE(budget.preResponseBudgetMs(), 60 * s);
    clock.advance(30 * s);
    QCOMPARE(budget.expiredStage(), QString());

    BudgetSettings fastCadence;
    fastCadence.keepaliveIntervalS = 2;
    fastCadence.keepaliveMax = 3;
    RequestBudget quick(clock, fastCadence);
    quick.beginAttempt();
    quick.connected();
    QCOMPARE(quick.preResponseBudgetMs(), 6 * s);
    QCOMPARE(quick.nextDeadline().stage, QString("pre_response"));
}

void TestBudget::preResponseLabelledRequestTotalWhenRemainingIsShorter()
{
    ManualClock clock;
    BudgetSettings settings;
    settings.requestTotalS = 100;
    RequestBudget budget(clock, settings);
    clock.advance(70 * s); // e.g. spent routing and on an earlier attempt
    budget.beginAttempt();
    budget.connected();
    QCOMPARE(budget.preResponseBudgetMs(), 30 * s);
    QCOMPARE(budget.nextDeadline().stage, QString("request_total"));
    QCOMPARE(budget.nextDeadline().atMonotonicMs, 100 * s);
    clock.advance(30 * s);
    QCOMPARE(budget.expiredStage(), QString("request_total"));
}

void TestBudget::preResponseEqualToRemainingIsRequestTotal()
{
    ManualClock clock;
    BudgetSettings settings;
    settings.requestTotalS = 80;
    RequestBudget budget(clock, settings);
    clock.advance(20 * s);
    budget.beginAttempt();
    budget.connected();
    QCOMPARE(budget.preResponseBudgetMs(), 60 * s); // == cadence == remaining
    QCOMPARE(budget.nextDeadline().stage, QString("request_total"));
}

void TestBudget::requestTotalFiresBeforeAnyAttempt()
{
    ManualClock clock;
    RequestBudget budget(clock, BudgetSettings{});
    QCOMPARE(budget.phase(), RequestBudget::Phase::Routing);
    QCOMPARE(budget.nextDeadline().stage, QString("request_total"));
    clock.advance(600 * s);
    QCOMPARE(budget.expiredStage(), QString("request_total"));
}

void TestBudget::requestTotalCarriedAcrossAttempts()
{
    ManualClock clock;
    BudgetSettings settings;
    settings.requestTotalS = 30;
    RequestBudget budget(clock, settings);

    budget.beginAttempt();
    clock.advance(8 * s);
    QCOMPARE(budget.expiredStage(), QString("connect"));
    budget.endAttempt();
    QCOMPARE(budget.phase(), RequestBudget::Phase::Routing);
    QCOMPARE(budget.remainingMs(sy::stage::requestTotal), 22 * s);

    budget.beginAttempt();
    QCOMPARE(budget.attempts(), 2);
    QCOMPARE(budget.nextDeadline().stage, QString("connect")); // a fresh connect budget per attempt
    QCOMPARE(budget.nextDeadline().atMonotonicMs, 16 * s);
    clock.advance(2 * s);
    budget.connected();
    // Had request_total been reset by the new attempt, 28 s would remain instead of 20 s.
    QCOMPARE(budget.remainingMs(sy::stage::requestTotal), 20 * s);
    QCOMPARE(budget.nextDeadline().stage, QString("request_total"));
    QCOMPARE(budget.nextDeadline().atMonotonicMs, 30 * s);
    clock.advance(20 * s - 1);
    QCOMPARE(budget.expiredStage(), QString());
    clock.advance(1);
    QCOMPARE(budget.expiredStage(), QString("request_total"));
}

void TestBudget::streamingIsNotKilledByRequestTotal()
{
    ManualClock clock;
    RequestBudget budget(clock, BudgetSettings{});
    budget.beginAttempt();
    budget.connected();
    clock.advance(s);
    budget.firstEvent();
    QCOMPARE(budget.phase(), RequestBudget::Phase::Streaming);
    QCOMPARE(budget.remainingMs(sy::stage::requestTotal), -1);
    for (int i = 0; i < 20; ++i) { // 2000 s of steady progress, well past request_total's 600 s
        clock.advance(100 * s);
        QCOMPARE(budget.expiredStage(), QString());
        budget.onEvent();
    }
    QCOMPARE(budget.nextDeadline().stage, QString("stream_idle"));
}

void TestBudget::streamIdleFiresAfterSilence()
{
    ManualClock clock;
    RequestBudget budget(clock, BudgetSettings{});
    budget.beginAttempt();
    budget.connected();
    budget.firstEvent();
    clock.advance(299 * s);
    budget.onEvent(); // resets the idle budget
    clock.advance(299 * s);
    QCOMPARE(budget.expiredStage(), QString());
    QCOMPARE(budget.remainingMs(sy::stage::streamIdle), s);
    clock.advance(s);
    QCOMPARE(budget.expiredStage(), QString("stream_idle"));
}

void TestBudget::streamMaxFiresOnSteadyStream()
{
    ManualClock clock;
    BudgetSettings settings;
    settings.streamMaxS = 1000;
    RequestBudget budget(clock, settings);
    budget.beginAttempt();
    budget.connected();
    clock.advance(50 * s);
    budget.firstEvent(); // stream_max counts from here, not from the request start
    for (int i = 0; i < 4; ++i) {
        clock.advance(200 * s);
        budget.onEvent();
    }
    clock.advance(199 * s);
    QCOMPARE(budget.expiredStage(), QString());
    QCOMPARE(budget.nextDeadline().stage, QString("stream_max"));
    clock.advance(s);
    QCOMPARE(budget.expiredStage(), QString("stream_max"));
    QCOMPARE(budget.nextDeadline().atMonotonicMs, 1050 * s);
}

void TestBudget::twoRequestsHaveIndependentBudgets()
{
    ManualClock clock;
    RequestBudget first(clock, BudgetSettings{});
    first.enterGateWait();
    clock.advance(5 * s);
    first.leaveGateWait();
    clock.advance(495 * s);
    RequestBudget second(clock, BudgetSettings{});
    QCOMPARE(first.remainingMs(sy::stage::requestTotal), 100 * s);
    QCOMPARE(second.remainingMs(sy::stage::requestTotal), 600 * s);
    second.enterGateWait();
    QCOMPARE(second.remainingMs(sy::stage::gateWait), 10 * s);
    QCOMPARE(first.phase(), RequestBudget::Phase::Routing);
    clock.advance(100 * s);
    QCOMPARE(first.expiredStage(), QString("request_total"));
    QCOMPARE(second.expiredStage(), QString("gate_wait"));
    QCOMPARE(second.remainingMs(sy::stage::requestTotal), 500 * s);
    QCOMPARE(first.latencies().queueMs, 5 * s);
    QCOMPARE(second.latencies().queueMs, 100 * s);
}

void TestBudget::tieNamesTheBroaderBudget()
{
    ManualClock clock;
    BudgetSettings settings;
    settings.gateWaitS = 20;
    settings.requestTotalS = 20;
    RequestBudget budget(clock, settings);
    budget.enterGateWait();
    QCOMPARE(budget.nextDeadline().stage, QString("request_total"));

    BudgetSettings stream;
    stream.streamIdleS = 100;
    stream.streamMaxS = 100;
    RequestBudget streaming(clock, stream);
    streaming.firstEvent();
    QCOMPARE(streaming.nextDeadline().stage, QString("stream_max"));
}

void TestBudget::latenciesRecorded()
{
    ManualClock clock;
    RequestBudget budget(clock, BudgetSettings{});
    budget.enterGateWait();
    clock.advance(2 * s);
    budget.beginAttempt(); // closes the gate wait
    clock.advance(700);
    budget.connected();
    clock.advance(s);
    budget.endAttempt(); // failover: a second attempt with its own gate wait
    budget.enterGateWait();
    clock.advance(500);
    budget.leaveGateWait();
    budget.beginAttempt();
    clock.advance(300);
    budget.connected();
    QCOMPARE(budget.attemptElapsedMs(), 300);
    clock.advance(s);
    budget.firstEvent();
    clock.advance(4 * s);
    budget.finish();
    clock.advance(9 * s); // after finish nothing moves
    const sy::StageLatencies latency = budget.latencies();
    QCOMPARE(latency.queueMs, 2500);
    QCOMPARE(latency.connectMs, 300);
    QCOMPARE(latency.firstEventMs, 2 * s + 700 + s + 500 + 300 + s);
    QCOMPARE(latency.totalMs, latency.firstEventMs + 4 * s);
    QCOMPARE(budget.attempts(), 2);
    QVERIFY(budget.nextDeadline().isNone());
    QCOMPARE(budget.expiredStage(), QString());
}

void TestBudget::latenciesUnknownAreMinusOne()
{
    ManualClock clock;
    RequestBudget rejected(clock, BudgetSettings{});
    clock.advance(10);
    rejected.finish();
    QCOMPARE(rejected.latencies().queueMs, -1);
    QCOMPARE(rejected.latencies().connectMs, -1);
    QCOMPARE(rejected.latencies().firstEventMs, -1);
    QCOMPARE(rejected.latencies().totalMs, 10);
    QCOMPARE(rejected.attemptElapsedMs(), -1);

    RequestBudget admittedAtOnce(clock, BudgetSettings{});
    admittedAtOnce.beginAttempt();
    QCOMPARE(admittedAtOnce.latencies().queueMs, 0);
    QCOMPARE(admittedAtOnce.latencies().connectMs, -1);
    QCOMPARE(admittedAtOnce.latencies().totalMs, -1);
}

void TestBudget::snapshotShowsPhaseAndRunningBudgets()
{
    ManualClock clock;
    RequestBudget budget(clock, BudgetSettings{});
    clock.advance(s);
    budget.enterGateWait();
    clock.advance(4 * s);
    RequestBudget::Snapshot snap = budget.snapshot();
    QCOMPARE(snap.phase, QString("gate_wait"));
    QCOMPARE(snap.elapsedMs, 5 * s);
    QCOMPARE(snap.next.stage, QString("gate_wait"));
    QCOMPARE(snap.remaining.size(), 2);
    QCOMPARE(snap.remaining[0].stage, QString("gate_wait"));
    QCOMPARE(snap.remaining[0].ms, 6 * s);
    QCOMPARE(snap.remaining[1].stage, QString("request_total"));
    QCOMPARE(snap.remaining[1].ms, 595 * s);

    budget.beginAttempt();
    budget.connected();
    budget.firstEvent();
    snap = budget.snapshot();
    QCOMPARE(snap.phase, QString("streaming"));
    QCOMPARE(snap.remaining.size(), 2);
    QCOMPARE(snap.remaining[0].stage, QString("stream_idle"));
    QCOMPARE(snap.remaining[1].stage, QString("stream_max"));

    clock.advance(400 * s); // past stream_idle: remaining clamps at zero
    snap = budget.snapshot();
    QCOMPARE(snap.remaining[0].ms, 0);

    budget.finish();
    snap = budget.snapshot();
    QCOMPARE(snap.phase, QString("finished"));
    QVERIFY(snap.remaining.isEmpty());
}

QTEST_GUILESS_MAIN(TestBudget)
#include "tst_budget.moc"
