// Response-side translations: TokenUsage from a Responses object, the non-streaming chat.completion, and the
// ResponseAccumulator that turns an upstream stream into the final response for non-streaming clients.

#include "api/TurnSink.h"
#include "api/translate/ChatCompletionFromResponse.h"
#include "api/translate/ResponseAccumulator.h"
#include "api/translate/TokenUsage.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QtTest>

using namespace Qt::StringLiterals;

namespace {

QJsonObject parse(const char *json)
{
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(QByteArray(json), &err);
    if (err.error != QJsonParseError::NoError)
        qFatal("bad test JSON: %s in %s", qPrintable(err.errorString()), json);
    return doc.object();
}

using Opt = std::optional<qint64>;

QJsonObject messageItem(const char *id, const char *text)
{
    return QJsonObject{{u"id"_s, QLatin1String(id)},
                       {u"type"_s, u"message"_s},
                       {u"role"_s, u"assistant"_s},
                       {u"content"_s, QJsonArray{QJsonObject{{u"type"_s, u"output_text"_s},
                                                             {u"text"_s, QLatin1String(text)},
                                                             {u"annotations"_s, QJsonArray()}}}}};
}

QJsonObject callItem(const char *id, const char *callId, const char *name, const char *arguments)
{
    return QJsonObject{{u"id"_s, QLatin1String(id)},
                       {u"type"_s, u"function_call"_s},
                       {u"call_id"_s, QLatin1String(callId)},
                       {u"name"_s, QLatin1String(name)},
                       {u"arguments"_s, QLatin1String(arguments)}};
}

QJsonObject itemDone(int index, const QJsonObject &item)
{
    return QJsonObject{{u"type"_s, u"response.output_item.done"_s}, {u"output_index"_s, index}, {u"item"_s, item}};
}

QJsonObject terminalEvent(const char *type, const QJsonObject &response)
{
    return QJsonObject{{u"type"_s, QLatin1String(type)}, {u"response"_s, response}};
}

} // namespace

class TestTranslateResponse : public QObject
{
    Q_OBJECT

private slots:
    // usage
    void usageFull();
    void usageTotalDerivedOnlyFromKnownParts_data();
    void usageTotalDerivedOnlyFromKnownParts();
    void usageZeroIsKnown();
    void usageMissingStaysUnknown();
    void usageGarbageIsUnknown();
    void chatUsageJsonOmitsUnknowns();

    // chatCompletionFromResponse
    void completionText();
    void completionToolCalls();
    void completionTextAndToolCalls();
    void completionIncomplete_data();
    void completionIncomplete();
    void completionRefusalAndEmpty();
    void completionWithoutUsage();

    // ResponseAccumulator
    void accumulatorKeepsCompletedOutput();
    void accumulatorRebuildsEmptyOutputInIndexOrder();
    void accumulatorRebuildsMissingOutput();
    void accumulatorItemsWithoutIndexKeepArrivalOrder();
    void accumulatorIncomplete();
    void accumulatorFailed();
    void accumulatorErrorEvent_data();
    void accumulatorErrorEvent();
    void accumulatorBeforeTerminal();
    void accumulatorIgnoresEventsAfterTerminal();
    void accumulatorTypeFromData();
    void accumulatorFeedsChatCompletion();
    void accumulatorSummaryKeepsOnlyWhatTheLogNeeds();
    void accumulatorSkippedDataChangesNothing_data();
    void accumulatorSkippedDataChangesNothing();
    // TurnSink
    void nonStreamingSinkKeepsOnlyItsSummaryOnceItsAnswerIsTaken_data();
    void nonStreamingSinkKeepsOnlyItsSummaryOnceItsAnswerIsTaken();
};

void TestTranslateResponse::usageFull()
{
    const sy::TokenUsage u = sy::usageFromResponse(parse(R"({"usage":{"input_tokens":120,
        "input_tokens_details":{"cached_tokens":100},"output_tokens":30,
        "output_tokens_details":{"reasoning_tokens":20},"total_tokens":150}})"));
    QCOMPARE(u.input, Opt(120));
    QCOMPARE(u.cached, Opt(100));
    QCOMPARE(u.output, Opt(30));
    QCOMPARE(u.reasoning, Opt(20));
    QCOMPARE(u.total, Opt(150));
    QVERIFY(u.anyKnown());
}

