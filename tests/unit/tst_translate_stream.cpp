// ChatStreamTranslator: upstream Responses SSE events -> Chat Completions chunks, and the OpenCode tool-call
// round trip (chat request -> Responses -> streamed tool call -> chat chunks -> the client's next request).

#include "TestSupport.h"
#include "api/translate/ChatRequestToResponses.h"
#include "api/translate/ChatStreamTranslator.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QtTest>

using namespace Qt::StringLiterals;

namespace {

struct Event
{
    QByteArray type;
    QJsonObject data;
};

// Builders for upstream events, shaped like the ChatGPT backend's.
Event ev(const char *type, QJsonObject data)
{
    data.insert(u"type"_s, QLatin1String(type));
    return Event{QByteArray(type), data};
}

QJsonObject responseObject(const char *status, const QJsonArray &output = {}, const QJsonObject &usage = {})
{
    QJsonObject r{{u"id"_s, u"resp_1"_s},
                  {u"object"_s, u"response"_s},
                  {u"status"_s, QLatin1String(status)},
                  {u"model"_s, u"gpt-5"_s},
                  {u"output"_s, output}};
    if (!usage.isEmpty())
        r.insert(u"usage"_s, usage);
    return r;
}

QJsonObject usageObject(qint64 in, qint64 cached, qint64 out, qint64 reasoning)
{
    return QJsonObject{{u"input_tokens"_s, in},
                       {u"input_tokens_details"_s, QJsonObject{{u"cached_tokens"_s, cached}}},
                       {u"output_tokens"_s, out},
                       {u"output_tokens_details"_s, QJsonObject{{u"reasoning_tokens"_s, reasoning}}},
                       {u"total_tokens"_s, in + out}};
}

QJsonObject messageItem(const char *id, const QString &text)
{
    return QJsonObject{{u"id"_s, QLatin1String(id)},
                       {u"type"_s, u"message"_s},
                       {u"role"_s, u"assistant"_s},
                       {u"status"_s, u"completed"_s},
                       {u"content"_s, QJsonArray{QJsonObject{{u"type"_s, u"output_text"_s}, {u"text"_s, text}}}}};
}

QJsonObject callItem(const char *id, const QString &callId, const QString &name, const QString &arguments)
{
    return QJsonObject{{u"id"_s, QLatin1String(id)},
                       {u"type"_s, u"function_call"_s},
                       {u"call_id"_s, callId},
                       {u"name"_s, name},
                       {u"arguments"_s, arguments}};
}

QList<Event> preamble()
{
    return {ev("response.created", {{u"response"_s, responseObject("in_progress")}}),
            ev("response.in_progress", {{u"response"_s, responseObject("in_progress")}})};
}

// A streamed text message at `index`, split into `pieces`.
QList<Event> textMessage(int index, const char *itemId, const QStringList &pieces)
{
    const QString full = pieces.join(QString());
    QList<Event> events{
        ev("response.output_item.added", {{u"output_index"_s, index}, {u"item"_s, messageItem(itemId, QString())}}),
        ev("response.content_part.added",
           {{u"output_index"_s, index}, {u"item_id"_s, QLatin1String(itemId)}, {u"content_index"_s, 0}})};
    for (const QString &p : pieces)
        events.append(ev("response.output_text.delta", {{u"output_index"_s, index},
                                                        {u"item_id"_s, QLatin1String(itemId)},
                                                        {u"content_index"_s, 0},
                                                        {u"delta"_s, p}}));
    events.append(ev("response.output_text.done",
                     {{u"output_index"_s, index}, {u"item_id"_s, QLatin1String(itemId)}, {u"text"_s, full}}));
    events.append(
        ev("response.content_part.done", {{u"output_index"_s, index}, {u"item_id"_s, QLatin1String(itemId)}}));
    events.append(
        ev("response.output_item.done", {{u"output_index"_s, index}, {u"item"_s, messageItem(itemId, full)}}));
    return events;
}

QList<Event> functionCall(int index, const char *itemId, const QString &callId, const QString &name,
                          const QStringList &fragments)
{
    const QString full = fragments.join(QString());
    QList<Event> events{ev("response.output_item.added",
                           {{u"output_index"_s, index}, {u"item"_s, callItem(itemId, callId, name, QString())}})};
    for (const QString &f : fragments)
        events.append(ev("response.function_call_arguments.delta",
                         {{u"output_index"_s, index}, {u"item_id"_s, QLatin1String(itemId)}, {u"delta"_s, f}}));
    events.append(ev("response.function_call_arguments.done",
                     {{u"output_index"_s, index}, {u"item_id"_s, QLatin1String(itemId)}, {u"arguments"_s, full}}));
    events.append(ev("response.output_item.done",
                     {{u"output_index"_s, index}, {u"item"_s, callItem(itemId, callId, name, full)}}));
    return events;
}

// What a chat client sees: every frame decoded, plus the message it reassembles the way the SDKs do.
struct ClientView
{
    QList<QByteArray> frames;
    QList<QJsonObject> chunks; // every JSON payload, in order
    bool done = false;
    bool framesAfterDone = false;
    bool malformed = false;
    QString role;
    QString content;
    QString refusal;
    QJsonArray toolCalls; // [{id, type, function:{name, arguments}}] by index
    QStringList finishReasons;
    QJsonObject usage;
    int usageChunks = 0;
    QJsonObject error;
};

ClientView play(sy::ChatStreamTranslator &t, const QList<Event> &events, const QByteArray &typeOverride = "x")
{
    ClientView v;
    auto consume = [&v](const QList<QByteArray> &frames) {
        for (const QByteArray &f : frames) {
            v.frames.append(f);
            if (!f.startsWith("data: ") || !f.endsWith("\n\n") || f.count('\n') != 2) {
                v.malformed = true;
                continue;
            }
            if (v.done)
                v.framesAfterDone = true;
            const QByteArray payload = f.mid(6, f.size() - 8);
            if (payload == "[DONE]") {
                v.done = true;
                continue;
            }
            const QJsonObject o = QJsonDocument::fromJson(payload).object();
            if (o.isEmpty()) {
                v.malformed = true;
                continue;
            }
            v.chunks.append(o);
            if (o.contains("error"_L1)) {
                v.error = o.value("error"_L1).toObject();
                continue;
            }
            if (o.value("usage"_L1).isObject()) {
                v.usage = o.value("usage"_L1).toObject();
                ++v.usageChunks;
            }
            const QJsonArray choices = o.value("choices"_L1).toArray();
            for (const QJsonValue &cv : choices) {
                const QJsonObject choice = cv.toObject();
                const QJsonObject delta = choice.value("delta"_L1).toObject();
                if (delta.contains("role"_L1))
                    v.role = delta.value("role"_L1).toString();
                v.content += delta.value("content"_L1).toString();
                v.refusal += delta.value("refusal"_L1).toString();
                const QJsonArray calls = delta.value("tool_calls"_L1).toArray();
                for (const QJsonValue &callValue : calls) {
                    const QJsonObject call = callValue.toObject();
                    const int index = call.value("index"_L1).toInt(-1);
                    if (index < 0 || index > v.toolCalls.size()) {
                        v.malformed = true;
                        continue;
                    }
                    if (index == v.toolCalls.size())
                        v.toolCalls.append(QJsonObject{{u"function"_s, QJsonObject{{u"arguments"_s, u""_s}}}});
                    QJsonObject acc = v.toolCalls.at(index).toObject();
                    QJsonObject fn = acc.value("function"_L1).toObject();
                    for (const auto key : {"id"_L1, "type"_L1}) {
                        if (call.contains(key))
                            acc.insert(key, call.value(key));
                    }
                    const QJsonObject part = call.value("function"_L1).toObject();
                    if (part.contains("name"_L1))
                        fn.insert(u"name"_s, part.value("name"_L1));
                    const QString arguments =
                        fn.value("arguments"_L1).toString() + part.value("arguments"_L1).toString();
                    fn.insert(u"arguments"_s, arguments);
                    acc.insert(u"function"_s, fn);
                    v.toolCalls.replace(index, acc);
                }
                if (choice.value("finish_reason"_L1).isString())
                    v.finishReasons.append(choice.value("finish_reason"_L1).toString());
            }
        }
    };
    for (const Event &e : events)
        consume(t.onEvent(typeOverride == "x" ? e.type : typeOverride, e.data));
    return v;
}

} // namespace

