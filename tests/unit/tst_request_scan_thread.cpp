// The scan thread (api/RequestScanThread): a large body's scan runs on it, not on the caller's thread, gives
// what scanResponsesRequest gives, and comes back on the caller's thread only while the context lives.
#include "api/RequestScanThread.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTest>
#include <QThread>

using namespace sy;

namespace {

QByteArray largeBody(const QString &model, qsizetype padding)
{
    const QJsonObject body{{QStringLiteral("model"), model},
                           {QStringLiteral("stream"), true},
                           {QStringLiteral("store"), false},
                           {QStringLiteral("prompt_cache_key"), QStringLiteral("k-1")},
                           {QStringLiteral("input"), QJsonArray{QString(padding, QLatin1Char('z'))}}};
    return QJsonDocument(body).toJson(QJsonDocument::Compact);
}

} // namespace

class tst_RequestScanThread : public QObject
{
    Q_OBJECT

private slots:
    void scansElsewhereAndAnswersHere()
    {
        RequestScanThread scanner(1000);
        QObject context;
        const QByteArray body = largeBody(QStringLiteral("gpt-5-codex"), 2 * 1024 * 1024);
        std::optional<std::optional<ResponsesScan>> got;
        QThread *answeredOn = nullptr;
        scanner.scan(body, &context, [&](std::optional<ResponsesScan> scan) {
            got = std::move(scan);
            answeredOn = QThread::currentThread();
        });
        QVERIFY(!got); // not at once: on the scan thread, then through this thread's event loop
        QTRY_VERIFY_WITH_TIMEOUT(got.has_value(), 5000);
        QCOMPARE(answeredOn, QThread::currentThread());
        QCOMPARE(scanner.scansDone(), quint64(1));
        QVERIFY(got->has_value());
        const ResponsesScan &scan = **got;
        const std::optional<ResponsesScan> here = scanResponsesRequest(body);
        QVERIFY(here);
        QCOMPARE(scan.model, here->model);
        QCOMPARE(scan.promptCacheKey, QStringLiteral("k-1"));
        QCOMPARE(scan.forwardableAsIs(), here->forwardableAsIs());
        QVERIFY(scan.forwardableAsIs());

        // Not JSON: nullopt, as here (the caller's full parser then words the error).
        std::optional<std::optional<ResponsesScan>> broken;
        scanner.scan(QByteArray(2 * 1024 * 1024, '{'), &context,
                     [&](std::optional<ResponsesScan> result) { broken = std::move(result); });
        QTRY_VERIFY_WITH_TIMEOUT(broken.has_value(), 5000);
        QVERIFY(!broken->has_value());
    }

    // The scan thread keeps its large-body parser for the next large body, as the proxy thread does, and says so
    // (/api/status large_buffers.scan_thread): one object of about 15 bytes per body byte after a 2 MiB scan,
    // reused by the next one, and nothing once two sweeps passed without a scan.
    void itsKeptParserIsShown()
    {
        RequestScanThread scanner(1000); // the pool's timer keeps whole seconds
        QCOMPARE(scanner.poolFigures().objects, 0);
        QObject context;
        const QByteArray body = largeBody(QStringLiteral("gpt-5-codex"), 2 * 1024 * 1024);
        int answers = 0;
        for (int i = 0; i < 2; ++i) {
            scanner.scan(body, &context, [&answers](std::optional<ResponsesScan>) { ++answers; });
            QTRY_COMPARE_WITH_TIMEOUT(answers, i + 1, 5000);
        }
        const RequestScanThread::PoolFigures kept = scanner.poolFigures();
        QCOMPARE(kept.objects, 1);
        QVERIFY2(kept.keptBytes >= 8 * body.size(), qPrintable(QString::number(kept.keptBytes)));
        QCOMPARE(kept.reuses, quint64(1)); // the second scan took the first one's parser
        RequestScanThread::PoolFigures gone;
        QTRY_VERIFY_WITH_TIMEOUT((gone = scanner.poolFigures(), gone.objects == 0 && gone.keptBytes == 0), 8000);
    }

    // Where a scan's result would have run: it is dropped once its context is gone, and the scanner's end waits
    // for a scan that runs (no callback into a deleted turn, no crash).
    void aResultOutlivingItsContextIsDropped()
    {
        auto scanner = std::make_unique<RequestScanThread>(1000);
        int calls = 0;
        {
            QObject context;
            for (int i = 0; i < 4; ++i)
                scanner->scan(largeBody(QStringLiteral("m"), 4 * 1024 * 1024), &context,
                              [&calls](std::optional<ResponsesScan>) { ++calls; });
        }
        QTRY_COMPARE_WITH_TIMEOUT(scanner->scansDone(), quint64(4), 10000);
        QTest::qWait(50); // results posted back are delivered (and dropped) now
        QCOMPARE(calls, 0);

        QObject context;
        scanner->scan(largeBody(QStringLiteral("m"), 8 * 1024 * 1024), &context,
                      [&calls](std::optional<ResponsesScan>) { ++calls; });
        scanner.reset(); // the scan may be running: its result goes with the scanner
        QTest::qWait(50);
        QCOMPARE(calls, 0);
    }
};

QTEST_GUILESS_MAIN(tst_RequestScanThread)
#include "tst_request_scan_thread.moc"
