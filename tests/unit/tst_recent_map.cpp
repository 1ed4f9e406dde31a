// RecentMap, the two-generation cache in front of durable tables (AccountPool's anchors and turn states): the
// latest `generation` entries are always found, older ones go a generation at a time, and it never holds more
// than two generations.
#include "api/RecentMap.h"

#include <QTest>

using namespace sy;

class TestRecentMap : public QObject
{
    Q_OBJECT
private slots:
    void keepsTheLatestGenerationAndBoundsTheRest()
    {
        RecentMap<int, QString> map(4);
        for (int i = 0; i < 10; ++i) {
            map.insert(i, QString::number(i));
            QVERIFY(map.size() <= 8);
            // The latest four are always there, whatever the moment of the last swap.
            for (int k = qMax(0, i - 3); k <= i; ++k)
                QCOMPARE(map.value(k).value_or(QString()), QString::number(k));
        }
        // After 10 inserts: the current generation holds 8, 9; the previous one 4..7; 0..3 are gone.
        QCOMPARE(map.size(), 6);
        QVERIFY(!map.value(3).has_value());
        QCOMPARE(map.value(4).value_or(QString()), QStringLiteral("4"));
    }

    void updatingAKeyDoesNotStartAGeneration()
    {
        RecentMap<int, QString> map(2);
        map.insert(1, QStringLiteral("a"));
        map.insert(2, QStringLiteral("b"));
        map.insert(2, QStringLiteral("c")); // the current generation is full, but 2 is already in it
        QCOMPARE(map.size(), 2);
        QCOMPARE(map.value(2).value_or(QString()), QStringLiteral("c"));
        map.insert(3, QStringLiteral("d"));
        QCOMPARE(map.size(), 3);
        QCOMPARE(map.value(1).value_or(QString()), QStringLiteral("a"));
    }
};

QTEST_GUILESS_MAIN(TestRecentMap)
#include "tst_recent_map.moc"
