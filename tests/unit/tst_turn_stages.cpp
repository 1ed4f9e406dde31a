// The stage latencies of /api/status "turn_stages" (api/TurnStages.h, util/LatencyHistogram.h): the buckets,
// the percentiles read from them, the delta between two snapshots (what bench/run.sh prints), and which stages
// a turn records, driven by a ManualClock so that every duration is exact.
#include "ManualClock.h"
#include "api/TurnStages.h"
#include "util/LatencyHistogram.h"

#include <QJsonArray>
#include <QTest>

using namespace sy;
using namespace sy::test;

namespace {

// The one bucket a single recorded value landed in: [lower, upper).
QPair<qint64, qint64> onlyBucket(const LatencyHistogram &h)
{
    const QJsonArray buckets = h.toJson().value(QLatin1String("buckets")).toArray();
    if (buckets.size() != 1)
        return {-1, -1};
    return {buckets.at(0).toArray().at(0).toInteger(), buckets.at(0).toArray().at(1).toInteger()};
}

// A bucket list of one row. (QJsonArray{QJsonArray{...}} is a copy of the inner array under clang, a nested
// array under GCC.)
QJsonArray oneRow(const QJsonArray &row)
{
    QJsonArray rows;
    rows.append(row);
    return rows;
}

} // namespace

class TestTurnStages : public QObject
{
    Q_OBJECT

private slots:
    void bucketsHoldTheirValuesAndAreNarrow()
    {
        // Exact below 32 us; above, every value lies in its bucket and the bucket is at most 1/16 of its lower
        // bound wide, bucket after bucket without gaps.
        for (qint64 v : {0LL, 1LL, 15LL, 16LL, 17LL, 31LL, 32LL, 1000LL, 65535LL, 65536LL, 999999LL, 123456789LL}) {
            const int b = LatencyHistogram::bucketOf(v);
            QVERIFY2(LatencyHistogram::lowerBoundOf(b) <= v && v < LatencyHistogram::upperBoundOf(b),
                     qPrintable(QString::number(v)));
            if (v < 32)
                QCOMPARE(LatencyHistogram::upperBoundOf(b) - LatencyHistogram::lowerBoundOf(b), qint64(1));
            else
                QVERIFY((LatencyHistogram::upperBoundOf(b) - LatencyHistogram::lowerBoundOf(b)) * 16 <=
                        LatencyHistogram::lowerBoundOf(b));
        }
        for (int b = 0; b + 1 < LatencyHistogram::kBuckets; ++b) {
            QCOMPARE(LatencyHistogram::upperBoundOf(b), LatencyHistogram::lowerBoundOf(b + 1));
            QCOMPARE(LatencyHistogram::bucketOf(LatencyHistogram::lowerBoundOf(b)), b);
            QCOMPARE(LatencyHistogram::bucketOf(LatencyHistogram::upperBoundOf(b) - 1), b);
        }
        QCOMPARE(LatencyHistogram::upperBoundOf(LatencyHistogram::kBuckets - 1), qint64(1) << 40);
        // Out of range values are clamped, never out of the array.
        QCOMPARE(LatencyHistogram::bucketOf(-5), 0);
        QCOMPARE(LatencyHistogram::bucketOf(qint64(1) << 50), LatencyHistogram::kBuckets - 1);
    }

    void percentilesComeFromTheRightBucket()
    {
        LatencyHistogram h;
        QCOMPARE(h.percentileUs(0.5), qint64(0));
        // 90 values of 10 us, 9 of 1000 us, 1 of 50000 us.
        for (int i = 0; i < 90; ++i)
            h.record(10);
        for (int i = 0; i < 9; ++i)
            h.record(1000);
        h.record(50000);
        QCOMPARE(h.count(), quint64(100));
        QCOMPARE(h.percentileUs(0.5), qint64(10));
        QCOMPARE(h.percentileUs(0.9), qint64(10));
        const qint64 p99 = h.percentileUs(0.99);
        QVERIFY2(p99 >= 1000 * 15 / 16 && p99 <= 1000 * 17 / 16, qPrintable(QString::number(p99)));
        const qint64 p100 = h.percentileUs(1.0);
        QVERIFY2(p100 >= 50000 * 15 / 16 && p100 <= 50000, qPrintable(QString::number(p100)));
        QCOMPARE(h.maxUs(), qint64(50000));
        QCOMPARE(h.meanUs(), qint64((90 * 10 + 9 * 1000 + 50000) / 100));
    }

