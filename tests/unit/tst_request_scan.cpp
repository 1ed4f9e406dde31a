// The fast top-level scan of Responses bodies (api/translate/RequestScan) against the full parser and the
// sanitizer: on every real client capture they must agree on the keys and on "forward as is".
#include "TestSupport.h"
#include "api/translate/RequestScan.h"
#include "api/translate/ResponsesRequestSanitizer.h"
#include "api/translate/SimdjsonBytes.h"
#include "util/LargeBufferPool.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QScopeGuard>
#include <QTest>

using namespace sy;

class tst_RequestScan : public QObject
{
    Q_OBJECT

private slots:
    void agreesWithTheSanitizerOnEveryCapture()
    {
        const QStringList files = QDir(test::testDataDir() + QStringLiteral("/client-captures"))
                                      .entryList({QStringLiteral("*.json")});
        QVERIFY(files.size() >= 10);
        int bodies = 0;
        int forwardable = 0;
        for (const QString &file : files) {
            const QJsonArray captures =
                QJsonDocument::fromJson(test::readTestData(QStringLiteral("client-captures/") + file)).array();
            for (const QJsonValue &v : captures) {
                const QJsonObject body = v.toObject().value(QLatin1String("body")).toObject();
                if (body.isEmpty() || !body.contains(QLatin1String("input")))
                    continue;
                ++bodies;
                const QByteArray bytes = QJsonDocument(body).toJson(QJsonDocument::Compact);
                const std::optional<ResponsesScan> scan = scanResponsesRequest(bytes);
                QVERIFY2(scan, qPrintable(file));
                SanitizedResponsesRequest full;
                QString error;
                ResponsesSanitizeOptions codex;
                codex.ensureInstructions = false;
                QVERIFY2(sanitizeResponsesRequest(body, &full, &error, codex), qPrintable(error));
                QCOMPARE(scan->model, full.model);
                QCOMPARE(scan->previousResponseId, full.previousResponseId);
                QCOMPARE(scan->promptCacheKey, full.promptCacheKey);
                QCOMPARE(scan->forwardableAsIs(), !full.changed);
                forwardable += scan->forwardableAsIs() ? 1 : 0;
            }
        }
        QVERIFY(bodies >= 5);
        QVERIFY2(forwardable >= 3, "the Codex captures should go upstream byte for byte");
    }

    void eachChangeTheSanitizerWouldMakeDisablesTheFastPath_data()
    {
        QTest::addColumn<QByteArray>("body");
        QTest::newRow("forbidden field") << QByteArray("{\"model\":\"m\",\"input\":[],\"store\":false,\"stream\":true,\"temperature\":1}");
        QTest::newRow("string input") << QByteArray("{\"model\":\"m\",\"input\":\"hi\",\"store\":false,\"stream\":true}");
        QTest::newRow("store missing") << QByteArray("{\"model\":\"m\",\"input\":[],\"stream\":true}");
        QTest::newRow("stream false") << QByteArray("{\"model\":\"m\",\"input\":[],\"store\":false,\"stream\":false}");
        QTest::newRow("no model") << QByteArray("{\"input\":[],\"store\":false,\"stream\":true}");
    }

    void eachChangeTheSanitizerWouldMakeDisablesTheFastPath()
    {
        QFETCH(QByteArray, body);
        const std::optional<ResponsesScan> scan = scanResponsesRequest(body);
        QVERIFY(scan);
        QVERIFY(!scan->forwardableAsIs());
        SanitizedResponsesRequest full;
        QString error;
        ResponsesSanitizeOptions codex;
        codex.ensureInstructions = false;
        const bool valid = sanitizeResponsesRequest(QJsonDocument::fromJson(body).object(), &full, &error, codex);
        QVERIFY(!valid || full.changed);
    }

    void leavesAnythingOddToTheFullParser_data()
    {
        QTest::addColumn<QByteArray>("body");
        QTest::newRow("not json") << QByteArray("{\"model\":");
        QTest::newRow("array") << QByteArray("[1,2]");
        QTest::newRow("trailing bytes") << QByteArray("{\"model\":\"m\",\"input\":[],\"store\":false,\"stream\":true} x");
        QTest::newRow("null model") << QByteArray("{\"model\":null,\"input\":[],\"store\":false,\"stream\":true}");
        QTest::newRow("stream as string") << QByteArray("{\"model\":\"m\",\"input\":[],\"store\":false,\"stream\":\"yes\"}");
        QTest::newRow("broken inside input") << QByteArray("{\"model\":\"m\",\"input\":[{\"a\":tru}],\"store\":false,\"stream\":true}");
    }

