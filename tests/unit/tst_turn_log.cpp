// A turn's request-log row and the model its large body's scan finds after the turn was booked
// (api/TurnLog: writeRequestLog, fillBookedModel), through a real store thread on an SQLite file. The scan's answer
// can reach the store before or after the row: after a store outage both wait in memory, and a fill queued while
// the store comes back can run ahead of the row. Either way the row ends with the scan's model. (The outage itself,
// through a turn: integration.tst_large_body_scan.)
#include "api/TurnLog.h"
#include "store/Database.h"
#include "store/RequestLogRepository.h"
#include "store/StoreWorker.h"
#include "util/Ids.h"

#include <QSignalSpy>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>
#include <memory>

using namespace sy;

namespace {

const qint64 kStart = 1796000000000;

RequestLogRecord cancelledTurn(const QString &requestId, std::optional<QString> model = std::nullopt)
{
    RequestLogRecord r;
    r.requestId = requestId;
    r.startedAtMs = kStart;
    r.route = QStringLiteral("/backend-api/codex/responses");
    r.model = std::move(model);
    r.status = QStringLiteral("cancelled");
    return r;
}

std::optional<ResponsesScan> scanFound(const QString &model)
{
    ResponsesScan scan;
    scan.model = model;
    return scan;
}

} // namespace

class tst_TurnLog : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    std::unique_ptr<StoreWorker> m_store;

    // The row's model ("-" for none, "no row" without one), read on the store thread after every job before it.
    QString modelOf(const QString &requestId)
    {
        QString model = QStringLiteral("no row");
        QString error;
        const bool ok = m_store->runBlocking(
            [&](Database &db, QString *) {
                QSqlQuery q = db.query();
                q.prepare(QStringLiteral("SELECT COALESCE(model, '-') FROM request_log WHERE request_id = ?"));
                q.addBindValue(requestId);
                if (q.exec() && q.next())
                    model = q.value(0).toString();
                return true;
            },
            &error, false);
        return ok ? model : error;
    }

    // Writes the row and waits for its answer.
    bool writeRow(const RequestLogRecord &record)
    {
        bool done = false, written = false;
        writeRequestLog(m_store.get(), record, Settlement{}, this, [&](bool ok, const SettleOutcome &) {
            done = true;
            written = ok;
        });
        return QTest::qWaitFor([&] { return done; }, 5000) && written;
    }