class TestTranslateStream : public QObject
{
    Q_OBJECT

private slots:
    void textStreamWithUsage();
    void textStreamWithoutUsage();
    void chunkEnvelope();
    void twoToolCallsIndexedInOrder();
    void interleavedArgumentDeltasFollowTheirCall();
    void textAndToolCallFinishesWithToolCalls();
    void incompleteMapsFinishReason_data();
    void incompleteMapsFinishReason();
    void usageChunkOmitsUnknownNumbers();
    void failedResponseEndsWithErrorFrame();
    void errorEventEndsWithErrorFrame_data();
    void errorEventEndsWithErrorFrame();
    void finishIncompleteNeverLeavesClientHanging();
    void finishIncompleteAfterFinishIsEmpty();
    void eventsAfterFinishAreIgnored();
    void vendorAndUnknownEventsProduceNothing();
    void roleChunkPrecedesFirstDeltaWithoutCreated();
    void doneOnlyTextIsDeliveredOnce();
    void deltasWithoutIndexAreNotRepeated();
    void completedOutputFillsMissingDeltas();
    void argumentsOnlyInDoneEvent();
    void refusalDeltas();
    void typeFromDataWhenEventNameMissing();
    void openCodeToolCallRoundTrip();
};

void TestTranslateStream::textStreamWithUsage()
{
    sy::ChatStreamTranslator t(u"gpt-5"_s, u"chatcmpl-1"_s, 1764475200, true);
    const ClientView v =
        play(t, preamble() + textMessage(0, "msg_1", {u"Hel"_s, u"lo"_s, u" there"_s}) +
                    QList<Event>{ev(
                        "response.completed",
                        {{u"response"_s, responseObject("completed", QJsonArray{messageItem("msg_1", u"Hello there"_s)},
                                                        usageObject(12, 4, 7, 2))}})});
    QVERIFY(!v.malformed);
    QVERIFY(v.done);
    QVERIFY(!v.framesAfterDone);
    // role, 3 deltas, finish, usage, [DONE]
    QCOMPARE(v.frames.size(), 7);
    QCOMPARE(v.frames.last(), QByteArray("data: [DONE]\n\n"));
    QCOMPARE(v.chunks.at(0).value("choices"_L1).toArray().at(0).toObject().value("delta"_L1).toObject(),
             QJsonObject({{u"role"_s, u"assistant"_s}, {u"content"_s, u""_s}}));
    QCOMPARE(v.role, u"assistant"_s);
    QCOMPARE(v.content, u"Hello there"_s);
    QCOMPARE(v.finishReasons, QStringList{u"stop"_s});
    QCOMPARE(v.usageChunks, 1);
    const QJsonObject usageChunk = v.chunks.last();
    QCOMPARE(usageChunk.value("choices"_L1).toArray(), QJsonArray());
    QCOMPARE(usageChunk.value("id"_L1).toString(), u"chatcmpl-1"_s);
    QCOMPARE(v.usage.value("prompt_tokens"_L1).toInt(), 12);
    QCOMPARE(v.usage.value("completion_tokens"_L1).toInt(), 7);
    QCOMPARE(v.usage.value("total_tokens"_L1).toInt(), 19);
    QCOMPARE(v.usage.value("prompt_tokens_details"_L1).toObject().value("cached_tokens"_L1).toInt(), 4);
    QCOMPARE(v.usage.value("completion_tokens_details"_L1).toObject().value("reasoning_tokens"_L1).toInt(), 2);
    // Every chunk but the usage chunk says usage:null, as OpenAI does when usage was requested.
    for (int i = 0; i + 1 < v.chunks.size(); ++i) {
        QVERIFY(v.chunks.at(i).contains("usage"_L1));
        QVERIFY(v.chunks.at(i).value("usage"_L1).isNull());
    }
    QVERIFY(t.finished());
    QVERIFY(!t.failed());
    QCOMPARE(t.finishReason(), u"stop"_s);
    QCOMPARE(t.usage().input, std::optional<qint64>(12));
    QCOMPARE(t.usage().reasoning, std::optional<qint64>(2));
}

