// appendPieces(): a streamed event's frame and its chunk are appended with it, so every byte a client receives on a
// stream passes here. Its result must be exactly that of QByteArray::append() piece by piece, whatever state the
// array is in (null, empty with capacity, shared with another array), and it must grow the array geometrically.

#include "util/ByteAppend.h"

#include <QtTest>

using namespace sy;

class TestByteAppend : public QObject
{
    Q_OBJECT

private slots:
    void sameBytesAsAppendingEachPiece_data()
    {
        QTest::addColumn<QByteArray>("start");
        QTest::addColumn<QList<QByteArray>>("pieces");
        QTest::newRow("null, three") << QByteArray() << QList<QByteArray>{"1a\r\n", "event: x\ndata: {}\n\n", "\r\n"};
        QTest::newRow("text, with empties")
            << QByteArray("abc") << QList<QByteArray>{QByteArray(), "d", QByteArray(""), "ef", QByteArray()};
        QTest::newRow("all empty") << QByteArray("abc") << QList<QByteArray>{QByteArray(), QByteArray("")};
        QTest::newRow("NUL bytes") << QByteArray("a\0b", 3) << QList<QByteArray>{QByteArray("\0\0", 2), "c"};
        QTest::newRow("large piece") << QByteArray("head") << QList<QByteArray>{QByteArray(100000, 'x'), "tail"};
    }
    void sameBytesAsAppendingEachPiece()
    {
        QFETCH(QByteArray, start);
        QFETCH(QList<QByteArray>, pieces);
        QByteArray expected = start;
        for (const QByteArray &p : pieces)
            expected.append(p);
        QByteArray got = start;
        QVERIFY(pieces.size() <= 5);
        const auto at = [&pieces](qsizetype i) {
            return i < pieces.size() ? QByteArrayView(pieces[i]) : QByteArrayView();
        };
        appendPieces(got, {at(0), at(1), at(2), at(3), at(4)});
        QCOMPARE(got, expected);
        QCOMPARE(got.size(), expected.size());
        QCOMPARE(got.constData()[got.size()], '\0'); // still terminated, as QByteArray promises
    }

    // The array it was copied from keeps its bytes: the append detaches a shared array first.
    void aSharedArrayIsDetached()
    {
        QByteArray original("event: a\n");
        original.reserve(256); // room at its end: an append in place would write into the shared storage
        QByteArray copy = original;
        appendPieces(copy, {"data: ", "{}", "\n\n"});
        QCOMPARE(original, QByteArray("event: a\n"));
        QCOMPARE(original.constData()[original.size()], '\0'); // an append in place would have written here
        QCOMPARE(copy, QByteArray("event: a\ndata: {}\n\n"));
        QVERIFY(original.constData() != copy.constData());
    }

    // An array reused for the next frame keeps its storage (TurnSink's formatSseInto() relies on it).
    void anArrayWithRoomIsNotMoved()
    {
        QByteArray out;
        out.reserve(1024);
        const char *storage = out.constData();
        for (int i = 0; i < 10; ++i) {
            out.resize(0);
            appendPieces(out, {"event: response.output_text.delta\n", "data: ", QByteArray(200, 'x'), "\n\n"});
            QCOMPARE(out.size(), 34 + 6 + 200 + 2);
        }
        QCOMPARE(static_cast<const void *>(out.constData()), static_cast<const void *>(storage));
    }

    // 10,000 appends of 30 bytes change the capacity a few dozen times at most, not once per append (counted by
    // capacity, not by address: glibc's realloc often grows a block in place).
    void growthIsGeometric()
    {
        QByteArray out;
        int growths = 0;
        qsizetype capacity = out.capacity();
        for (int i = 0; i < 10000; ++i) {
            appendPieces(out, {"0123456789", "0123456789", "0123456789"});
            if (out.capacity() != capacity) {
                ++growths;
                capacity = out.capacity();
            }
        }
        QCOMPARE(out.size(), 300000);
        QVERIFY2(growths < 32, qPrintable(QString::number(growths)));
    }
};

QTEST_GUILESS_MAIN(TestByteAppend)
#include "tst_byte_append.moc"
