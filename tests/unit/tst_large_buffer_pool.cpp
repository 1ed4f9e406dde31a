#include "util/LargeBufferPool.h"

#include <QObject>
#include <QScopeGuard>
#include <QTest>
#include <memory>

using namespace sy;

namespace {

constexpr qsizetype MiB = 1024 * 1024;

// A buffer as HttpConnection makes one for a body of `bytes`, written full.
QByteArray written(qsizetype bytes, char fill = 'x')
{
    QByteArray b;
    b.reserve(LargeBufferPool::roomFor(bytes));
    b.fill(fill, bytes);
    return b;
}

} // namespace

class TstLargeBufferPool : public QObject
{
    Q_OBJECT

private slots:
    void init() { LargeBufferPool::local().setKeeping(true); }
    void cleanup() { LargeBufferPool::local().setKeeping(false); }

    void aBufferGivenBackIsTakenWithItsMemory()
    {
        LargeBufferPool &pool = LargeBufferPool::local();
        QByteArray b = written(MiB);
        const void *memory = b.constData();
        const quint64 reuses = pool.reuses();
        pool.giveBack(std::move(b));
        QCOMPARE(pool.buffersKept(), 1);
        // The same body size, and one a little larger (the next turn of a growing conversation).
        for (const qsizetype bytes : {MiB, MiB + MiB / 20}) {
            QByteArray again = pool.takeBuffer(bytes);
            QVERIFY(!again.isNull());
            QCOMPARE(static_cast<const void *>(again.constData()), memory);
            QCOMPARE(again.size(), qsizetype(0));
            QVERIFY(again.capacity() >= bytes);
            // Appending within the capacity stays in place.
            again.append(QByteArray(bytes, 'y'));
            QCOMPARE(static_cast<const void *>(again.constData()), memory);
            QCOMPARE(pool.buffersKept(), 0);
            pool.giveBack(std::move(again));
        }
        QCOMPARE(pool.reuses(), reuses + 2);
    }

    void onlyABufferThatFitsIsTaken()
    {
        LargeBufferPool &pool = LargeBufferPool::local();
        pool.giveBack(written(MiB));
        QVERIFY(pool.takeBuffer(2 * MiB).isNull());    // too small
        QVERIFY(pool.takeBuffer(MiB / 2).isNull());    // would keep half of it as slack for a whole turn
        QVERIFY(pool.takeBuffer(100 * 1024).isNull()); // small bodies are not the pool's
        QCOMPARE(pool.buffersKept(), 1);
        // Of two that fit, the smaller.
        pool.clear();
        QByteArray smaller;
        smaller.reserve(MiB + 10 * 1024);
        QByteArray bigger;
        bigger.reserve(MiB + 40 * 1024);
        const void *smallerMemory = smaller.constData();
        const void *biggerMemory = bigger.constData();
        pool.giveBack(std::move(smaller)); // the older one: not simply the newest is taken
        pool.giveBack(std::move(bigger));
        QCOMPARE(static_cast<const void *>(pool.takeBuffer(MiB).constData()), smallerMemory);
        QCOMPARE(static_cast<const void *>(pool.takeBuffer(MiB).constData()), biggerMemory);
    }