    void aSnapshotDeltaIsWhatCameAfterIt()
    {
        LatencyHistogram h;
        for (int i = 0; i < 1000; ++i)
            h.record(20000); // before the run: slow values
        LatencyHistogram before;
        QVERIFY(LatencyHistogram::fromBucketsJson(h.toJson().value(QLatin1String("buckets")).toArray(), &before));
        QCOMPARE(before.count(), quint64(1000));
        for (int i = 0; i < 10; ++i)
            h.record(100); // the run: fast values only
        LatencyHistogram after;
        QVERIFY(LatencyHistogram::fromBucketsJson(h.toJson().value(QLatin1String("buckets")).toArray(), &after));
        const LatencyHistogram run = after.since(before);
        QCOMPARE(run.count(), quint64(10));
        const qint64 p99 = run.percentileUs(0.99);
        QVERIFY2(p99 >= 94 && p99 <= 106, qPrintable(QString::number(p99)));
        // Without the delta the run's p50 would be the old slow values'.
        QVERIFY(after.percentileUs(0.5) > 10000);
        // A restart in between (a bucket went down): the later snapshot is all new.
        LatencyHistogram restarted;
        restarted.record(100);
        QCOMPARE(restarted.since(before).count(), quint64(1));
    }

    void malformedBucketsAreRefused()
    {
        LatencyHistogram h;
        QVERIFY(!LatencyHistogram::fromBucketsJson(oneRow(QJsonArray{33, 34, 1}),
                                                   &h)); // 33 starts no bucket (32..33 is one)
        QVERIFY(!LatencyHistogram::fromBucketsJson(oneRow(QJsonArray{16, 17}), &h));
        QVERIFY(!LatencyHistogram::fromBucketsJson(oneRow(QJsonArray{16, 17, -1}), &h));
        QVERIFY(!LatencyHistogram::fromBucketsJson(oneRow(QJsonArray{QStringLiteral("16"), 17, 1}), &h));
        QVERIFY(!LatencyHistogram::fromBucketsJson(oneRow(QJsonArray{32, 36, 1}), &h)); // another layout's width
        QVERIFY(LatencyHistogram::fromBucketsJson(oneRow(QJsonArray{16, 17, 2}), &h));
        QCOMPARE(h.count(), quint64(2));
    }

