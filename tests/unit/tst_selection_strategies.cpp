#include "routing/Selection.h"

#include <QHash>
#include <QtTest>

using namespace sy;

namespace {

constexpr qint64 now = 1796000000000;
constexpr qint64 minute = 60 * 1000;

Candidate account(const QString &id, const QString &plan = QStringLiteral("plus"))
{
    Candidate c;
    c.accountId = id;
    c.alias = id + QStringLiteral("-alias");
    c.plan = plan;
    c.freeSlots = 4;
    return c;
}

Candidate withUsage(Candidate c, std::optional<double> weekly, std::optional<double> fiveHour = std::nullopt)
{
    c.usage.secondary.usedPercent = weekly;
    c.usage.primary.usedPercent = fiveHour;
    return c;
}

Candidate selectedAt(Candidate c, qint64 ms)
{
    c.lastSelectedMs = ms;
    return c;
}

SelectionResult select(const QList<Candidate> &cs, const SelectionRequest &req = {},
                       Strategy strategy = Strategy::UsageWeighted, qint64 at = now)
{
    QRandomGenerator rng(42);
    return selectAccount(cs, req, strategy, at, rng);
}

QHash<QString, int> draws(const QList<Candidate> &cs, int n, quint32 seed = 7)
{
    QRandomGenerator rng(seed);
    QHash<QString, int> counts;
    for (int i = 0; i < n; ++i) {
        const SelectionResult r = selectAccount(cs, {}, Strategy::CapacityWeighted, now, rng);
        counts[r.accountId] += 1;
    }
    return counts;
}

} // namespace

class TestSelectionStrategies : public QObject
{
    Q_OBJECT

private slots:
    void usageWeightedOrder()
    {
        const QList<Candidate> cs{
            withUsage(account(QStringLiteral("a")), 50.0, 10.0),
            withUsage(account(QStringLiteral("b")), 20.0, 90.0),
            withUsage(account(QStringLiteral("c")), 20.0, 30.0),
            withUsage(account(QStringLiteral("d")), 20.0, 30.0),
        };
        // Weekly first, then 5 h, then least recently selected.
        QList<Candidate> v = cs;
        v[3] = selectedAt(v[3], now - 10 * minute);
        v[2] = selectedAt(v[2], now - minute);
        QCOMPARE(select(v).accountId, QStringLiteral("d"));
        v[3].usage.primary.usedPercent = 31.0;
        QCOMPARE(select(v).accountId, QStringLiteral("c"));
        v[0].usage.secondary.usedPercent = 19.0;
        QCOMPARE(select(v).accountId, QStringLiteral("a"));
        // Unknown usage counts as 0 % used.
        v.append(account(QStringLiteral("e")));
        QCOMPARE(select(v).accountId, QStringLiteral("e"));
        // A weekly window whose reset passed counts as 0 % too; 5 h then decides against "e".
        v[0].usage.secondary = QuotaWindow{99.0, 10080, now - 1};
        v[4].usage.primary.usedPercent = 11.0;
        QCOMPARE(select(v).accountId, QStringLiteral("a"));
    }

    void roundRobinLeastRecentlySelected()
    {
        const QList<Candidate> cs{selectedAt(withUsage(account(QStringLiteral("a")), 0.0), now - minute),
                                  selectedAt(withUsage(account(QStringLiteral("b")), 99.0), now - 3 * minute),
                                  selectedAt(account(QStringLiteral("c")), now - 2 * minute)};
        const SelectionResult r = select(cs, {}, Strategy::RoundRobin);
        QCOMPARE(r.accountId, QStringLiteral("b"));
        QCOMPARE(r.reason, QStringLiteral("strategy:round_robin"));
        // Never-selected beats everything; equal times fall to the id.
        QList<Candidate> v = cs;
        v.append(account(QStringLiteral("z")));
        v.append(account(QStringLiteral("y")));
        QCOMPARE(select(v, {}, Strategy::RoundRobin).accountId, QStringLiteral("y"));
    }

    void fillFirstHighestBelowFull()
    {
        QList<Candidate> cs{withUsage(account(QStringLiteral("a")), 10.0, 40.0),
                            withUsage(account(QStringLiteral("b")), 10.0, 100.0),
                            withUsage(account(QStringLiteral("c")), 10.0, 75.0),
                            withUsage(account(QStringLiteral("d")), 10.0, std::nullopt)};
        SelectionResult r = select(cs, {}, Strategy::FillFirst);
        QCOMPARE(r.accountId, QStringLiteral("c"));
        QCOMPARE(r.reason, QStringLiteral("strategy:fill_first"));
        cs[2].usage.primary.usedPercent = 100.0;
        QCOMPARE(select(cs, {}, Strategy::FillFirst).accountId, QStringLiteral("a"));
        // When every account is full, one is still chosen (the upstream decides), by the tie-break.
        for (Candidate &c : cs)
            c.usage.primary.usedPercent = 100.0;
        cs[3] = selectedAt(cs[3], now - minute);
        cs[0] = selectedAt(cs[0], now - 2 * minute);
        cs[1] = selectedAt(cs[1], now - minute);
        cs[2] = selectedAt(cs[2], now - minute);
        QCOMPARE(select(cs, {}, Strategy::FillFirst).accountId, QStringLiteral("a"));
    }