void TestTranslateResponse::usageTotalDerivedOnlyFromKnownParts_data()
{
    QTest::addColumn<QString>("usage");
    QTest::addColumn<qint64>("total"); // -1: unknown
    QTest::newRow("input+output, no total") << u"{\"input_tokens\":7,\"output_tokens\":5}"_s << qint64(12);
    QTest::newRow("explicit total wins") << u"{\"input_tokens\":7,\"output_tokens\":5,\"total_tokens\":13}"_s
                                         << qint64(13);
    QTest::newRow("output unknown") << u"{\"input_tokens\":7}"_s << qint64(-1);
    QTest::newRow("input unknown") << u"{\"output_tokens\":5}"_s << qint64(-1);
    QTest::newRow("output null") << u"{\"input_tokens\":7,\"output_tokens\":null}"_s << qint64(-1);
}

void TestTranslateResponse::usageTotalDerivedOnlyFromKnownParts()
{
    QFETCH(QString, usage);
    QFETCH(qint64, total);
    const sy::TokenUsage u = sy::usageFromResponsesUsage(parse(usage.toUtf8().constData()));
    QCOMPARE(u.total, total < 0 ? Opt() : Opt(total));
}

void TestTranslateResponse::usageZeroIsKnown()
{
    const sy::TokenUsage u = sy::usageFromResponse(parse(R"({"usage":{"input_tokens":0,
        "input_tokens_details":{"cached_tokens":0},"output_tokens":0,
        "output_tokens_details":{"reasoning_tokens":0}}})"));
    QCOMPARE(u.input, Opt(0));
    QCOMPARE(u.cached, Opt(0));
    QCOMPARE(u.output, Opt(0));
    QCOMPARE(u.reasoning, Opt(0));
    QCOMPARE(u.total, Opt(0));
}

void TestTranslateResponse::usageMissingStaysUnknown()
{
    const sy::TokenUsage none = sy::usageFromResponse(parse(R"({"id":"resp_1","status":"completed"})"));
    QVERIFY(!none.anyKnown());
    QVERIFY(none == sy::TokenUsage());
    const sy::TokenUsage nullUsage = sy::usageFromResponse(parse(R"({"usage":null})"));
    QVERIFY(!nullUsage.anyKnown());
    // Details missing: cached and reasoning unknown, not 0.
    const sy::TokenUsage noDetails = sy::usageFromResponse(parse(R"({"usage":{"input_tokens":4,"output_tokens":2}})"));
    QCOMPARE(noDetails.input, Opt(4));
    QVERIFY(!noDetails.cached);
    QVERIFY(!noDetails.reasoning);
    QCOMPARE(noDetails.total, Opt(6));
}

void TestTranslateResponse::usageGarbageIsUnknown()
{
    const sy::TokenUsage u = sy::usageFromResponse(parse(R"({"usage":{"input_tokens":"12","output_tokens":-3,
        "total_tokens":1.5,"input_tokens_details":{"cached_tokens":1e300},"output_tokens_details":[]}})"));
    QVERIFY(!u.anyKnown());
}

void TestTranslateResponse::chatUsageJsonOmitsUnknowns()
{
    sy::TokenUsage u;
    QCOMPARE(sy::chatUsageJson(u), QJsonObject());
    u.input = 10;
    u.output = 0;
    QCOMPARE(sy::chatUsageJson(u), parse(R"({"prompt_tokens":10,"completion_tokens":0})"));
    u.total = 10;
    u.cached = 3;
    u.reasoning = 0;
    QCOMPARE(sy::chatUsageJson(u), parse(R"({"prompt_tokens":10,"completion_tokens":0,"total_tokens":10,
        "prompt_tokens_details":{"cached_tokens":3},"completion_tokens_details":{"reasoning_tokens":0}})"));
}

