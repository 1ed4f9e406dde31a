// Request ids (util/Ids.h): "req_" + 24 hex chars, the request's start first. What the time prefix is for is
// shown on a real SQLite file: a batch of new rows in a large request log writes a few pages of the primary key's
// index, where ids without it would write one page per row.
#include "store/Database.h"
#include "store/RequestLogRepository.h"
#include "util/Ids.h"

#include <QFileInfo>
#include <QRegularExpression>
#include <QSet>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>

using namespace sy;

namespace {

// 2026-11-30T04:00:00.123Z
constexpr qint64 kStart = 1796011200123;

RequestLogRecord row(const QString &id, qint64 startedAtMs)
{
    RequestLogRecord r;
    r.requestId = id;
    r.startedAtMs = startedAtMs;
    r.route = QStringLiteral("/backend-api/codex/responses");
    r.status = QStringLiteral("completed");
    return r;
}

bool insertAll(Database &db, const QList<RequestLogRecord> &rows, QString *error)
{
    Database::StatementScope statements(db);
    Transaction tx(db);
    if (!tx.begin(error))
        return false;
    RequestLogRepository log(db);
    for (const RequestLogRecord &r : rows) {
        if (!log.insert(r, error))
            return false;
    }
    return tx.commit(error);
}

} // namespace

class tst_RequestIds : public QObject
{
    Q_OBJECT

private slots:
    void anIdIsReqAnd24HexCharsWithItsStartFirst()
    {
        static const QRegularExpression shape(QStringLiteral("^req_[0-9a-f]{24}$"));
        const QString id = newRequestId(kStart);
        QVERIFY2(shape.match(id).hasMatch(), qPrintable(id));
        QCOMPARE(id.mid(4, 12).toULongLong(nullptr, 16), quint64(kStart));
        // Only the low 48 bits of the time are kept (Unix ms fits them until the year 10889).
        QCOMPARE(newRequestId(-1).mid(4, 12), QStringLiteral("ffffffffffff"));
        QVERIFY(shape.match(newRequestId(0)).hasMatch());
        const QString opaque = newOpaqueId();
        QVERIFY2(QRegularExpression(QStringLiteral("^[0-9a-f]{24}$")).match(opaque).hasMatch(), qPrintable(opaque));
    }

    void idsSortByTheirStartAndDifferWithinAMillisecond()
    {
        QString previous;
        for (qint64 t = kStart; t < kStart + 2000; t += 7) {
            const QString id = newRequestId(t);
            QVERIFY2(previous < id, qPrintable(previous + QStringLiteral(" / ") + id));
            previous = id;
        }
        QSet<QString> sameMs, opaque;
        for (int i = 0; i < 10000; ++i) {
            sameMs.insert(newRequestId(kStart));
            opaque.insert(newOpaqueId());
        }
        QCOMPARE(sameMs.size(), 10000);
        QCOMPARE(opaque.size(), 10000);
    }

    // 40 new rows in one transaction, as a group of settlements commits them, into a log of 20,000 rows: the WAL
    // frames the commit writes are the pages it changed. With ids as newRequestId makes them, the 40 keys of the
    // primary key's index go to its last page. With ids that ignore the time (those of before: 24 random hex
    // chars) in a log of such ids, they go to about 40 leaves of it.
    void newRowsOfALargeLogWriteAFewPagesOfItsIdIndex()
    {
        const auto timeFirst = [](qint64 startedAtMs) -> QString { return newRequestId(startedAtMs); };
        const auto random = [](qint64) -> QString { return QStringLiteral("req_") + newOpaqueId(); };
        const qint64 framesTimeFirst = framesOfANewBatch(timeFirst);
        if (framesTimeFirst == kNot4KiBPages)
            QSKIP("the bounds below assume SQLite's default page of 4 KiB");
        const qint64 framesRandom = framesOfANewBatch(random);
        qInfo("40 rows into 20,000: %lld WAL frames with time-first ids, %lld with random ones", framesTimeFirst,
              framesRandom);
        // The table's last page, the last page of each of its four indexes, page 1 (the file grew), and the
        // pages a split adds: 15 when this test was written.
        QVERIFY2(framesTimeFirst > 0 && framesTimeFirst <= 20, qPrintable(QString::number(framesTimeFirst)));
        QVERIFY2(framesRandom > 2 * framesTimeFirst,
                 qPrintable(QStringLiteral("%1 vs %2 WAL frames").arg(framesRandom).arg(framesTimeFirst)));
    }

private:
    static constexpr qint64 kNot4KiBPages = -2;

    template <typename MakeId> qint64 framesOfANewBatch(MakeId makeId)
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("log.sqlite"));
        Database db;
        QString error;
        if (!dir.isValid() || !db.open(path, &error)) {
            qWarning() << "cannot open" << path << error;
            return -1;
        }
        constexpr int kOld = 20000, kNew = 40;
        QList<RequestLogRecord> old, fresh;
        for (int i = 0; i < kOld; ++i)
            old.append(row(makeId(kStart + i * 100), kStart + i * 100));
        const qint64 later = kStart + qint64(kOld) * 100;
        for (int i = 0; i < kNew; ++i)
            fresh.append(row(makeId(later + i), later + i));
        QSqlQuery pageSize = db.query();
        if (!insertAll(db, old, &error) || !db.exec(QStringLiteral("PRAGMA wal_checkpoint(TRUNCATE)"), &error) ||
            !pageSize.exec(QStringLiteral("PRAGMA page_size")) || !pageSize.next()) {
            qWarning() << "cannot fill" << path << error;
            return -1;
        }
        // The bounds above assume SQLite's default page of 4 KiB (about 120 ids per leaf).
        if (pageSize.value(0).toLongLong() != 4096)
            return kNot4KiBPages;
        const qint64 frameBytes = pageSize.value(0).toLongLong() + 24;
        pageSize.finish();
        const QString wal = path + QStringLiteral("-wal");
        if (QFileInfo(wal).size() != 0 || !insertAll(db, fresh, &error)) {
            qWarning() << "WAL not empty, or cannot insert" << error;
            return -1;
        }
        return (QFileInfo(wal).size() - 32) / frameBytes; // a 32-byte header, then the frames
    }
};

QTEST_GUILESS_MAIN(tst_RequestIds)
#include "tst_request_ids.moc"