    // capacity() counts the free space in front of the data as well: a buffer whose front was removed can hold
    // only what fits from its data on, and is taken only for a body that fits there.
    void aBufferWithFreeSpaceInFrontCountsOnlyTheSpaceAfterIt()
    {
        LargeBufferPool &pool = LargeBufferPool::local();
        QByteArray b = written(MiB);
        const qsizetype allocated = b.capacity();
        b.remove(0, 16 * 1024); // less than the slack a kept buffer may have over a body
        const qsizetype front = b.data_ptr().freeSpaceAtBegin();
        QVERIFY2(front >= 8 * 1024, "remove() from the front no longer leaves free space there; the case is moot");
        QCOMPARE(b.capacity(), allocated); // what the pool must not take at its word
        const qsizetype usable = allocated - front;
        const void *memory = b.constData();
        pool.giveBack(std::move(b));
        QCOMPARE(pool.buffersKept(), 1);
        QCOMPARE(pool.bytesKept(), allocated); // memory is the whole allocation
        // A body that the whole allocation would take, but not the space from the data on: not this buffer.
        QVERIFY(pool.takeBuffer(usable + 1).isNull());
        QCOMPARE(pool.buffersKept(), 1);
        // A body that fits from the data on: taken, and filling it stays in that memory.
        QByteArray again = pool.takeBuffer(usable - 1024);
        QCOMPARE(static_cast<const void *>(again.constData()), memory);
        again.append(QByteArray(usable - 1024, 'y'));
        QCOMPARE(static_cast<const void *>(again.constData()), memory);
        pool.giveBack(std::move(again));
        pool.clear();

        // Half of the allocation in front of the data: the space after it would hold a body of that half, but the
        // whole allocation is far more than such a body needs (a request keeping it would squeeze it): not taken.
        QByteArray halved = written(2 * MiB);
        halved.remove(0, MiB);
        const qsizetype halvedUsable = halved.capacity() - halved.data_ptr().freeSpaceAtBegin();
        pool.giveBack(std::move(halved));
        QCOMPARE(pool.buffersKept(), 1);
        QVERIFY(pool.takeBuffer(halvedUsable).isNull());
        QVERIFY(pool.takeBuffer(halvedUsable - 4096).isNull());
        QCOMPARE(pool.buffersKept(), 1);
    }

    void sharedSmallOrRawBuffersAreNotKept()
    {
        LargeBufferPool &pool = LargeBufferPool::local();
        QByteArray b = written(MiB);
        const QByteArray stillHeld = b; // someone else (an upstream write) holds the same bytes
        pool.giveBack(b);
        pool.giveBack(written(100 * 1024));
        pool.giveBack(QByteArray::fromRawData(stillHeld.constData(), stillHeld.size()));
        QCOMPARE(pool.buffersKept(), 0);
        QCOMPARE(pool.bytesKept(), qsizetype(0));
    }

    void nothingIsKeptUnlessTheThreadSweeps()
    {
        LargeBufferPool &pool = LargeBufferPool::local();
        pool.setKeeping(false);
        pool.giveBack(written(MiB));
        pool.giveBackObject("thing", std::make_shared<int>(1), 1, 1);
        QCOMPARE(pool.buffersKept(), 0);
        QVERIFY(!pool.takeObject("thing", 1));
    }

    void aSweepDropsWhatWentUnusedSinceThePreviousOne()
    {
        LargeBufferPool &pool = LargeBufferPool::local();
        pool.giveBack(written(MiB));
        pool.sweep();
        QCOMPARE(pool.buffersKept(), 1); // given back since the previous sweep
        pool.sweep();
        QCOMPARE(pool.buffersKept(), 0);

        pool.giveBack(written(MiB));
        pool.giveBackObject("thing", std::make_shared<int>(7), MiB, MiB);
        pool.sweep();
        pool.giveBack(pool.takeBuffer(MiB)); // used again: kept through the next sweep
        pool.sweep();
        QCOMPARE(pool.buffersKept(), 1);
        QVERIFY(!pool.takeObject("thing", MiB));
    }