    // A clean streaming turn: its own stages add up to what it put in front of the first byte; the upstream's
    // time is not among them.
    void aCleanTurnRecordsEveryStageAndTheirSum()
    {
        ManualClock clock;
        clock.advance(1000);
        TurnStageStats stats;
        TurnStageMarks marks;
        const qint64 received = clock.monotonicUs();
        clock.advance(2); // the rest of the request
        const qint64 completed = clock.monotonicUs();
        clock.advance(1); // front door
        marks.begin(&clock, &stats, received, completed);
        // parse, route: no time
        marks.claimSubmitted();
        const qint64 storeStart = clock.monotonicUs() + 3000;
        const qint64 storeEnd = storeStart + 1000;
        clock.advance(7); // wait 3, statements 1, commit and back 3
        marks.claimAnswered(true, storeStart, storeEnd);
        clock.advance(1);
        marks.dispatched();
        marks.requestSent();
        clock.advance(40); // the upstream's own time
        marks.upstreamHead();
        clock.advance(2); // usage headers, bindings
        marks.upstreamHeadHandled();
        clock.advance(20); // the upstream's: its first event comes later than its head
        marks.eventArrived();
        clock.advance(4);
        marks.firstByteToStreamingClient();
        QVERIFY(marks.firstByteRecorded());
        clock.advance(100);
        marks.firstByteToStreamingClient(); // later events do not count again
        marks.settleSubmitted();
        clock.advance(5);
        marks.settled();

        const auto ms = [&](TurnStageStats::Stage s) {
            const LatencyHistogram &h = stats.stage(s);
            return h.count() == 1 ? h.maxUs() / 1000 : -h.count();
        };
        QCOMPARE(ms(TurnStageStats::RequestRead), 2);
        QCOMPARE(ms(TurnStageStats::RequestToClaim), 1);
        QCOMPARE(ms(TurnStageStats::Claim), 7);
        QCOMPARE(ms(TurnStageStats::ClaimWait), 3);
        QCOMPARE(ms(TurnStageStats::ClaimStatements), 1);
        QCOMPARE(ms(TurnStageStats::ClaimCommitAndBack), 3);
        QCOMPARE(ms(TurnStageStats::ClaimToSent), 1);
        QCOMPARE(ms(TurnStageStats::UpstreamHead), 40);
        QCOMPARE(ms(TurnStageStats::EventToFirstByte), 4);
        QCOMPARE(ms(TurnStageStats::HeadHandling), 2);
        QCOMPARE(ms(TurnStageStats::AddedBeforeFirstByte), 2 + 1 + 7 + 1 + 2 + 4);
        QCOMPARE(ms(TurnStageStats::Settle), 5);

        const QJsonObject json = stats.toJson();
        QCOMPARE(json.value(QLatin1String("unit")).toString(), QStringLiteral("us"));
        const QJsonObject added =
            json.value(QLatin1String("stages")).toObject().value(QLatin1String("added_before_first_byte")).toObject();
        QCOMPARE(added.value(QLatin1String("count")).toInteger(), 1);
        QCOMPARE(added.value(QLatin1String("max_us")).toInteger(), 17000);
        const QPair<qint64, qint64> bucket = onlyBucket(stats.stage(TurnStageStats::AddedBeforeFirstByte));
        QVERIFY(bucket.first <= 17000 && 17000 < bucket.second);
    }

    // A non-streaming turn's first byte is its whole answer, after the upstream's last event and the settlement:
    // the stages in front of the send, then the terminal event to the settlement, the settlement, and the
    // answer. The upstream's time between its events is in none of them (red when the first event's mark is
    // kept: terminal_to_settle would hold the stream).
    void aCleanNonStreamingTurnRecordsItsAnswerStages()
    {
        ManualClock clock;
        clock.advance(1000);
        TurnStageStats stats;
        TurnStageMarks marks;
        const qint64 received = clock.monotonicUs();
        clock.advance(3);
        marks.begin(&clock, &stats, received, clock.monotonicUs());
        const qint64 parseStart = marks.now();
        clock.advance(2); // the chat translation
        marks.bodyPrepared(parseStart, false);
        marks.claimSubmitted();
        const qint64 storeStart = clock.monotonicUs() + 1000;
        clock.advance(4);
        marks.claimAnswered(true, storeStart, storeStart + 2000);
        clock.advance(1);
        marks.dispatched();
        marks.requestSent();
        clock.advance(30);
        marks.upstreamHead();
        marks.upstreamHeadHandled();
        for (int event = 0; event < 5; ++event) { // the upstream's: 50 ms between events
            clock.advance(50);
            marks.eventArrived();
        }
        clock.advance(6); // the terminal event handled, the row assembled
        marks.settleSubmitted();
        clock.advance(8);
        marks.settled();
        clock.advance(9); // the chat completion built and sent
        marks.answerToNonStreamingClient();
        QVERIFY(marks.firstByteRecorded());
        marks.answerToNonStreamingClient(); // once

        const auto ms = [&](TurnStageStats::Stage s) {
            const LatencyHistogram &h = stats.stage(s);
            return h.count() == 1 ? h.maxUs() / 1000 : -h.count();
        };
        QCOMPARE(ms(TurnStageStats::RequestRead), 3);
        QCOMPARE(ms(TurnStageStats::RequestToClaim), 2);
        QCOMPARE(ms(TurnStageStats::Claim), 4);
        QCOMPARE(ms(TurnStageStats::ClaimToSent), 1);
        QCOMPARE(ms(TurnStageStats::UpstreamHead), 30);
        QCOMPARE(ms(TurnStageStats::TerminalToSettle), 6);
        QCOMPARE(ms(TurnStageStats::Settle), 8);
        QCOMPARE(ms(TurnStageStats::SettledToAnswer), 9);
        QCOMPARE(ms(TurnStageStats::AddedBeforeAnswer), 3 + 2 + 4 + 1 + 6 + 8 + 9);
        QCOMPARE(stats.stage(TurnStageStats::AddedBeforeFirstByte).count(), quint64(0)); // streamed turns only
        QCOMPARE(stats.stage(TurnStageStats::EventToFirstByte).count(), quint64(0));
        const QJsonObject stages = stats.toJson().value(QLatin1String("stages")).toObject();
        for (const char *name : {"terminal_to_settle", "settled_to_answer", "added_before_answer", "body_prepare"})
            QCOMPARE(stages.value(QLatin1String(name)).toObject().value(QLatin1String("count")).toInteger(), 1);
        QCOMPARE(ms(TurnStageStats::BodyPrepare), 2); // inside request_to_claim here
        QCOMPARE(stats.toJson().value(QLatin1String("prepared_while_claiming")).toInteger(-1), 0);
        // A body parsed after its claim went out (Turn::claimBeforeScan()) is counted as such.
        TurnStageMarks early;
        early.begin(&clock, &stats, clock.monotonicUs(), clock.monotonicUs());
        early.claimSubmitted();
        const qint64 earlyParse = early.now();
        clock.advance(3);
        early.bodyPrepared(earlyParse, true);
        QCOMPARE(stats.stage(TurnStageStats::BodyPrepare).count(), quint64(2));
        QCOMPARE(stats.toJson().value(QLatin1String("prepared_while_claiming")).toInteger(-1), 1);
    }