void TestTranslateResponse::completionText()
{
    QJsonObject response = parse(R"({"id":"resp_1","status":"completed","usage":{"input_tokens":5,
        "input_tokens_details":{"cached_tokens":1},"output_tokens":3,"output_tokens_details":{"reasoning_tokens":1},
        "total_tokens":8}})");
    response.insert(u"output"_s, QJsonArray{QJsonObject{{u"type"_s, u"reasoning"_s}, {u"summary"_s, QJsonArray()}},
                                            messageItem("m1", "Hello"), messageItem("m2", " world")});
    const QJsonObject c = sy::chatCompletionFromResponse(response, u"gpt-5"_s, u"chatcmpl-9"_s, 1764475200);
    const QJsonObject expected = parse(R"({"id":"chatcmpl-9","object":"chat.completion","created":1764475200,
        "model":"gpt-5","choices":[{"index":0,"message":{"role":"assistant","content":"Hello world","refusal":null},
        "logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":3,"total_tokens":8,
        "prompt_tokens_details":{"cached_tokens":1},"completion_tokens_details":{"reasoning_tokens":1}}})");
    QCOMPARE(c, expected);
}

void TestTranslateResponse::completionToolCalls()
{
    QJsonObject response{{u"status"_s, u"completed"_s}};
    response.insert(u"output"_s, QJsonArray{callItem("fc_1", "call_1", "read", "{\"p\":1}"),
                                            callItem("fc_2", "call_2", "bash", "{}")});
    const QJsonObject c = sy::chatCompletionFromResponse(response, u"m"_s, u"id"_s, 1);
    const QJsonObject choice = c.value("choices"_L1).toArray().at(0).toObject();
    QCOMPARE(choice.value("finish_reason"_L1).toString(), u"tool_calls"_s);
    const QJsonObject message = choice.value("message"_L1).toObject();
    QVERIFY(message.value("content"_L1).isNull());
    // Built outside QCOMPARE: moc's preprocessor trips over a multi-line raw string with \" in a macro argument.
    const QJsonObject expected = parse(R"({"v":[
        {"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"p\":1}"}},
        {"id":"call_2","type":"function","function":{"name":"bash","arguments":"{}"}}]})");
    QCOMPARE(message.value("tool_calls"_L1).toArray(), expected.value("v"_L1).toArray());
}

void TestTranslateResponse::completionTextAndToolCalls()
{
    QJsonObject response{{u"status"_s, u"completed"_s}};
    response.insert(u"output"_s, QJsonArray{messageItem("m", "checking"), callItem("fc", "c", "f", "{}")});
    const QJsonObject choice =
        sy::chatCompletionFromResponse(response, u"m"_s, u"id"_s, 1).value("choices"_L1).toArray().at(0).toObject();
    QCOMPARE(choice.value("message"_L1).toObject().value("content"_L1).toString(), u"checking"_s);
    QCOMPARE(choice.value("message"_L1).toObject().value("tool_calls"_L1).toArray().size(), 1);
    QCOMPARE(choice.value("finish_reason"_L1).toString(), u"tool_calls"_s);
}

void TestTranslateResponse::completionIncomplete_data()
{
    QTest::addColumn<QString>("reason");
    QTest::addColumn<QString>("expected");
    QTest::newRow("max_output_tokens") << u"max_output_tokens"_s << u"length"_s;
    QTest::newRow("content_filter") << u"content_filter"_s << u"content_filter"_s;
}

void TestTranslateResponse::completionIncomplete()
{
    QFETCH(QString, reason);
    QFETCH(QString, expected);
    QJsonObject response{{u"status"_s, u"incomplete"_s},
                         {u"incomplete_details"_s, QJsonObject{{u"reason"_s, reason}}},
                         {u"output"_s, QJsonArray{messageItem("m", "trunc")}}};
    const QJsonObject choice =
        sy::chatCompletionFromResponse(response, u"m"_s, u"id"_s, 1).value("choices"_L1).toArray().at(0).toObject();
    QCOMPARE(choice.value("finish_reason"_L1).toString(), expected);
    QCOMPARE(choice.value("message"_L1).toObject().value("content"_L1).toString(), u"trunc"_s);
}

