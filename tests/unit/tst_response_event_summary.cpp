// responseEventSummary(): the part of a response event that a pass-through (Codex) stream's accumulator keeps,
// read with simdjson instead of a whole QJsonDocument. Whatever it returns must leave a summary-only
// ResponseAccumulator exactly where the full parse leaves it.

#include "api/TurnSink.h"
#include "api/translate/ResponseAccumulator.h"
#include "api/translate/ResponseEventSummary.h"
#include "api/translate/ResponseEventType.h"

#include <QJsonDocument>
#include <QtTest>

using namespace sy;

namespace {

// A response object as the backend sends it: the summary fields among the echoed request and the output.
QByteArray responseEvent(const char *type, const char *status, const char *extra)
{
    return QByteArray("{\"type\":\"") + type + "\",\"sequence_number\":7,\"response\":{\"id\":\"resp_\\u00e9x\\\"1\","
           "\"object\":\"response\",\"created_at\":1764547200,\"status\":\"" + status + "\","
           "\"instructions\":\"You are Codex.\\nBe brief.\",\"model\":\"gpt-5-codex\","
           "\"tools\":[{\"type\":\"function\",\"name\":\"shell\",\"parameters\":{\"type\":\"object\"}}],"
           "\"output\":[{\"id\":\"msg_1\",\"type\":\"message\",\"content\":[{\"type\":\"output_text\",\"text\":\"hi\"}]}]"
           + extra + "}}";
}

struct AccumulatorState
{
    QJsonObject response;
    QString status;
    QString responseId;
    TokenUsage usage;
    QJsonObject error;
    bool terminal = false;
};

AccumulatorState feed(const QList<QPair<QByteArray, QJsonObject>> &events)
{
    ResponseAccumulator acc;
    acc.setSummaryOnly(true);
    for (const auto &e : events)
        acc.onEvent(e.first, e.second);
    return {acc.response(), acc.status(), acc.responseId(), acc.usage(), acc.error(), acc.terminal()};
}

} // namespace

class TestResponseEventSummary : public QObject
{
    Q_OBJECT

private slots:
    void accumulatorEndsWhereTheFullParseLeavesIt_data()
    {
        QTest::addColumn<QByteArray>("type");
        QTest::addColumn<QByteArray>("json");
        QTest::newRow("created") << QByteArray("response.created")
                                 << responseEvent("response.created", "in_progress", ",\"usage\":null");
        QTest::newRow("in_progress") << QByteArray("response.in_progress")
                                     << responseEvent("response.in_progress", "in_progress", "");
        QTest::newRow("completed, usage with details")
            << QByteArray("response.completed")
            << responseEvent("response.completed", "completed",
                             ",\"usage\":{\"input_tokens\":12345678901,\"input_tokens_details\":{\"cached_tokens\":"
                             "1024},\"output_tokens\":57,\"output_tokens_details\":{\"reasoning_tokens\":12},"
                             "\"total_tokens\":12345678958},\"error\":null,\"incomplete_details\":null");
        QTest::newRow("completed, usage without total")
            << QByteArray("response.completed")
            << responseEvent("response.completed", "completed",
                             ",\"usage\":{\"input_tokens\":10,\"output_tokens\":2.0}");
        QTest::newRow("incomplete")
            << QByteArray("response.incomplete")
            << responseEvent("response.incomplete", "incomplete",
                             ",\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"usage\":{\"input_tokens\":3,"
                             "\"output_tokens\":4,\"total_tokens\":7}");
        QTest::newRow("completed with an error object")
            << QByteArray("response.completed")
            << responseEvent("response.completed", "completed",
                             ",\"error\":{\"code\":\"server_error\",\"message\":\"x\",\"param\":null,\"n\":[1,true,"
                             "false,-2.5e3]}");
        QTest::newRow("no response member") << QByteArray("response.created") << QByteArray("{\"type\":\"x\"}");
        QTest::newRow("response not an object")
            << QByteArray("response.completed") << QByteArray("{\"type\":\"response.completed\",\"response\":42}");
        QTest::newRow("status missing") << QByteArray("response.completed")
                                        << QByteArray("{\"response\":{\"id\":\"resp_2\",\"usage\":{}}}");
    }