void TestTranslateStream::textStreamWithoutUsage()
{
    sy::ChatStreamTranslator t(u"gpt-5"_s, u"chatcmpl-1"_s, 1, false);
    const ClientView v =
        play(t, preamble() + textMessage(0, "msg_1", {u"a"_s, u"b"_s}) +
                    QList<Event>{ev("response.completed",
                                    {{u"response"_s, responseObject("completed", {}, usageObject(1, 0, 2, 0))}})});
    QVERIFY(!v.malformed);
    QCOMPARE(v.frames.size(), 5); // role, a, b, finish, [DONE]
    QCOMPARE(v.usageChunks, 0);
    for (const QJsonObject &c : v.chunks)
        QVERIFY(!c.contains("usage"_L1));
    QCOMPARE(v.content, u"ab"_s);
    QCOMPARE(v.finishReasons, QStringList{u"stop"_s});
    QVERIFY(v.done);
    // Usage is still known to the proxy for its own log.
    QCOMPARE(t.usage().output, std::optional<qint64>(2));
}

void TestTranslateStream::chunkEnvelope()
{
    // Model and id are escaped properly even when they hold JSON-significant characters.
    const QString model = u"gpt-\"5\"\\x"_s;
    sy::ChatStreamTranslator t(model, u"chatcmpl-\u00e9"_s, 1764475200, false);
    const ClientView v = play(t, preamble() + textMessage(0, "m", {u"\u00fcnicode \"q\"\n"_s}));
    QVERIFY(!v.malformed);
    QCOMPARE(v.chunks.size(), 2);
    for (const QJsonObject &c : v.chunks) {
        QCOMPARE(c.value("object"_L1).toString(), u"chat.completion.chunk"_s);
        QCOMPARE(c.value("model"_L1).toString(), model);
        QCOMPARE(c.value("id"_L1).toString(), u"chatcmpl-\u00e9"_s);
        QCOMPARE(c.value("created"_L1).toInteger(), 1764475200);
        const QJsonObject choice = c.value("choices"_L1).toArray().at(0).toObject();
        QCOMPARE(choice.value("index"_L1).toInt(-1), 0);
        QVERIFY(choice.contains("finish_reason"_L1));
        QVERIFY(choice.value("finish_reason"_L1).isNull());
    }
    QCOMPARE(v.content, u"\u00fcnicode \"q\"\n"_s);
    QVERIFY(!t.finished());
}