    // A turn that waited at the gate, failed over or claimed twice has no clean "added" figure: only the
    // stages that describe one claim, one attempt or the settlement are recorded.
    void aTurnThatWaitedOrMovedAddsOnlyItsClaimsAndAttempts()
    {
        ManualClock clock;
        TurnStageStats stats;
        // One claim the snapshot refused at once (it never reached the store: no claim time), one won claim and
        // one attempt up to the upstream's head.
        const auto attempt = [&](TurnStageMarks &marks) {
            marks.claimSubmitted();
            marks.claimAnswered(false, 0, 0);
            marks.claimSubmitted();
            const qint64 store = clock.monotonicUs();
            clock.advance(1);
            marks.claimAnswered(true, store, store);
            marks.dispatched();
            marks.requestSent();
            clock.advance(10);
            marks.upstreamHead();
            marks.upstreamHeadHandled();
        };
        TurnStageMarks waited;
        waited.begin(&clock, &stats, clock.monotonicUs(), clock.monotonicUs());
        waited.waitedAtGate();
        clock.advance(500);
        attempt(waited);
        waited.eventArrived();
        waited.firstByteToStreamingClient();

        TurnStageMarks movedOn;
        movedOn.begin(&clock, &stats, clock.monotonicUs(), clock.monotonicUs());
        attempt(movedOn); // a 429: fails over
        attempt(movedOn);
        movedOn.eventArrived();
        movedOn.firstByteToStreamingClient();

        QCOMPARE(stats.stage(TurnStageStats::Claim).count(), quint64(3));
        QCOMPARE(stats.stage(TurnStageStats::ClaimWait).count(), quint64(3));
        QCOMPARE(stats.stage(TurnStageStats::UpstreamHead).count(), quint64(3));
        QCOMPARE(stats.stage(TurnStageStats::AddedBeforeFirstByte).count(), quint64(0));
        QCOMPARE(stats.stage(TurnStageStats::RequestToClaim).count(), quint64(0));
        QCOMPARE(stats.stage(TurnStageStats::EventToFirstByte).count(), quint64(0));
    }
};

QTEST_GUILESS_MAIN(TestTurnStages)
#include "tst_turn_stages.moc"