    void limitsDropTheOldestFirst()
    {
        LargeBufferPool &pool = LargeBufferPool::local();
        QList<const void *> memory;
        for (int i = 0; i < LargeBufferPool::kMaxBuffers + 1; ++i) {
            QByteArray b = written(MiB + i * 1024);
            memory.append(b.constData());
            pool.giveBack(std::move(b));
        }
        QCOMPARE(pool.buffersKept(), LargeBufferPool::kMaxBuffers);
        // The oldest (and smallest) made way: the smallest that fits now is the second one.
        const QByteArray taken = pool.takeBuffer(MiB);
        QVERIFY(!taken.isNull());
        QCOMPARE(static_cast<const void *>(taken.constData()), memory.at(1));
        pool.clear();

        // Bytes: the buffers' capacities stay under kMaxBufferBytes (reserved, not written).
        for (int i = 0; i < 3; ++i) {
            QByteArray b;
            b.reserve(LargeBufferPool::kMaxBufferBytes / 2 - MiB);
            pool.giveBack(std::move(b));
        }
        QCOMPARE(pool.buffersKept(), 2);
        QVERIFY(pool.bytesKept() <= LargeBufferPool::kMaxBufferBytes);
        pool.clear();

        // Objects count in bytesKept() but not against the buffers' limits, and buffers never push one out.
        pool.giveBackObject("parser", std::make_shared<int>(1), MiB, 200 * MiB);
        for (int i = 0; i < LargeBufferPool::kMaxBuffers + 1; ++i)
            pool.giveBack(written(MiB));
        QCOMPARE(pool.buffersKept(), LargeBufferPool::kMaxBuffers);
        QVERIFY(pool.bytesKept() >= 200 * MiB);
        QVERIFY(pool.takeObject("parser", MiB));
    }

    void oneObjectOfEachKind()
    {
        LargeBufferPool &pool = LargeBufferPool::local();
        auto first = std::make_shared<int>(1);
        auto second = std::make_shared<int>(2);
        pool.giveBackObject("parser", first, MiB, MiB);
        pool.giveBackObject("other", std::make_shared<int>(3), MiB, MiB);
        pool.giveBackObject("parser", second, MiB, MiB);
        QCOMPARE(pool.bytesKept(), 2 * MiB);
        QCOMPARE(std::static_pointer_cast<int>(pool.takeObject("parser", MiB)).get(), second.get());
        QVERIFY(!pool.takeObject("parser", MiB));
        QCOMPARE(*std::static_pointer_cast<int>(pool.takeObject("other", MiB)), 3);
    }

    void anObjectIsTakenOnlyForAJobItFits()
    {
        // Kept for 10 MiB: not for more (too small), nor for under half of it (a huge parser would otherwise
        // stay alive through a stream of ordinary bodies).
        LargeBufferPool &pool = LargeBufferPool::local();
        pool.giveBackObject("parser", std::make_shared<int>(1), 10 * MiB, 140 * MiB);
        QVERIFY(!pool.takeObject("parser", 11 * MiB));
        QVERIFY(!pool.takeObject("parser", 4 * MiB));
        QVERIFY(pool.takeObject("parser", 6 * MiB));
    }

    void switchedOffForABRuns()
    {
        LargeBufferPool &pool = LargeBufferPool::local();
        pool.setKeeping(false);
        qputenv("SWITCHYARD_LARGE_BUFFERS", "off");
        const auto unset = qScopeGuard([] { qunsetenv("SWITCHYARD_LARGE_BUFFERS"); });
        QObject owner;
        LargeBufferPool::startSweeping(&owner, 20);
        QVERIFY(!pool.keeping());
        pool.giveBack(written(MiB));
        QCOMPARE(pool.buffersKept(), 0);
    }

    void theSweepRunsOnItsOwnersThreadUntilTheOwnerGoes()
    {
        LargeBufferPool &pool = LargeBufferPool::local();
        pool.setKeeping(false);
        auto owner = std::make_unique<QObject>();
        LargeBufferPool::startSweeping(owner.get(), 20);
        QVERIFY(pool.keeping());
        pool.giveBack(written(MiB));
        QCOMPARE(pool.buffersKept(), 1);
        QTRY_COMPARE_WITH_TIMEOUT(pool.buffersKept(), 0, 5000); // two sweeps without a use
        pool.giveBack(written(MiB));
        owner.reset();
        QVERIFY(!pool.keeping());
        QCOMPARE(pool.buffersKept(), 0);
    }
};

QTEST_GUILESS_MAIN(TstLargeBufferPool)
#include "tst_large_buffer_pool.moc"