void TestTranslateStream::twoToolCallsIndexedInOrder()
{
    sy::ChatStreamTranslator t(u"gpt-5"_s, u"c"_s, 1, true);
    const QJsonObject reasoning{{u"id"_s, u"rs_1"_s}, {u"type"_s, u"reasoning"_s}, {u"summary"_s, QJsonArray()}};
    const QList<Event> events =
        preamble() +
        QList<Event>{ev("response.output_item.added", {{u"output_index"_s, 0}, {u"item"_s, reasoning}}),
                     ev("response.output_item.done", {{u"output_index"_s, 0}, {u"item"_s, reasoning}})} +
        functionCall(1, "fc_a", u"call_a"_s, u"read"_s, {u"{\"pa"_s, u"th\":\"/tmp"_s, u"/x\"}"_s}) +
        functionCall(2, "fc_b", u"call_b"_s, u"bash"_s, {u"{\"command\":"_s, u"\"ls\"}"_s}) +
        QList<Event>{
            ev("response.completed", {{u"response"_s, responseObject("completed", {}, usageObject(5, 0, 9, 3))}})};
    const ClientView v = play(t, events);
    QVERIFY(!v.malformed);
    QCOMPARE(v.toolCalls.size(), 2);
    QCOMPARE(v.toolCalls.at(0).toObject(),
             QJsonObject(
                 {{u"id"_s, u"call_a"_s},
                  {u"type"_s, u"function"_s},
                  {u"function"_s, QJsonObject{{u"name"_s, u"read"_s}, {u"arguments"_s, u"{\"path\":\"/tmp/x\"}"_s}}}}));
    QCOMPARE(v.toolCalls.at(1).toObject(),
             QJsonObject(
                 {{u"id"_s, u"call_b"_s},
                  {u"type"_s, u"function"_s},
                  {u"function"_s, QJsonObject{{u"name"_s, u"bash"_s}, {u"arguments"_s, u"{\"command\":\"ls\"}"_s}}}}));
    QCOMPARE(v.finishReasons, QStringList{u"tool_calls"_s});
    QCOMPARE(v.content, QString());
    QCOMPARE(t.toolCallCount(), 2);

    // Exactly: role, announce a, 3 fragments, announce b, 2 fragments, finish, usage, [DONE]. The done events
    // repeat the arguments and must not add frames.
    QCOMPARE(v.frames.size(), 11);
    const QJsonObject announceA =
        v.chunks.at(1).value("choices"_L1).toArray().at(0).toObject().value("delta"_L1).toObject();
    QCOMPARE(announceA.value("tool_calls"_L1).toArray().at(0).toObject(),
             QJsonObject({{u"index"_s, 0},
                          {u"id"_s, u"call_a"_s},
                          {u"type"_s, u"function"_s},
                          {u"function"_s, QJsonObject{{u"name"_s, u"read"_s}, {u"arguments"_s, u""_s}}}}));
    const QJsonObject fragment =
        v.chunks.at(2).value("choices"_L1).toArray().at(0).toObject().value("delta"_L1).toObject();
    QCOMPARE(fragment.value("tool_calls"_L1).toArray().at(0).toObject(),
             QJsonObject({{u"index"_s, 0}, {u"function"_s, QJsonObject{{u"arguments"_s, u"{\"pa"_s}}}}));
    const QJsonObject fragmentB =
        v.chunks.at(7).value("choices"_L1).toArray().at(0).toObject().value("delta"_L1).toObject();
    QCOMPARE(fragmentB.value("tool_calls"_L1).toArray().at(0).toObject().value("index"_L1).toInt(-1), 1);
}