    void tiesByLastSelectedThenId()
    {
        const QList<Candidate> cs{account(QStringLiteral("m")), account(QStringLiteral("k")),
                                  account(QStringLiteral("t"))};
        for (Strategy s : {Strategy::UsageWeighted, Strategy::RoundRobin, Strategy::FillFirst})
            QCOMPARE(select(cs, {}, s).accountId, QStringLiteral("k"));
        QList<Candidate> v = cs;
        v[1] = selectedAt(v[1], now - minute);
        v[2] = selectedAt(v[2], now - minute);
        for (Strategy s : {Strategy::UsageWeighted, Strategy::RoundRobin, Strategy::FillFirst})
            QCOMPARE(select(v, {}, s).accountId, QStringLiteral("m"));
    }

    void capacityWeightedDistribution()
    {
        const QList<Candidate> cs{withUsage(account(QStringLiteral("plus"), QStringLiteral("plus")), 30.0),
                                  withUsage(account(QStringLiteral("pro"), QStringLiteral("pro")), 30.0),
                                  withUsage(account(QStringLiteral("full"), QStringLiteral("pro")), 100.0)};
        const auto counts = draws(cs, 10000);
        QCOMPARE(counts.value(QStringLiteral("full")), 0);
        QCOMPARE(counts.value(QStringLiteral("plus")) + counts.value(QStringLiteral("pro")), 10000);
        const double ratio = double(counts.value(QStringLiteral("pro"))) / counts.value(QStringLiteral("plus"));
        QVERIFY2(ratio > 6.67 * 0.85 && ratio < 6.67 * 1.15, qPrintable(QString::number(ratio)));
    }

    void capacityWeightedUsesRemainingWeeklyCapacity()
    {
        // Remaining weekly capacity: 1 x 1.0 vs 1 x 0.25 -> 4 : 1. Unknown usage counts as unused.
        const QList<Candidate> cs{account(QStringLiteral("fresh")), withUsage(account(QStringLiteral("used")), 75.0)};
        const auto counts = draws(cs, 10000, 99);
        const double ratio = double(counts.value(QStringLiteral("fresh"))) / counts.value(QStringLiteral("used"));
        QVERIFY2(ratio > 4 * 0.85 && ratio < 4 * 1.15, qPrintable(QString::number(ratio)));
    }

    void capacityWeightedAllZeroFallsBackToUsageWeighted()
    {
        const QList<Candidate> cs{withUsage(account(QStringLiteral("a")), 100.0, 80.0),
                                  withUsage(account(QStringLiteral("b")), 100.0, 20.0)};
        const SelectionResult r = select(cs, {}, Strategy::CapacityWeighted);
        QCOMPARE(r.accountId, QStringLiteral("b"));
        QCOMPARE(r.reason, QStringLiteral("strategy:usage_weighted"));
    }

    void capacityWeightedIsReproducibleAndOrderIndependent()
    {
        const QList<Candidate> cs{account(QStringLiteral("a")), account(QStringLiteral("b"), QStringLiteral("pro")),
                                  account(QStringLiteral("c"), QStringLiteral("free"))};
        QList<Candidate> reversed(cs.rbegin(), cs.rend());
        QRandomGenerator r1(1234), r2(1234);
        QStringList first, second;
        for (int i = 0; i < 50; ++i) {
            first << selectAccount(cs, {}, Strategy::CapacityWeighted, now, r1).accountId;
            second << selectAccount(reversed, {}, Strategy::CapacityWeighted, now, r2).accountId;
        }
        QCOMPARE(first, second);
        QVERIFY(QSet<QString>(first.begin(), first.end()).size() >= 2); // actually random, not constant
    }

    void planWeights_data()
    {
        QTest::addColumn<QString>("plan");
        QTest::addColumn<double>("weight");
        for (const char *p : {"plus", "team", "business", "edu", "", "something_new"})
            QTest::newRow(p) << QString::fromLatin1(p) << 1.0;
        QTest::newRow("prolite") << "prolite" << 5.0;
        QTest::newRow("Pro-Lite") << "Pro-Lite" << 5.0;
        QTest::newRow("pro_lite") << "pro_lite" << 5.0;
        QTest::newRow("pro") << "pro" << 6.67;
        QTest::newRow("PRO") << " PRO " << 6.67;
        QTest::newRow("enterprise") << "enterprise" << 6.67;
        QTest::newRow("free") << "free" << 0.15;
    }

    void planWeights()
    {
        QFETCH(QString, plan);
        QFETCH(double, weight);
        QCOMPARE(planWeight(plan), weight);
    }

    void strategyNames()
    {
        for (Strategy s :
             {Strategy::CapacityWeighted, Strategy::UsageWeighted, Strategy::RoundRobin, Strategy::FillFirst})
            QCOMPARE(parseStrategy(strategyName(s)), std::optional<Strategy>(s));
        QCOMPARE(strategyName(Strategy::CapacityWeighted), QStringLiteral("capacity_weighted"));
        QCOMPARE(strategyName(Strategy::UsageWeighted), QStringLiteral("usage_weighted"));
        QCOMPARE(strategyName(Strategy::RoundRobin), QStringLiteral("round_robin"));
        QCOMPARE(strategyName(Strategy::FillFirst), QStringLiteral("fill_first"));
        QCOMPARE(parseStrategy(QStringLiteral(" Round_Robin ")), std::optional<Strategy>(Strategy::RoundRobin));
        QVERIFY(!parseStrategy(QStringLiteral("random")));
        QVERIFY(!parseStrategy(QString()));
    }
};

QTEST_GUILESS_MAIN(TestSelectionStrategies)
#include "tst_selection_strategies.moc"