    void leavesAnythingOddToTheFullParser()
    {
        QFETCH(QByteArray, body);
        QVERIFY(!scanResponsesRequest(body));
    }

    // A body received with slack after it (HttpConnection reserves 64 bytes) is parsed in place: whatever lies
    // in the slack must not count. A body cut short stays invalid even when the slack (after the NUL Qt keeps
    // at the end) holds the rest.
    void aBodyWithSlackIsReadOnlyToItsEnd()
    {
        const QByteArray whole("{\"model\":\"m\",\"input\":[],\"store\":false,\"stream\":true}");
        const auto withSlack = [](const QByteArray &text, const QByteArray &slack) {
            QByteArray b;
            b.reserve(text.size() + 64);
            b.append(text);
            b.append(slack.left(64));
            b.chop(qMin<qsizetype>(64, slack.size()));
            return b;
        };
        const QByteArray cut = whole.left(whole.size() - 1); // no closing brace
        const QByteArray inPlace = withSlack(cut, QByteArray("}") + QByteArray(63, ' '));
        QVERIFY(inPlace.capacity() - inPlace.size() >= 64);
        QCOMPARE(inPlace, cut);
        QVERIFY(!scanResponsesRequest(inPlace));

        const QByteArray good = withSlack(whole, QByteArray(",\"store\":true,\"model\":\"other\"}").leftJustified(64, 'x'));
        QVERIFY(good.capacity() - good.size() >= 64);
        const auto scan = scanResponsesRequest(good);
        QVERIFY(scan);
        QCOMPARE(scan->model, QStringLiteral("m"));
        QCOMPARE(scan->store, std::optional<bool>(false));
        QVERIFY(scan->forwardableAsIs());
        // The same bytes without slack (copied into a padded buffer) scan the same.
        const auto copied = scanResponsesRequest(QByteArray(whole.constData(), whole.size()));
        QVERIFY(copied);
        QCOMPARE(copied->model, scan->model);
        QCOMPARE(copied->forwardableAsIs(), scan->forwardableAsIs());
    }

    // Free space in front of the data (a remove() from the front) is no room after it: such a body is copied
    // into a padded buffer, never parsed where it lies with the parser reading past its allocation.
    void freeSpaceInFrontIsNoPadding()
    {
        const QByteArray whole("{\"model\":\"m\",\"input\":[],\"store\":false,\"stream\":true}");
        QByteArray b;
        b.reserve(whole.size() + 64);
        b.append(QByteArray(64, ' '));
        b.append(whole);
        b.remove(0, 64);
        QCOMPARE(b, whole);
        QVERIFY2(b.capacity() - b.size() >= 64, "capacity() must count the front space for this case to mean much");
        QVERIFY2(b.data_ptr().freeSpaceAtEnd() < 64, "the case needs less than the padding after the data");
        QCOMPARE(roomAfterData(b), b.data_ptr().freeSpaceAtEnd());
        QVERIFY(!hasSimdjsonPadding(b));
        const auto scan = scanResponsesRequest(b);
        QVERIFY(scan);
        QCOMPARE(scan->model, QStringLiteral("m"));
        // With the room after the data, the same bytes are parsed in place.
        QByteArray roomy;
        roomy.reserve(whole.size() + 64);
        roomy.append(whole);
        QVERIFY(hasSimdjsonPadding(roomy));
        // A raw-data view owns nothing after its data.
        QVERIFY(!hasSimdjsonPadding(QByteArray::fromRawData(whole.constData(), whole.size() - 8)));
    }

    void aLargeBodyScansAsASmallOne()
    {
        // Bodies above the reused parser's limit get a parser of their own whose buffers are allocated (and
        // advised for huge pages) before the parse: the keys must come out as from a small body, wherever
        // they sit, and a broken large body must still be refused.
        const QByteArray filler = "{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\","
                                  "\"text\":\"" + QByteArray(900, 'x') + "\"}]}";
        QByteArray items;
        while (items.size() < 6 * 1024 * 1024)
            items += (items.isEmpty() ? "" : ",") + filler;
        const QByteArray tail = ",\"store\":false,\"stream\":true,\"previous_response_id\":\"resp_late\","
                                "\"prompt_cache_key\":\"k\"}";
        const QByteArray large = "{\"model\":\"gpt-5\",\"input\":[" + items + "]" + tail;
        const QByteArray small = "{\"model\":\"gpt-5\",\"input\":[" + filler + "]" + tail;
        for (const bool slack : {false, true}) {
            QByteArray body;
            if (slack) {
                body.reserve(large.size() + 64);
                body.append(large);
            } else {
                body = QByteArray(large.constData(), large.size());
            }
            const auto big = scanResponsesRequest(body);
            const auto little = scanResponsesRequest(small);
            QVERIFY(big && little);
            QCOMPARE(big->model, little->model);
            QCOMPARE(big->previousResponseId, QStringLiteral("resp_late"));
            QCOMPARE(big->promptCacheKey, little->promptCacheKey);
            QCOMPARE(big->forwardableAsIs(), true);
            QVERIFY(!scanResponsesRequest(body.left(body.size() - 1)));
        }
    }