    // Each event on its own and after a response.created, summary vs full parse: the same response, status,
    // id, usage and error.
    void accumulatorEndsWhereTheFullParseLeavesIt()
    {
        QFETCH(QByteArray, type);
        QFETCH(QByteArray, json);
        const std::optional<QJsonObject> summary = responseEventSummary(json);
        QVERIFY(summary);
        const QJsonObject full = QJsonDocument::fromJson(json).object();
        QVERIFY(!full.isEmpty());
        const QByteArray created = responseEvent("response.created", "in_progress", "");
        const QJsonObject createdSummary = *responseEventSummary(created);
        const QJsonObject createdFull = QJsonDocument::fromJson(created).object();

        for (bool afterCreated : {false, true}) {
            QList<QPair<QByteArray, QJsonObject>> viaSummary, viaFull;
            if (afterCreated) {
                viaSummary.append({QByteArray("response.created"), createdSummary});
                viaFull.append({QByteArray("response.created"), createdFull});
            }
            viaSummary.append({type, *summary});
            viaFull.append({type, full});
            const AccumulatorState a = feed(viaSummary), b = feed(viaFull);
            QCOMPARE(a.response, b.response);
            QCOMPARE(a.status, b.status);
            QCOMPARE(a.responseId, b.responseId);
            QVERIFY(a.usage == b.usage);
            QCOMPARE(a.error, b.error);
            QCOMPARE(a.terminal, b.terminal);
        }
        // The echoed request and the output are not copied.
        const QJsonObject kept = summary->value(QLatin1String("response")).toObject();
        for (const char *dropped : {"instructions", "tools", "output", "model", "object"})
            QVERIFY2(!kept.contains(QLatin1String(dropped)), dropped);
    }

    // Values the summary keeps are the values of the full parse, exactly (big integers included).
    void keptMembersAreExact()
    {
        const QByteArray json = responseEvent("response.completed", "completed",
                                              ",\"usage\":{\"input_tokens\":12345678901,\"total_tokens\":0}");
        const QJsonObject r = responseEventSummary(json)->value(QLatin1String("response")).toObject();
        QCOMPARE(r.value(QLatin1String("id")).toString(), QStringLiteral(u"resp_\u00e9x\"1"));
        QCOMPARE(r.value(QLatin1String("status")).toString(), QStringLiteral("completed"));
        QCOMPARE(r.value(QLatin1String("usage")).toObject().value(QLatin1String("input_tokens")).toInteger(),
                 12345678901LL);
        QCOMPARE(responseEventSummary(json)->value(QLatin1String("type")).toString(),
                 QStringLiteral("response.completed"));
    }

    // A buffer with room for simdjson's padding is read in place, one without it through a copy: same result.
    void paddedAndExactBuffersAgree()
    {
        const QByteArray json = responseEvent("response.completed", "completed", ",\"usage\":{\"input_tokens\":5}");
        QByteArray exact(json.constData(), json.size());
        exact.squeeze();
        QByteArray roomy;
        roomy.reserve(json.size() + 128);
        roomy.append(json);
        QVERIFY(roomy.capacity() - roomy.size() >= 64);
        QCOMPARE(*responseEventSummary(exact), *responseEventSummary(roomy));
    }