void TestTranslateResponse::completionRefusalAndEmpty()
{
    const QJsonObject refused = parse(R"({"status":"completed","output":[{"type":"message","role":"assistant",
        "content":[{"type":"refusal","refusal":"I won't"}]}]})");
    const QJsonObject message = sy::chatCompletionFromResponse(refused, u"m"_s, u"id"_s, 1)
                                    .value("choices"_L1)
                                    .toArray()
                                    .at(0)
                                    .toObject()
                                    .value("message"_L1)
                                    .toObject();
    QCOMPARE(message.value("refusal"_L1).toString(), u"I won't"_s);
    QVERIFY(message.value("content"_L1).isNull());
    QVERIFY(!message.contains("tool_calls"_L1));

    const QJsonObject emptyText = parse(R"({"status":"completed","output":[{"type":"message","role":"assistant",
        "content":[{"type":"output_text","text":""}]}]})");
    const QJsonObject m2 = sy::chatCompletionFromResponse(emptyText, u"m"_s, u"id"_s, 1)
                               .value("choices"_L1)
                               .toArray()
                               .at(0)
                               .toObject()
                               .value("message"_L1)
                               .toObject();
    QCOMPARE(m2.value("content"_L1), QJsonValue(u""_s));
}

void TestTranslateResponse::completionWithoutUsage()
{
    const QJsonObject c =
        sy::chatCompletionFromResponse(parse(R"({"status":"completed","output":[]})"), u"m"_s, u"id"_s, 1);
    QVERIFY(!c.contains("usage"_L1));
    QCOMPARE(c.value("choices"_L1).toArray().at(0).toObject().value("finish_reason"_L1).toString(), u"stop"_s);
}

void TestTranslateResponse::accumulatorKeepsCompletedOutput()
{
    sy::ResponseAccumulator acc;
    acc.onEvent("response.output_item.done", itemDone(0, messageItem("stale", "from events")));
    const QJsonObject final{{u"id"_s, u"resp_1"_s},
                            {u"status"_s, u"completed"_s},
                            {u"output"_s, QJsonArray{messageItem("m", "authoritative")}},
                            {u"usage"_s, parse(R"({"input_tokens":2,"output_tokens":3})")}};
    acc.onEvent("response.completed", terminalEvent("response.completed", final));
    QVERIFY(acc.terminal());
    QCOMPARE(acc.status(), u"completed"_s);
    QCOMPARE(acc.response(), final);
    QCOMPARE(acc.usage().total, Opt(5));
    QVERIFY(acc.error().isEmpty());
    QCOMPARE(acc.responseId(), u"resp_1"_s);
}

void TestTranslateResponse::accumulatorRebuildsEmptyOutputInIndexOrder()
{
    sy::ResponseAccumulator acc;
    acc.onEvent("response.created",
                terminalEvent("response.created", parse(R"({"id":"resp_7","status":"in_progress"})")));
    QVERIFY(!acc.terminal());
    // Done events may finish out of order; the index decides the place.
    acc.onEvent("response.output_item.done", itemDone(2, callItem("fc", "call_1", "bash", "{}")));
    acc.onEvent("response.output_item.done", itemDone(0, QJsonObject{{u"type"_s, u"reasoning"_s}, {u"id"_s, u"rs"_s}}));
    acc.onEvent("response.output_item.done", itemDone(1, messageItem("m", "hi")));
    const QJsonObject final = parse(R"({"id":"resp_7","status":"completed","output":[],
        "usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}})");
    acc.onEvent("response.completed", terminalEvent("response.completed", final));
    const QJsonObject r = acc.response();
    const QJsonArray output = r.value("output"_L1).toArray();
    QCOMPARE(output.size(), 3);
    QCOMPARE(output.at(0).toObject().value("id"_L1).toString(), u"rs"_s);
    QCOMPARE(output.at(1).toObject(), messageItem("m", "hi"));
    QCOMPARE(output.at(2).toObject(), callItem("fc", "call_1", "bash", "{}"));
    QCOMPARE(r.value("usage"_L1), final.value("usage"_L1));
    QCOMPARE(r.value("id"_L1).toString(), u"resp_7"_s);
}