void TestTranslateStream::interleavedArgumentDeltasFollowTheirCall()
{
    sy::ChatStreamTranslator t(u"m"_s, u"c"_s, 1, false);
    const QList<Event> events =
        preamble() +
        QList<Event>{ev("response.output_item.added",
                        {{u"output_index"_s, 0}, {u"item"_s, callItem("fc_a", u"A"_s, u"f"_s, {})}}),
                     ev("response.output_item.added",
                        {{u"output_index"_s, 1}, {u"item"_s, callItem("fc_b", u"B"_s, u"g"_s, {})}}),
                     ev("response.function_call_arguments.delta",
                        {{u"item_id"_s, u"fc_b"_s}, {u"output_index"_s, 1}, {u"delta"_s, u"[2"_s}}),
                     ev("response.function_call_arguments.delta",
                        {{u"item_id"_s, u"fc_a"_s}, {u"output_index"_s, 0}, {u"delta"_s, u"[1"_s}}),
                     // item_id alone is enough to find the call
                     ev("response.function_call_arguments.delta", {{u"item_id"_s, u"fc_b"_s}, {u"delta"_s, u"]"_s}}),
                     ev("response.function_call_arguments.delta",
                        {{u"item_id"_s, u"fc_a"_s}, {u"output_index"_s, 0}, {u"delta"_s, u"]"_s}}),
                     ev("response.completed", {{u"response"_s, responseObject("completed")}})};
    const ClientView v = play(t, events);
    QCOMPARE(v.toolCalls.size(), 2);
    QCOMPARE(v.toolCalls.at(0).toObject().value("id"_L1).toString(), u"A"_s);
    QCOMPARE(v.toolCalls.at(0).toObject().value("function"_L1).toObject().value("arguments"_L1).toString(), u"[1]"_s);
    QCOMPARE(v.toolCalls.at(1).toObject().value("id"_L1).toString(), u"B"_s);
    QCOMPARE(v.toolCalls.at(1).toObject().value("function"_L1).toObject().value("arguments"_L1).toString(), u"[2]"_s);
    QCOMPARE(v.finishReasons, QStringList{u"tool_calls"_s});
}

void TestTranslateStream::textAndToolCallFinishesWithToolCalls()
{
    sy::ChatStreamTranslator t(u"m"_s, u"c"_s, 1, false);
    const ClientView v =
        play(t, preamble() + textMessage(0, "msg", {u"checking"_s}) +
                    functionCall(1, "fc", u"call_1"_s, u"bash"_s, {u"{}"_s}) +
                    QList<Event>{ev("response.completed", {{u"response"_s, responseObject("completed")}})});
    QCOMPARE(v.content, u"checking"_s);
    QCOMPARE(v.toolCalls.size(), 1);
    QCOMPARE(v.finishReasons, QStringList{u"tool_calls"_s});
}

void TestTranslateStream::incompleteMapsFinishReason_data()
{
    QTest::addColumn<QString>("reason");
    QTest::addColumn<bool>("withToolCall");
    QTest::addColumn<QString>("expected");
    QTest::newRow("max_output_tokens") << u"max_output_tokens"_s << false << u"length"_s;
    QTest::newRow("max_output_tokens during a call") << u"max_output_tokens"_s << true << u"length"_s;
    QTest::newRow("content_filter") << u"content_filter"_s << false << u"content_filter"_s;
    QTest::newRow("unknown reason") << u"something_new"_s << false << u"length"_s;
    QTest::newRow("no reason") << QString() << false << u"length"_s;
}

void TestTranslateStream::incompleteMapsFinishReason()
{
    QFETCH(QString, reason);
    QFETCH(bool, withToolCall);
    QFETCH(QString, expected);
    sy::ChatStreamTranslator t(u"m"_s, u"c"_s, 1, true);
    QJsonObject response = responseObject("incomplete", {}, usageObject(3, 0, 100, 0));
    if (!reason.isEmpty())
        response.insert(u"incomplete_details"_s, QJsonObject{{u"reason"_s, reason}});
    QList<Event> events = preamble() + textMessage(0, "m", {u"partial"_s});
    if (withToolCall)
        events += functionCall(1, "fc", u"call"_s, u"f"_s, {u"{\"a\":"_s});
    events.append(ev("response.incomplete", {{u"response"_s, response}}));
    const ClientView v = play(t, events);
    QCOMPARE(v.finishReasons, QStringList{expected});
    QCOMPARE(t.finishReason(), expected);
    QCOMPARE(v.usage.value("completion_tokens"_L1).toInt(), 100);
    QVERIFY(v.done);
    QVERIFY(!t.failed());
}

void TestTranslateStream::usageChunkOmitsUnknownNumbers()
{
    sy::ChatStreamTranslator t(u"m"_s, u"c"_s, 1, true);
    const QJsonObject partialUsage{{u"input_tokens"_s, 10}};
    const ClientView v = play(
        t, QList<Event>{ev("response.completed", {{u"response"_s, responseObject("completed", {}, partialUsage)}})});
    QCOMPARE(v.usageChunks, 1);
    QCOMPARE(v.usage, QJsonObject({{u"prompt_tokens"_s, 10}}));
    QVERIFY(!t.usage().output);
    QVERIFY(!t.usage().total);

    sy::ChatStreamTranslator none(u"m"_s, u"c"_s, 1, true);
    const ClientView v2 =
        play(none, QList<Event>{ev("response.completed", {{u"response"_s, responseObject("completed")}})});
    // A usage chunk is still sent (the client asked for one), but it invents no zeros.
    QCOMPARE(v2.usageChunks, 1);
    QCOMPARE(v2.usage, QJsonObject());
    QVERIFY(!none.usage().anyKnown());
}