    // Once response.created gave the response, a summary needs nothing from response.in_progress: the turn skips
    // that parse (usesData) and passes an empty object, and the accumulator ends where the parsed event leaves it.
    void summarySkipsInProgressOnceItHasTheResponse()
    {
        ResponseAccumulator acc;
        acc.setSummaryOnly(true);
        QVERIFY(acc.usesData("response.in_progress")); // nothing kept yet: it may be the first response event
        const QByteArray created = responseEvent("response.created", "in_progress", "");
        acc.onEvent("response.created", *responseEventSummary(created));
        QVERIFY(!acc.usesData("response.in_progress"));
        QVERIFY(acc.usesData("response.completed"));
        ResponseAccumulator whole; // a full response (non-streaming clients) still reads it
        whole.onEvent("response.created", QJsonDocument::fromJson(created).object());
        QVERIFY(whole.usesData("response.in_progress"));

        const QByteArray inProgress = responseEvent("response.in_progress", "in_progress", "");
        const QByteArray completed =
            responseEvent("response.completed", "completed", ",\"usage\":{\"input_tokens\":5}");
        const AccumulatorState skipped = feed({{"response.created", *responseEventSummary(created)},
                                               {"response.in_progress", QJsonObject()},
                                               {"response.completed", *responseEventSummary(completed)}});
        const AccumulatorState parsed = feed({{"response.created", *responseEventSummary(created)},
                                              {"response.in_progress", *responseEventSummary(inProgress)},
                                              {"response.completed", *responseEventSummary(completed)}});
        QCOMPARE(skipped.response, parsed.response);
        QCOMPARE(skipped.status, parsed.status);
        QCOMPARE(skipped.responseId, parsed.responseId);
        QVERIFY(skipped.usage == parsed.usage);
        QCOMPARE(skipped.terminal, parsed.terminal);
    }

    // responseEventType() tells a type by its length first: each name is found, and a type of the same length that
    // differs in any one byte, or one a byte longer or shorter, is Other.
    void eventTypesAreToldApart()
    {
        const QList<QPair<QByteArray, ResponseEventType>> names = {
            {"error", ResponseEventType::Error},
            {"response.failed", ResponseEventType::Failed},
            {"response.created", ResponseEventType::Created},
            {"codex.rate_limits", ResponseEventType::RateLimits},
            {"response.completed", ResponseEventType::Completed},
            {"response.incomplete", ResponseEventType::Incomplete},
            {"response.in_progress", ResponseEventType::InProgress},
            {"response.output_item.done", ResponseEventType::OutputItemDone}};
        QSet<ResponseEventType> seen;
        for (const auto &[name, kind] : names) {
            QCOMPARE(responseEventType(name), kind);
            seen.insert(kind);
            for (qsizetype i = 0; i < name.size(); ++i) {
                QByteArray changed = name;
                changed[i] = char(changed[i] ^ 0x20); // "error" -> "Error", "." -> 0x0E, "_" -> DEL
                QCOMPARE(responseEventType(changed), ResponseEventType::Other);
            }
            QCOMPARE(responseEventType(QByteArray(name + ' ')), ResponseEventType::Other);
            QCOMPARE(responseEventType(name.chopped(1)), ResponseEventType::Other);
        }
        QCOMPARE(seen.size(), names.size());
        QCOMPARE(responseEventType(QByteArray("err\0r", 5)), ResponseEventType::Other); // a NUL inside
        QCOMPARE(responseEventType(QByteArray("error\0", 6)), ResponseEventType::Other);
        for (const char *other : {"", "response.output_text.delta", "response.output_item.added", "codex.keepalive",
                                  "response.queued", "message"})
            QCOMPARE(responseEventType(other), ResponseEventType::Other);
        QVERIFY(isTerminalResponseEvent(ResponseEventType::Completed));
        QVERIFY(isTerminalResponseEvent(ResponseEventType::Incomplete));
        QVERIFY(isTerminalResponseEvent(ResponseEventType::Failed));
        QVERIFY(!isTerminalResponseEvent(ResponseEventType::Error)); // the turn ends it as a failure of its own
        QVERIFY(!isTerminalResponseEvent(ResponseEventType::Created));
    }