void TestTranslateResponse::accumulatorRebuildsMissingOutput()
{
    sy::ResponseAccumulator acc;
    acc.onEvent("response.output_item.done", itemDone(0, messageItem("m", "x")));
    acc.onEvent("response.completed", terminalEvent("response.completed", parse(R"({"status":"completed"})")));
    QCOMPARE(acc.response().value("output"_L1).toArray(), QJsonArray{messageItem("m", "x")});

    // Nothing to rebuild from: `output` is still present (the openai SDK throws without it).
    sy::ResponseAccumulator empty;
    empty.onEvent("response.completed", terminalEvent("response.completed", parse(R"({"status":"completed"})")));
    QVERIFY(empty.response().value("output"_L1).isArray());
    QVERIFY(empty.response().value("output"_L1).toArray().isEmpty());
}

void TestTranslateResponse::accumulatorItemsWithoutIndexKeepArrivalOrder()
{
    sy::ResponseAccumulator acc;
    for (const char *text : {"a", "b", "c"})
        acc.onEvent("response.output_item.done", QJsonObject{{u"item"_s, messageItem(text, text)}});
    acc.onEvent("response.completed",
                terminalEvent("response.completed", parse(R"({"status":"completed","output":[]})")));
    const QJsonArray output = acc.response().value("output"_L1).toArray();
    QCOMPARE(output.size(), 3);
    QCOMPARE(output.at(0).toObject().value("id"_L1).toString(), u"a"_s);
    QCOMPARE(output.at(2).toObject().value("id"_L1).toString(), u"c"_s);
}

void TestTranslateResponse::accumulatorIncomplete()
{
    sy::ResponseAccumulator acc;
    acc.onEvent("response.output_item.done", itemDone(0, messageItem("m", "cut")));
    acc.onEvent("response.incomplete",
                terminalEvent("response.incomplete",
                              parse(R"({"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},
                                        "output":[],"usage":{"input_tokens":3,"output_tokens":50}})")));
    QVERIFY(acc.terminal());
    QCOMPARE(acc.status(), u"incomplete"_s);
    QCOMPARE(acc.response().value("output"_L1).toArray().size(), 1);
    QCOMPARE(acc.usage().output, Opt(50));
    QVERIFY(acc.error().isEmpty());
}

void TestTranslateResponse::accumulatorFailed()
{
    sy::ResponseAccumulator acc;
    acc.onEvent("response.failed", terminalEvent("response.failed", parse(R"({"id":"resp_f",
        "error":{"code":"server_error","message":"boom"}})")));
    QVERIFY(acc.terminal());
    // A missing status is filled in from the event.
    QCOMPARE(acc.status(), u"failed"_s);
    QCOMPARE(acc.error(), parse(R"({"code":"server_error","message":"boom"})"));
    QVERIFY(acc.response().value("output"_L1).isArray());
}

void TestTranslateResponse::accumulatorErrorEvent_data()
{
    QTest::addColumn<QJsonObject>("data");
    QTest::newRow("flat") << parse(R"({"type":"error","code":"rate_limit_exceeded","message":"slow","param":null,
                                       "sequence_number":4})");
    QTest::newRow("nested") << parse(R"({"type":"error","error":{"code":"rate_limit_exceeded","message":"slow",
                                         "param":null}})");
}

void TestTranslateResponse::accumulatorErrorEvent()
{
    QFETCH(QJsonObject, data);
    sy::ResponseAccumulator acc;
    acc.onEvent("response.created",
                terminalEvent("response.created", parse(R"({"id":"resp_e","status":"in_progress"})")));
    acc.onEvent("error", data);
    QVERIFY(acc.terminal());
    QCOMPARE(acc.status(), u"failed"_s);
    QCOMPARE(acc.error(), parse(R"({"code":"rate_limit_exceeded","message":"slow","param":null})"));
    QCOMPARE(acc.response().value("error"_L1).toObject(), acc.error());
    QCOMPARE(acc.responseId(), u"resp_e"_s);
}

void TestTranslateResponse::accumulatorBeforeTerminal()
{
    sy::ResponseAccumulator acc;
    QVERIFY(!acc.terminal());
    QVERIFY(acc.status().isEmpty());
    acc.onEvent("response.created", terminalEvent("response.created", parse(R"({"id":"r","status":"in_progress"})")));
    acc.onEvent("response.output_item.done", itemDone(0, messageItem("m", "so far")));
    QVERIFY(!acc.terminal());
    QVERIFY(acc.status().isEmpty());
    QCOMPARE(acc.response().value("output"_L1).toArray().size(), 1);
    QVERIFY(!acc.usage().anyKnown());
}