void TestTranslateStream::failedResponseEndsWithErrorFrame()
{
    sy::ChatStreamTranslator t(u"m"_s, u"c"_s, 1, true);
    QJsonObject response = responseObject("failed");
    response.insert(u"error"_s, QJsonObject{{u"code"_s, u"server_error"_s}, {u"message"_s, u"boom"_s}});
    const ClientView v = play(t, preamble() + textMessage(0, "m", {u"par"_s}) +
                                     QList<Event>{ev("response.failed", {{u"response"_s, response}})});
    QVERIFY(!v.malformed);
    QCOMPARE(v.frames.size(), 4); // role, "par", error, [DONE]
    QCOMPARE(v.error.value("message"_L1).toString(), u"boom"_s);
    QCOMPARE(v.error.value("code"_L1).toString(), u"server_error"_s);
    QCOMPARE(v.error.value("type"_L1).toString(), u"server_error"_s);
    QVERIFY(v.error.contains("param"_L1));
    QVERIFY(v.finishReasons.isEmpty());
    QCOMPARE(v.frames.last(), QByteArray("data: [DONE]\n\n"));
    QVERIFY(t.finished());
    QVERIFY(t.failed());
    QVERIFY(t.finishReason().isEmpty());
}

void TestTranslateStream::errorEventEndsWithErrorFrame_data()
{
    QTest::addColumn<QJsonObject>("data");
    QTest::addColumn<QString>("message");
    QTest::addColumn<QString>("type");
    QTest::newRow("flat") << QJsonObject{{u"type"_s, u"error"_s},
                                         {u"code"_s, u"rate_limit_exceeded"_s},
                                         {u"message"_s, u"slow down"_s},
                                         {u"param"_s, QJsonValue()}}
                          << u"slow down"_s << u"rate_limit_exceeded"_s;
    QTest::newRow("nested") << QJsonObject{{u"type"_s, u"error"_s},
                                           {u"error"_s, QJsonObject{{u"type"_s, u"invalid_request_error"_s},
                                                                    {u"code"_s, u"bad"_s},
                                                                    {u"message"_s, u"nope"_s}}}}
                            << u"nope"_s << u"invalid_request_error"_s;
    QTest::newRow("empty") << QJsonObject{{u"type"_s, u"error"_s}} << u"the upstream reported an error"_s
                           << u"server_error"_s;
}

void TestTranslateStream::errorEventEndsWithErrorFrame()
{
    QFETCH(QJsonObject, data);
    QFETCH(QString, message);
    QFETCH(QString, type);
    sy::ChatStreamTranslator t(u"m"_s, u"c"_s, 1, false);
    const ClientView v = play(t, QList<Event>{Event{"error", data}});
    QCOMPARE(v.frames.size(), 2); // no role chunk before an error that came first
    QCOMPARE(v.error.value("message"_L1).toString(), message);
    QCOMPARE(v.error.value("type"_L1).toString(), type);
    QVERIFY(v.done);
    QVERIFY(t.failed());
}

void TestTranslateStream::finishIncompleteNeverLeavesClientHanging()
{
    sy::ChatStreamTranslator t(u"m"_s, u"c"_s, 1, true);
    play(t, preamble() + textMessage(0, "m", {u"half"_s}));
    QVERIFY(!t.finished());
    const QList<QByteArray> frames = t.finishIncomplete(u"upstream stream closed early"_s);
    QCOMPARE(frames.size(), 2);
    const QJsonObject error = QJsonDocument::fromJson(frames.at(0).mid(6)).object().value("error"_L1).toObject();
    QCOMPARE(error.value("message"_L1).toString(), u"upstream stream closed early"_s);
    QCOMPARE(error.value("code"_L1).toString(), u"stream_incomplete"_s);
    QVERIFY(frames.at(0).startsWith("data: {\"error\":"));
    QVERIFY(frames.at(0).endsWith("\n\n"));
    QCOMPARE(frames.at(1), QByteArray("data: [DONE]\n\n"));
    QVERIFY(t.finished());
    QVERIFY(t.failed());
}

void TestTranslateStream::finishIncompleteAfterFinishIsEmpty()
{
    sy::ChatStreamTranslator t(u"m"_s, u"c"_s, 1, false);
    play(t, QList<Event>{ev("response.completed", {{u"response"_s, responseObject("completed")}})});
    QVERIFY(t.finished());
    QVERIFY(t.finishIncomplete(u"late"_s).isEmpty());
    QVERIFY(!t.failed());
}

void TestTranslateStream::eventsAfterFinishAreIgnored()
{
    sy::ChatStreamTranslator t(u"m"_s, u"c"_s, 1, false);
    play(t, QList<Event>{ev("response.completed", {{u"response"_s, responseObject("completed")}})});
    const ClientView v =
        play(t, textMessage(0, "m", {u"ghost"_s}) +
                    QList<Event>{ev("response.completed", {{u"response"_s, responseObject("completed")}}),
                                 Event{"error", {}}});
    QVERIFY(v.frames.isEmpty());
}