    // Which events an accumulator needs parsed, by type, for a summary and for a whole response.
    void usesDataByType_data()
    {
        QTest::addColumn<QByteArray>("type");
        QTest::addColumn<bool>("summary");
        QTest::addColumn<bool>("whole");
        QTest::newRow("created") << QByteArray("response.created") << true << true;
        QTest::newRow("in_progress") << QByteArray("response.in_progress") << true << true; // nothing kept yet
        QTest::newRow("completed") << QByteArray("response.completed") << true << true;
        QTest::newRow("incomplete") << QByteArray("response.incomplete") << true << true;
        QTest::newRow("failed") << QByteArray("response.failed") << true << true;
        QTest::newRow("error") << QByteArray("error") << true << true;
        QTest::newRow("output_item.done") << QByteArray("response.output_item.done") << false << true;
        QTest::newRow("rate_limits") << QByteArray("codex.rate_limits") << false << false;
        QTest::newRow("delta") << QByteArray("response.output_text.delta") << false << false;
        QTest::newRow("untyped") << QByteArray() << true << true; // the type is in the data
    }
    void usesDataByType()
    {
        QFETCH(QByteArray, type);
        QFETCH(bool, summary);
        QFETCH(bool, whole);
        ResponseAccumulator s;
        s.setSummaryOnly(true);
        QCOMPARE(s.usesData(type), summary);
        QCOMPARE(ResponseAccumulator().usesData(type), whole);
        s.onEvent("response.completed", QJsonObject{{"response", QJsonObject{{"id", "resp_1"}}}});
        QCOMPARE(s.usesData(type), type.isEmpty()); // a terminal accumulator takes nothing more
    }

    // The terminal events end the accumulator with their status (the response's own, else the type's); error
    // ends it failed with the error's own fields.
    void terminalEventsEndTheAccumulator_data()
    {
        QTest::addColumn<QByteArray>("type");
        QTest::addColumn<QString>("status");
        QTest::newRow("completed") << QByteArray("response.completed") << QStringLiteral("completed");
        QTest::newRow("incomplete") << QByteArray("response.incomplete") << QStringLiteral("incomplete");
        QTest::newRow("failed") << QByteArray("response.failed") << QStringLiteral("failed");
        QTest::newRow("error") << QByteArray("error") << QStringLiteral("failed");
        QTest::newRow("delta") << QByteArray("response.output_text.delta") << QString();
        QTest::newRow("created") << QByteArray("response.created") << QString();
    }
    void terminalEventsEndTheAccumulator()
    {
        QFETCH(QByteArray, type);
        QFETCH(QString, status);
        ResponseAccumulator acc;
        const QJsonObject error{{"code", "server_error"}, {"message", "boom"}};
        acc.onEvent(type, QJsonObject{{"response", QJsonObject{{"id", "resp_1"}, {"error", error}}}, {"error", error}});
        QCOMPARE(acc.terminal(), !status.isEmpty());
        QCOMPARE(acc.status(), status);
        QCOMPARE(acc.error().isEmpty(), status != QLatin1String("failed"));
        QCOMPARE(isTerminalEventType(type), acc.terminal() && type != "error");
        // Untyped: the type is read from the data.
        ResponseAccumulator untyped;
        untyped.onEvent(QByteArray(), QJsonObject{{"type", QString::fromLatin1(type)},
                                                  {"response", QJsonObject{{"id", "resp_1"}, {"error", error}}},
                                                  {"error", error}});
        QCOMPARE(untyped.status(), status);
    }

    void notAJsonObjectIsLeftToTheFullParse()
    {
        QVERIFY(!responseEventSummary(QByteArray()));
        QVERIFY(!responseEventSummary("[1,2]"));
        QVERIFY(!responseEventSummary("\"text\""));
        QVERIFY(!responseEventSummary("{\"response\":{\"id\":\"resp_1\""));      // cut short
        QVERIFY(!responseEventSummary("{\"response\":{\"id\":\"resp_1\"}} x")); // trailing garbage
    }
};

QTEST_GUILESS_MAIN(TestResponseEventSummary)
#include "tst_response_event_summary.moc"
