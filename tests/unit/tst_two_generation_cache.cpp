// The bounded binding cache of AccountPool (session, turn-state and anchor bindings): memory stays below twice
// the limit however many entries go in, and the latest `limit` entries are always still there.
#include "util/TwoGenerationCache.h"

#include <QTest>

using namespace sy;

class TestTwoGenerationCache : public QObject
{
    Q_OBJECT

private slots:
    void boundedAndKeepsTheLatest()
    {
        TwoGenerationCache<QString, int> cache(10);
        for (int i = 0; i < 1000; ++i) {
            cache.insert(QStringLiteral("k%1").arg(i), i);
            QVERIFY2(cache.size() <= 20, qPrintable(QString::number(cache.size())));
            // The latest ten (and the one just written) are always found.
            for (int j = qMax(0, i - 9); j <= i; ++j)
                QCOMPARE(cache.value(QStringLiteral("k%1").arg(j)), j);
        }
        QCOMPARE(cache.find(QStringLiteral("k0")), nullptr);
        QCOMPARE(cache.value(QStringLiteral("k0")), 0);
    }

    void overwriteKeepsOneEntry()
    {
        TwoGenerationCache<QString, QString> cache(3);
        for (int i = 0; i < 100; ++i)
            cache.insert(QStringLiteral("same"), QString::number(i));
        QCOMPARE(cache.size(), 1);
        QCOMPARE(cache.value(QStringLiteral("same")), QStringLiteral("99"));
    }

    void anOldEntryRewrittenMovesToTheYoungGeneration()
    {
        TwoGenerationCache<int, int> cache(2);
        cache.insert(1, 1);
        cache.insert(2, 2);
        cache.insert(3, 3); // 1 and 2 are old now
        cache.insert(1, 10);
        cache.insert(4, 4); // young {3, 1} rotates: old = {3, 1}
        QCOMPARE(cache.value(1), 10);
        QVERIFY(!cache.find(2));
    }
};

QTEST_GUILESS_MAIN(TestTwoGenerationCache)
#include "tst_two_generation_cache.moc"