    void theLargeBodyParserIsReusedOnAThreadThatSweeps()
    {
        // A thread with a LargeBufferPool keeps its large-body parser: the next large body (smaller, larger,
        // broken) must scan exactly as with a parser of its own, nothing of the previous document showing.
        LargeBufferPool &pool = LargeBufferPool::local();
        pool.setKeeping(true);
        const auto stopKeeping = qScopeGuard([&pool] { pool.setKeeping(false); });
        const auto body = [](int items, const QByteArray &model, const QByteArray &previous) -> QByteArray {
            QByteArray b = "{\"model\":\"" + model + "\",\"input\":[";
            for (int i = 0; i < items; ++i)
                b += QByteArray(i ? "," : "") +
                     "{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":"
                     "\"input_text\",\"text\":\"" +
                     QByteArray(900, char('a' + i % 26)) + "\"}]}";
            b += "],\"store\":false,\"stream\":true";
            if (!previous.isEmpty())
                b += ",\"previous_response_id\":\"" + previous + "\"";
            return b + "}";
        };
        const quint64 reuses = pool.reuses();
        const auto first = scanResponsesRequest(body(2000, "gpt-5", "resp_one"));
        QVERIFY(first);
        QCOMPARE(first->previousResponseId, QStringLiteral("resp_one"));
        QVERIFY(pool.bytesKept() >= 2000 * 900);
        QCOMPARE(pool.reuses(), reuses); // nothing kept before

        const auto smaller = scanResponsesRequest(body(1200, "gpt-5-codex", QByteArray()));
        QVERIFY(smaller);
        QCOMPARE(smaller->model, QStringLiteral("gpt-5-codex"));
        QVERIFY(smaller->previousResponseId.isEmpty());
        QCOMPARE(pool.reuses(), reuses + 1);
        const QByteArray broken = body(1500, "gpt-5", "resp_two");
        QVERIFY(!scanResponsesRequest(broken.left(broken.size() - 1)));
        QCOMPARE(pool.reuses(), reuses + 2);
        const auto again = scanResponsesRequest(body(1800, "gpt-5", "resp_three"));
        QVERIFY(again && again->forwardableAsIs());
        QCOMPARE(again->previousResponseId, QStringLiteral("resp_three"));
        QCOMPARE(pool.reuses(), reuses + 3);
        // Larger than the kept parser: a new one, which is then the one kept.
        const auto larger = scanResponsesRequest(body(4000, "gpt-5", "resp_four"));
        QVERIFY(larger);
        QCOMPARE(larger->previousResponseId, QStringLiteral("resp_four"));
        QCOMPARE(pool.reuses(), reuses + 3);
        const qsizetype keptForLarger = pool.bytesKept();
        QVERIFY(keptForLarger >= 4000 * 900);
        // Under half the kept parser's size: a parser of its own, which then replaces the large one.
        const auto small = scanResponsesRequest(body(1000, "gpt-5", "resp_five"));
        QVERIFY(small);
        QCOMPARE(small->previousResponseId, QStringLiteral("resp_five"));
        QCOMPARE(pool.reuses(), reuses + 3);
        QVERIFY(pool.bytesKept() < keptForLarger / 2);
    }

    void readsEscapedAndUnicodeValues()
    {
        const auto scan = scanResponsesRequest(
            QByteArray("{\"model\":\"gpt-5\\u002dcodex\",\"prompt_cache_key\":\"s\\u00e9ssion \\\"1\\\"\",\"input\":[],\"store\":false,\"stream\":true}"));
        QVERIFY(scan);
        QCOMPARE(scan->model, QStringLiteral("gpt-5-codex"));
        QCOMPARE(scan->promptCacheKey, QString::fromUtf8("s\xc3\xa9ssion \"1\""));
        QVERIFY(scan->forwardableAsIs());
    }
};

QTEST_GUILESS_MAIN(tst_RequestScan)
#include "tst_request_scan.moc"