void TestTranslateResponse::accumulatorIgnoresEventsAfterTerminal()
{
    sy::ResponseAccumulator acc;
    acc.onEvent("response.completed",
                terminalEvent("response.completed", parse(R"({"status":"completed","output":[]})")));
    acc.onEvent("response.output_item.done", itemDone(0, messageItem("late", "late")));
    acc.onEvent("error", parse(R"({"message":"late error"})"));
    QCOMPARE(acc.status(), u"completed"_s);
    QVERIFY(acc.error().isEmpty());
    QVERIFY(acc.response().value("output"_L1).toArray().isEmpty());
}

void TestTranslateResponse::accumulatorTypeFromData()
{
    sy::ResponseAccumulator acc;
    acc.onEvent(QByteArray(), itemDone(0, messageItem("m", "x")));
    acc.onEvent(QByteArray(), terminalEvent("response.completed", parse(R"({"status":"completed"})")));
    QVERIFY(acc.terminal());
    QCOMPARE(acc.response().value("output"_L1).toArray().size(), 1);
}

void TestTranslateResponse::accumulatorFeedsChatCompletion()
{
    // Non-streaming chat completions: accumulate, then convert.
    sy::ResponseAccumulator acc;
    acc.onEvent("response.output_item.done", itemDone(0, messageItem("m", "pong")));
    acc.onEvent("response.completed", terminalEvent("response.completed", parse(R"({"status":"completed","output":[],
        "usage":{"input_tokens":4,"output_tokens":1}})")));
    const QJsonObject c = sy::chatCompletionFromResponse(acc.response(), u"gpt-5"_s, u"chatcmpl-x"_s, 5);
    const QJsonObject choice = c.value("choices"_L1).toArray().at(0).toObject();
    QCOMPARE(choice.value("message"_L1).toObject().value("content"_L1).toString(), u"pong"_s);
    QCOMPARE(c.value("usage"_L1).toObject(), parse(R"({"prompt_tokens":4,"completion_tokens":1,"total_tokens":5})"));
}

void TestTranslateResponse::accumulatorSummaryKeepsOnlyWhatTheLogNeeds()
{
    // A pass-through stream keeps id, status, usage and error; the echoed request and the output stay out.
    sy::ResponseAccumulator acc;
    acc.setSummaryOnly(true);
    const QString instructions(20000, QLatin1Char('x'));
    QJsonObject created{{u"id"_s, u"resp_s"_s}, {u"status"_s, u"in_progress"_s}, {u"instructions"_s, instructions},
                        {u"output"_s, QJsonArray()}};
    acc.onEvent("response.created", terminalEvent("response.created", created));
    QCOMPARE(acc.responseId(), u"resp_s"_s);
    QVERIFY(!acc.response().contains("instructions"_L1));
    acc.onEvent("response.output_item.done",
                QJsonObject{{u"output_index"_s, 0}, {u"item"_s, messageItem("msg_1", "hello")}});
    QJsonObject completed = created;
    completed.insert(u"status"_s, u"completed"_s);
    completed.insert(u"output"_s, QJsonArray{messageItem("msg_1", "hello")});
    completed.insert(u"usage"_s,
                     QJsonObject{{u"input_tokens"_s, 10}, {u"output_tokens"_s, 3}, {u"total_tokens"_s, 13}});
    acc.onEvent("response.completed", terminalEvent("response.completed", completed));
    QVERIFY(acc.terminal());
    QCOMPARE(acc.status(), u"completed"_s);
    QCOMPARE(acc.usage().total, Opt(13));
    QCOMPARE(acc.responseId(), u"resp_s"_s);
    const QJsonObject kept = acc.response();
    QVERIFY(!kept.contains("instructions"_L1));
    QCOMPARE(kept.value("output"_L1).toArray().size(), 0); // neither the final output nor the rebuilt one
    QCOMPARE(QJsonDocument(kept).toJson(QJsonDocument::Compact).size() < 200, true);
}


void TestTranslateResponse::accumulatorSkippedDataChangesNothing_data()
{
    // Whole streams as the upstream sends them, every event name with its data.
    using Stream = QList<QPair<QByteArray, QJsonObject>>;
    QTest::addColumn<Stream>("stream");
    const QJsonObject created = terminalEvent("response.created", parse(R"({"id":"resp_s","status":"in_progress",
        "model":"gpt-5-codex","output":[]})"));
    const QJsonObject reasoning = parse(R"({"id":"rs_1","type":"reasoning","summary":[],
        "encrypted_content":"gAAAAB..."})");
    const Stream start = {
        {"response.created", created},
        {"response.in_progress", terminalEvent("response.in_progress", parse(R"({"id":"resp_s",
            "status":"in_progress"})"))},
        {"response.output_item.added", QJsonObject{{u"type"_s, u"response.output_item.added"_s},
                                                   {u"output_index"_s, 0}, {u"item"_s, reasoning}}},
        {"response.output_item.done", itemDone(0, reasoning)},
        {"response.output_item.added", QJsonObject{{u"type"_s, u"response.output_item.added"_s},
                                                   {u"output_index"_s, 1}, {u"item"_s, messageItem("m", "")}}},
        {"response.content_part.added", parse(R"({"type":"response.content_part.added","output_index":1,
            "content_index":0,"part":{"type":"output_text","text":""}})")},
        {"response.output_text.delta", parse(R"({"type":"response.output_text.delta","output_index":1,
            "delta":"Hel"})")},
        {"response.output_text.delta", parse(R"({"type":"response.output_text.delta","output_index":1,
            "delta":"lo"})")},
        {"response.output_text.done", parse(R"({"type":"response.output_text.done","output_index":1,
            "text":"Hello"})")},
        {"response.content_part.done", parse(R"({"type":"response.content_part.done","output_index":1,
            "part":{"type":"output_text","text":"Hello"}})")},
        {"response.output_item.done", itemDone(1, messageItem("m", "Hello"))},
        {"codex.rate_limits", parse(R"({"type":"codex.rate_limits","rate_limits":{"primary":
            {"used_percent":12.0}}})")},
    };
    const QJsonObject usage = parse(R"({"input_tokens":10,"output_tokens":5,"total_tokens":15})");
    QTest::newRow("completed, output left empty")
        << (Stream(start) << qMakePair(QByteArray("response.completed"),
                                       terminalEvent("response.completed",
                                                     QJsonObject{{u"id"_s, u"resp_s"_s}, {u"status"_s, u"completed"_s},
                                                                 {u"output"_s, QJsonArray()}, {u"usage"_s, usage}})));
    QTest::newRow("incomplete")
        << (Stream(start) << qMakePair(QByteArray("response.incomplete"),
                                       terminalEvent("response.incomplete", parse(R"({"id":"resp_s",
            "status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":1}})"))));
    QTest::newRow("failed")
        << (Stream(start) << qMakePair(QByteArray("response.failed"),
                                       terminalEvent("response.failed", parse(R"({"id":"resp_s",
            "error":{"code":"server_error","message":"boom"}})"))));
    QTest::newRow("error event")
        << (Stream(start) << qMakePair(QByteArray("error"), parse(R"({"type":"error","code":"rate_limit_exceeded",
            "message":"slow"})")));
    QTest::newRow("error right after created")
        << Stream{{"response.created", created},
                  {"error", parse(R"({"type":"error","error":{"code":"server_error","message":"gone"}})")}};
    QTest::newRow("names only in the data")
        << Stream{{"", created},
                  {"", itemDone(0, messageItem("m", "Hi"))},
                  {"", terminalEvent("response.completed", QJsonObject{{u"id"_s, u"resp_s"_s}, {u"output"_s, QJsonArray()}})}};
}

void TestTranslateResponse::accumulatorSkippedDataChangesNothing()
{
    // The turn parses an event only when usesData() says the accumulator reads it: an accumulator that gets
    // an empty object for every other event must end exactly like one that got all the data.
    using Stream = QList<QPair<QByteArray, QJsonObject>>;
    QFETCH(Stream, stream);
    for (const bool summary : {false, true}) {
        sy::ResponseAccumulator all;
        sy::ResponseAccumulator skipping;
        all.setSummaryOnly(summary);
        skipping.setSummaryOnly(summary);
        int skipped = 0;
        for (const auto &[type, data] : stream) {
            all.onEvent(type, data);
            const bool uses = skipping.usesData(type);
            skipped += uses ? 0 : 1;
            skipping.onEvent(type, uses ? data : QJsonObject());
        }
        if (stream.size() > 2 && !stream.first().first.isEmpty())
            QVERIFY(skipped > 0); // the whole streams do exercise the skipping
        QCOMPARE(skipping.terminal(), all.terminal());
        QCOMPARE(skipping.status(), all.status());
        QCOMPARE(skipping.response(), all.response());
        QCOMPARE(skipping.error(), all.error());
        QCOMPARE(skipping.responseId(), all.responseId());
        QCOMPARE(skipping.usage().total, all.usage().total);
    }
}

void TestTranslateResponse::nonStreamingSinkKeepsOnlyItsSummaryOnceItsAnswerIsTaken_data()
{
    QTest::addColumn<int>("kind");
    QTest::addColumn<QString>("status");
    QTest::newRow("responses") << int(sy::SinkKind::ResponsesJson) << u"completed"_s;
    QTest::newRow("chat") << int(sy::SinkKind::ChatJson) << u"completed"_s;
    QTest::newRow("responses incomplete") << int(sy::SinkKind::ResponsesJson) << u"incomplete"_s;
    QTest::newRow("chat incomplete") << int(sy::SinkKind::ChatJson) << u"incomplete"_s;
}

void TestTranslateResponse::nonStreamingSinkKeepsOnlyItsSummaryOnceItsAnswerIsTaken()
{
    // A non-streaming answer is built while its turn's settlement commits (Turn::onEvent): from then on the sink
    // must not hold the response it was built from as well, only what the settlement and the log read.
    QFETCH(int, kind);
    QFETCH(QString, status);
    const std::unique_ptr<sy::TurnSink> sink = sy::makeTurnSink(sy::SinkKind(kind), sy::ChatSinkOptions{u"gpt-5"_s});
    const QString text(50000, QLatin1Char('t'));
    const QJsonObject created{{u"id"_s, u"resp_big"_s}, {u"status"_s, u"in_progress"_s}, {u"output"_s, QJsonArray()}};
    sink->onEvent("response.created", {}, terminalEvent("response.created", created));
    const QJsonObject item = messageItem("msg_1", text.toLatin1().constData());
    sink->onEvent("response.output_item.done", {}, itemDone(0, item));
    QJsonObject completed = created;
    completed.insert(u"status"_s, status);
    completed.insert(u"output"_s, QJsonArray{item});
    completed.insert(u"usage"_s,
                     QJsonObject{{u"input_tokens"_s, 10}, {u"output_tokens"_s, 3}, {u"total_tokens"_s, 13}});
    if (status == "incomplete"_L1)
        completed.insert(u"incomplete_details"_s, QJsonObject{{u"reason"_s, u"max_output_tokens"_s}});
    const QByteArray type = "response." + status.toLatin1();
    sink->onEvent(type, {}, terminalEvent(type.constData(), completed));

    const QByteArray built = sink->fullBody();
    QVERIFY(built.contains(text.toLatin1()));
    const QByteArray taken = sink->takeFullBody();
    QVERIFY(taken.contains(text.toLatin1()));
    QCOMPARE(taken.size(), built.size()); // the same answer (a chat id is made anew each time: compare sizes)
    // What stays: the summary, whole.
    QCOMPARE(sink->terminalStatus(), status);
    QCOMPARE(sink->responseId(), u"resp_big"_s);
    QCOMPARE(sink->usage().total, Opt(13));
    // What goes: the output. Built again now, the answer has none of it.
    const QByteArray after = sink->fullBody();
    QVERIFY2(!after.contains(text.toLatin1()), after.left(200).constData());
    QVERIFY2(after.size() < 1000, QByteArray::number(after.size()).constData());
    // An incomplete answer still reads as one: its reason is part of the summary.
    if (status == "incomplete"_L1)
        QVERIFY2(after.contains("max_output_tokens") || after.contains("\"length\""), after.constData());
}

QTEST_GUILESS_MAIN(TestTranslateResponse)
#include "tst_translate_response.moc"