void TestTranslateStream::vendorAndUnknownEventsProduceNothing()
{
    sy::ChatStreamTranslator t(u"m"_s, u"c"_s, 1, false);
    const ClientView v =
        play(t, QList<Event>{ev("codex.rate_limits", {{u"rate_limits"_s, QJsonObject{{u"primary"_s, QJsonObject()}}}}),
                             ev("response.reasoning_summary_text.delta", {{u"delta"_s, u"thinking"_s}}),
                             ev("response.something_new", {{u"delta"_s, u"x"_s}})});
    QVERIFY(v.frames.isEmpty());
    QVERIFY(!t.finished());
}

void TestTranslateStream::roleChunkPrecedesFirstDeltaWithoutCreated()
{
    sy::ChatStreamTranslator t(u"m"_s, u"c"_s, 1, false);
    const QList<QByteArray> frames = t.onEvent("response.output_text.delta",
                                               {{u"output_index"_s, 0}, {u"item_id"_s, u"m"_s}, {u"delta"_s, u"hi"_s}});
    QCOMPARE(frames.size(), 2);
    QVERIFY(frames.at(0).contains("\"role\":\"assistant\""));
    QVERIFY(frames.at(1).contains("\"content\":\"hi\""));
    QVERIFY(!frames.at(1).contains("role"));
    // Created after the fact does not repeat the role.
    QVERIFY(t.onEvent("response.created", {{u"response"_s, responseObject("in_progress")}}).isEmpty());
}

void TestTranslateStream::doneOnlyTextIsDeliveredOnce()
{
    sy::ChatStreamTranslator t(u"m"_s, u"c"_s, 1, false);
    const ClientView v = play(
        t, preamble() +
               QList<Event>{
                   ev("response.output_text.done", {{u"output_index"_s, 0}, {u"text"_s, u"whole"_s}}),
                   ev("response.output_item.done", {{u"output_index"_s, 0}, {u"item"_s, messageItem("m", u"whole"_s)}}),
                   ev("response.completed",
                      {{u"response"_s, responseObject("completed", QJsonArray{messageItem("m", u"whole"_s)})}})});
    QCOMPARE(v.content, u"whole"_s);
    QCOMPARE(v.frames.size(), 4); // role, text, finish, [DONE]
}

void TestTranslateStream::deltasWithoutIndexAreNotRepeated()
{
    sy::ChatStreamTranslator t(u"m"_s, u"c"_s, 1, false);
    const ClientView v = play(
        t, preamble() +
               QList<Event>{
                   ev("response.output_text.delta", {{u"delta"_s, u"who"_s}}),
                   ev("response.output_text.delta", {{u"delta"_s, u"le"_s}}),
                   ev("response.output_item.done", {{u"output_index"_s, 0}, {u"item"_s, messageItem("m", u"whole"_s)}}),
                   ev("response.completed",
                      {{u"response"_s, responseObject("completed", QJsonArray{messageItem("m", u"whole"_s)})}})});
    QCOMPARE(v.content, u"whole"_s);
    QCOMPARE(v.frames.size(), 5); // role, who, le, finish, [DONE]
}

void TestTranslateStream::completedOutputFillsMissingDeltas()
{
    sy::ChatStreamTranslator t(u"m"_s, u"c"_s, 1, false);
    const QJsonArray output{messageItem("m", u"answer"_s), callItem("fc", u"call_z"_s, u"f"_s, u"{\"z\":1}"_s)};
    const ClientView v =
        play(t, QList<Event>{ev("response.completed", {{u"response"_s, responseObject("completed", output)}})});
    QCOMPARE(v.role, u"assistant"_s);
    QCOMPARE(v.content, u"answer"_s);
    QCOMPARE(v.toolCalls.size(), 1);
    QCOMPARE(v.toolCalls.at(0).toObject().value("id"_L1).toString(), u"call_z"_s);
    QCOMPARE(v.toolCalls.at(0).toObject().value("function"_L1).toObject().value("arguments"_L1).toString(),
             u"{\"z\":1}"_s);
    QCOMPARE(v.finishReasons, QStringList{u"tool_calls"_s});
}

void TestTranslateStream::argumentsOnlyInDoneEvent()
{
    sy::ChatStreamTranslator t(u"m"_s, u"c"_s, 1, false);
    const ClientView v = play(
        t,
        preamble() +
            QList<Event>{ev("response.output_item.added",
                            {{u"output_index"_s, 0}, {u"item"_s, callItem("fc", u"c1"_s, u"f"_s, {})}}),
                         ev("response.function_call_arguments.done",
                            {{u"output_index"_s, 0}, {u"item_id"_s, u"fc"_s}, {u"arguments"_s, u"{\"k\":true}"_s}}),
                         ev("response.output_item.done",
                            {{u"output_index"_s, 0}, {u"item"_s, callItem("fc", u"c1"_s, u"f"_s, u"{\"k\":true}"_s)}}),
                         ev("response.completed", {{u"response"_s, responseObject("completed")}})});
    QCOMPARE(v.toolCalls.size(), 1);
    QCOMPARE(v.toolCalls.at(0).toObject().value("function"_L1).toObject().value("arguments"_L1).toString(),
             u"{\"k\":true}"_s);
    QCOMPARE(v.frames.size(), 5); // role, announce, arguments, finish, [DONE]
}