private slots:
    void init()
    {
        m_store = std::make_unique<StoreWorker>();
        QString error;
        QVERIFY2(m_store->start(m_dir.filePath(QStringLiteral("%1.sqlite").arg(QTest::currentTestFunction())), &error),
                 qPrintable(error));
    }

    void cleanup()
    {
        m_store->stop();
        m_store.reset();
    }

    // The usual order: the row first (booked without a model), then the scan's answer fills it in.
    void aFillAfterTheRowSetsItsModel()
    {
        const QString id = newRequestId(kStart);
        QVERIFY(writeRow(cancelledTurn(id)));
        QCOMPARE(modelOf(id), QStringLiteral("-"));
        fillBookedModel(m_store.get(), id, scanFound(QStringLiteral("gpt-5-codex")));
        QCOMPARE(modelOf(id), QStringLiteral("gpt-5-codex"));
    }

    // The scan's answer first, while the row is not written yet: the row takes the model when it is written.
    // Red when a fill that finds no row is dropped.
    void aFillBeforeTheRowReachesTheRow()
    {
        const QString id = newRequestId(kStart);
        fillBookedModel(m_store.get(), id, scanFound(QStringLiteral("gpt-5-codex")));
        QCOMPARE(modelOf(id), QStringLiteral("no row"));
        QVERIFY(writeRow(cancelledTurn(id)));
        QCOMPARE(modelOf(id), QStringLiteral("gpt-5-codex"));
        // Another request's row is not touched by it.
        const QString other = newRequestId(kStart + 1);
        QVERIFY(writeRow(cancelledTurn(other)));
        QCOMPARE(modelOf(other), QStringLiteral("-"));
    }

    // A row booked by another writer before this turn's own write (a reclaim that took the slot over books the
    // request itself): a model waiting for the row goes into it when the turn's write finds it there. Red when
    // the turn's write returns at the existing row without looking.
    void aRowBookedElsewhereTakesAWaitingModel()
    {
        const QString id = newRequestId(kStart);
        fillBookedModel(m_store.get(), id, scanFound(QStringLiteral("gpt-5-codex")));
        QCOMPARE(modelOf(id), QStringLiteral("no row"));
        QString error;
        QVERIFY2(m_store->runBlocking(
                     [&](Database &db, QString *e) { return RequestLogRepository(db).insert(cancelledTurn(id), e); },
                     &error),
                 qPrintable(error));
        QCOMPARE(modelOf(id), QStringLiteral("-"));
        QVERIFY(writeRow(cancelledTurn(id)));
        QCOMPARE(modelOf(id), QStringLiteral("gpt-5-codex"));
    }

    // A model the row has is kept: a fill sets only a missing one, before or after the row.
    void aModelTheRowHasIsKept()
    {
        const QString before = newRequestId(kStart);
        fillBookedModel(m_store.get(), before, scanFound(QStringLiteral("from-scan")));
        QVERIFY(writeRow(cancelledTurn(before, QStringLiteral("from-body"))));
        QCOMPARE(modelOf(before), QStringLiteral("from-body"));
        const QString after = newRequestId(kStart + 1);
        QVERIFY(writeRow(cancelledTurn(after, QStringLiteral("from-body"))));
        fillBookedModel(m_store.get(), after, scanFound(QStringLiteral("from-scan")));
        QCOMPARE(modelOf(after), QStringLiteral("from-body"));
    }

    // The waiting models are bounded (as many as the store keeps retained writes): one more pushes the oldest out,
    // and that one, which no row took, is reported lost (counted in lostWrites()); its row is written without a
    // model, while the rows of the models still held take theirs. Red when the bound is off by one or the report
    // is dropped. The map is process-wide: the test ends by writing the rows of the models it left waiting, so that
    // a later test's fills push out only taken models (and it checks that one more fill reports no loss).
    void theOldestWaitingModelIsPushedOutAndReportedLost()
    {
        const int bound = StoreWorker::kMaxRetainedWrites;
        QStringList ids;
        ids.reserve(bound + 1);
        for (int i = 0; i <= bound; ++i)
            ids.append(newRequestId(kStart + 1000 + i));
        // Exactly `bound` new models: whatever earlier tests left waiting is pushed out by them.
        for (int i = 0; i < bound; ++i)
            fillBookedModel(m_store.get(), ids.at(i), scanFound(QStringLiteral("model-%1").arg(i)));
        QCOMPARE(modelOf(ids.at(bound - 1)), QStringLiteral("no row")); // every fill before it has run
        const qint64 lostBefore = m_store->lostWrites();
        fillBookedModel(m_store.get(), ids.at(bound), scanFound(QStringLiteral("model-%1").arg(bound)));
        QCOMPARE(modelOf(ids.at(bound)), QStringLiteral("no row"));
        QCOMPARE(m_store->lostWrites(), lostBefore + 1);
        QVERIFY(writeRow(cancelledTurn(ids.at(0))));
        QCOMPARE(modelOf(ids.at(0)), QStringLiteral("-")); // pushed out: its row has no model
        QVERIFY(writeRow(cancelledTurn(ids.at(1))));
        QCOMPARE(modelOf(ids.at(1)), QStringLiteral("model-1")); // the oldest still held
        QVERIFY(writeRow(cancelledTurn(ids.at(bound))));
        QCOMPARE(modelOf(ids.at(bound)), QStringLiteral("model-%1").arg(bound));
        QCOMPARE(m_store->lostWrites(), lostBefore + 1);

        // The rows of the models still waiting, submitted together (they group-commit), then two more fills: they
        // push out the two oldest entries (ids 1 and 2), whose rows took their models, so nothing is reported lost.
        // (Without the rows, id 2's model would be reported lost.) The callbacks go with `guard` if the wait fails.
        auto counts = std::make_shared<std::pair<int, int>>(0, 0); // pending, failed
        QObject guard;
        for (int i = 2; i < bound; ++i) {
            ++counts->first;
            writeRequestLog(m_store.get(), cancelledTurn(ids.at(i)), Settlement{}, &guard,
                            [counts](bool ok, const SettleOutcome &) {
                                --counts->first;
                                counts->second += ok ? 0 : 1;
                            });
        }
        QVERIFY(QTest::qWaitFor([&] { return counts->first == 0; }, 120000));
        QCOMPARE(counts->second, 0);
        QCOMPARE(modelOf(ids.at(bound - 1)), QStringLiteral("model-%1").arg(bound - 1));
        for (int extra = 1; extra <= 2; ++extra) {
            const QString id = newRequestId(kStart + 1000 + bound + extra);
            fillBookedModel(m_store.get(), id, scanFound(QStringLiteral("extra-%1").arg(extra)));
            QVERIFY(writeRow(cancelledTurn(id)));
            QCOMPARE(modelOf(id), QStringLiteral("extra-%1").arg(extra));
        }
        QCOMPARE(m_store->lostWrites(), lostBefore + 1);
    }

    // Runs after the bound's test (Qt Test keeps the declaration order): three fills and their rows as usual, with
    // no loss reported. They push out the map's three oldest entries, so this is red when that test leaves
    // models no row took (without its rows at the end, or without any of its clean-up: then the second fill here
    // pushes out its id 2).
    void aFillAfterTheBoundTestReportsNoLoss()
    {
        for (int i = 0; i < 3; ++i) {
            const QString id = newRequestId(kStart + 50000 + i);
            fillBookedModel(m_store.get(), id, scanFound(QStringLiteral("gpt-5-codex")));
            QVERIFY(writeRow(cancelledTurn(id)));
            QCOMPARE(modelOf(id), QStringLiteral("gpt-5-codex"));
        }
        QCOMPARE(m_store->lostWrites(), qint64(0));
    }
};

QTEST_GUILESS_MAIN(tst_TurnLog)
#include "tst_turn_log.moc"