void TestTranslateStream::refusalDeltas()
{
    sy::ChatStreamTranslator t(u"m"_s, u"c"_s, 1, false);
    const ClientView v = play(
        t, preamble() + QList<Event>{ev("response.refusal.delta", {{u"output_index"_s, 0}, {u"delta"_s, u"I can"_s}}),
                                     ev("response.refusal.delta", {{u"output_index"_s, 0}, {u"delta"_s, u"not"_s}}),
                                     ev("response.completed", {{u"response"_s, responseObject("completed")}})});
    QCOMPARE(v.refusal, u"I cannot"_s);
    QCOMPARE(v.content, QString());
    QCOMPARE(v.finishReasons, QStringList{u"stop"_s});
}

void TestTranslateStream::typeFromDataWhenEventNameMissing()
{
    sy::ChatStreamTranslator t(u"m"_s, u"c"_s, 1, false);
    const ClientView v =
        play(t,
             preamble() + textMessage(0, "m", {u"x"_s, u"y"_s}) +
                 QList<Event>{ev("response.completed", {{u"response"_s, responseObject("completed")}})},
             QByteArray());
    QCOMPARE(v.content, u"xy"_s);
    QVERIFY(v.done);
}

void TestTranslateStream::openCodeToolCallRoundTrip()
{
    const QJsonArray captures =
        QJsonDocument::fromJson(sy::test::readTestData(u"client-captures/opencode-chat-tool.json"_s)).array();
    const QJsonObject firstTurn = captures.at(1).toObject().value("body"_L1).toObject();
    const QJsonObject secondTurn = captures.at(2).toObject().value("body"_L1).toObject();

    // 1. OpenCode's request goes upstream as Responses.
    QString error;
    const QJsonObject upstreamRequest = sy::chatRequestToResponses(firstTurn, &error);
    QVERIFY2(!upstreamRequest.isEmpty(), qPrintable(error));
    QVERIFY(upstreamRequest.value("tools"_L1).toArray().size() == 9);

    // 2. The upstream answers with a bash call whose arguments arrive in pieces.
    const QString callId = u"call_d716aba28919fa8f284414f1"_s;
    const QStringList fragments{u"{\"command\":\"echo"_s, u" mock-tool-ran\",\"desc"_s, u"ription\":\"Echo test\"}"_s};
    const bool includeUsage = firstTurn.value("stream_options"_L1).toObject().value("include_usage"_L1).toBool();
    sy::ChatStreamTranslator t(firstTurn.value("model"_L1).toString(), u"chatcmpl-rt"_s, 1764475200, includeUsage);
    const ClientView v =
        play(t, preamble() + functionCall(0, "fc_1", callId, u"bash"_s, fragments) +
                    QList<Event>{ev("response.completed",
                                    {{u"response"_s, responseObject("completed", {}, usageObject(900, 0, 40, 10))}})});
    QVERIFY(!v.malformed);
    QVERIFY(v.done);
    QCOMPARE(v.finishReasons, QStringList{u"tool_calls"_s});
    QCOMPARE(v.usageChunks, 1);

    // 3. What the client reassembled is exactly the assistant message it sent back on its next turn.
    const QJsonArray nextMessages = secondTurn.value("messages"_L1).toArray();
    const QJsonObject echoedAssistant = nextMessages.at(2).toObject();
    QCOMPARE(echoedAssistant.value("role"_L1).toString(), u"assistant"_s);
    QCOMPARE(v.toolCalls, echoedAssistant.value("tool_calls"_L1).toArray());

    // 4. That next turn maps back onto the same function call plus its output.
    const QJsonObject nextUpstream = sy::chatRequestToResponses(secondTurn, &error);
    QVERIFY2(!nextUpstream.isEmpty(), qPrintable(error));
    const QJsonArray input = nextUpstream.value("input"_L1).toArray();
    const QJsonObject expectedCall{{u"type"_s, u"function_call"_s},
                                   {u"call_id"_s, callId},
                                   {u"name"_s, u"bash"_s},
                                   {u"arguments"_s, fragments.join(QString())}};
    QCOMPARE(input.at(1).toObject(), expectedCall);
    QCOMPARE(input.at(2).toObject().value("call_id"_L1).toString(), callId);
    QCOMPARE(input.at(2).toObject().value("output"_L1).toString(), u"mock-tool-ran\n"_s);
}

QTEST_GUILESS_MAIN(TestTranslateStream)
#include "tst_translate_stream.moc"
