// chatRequestToResponses: Chat Completions request bodies -> the Responses body sent upstream. Inputs include
// the real client captures in tests/data/client-captures.

#include "TestSupport.h"
#include "api/translate/ChatRequestToResponses.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QtTest>

using namespace Qt::StringLiterals;

namespace {

QList<QJsonObject> captureBodies(const QString &file)
{
    const QJsonArray captures = QJsonDocument::fromJson(sy::test::readTestData(u"client-captures/"_s + file)).array();
    QList<QJsonObject> bodies;
    for (const QJsonValue &c : captures) {
        if (c.toObject().value("body"_L1).isObject())
            bodies.append(c.toObject().value("body"_L1).toObject());
    }
    if (bodies.isEmpty())
        qFatal("capture %s holds no JSON bodies", qPrintable(file));
    return bodies;
}

QJsonObject parse(const char *json)
{
    QJsonParseError err;
    const QJsonDocument doc = QJsonDocument::fromJson(QByteArray(json), &err);
    if (err.error != QJsonParseError::NoError)
        qFatal("bad test JSON: %s in %s", qPrintable(err.errorString()), json);
    return doc.object();
}

QSet<QString> keySet(const QJsonObject &o)
{
    const QStringList keys = o.keys();
    return QSet<QString>(keys.begin(), keys.end());
}

QJsonObject translateOk(const QJsonObject &chat)
{
    QString error;
    const QJsonObject out = sy::chatRequestToResponses(chat, &error);
    if (out.isEmpty())
        qWarning("unexpected translation error: %s", qPrintable(error));
    return out;
}

QJsonObject userText(const QString &text)
{
    return QJsonObject{{u"type"_s, u"message"_s},
                       {u"role"_s, u"user"_s},
                       {u"content"_s, QJsonArray{QJsonObject{{u"type"_s, u"input_text"_s}, {u"text"_s, text}}}}};
}

} // namespace

class TestTranslateChatRequest : public QObject
{
    Q_OBJECT

private slots:
    void everyChatCaptureTranslates_data();
    void everyChatCaptureTranslates();
    void openCodeTitleRequestMapsSystemAndUsers();
    void openCodeAgentRequestMapsToolsChoiceAndEffort();
    void openCodeToolFollowUpMapsCallAndOutput();
    void sdkMinimalRequest();
    void systemAndDeveloperJoinedByBlankLine();
    void userPartsMapToInputParts();
    void assistantTextThenToolCalls();
    void assistantRefusalAndNullContent();
    void toolMessageWithTextParts();
    void toolsDefaultParametersAndStrictness();
    void toolChoiceMapping_data();
    void toolChoiceMapping();
    void responseFormatMapping_data();
    void responseFormatMapping();
    void verbosityAndFormatShareText();
    void droppedFieldsNeverReachUpstream();
    void invalidRequestsAreRejected_data();
    void invalidRequestsAreRejected();
    void nullErrorPointerIsAllowed();
};

void TestTranslateChatRequest::everyChatCaptureTranslates_data()
{
    QTest::addColumn<QJsonObject>("body");
    for (const QString &file : {u"opencode-chat.json"_s, u"opencode-chat-tool.json"_s, u"sdk-chat-stream.json"_s}) {
        const QList<QJsonObject> bodies = captureBodies(file);
        for (int i = 0; i < bodies.size(); ++i)
            QTest::addRow("%s#%d", qPrintable(file), i + 1) << bodies.at(i);
    }
}

void TestTranslateChatRequest::everyChatCaptureTranslates()
{
    QFETCH(QJsonObject, body);
    QString error;
    const QJsonObject out = sy::chatRequestToResponses(body, &error);
    QVERIFY2(!out.isEmpty(), qPrintable(error));
    QVERIFY(error.isEmpty());
    QCOMPARE(out.value("model"_L1).toString(), body.value("model"_L1).toString());
    QCOMPARE(out.value("stream"_L1), QJsonValue(true));
    QCOMPARE(out.value("store"_L1), QJsonValue(false));
    QVERIFY(out.value("instructions"_L1).isString());
    QVERIFY(out.value("input"_L1).isArray());
    // Only keys the translation knows may appear upstream.
    const QSet<QString> allowed{u"model"_s, u"instructions"_s, u"input"_s,           u"stream"_s,
                                u"store"_s, u"tools"_s,        u"tool_choice"_s,     u"parallel_tool_calls"_s,
                                u"text"_s,  u"reasoning"_s,    u"prompt_cache_key"_s};
    QVERIFY(allowed.contains(keySet(out)));
}

void TestTranslateChatRequest::openCodeTitleRequestMapsSystemAndUsers()
{
    const QJsonObject body = captureBodies(u"opencode-chat.json"_s).at(0);
    const QJsonObject out = translateOk(body);
    const QJsonArray messages = body.value("messages"_L1).toArray();
    QCOMPARE(out.value("instructions"_L1).toString(), messages.at(0).toObject().value("content"_L1).toString());
    const QJsonArray input = out.value("input"_L1).toArray();
    QCOMPARE(input.size(), 2);
    QCOMPARE(input.at(0).toObject(), userText(u"Generate a title for this conversation:\n"_s));
    QCOMPARE(input.at(1).toObject(), userText(u"\"say hi\""_s));
    QVERIFY(!out.contains("tools"_L1));
    QVERIFY(!out.contains("reasoning"_L1));
    QVERIFY(!out.contains("max_tokens"_L1));
    QVERIFY(!out.contains("max_output_tokens"_L1));
    QVERIFY(!out.contains("stream_options"_L1));
}

void TestTranslateChatRequest::openCodeAgentRequestMapsToolsChoiceAndEffort()
{
    const QJsonObject body = captureBodies(u"opencode-chat.json"_s).at(1);
    const QJsonObject out = translateOk(body);
    QCOMPARE(out.value("reasoning"_L1).toObject(), QJsonObject({{u"effort"_s, u"medium"_s}}));
    QCOMPARE(out.value("tool_choice"_L1), QJsonValue(u"auto"_s));
    const QJsonArray chatTools = body.value("tools"_L1).toArray();
    const QJsonArray tools = out.value("tools"_L1).toArray();
    QCOMPARE(tools.size(), 9);
    for (int i = 0; i < tools.size(); ++i) {
        const QJsonObject t = tools.at(i).toObject();
        const QJsonObject fn = chatTools.at(i).toObject().value("function"_L1).toObject();
        QCOMPARE(t.value("type"_L1), QJsonValue(u"function"_s));
        QCOMPARE(t.value("name"_L1), fn.value("name"_L1));
        // The capture trims schemas to "..."; whatever the client sent is passed on verbatim.
        QCOMPARE(t.value("parameters"_L1), fn.value("parameters"_L1));
        QCOMPARE(t.value("strict"_L1), QJsonValue(false));
        QVERIFY(!t.contains("function"_L1));
    }
    QCOMPARE(tools.at(1).toObject().value("name"_L1).toString(), u"bash"_s);
}

void TestTranslateChatRequest::openCodeToolFollowUpMapsCallAndOutput()
{
    const QJsonObject body = captureBodies(u"opencode-chat-tool.json"_s).at(2);
    const QJsonObject out = translateOk(body);
    const QJsonArray input = out.value("input"_L1).toArray();
    // user, function_call (the assistant's "" content yields no message item), function_call_output
    QCOMPARE(input.size(), 3);
    QCOMPARE(input.at(0).toObject(), userText(u"\"say hi\""_s));
    const QJsonObject expectedCall{
        {u"type"_s, u"function_call"_s},
        {u"call_id"_s, u"call_d716aba28919fa8f284414f1"_s},
        {u"name"_s, u"bash"_s},
        {u"arguments"_s, u"{\"command\":\"echo mock-tool-ran\",\"description\":\"Echo test\"}"_s}};
    QCOMPARE(input.at(1).toObject(), expectedCall);
    const QJsonObject expectedOutput{{u"type"_s, u"function_call_output"_s},
                                     {u"call_id"_s, u"call_d716aba28919fa8f284414f1"_s},
                                     {u"output"_s, u"mock-tool-ran\n"_s}};
    QCOMPARE(input.at(2).toObject(), expectedOutput);
}

void TestTranslateChatRequest::sdkMinimalRequest()
{
    const QJsonObject out = translateOk(captureBodies(u"sdk-chat-stream.json"_s).at(0));
    const QJsonObject expected{{u"model"_s, u"gpt-5"_s},
                               {u"instructions"_s, u""_s},
                               {u"input"_s, QJsonArray{userText(u"hi"_s)}},
                               {u"stream"_s, true},
                               {u"store"_s, false}};
    QCOMPARE(out, expected);
}

void TestTranslateChatRequest::systemAndDeveloperJoinedByBlankLine()
{
    const QJsonObject out = translateOk(parse(R"({"model":"m","messages":[
        {"role":"system","content":"first"},
        {"role":"developer","content":[{"type":"text","text":"second"},{"type":"text","text":"third"}]},
        {"role":"system","content":""},
        {"role":"user","content":"hi"},
        {"role":"system","content":"late"}]})"));
    QCOMPARE(out.value("instructions"_L1).toString(), u"first\n\nsecond\n\nthird\n\nlate"_s);
    QCOMPARE(out.value("input"_L1).toArray().size(), 1);
}

void TestTranslateChatRequest::userPartsMapToInputParts()
{
    const QJsonObject out = translateOk(parse(R"({"model":"m","messages":[{"role":"user","content":[
        {"type":"text","text":"look"},
        {"type":"image_url","image_url":{"url":"https://x/cat.png","detail":"high"}},
        {"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},
        {"type":"file","file":{"file_id":"file-1","filename":"a.pdf"}}]}]})"));
    const QJsonArray content = out.value("input"_L1).toArray().at(0).toObject().value("content"_L1).toArray();
    QCOMPARE(content.size(), 4);
    QCOMPARE(content.at(0).toObject(), parse(R"({"type":"input_text","text":"look"})"));
    QCOMPARE(content.at(1).toObject(),
             parse(R"({"type":"input_image","image_url":"https://x/cat.png","detail":"high"})"));
    QCOMPARE(content.at(2).toObject(),
             parse(R"({"type":"input_image","image_url":"data:image/png;base64,AAAA","detail":"auto"})"));
    QCOMPARE(content.at(3).toObject(), parse(R"({"type":"input_file","file_id":"file-1","filename":"a.pdf"})"));
}

void TestTranslateChatRequest::assistantTextThenToolCalls()
{
    const QJsonObject out = translateOk(parse(R"({"model":"m","messages":[
        {"role":"user","content":"q"},
        {"role":"assistant","content":"let me check","tool_calls":[
            {"id":"c1","type":"function","function":{"name":"read","arguments":"{\"p\":1}"}},
            {"id":"c2","type":"function","function":{"name":"grep","arguments":"{}"}}]},
        {"role":"tool","tool_call_id":"c1","content":"one"},
        {"role":"tool","tool_call_id":"c2","content":"two"},
        {"role":"assistant","content":"done"}]})"));
    const QJsonArray input = out.value("input"_L1).toArray();
    QCOMPARE(input.size(), 7);
    QCOMPARE(
        input.at(1).toObject(),
        parse(R"({"type":"message","role":"assistant","content":[{"type":"output_text","text":"let me check"}]})"));
    QCOMPARE(input.at(2).toObject(),
             parse(R"({"type":"function_call","call_id":"c1","name":"read","arguments":"{\"p\":1}"})"));
    QCOMPARE(input.at(3).toObject(),
             parse(R"({"type":"function_call","call_id":"c2","name":"grep","arguments":"{}"})"));
    QCOMPARE(input.at(4).toObject(), parse(R"({"type":"function_call_output","call_id":"c1","output":"one"})"));
    QCOMPARE(input.at(5).toObject(), parse(R"({"type":"function_call_output","call_id":"c2","output":"two"})"));
    QCOMPARE(input.at(6).toObject(),
             parse(R"({"type":"message","role":"assistant","content":[{"type":"output_text","text":"done"}]})"));
}

void TestTranslateChatRequest::assistantRefusalAndNullContent()
{
    const QJsonObject out = translateOk(parse(R"({"model":"m","messages":[
        {"role":"user","content":"q"},
        {"role":"assistant","content":null,"refusal":"no"},
        {"role":"assistant","content":null},
        {"role":"assistant","content":[{"type":"text","text":"a"},{"type":"refusal","refusal":"b"}]}]})"));
    const QJsonArray input = out.value("input"_L1).toArray();
    QCOMPARE(input.size(), 3);
    QCOMPARE(input.at(1).toObject(),
             parse(R"({"type":"message","role":"assistant","content":[{"type":"refusal","refusal":"no"}]})"));
    QCOMPARE(input.at(2).toObject(), parse(R"({"type":"message","role":"assistant","content":[
        {"type":"output_text","text":"a"},{"type":"refusal","refusal":"b"}]})"));
}

void TestTranslateChatRequest::toolMessageWithTextParts()
{
    const QJsonObject out = translateOk(parse(R"({"model":"m","messages":[
        {"role":"tool","tool_call_id":"c9","content":[{"type":"text","text":"ab"},{"type":"text","text":"cd"}]}]})"));
    QCOMPARE(out.value("input"_L1).toArray().at(0).toObject(),
             parse(R"({"type":"function_call_output","call_id":"c9","output":"abcd"})"));
}

void TestTranslateChatRequest::toolsDefaultParametersAndStrictness()
{
    const QJsonObject out = translateOk(parse(R"({"model":"m","messages":[{"role":"user","content":"q"}],"tools":[
        {"type":"function","function":{"name":"now"}},
        {"type":"function","function":{"name":"get","description":"d","strict":true,
            "parameters":{"type":"object","properties":{"k":{"type":"string"}},"required":["k"]}}}],
        "parallel_tool_calls":false})"));
    const QJsonArray tools = out.value("tools"_L1).toArray();
    QCOMPARE(
        tools.at(0).toObject(),
        parse(R"({"type":"function","name":"now","parameters":{"type":"object","properties":{}},"strict":false})"));
    QCOMPARE(tools.at(1).toObject(), parse(R"({"type":"function","name":"get","description":"d","strict":true,
        "parameters":{"type":"object","properties":{"k":{"type":"string"}},"required":["k"]}})"));
    QCOMPARE(out.value("parallel_tool_calls"_L1), QJsonValue(false));
}

void TestTranslateChatRequest::toolChoiceMapping_data()
{
    QTest::addColumn<QString>("choice");
    QTest::addColumn<QString>("expected");
    QTest::newRow("auto") << u"\"auto\""_s << u"\"auto\""_s;
    QTest::newRow("none") << u"\"none\""_s << u"\"none\""_s;
    QTest::newRow("required") << u"\"required\""_s << u"\"required\""_s;
    QTest::newRow("function") << u"{\"type\":\"function\",\"function\":{\"name\":\"bash\"}}"_s
                              << u"{\"type\":\"function\",\"name\":\"bash\"}"_s;
}

void TestTranslateChatRequest::toolChoiceMapping()
{
    QFETCH(QString, choice);
    QFETCH(QString, expected);
    const QByteArray json =
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"q\"}],\"tool_choice\":" + choice.toUtf8() +
        "}";
    const QJsonObject out = translateOk(parse(json.constData()));
    const QByteArray wrapped = "{\"v\":" + expected.toUtf8() + "}";
    QCOMPARE(out.value("tool_choice"_L1), parse(wrapped.constData()).value("v"_L1));
}

void TestTranslateChatRequest::responseFormatMapping_data()
{
    QTest::addColumn<QString>("format");
    QTest::addColumn<QString>("expected");
    QTest::newRow("text") << u"{\"type\":\"text\"}"_s << u"{\"type\":\"text\"}"_s;
    QTest::newRow("json_object") << u"{\"type\":\"json_object\"}"_s << u"{\"type\":\"json_object\"}"_s;
    QTest::newRow("json_schema")
        << u"{\"type\":\"json_schema\","
           u"\"json_schema\":{\"name\":\"pt\",\"strict\":true,\"schema\":{\"type\":\"object\"}}}"_s
        << u"{\"type\":\"json_schema\",\"name\":\"pt\",\"strict\":true,\"schema\":{\"type\":\"object\"}}"_s;
    QTest::newRow("json_schema without strict")
        << u"{\"type\":\"json_schema\",\"json_schema\":{\"name\":\"pt\",\"description\":\"x\",\"schema\":{}}}"_s
        << u"{\"type\":\"json_schema\",\"name\":\"pt\",\"description\":\"x\",\"schema\":{}}"_s;
}

void TestTranslateChatRequest::responseFormatMapping()
{
    QFETCH(QString, format);
    QFETCH(QString, expected);
    const QByteArray json =
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"q\"}],\"response_format\":" + format.toUtf8() +
        "}";
    const QJsonObject out = translateOk(parse(json.constData()));
    QCOMPARE(out.value("text"_L1).toObject(), QJsonObject({{u"format"_s, parse(expected.toUtf8().constData())}}));
}

void TestTranslateChatRequest::verbosityAndFormatShareText()
{
    const QJsonObject out = translateOk(parse(R"({"model":"m","messages":[{"role":"user","content":"q"}],
        "response_format":{"type":"json_object"},"verbosity":"low"})"));
    QCOMPARE(out.value("text"_L1).toObject(), parse(R"({"format":{"type":"json_object"},"verbosity":"low"})"));
}

void TestTranslateChatRequest::droppedFieldsNeverReachUpstream()
{
    const QJsonObject out = translateOk(parse(R"({"model":"m","messages":[{"role":"user","content":"q"}],
        "n":1,"store":true,"stream":false,"max_tokens":5,"max_completion_tokens":6,
        "stream_options":{"include_usage":true},"temperature":0.2,"top_p":0.9,"user":"u","metadata":{"a":"b"},
        "frequency_penalty":0,"presence_penalty":0,"seed":3,"logit_bias":{},"logprobs":true,"stop":["x"],
        "prompt_cache_key":"ses_1"})"));
    QCOMPARE(keySet(out), QSet<QString>({u"model"_s, u"instructions"_s, u"input"_s, u"stream"_s, u"store"_s,
                                         u"prompt_cache_key"_s}));
    QCOMPARE(out.value("stream"_L1), QJsonValue(true));
    QCOMPARE(out.value("store"_L1), QJsonValue(false));
    QCOMPARE(out.value("prompt_cache_key"_L1), QJsonValue(u"ses_1"_s));
}

void TestTranslateChatRequest::invalidRequestsAreRejected_data()
{
    QTest::addColumn<QString>("body");
    QTest::addColumn<QString>("errorMentions");
    QTest::newRow("no messages") << u"{\"model\":\"m\"}"_s << u"messages"_s;
    QTest::newRow("messages not array") << u"{\"model\":\"m\",\"messages\":{\"role\":\"user\"}}"_s << u"messages"_s;
    QTest::newRow("messages empty") << u"{\"model\":\"m\",\"messages\":[]}"_s << u"messages"_s;
    QTest::newRow("no model") << u"{\"messages\":[{\"role\":\"user\",\"content\":\"q\"}]}"_s << u"model"_s;
    QTest::newRow("message not object") << u"{\"model\":\"m\",\"messages\":[\"hi\"]}"_s << u"messages[0]"_s;
    QTest::newRow("unknown role") << u"{\"model\":\"m\",\"messages\":[{\"role\":\"wizard\",\"content\":\"q\"}]}"_s
                                  << u"wizard"_s;
    QTest::newRow("legacy function role")
        << u"{\"model\":\"m\",\"messages\":[{\"role\":\"function\",\"name\":\"f\",\"content\":\"q\"}]}"_s
        << u"function"_s;
    QTest::newRow("tool without id") << u"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"q\"},"
                                        u"{\"role\":\"tool\",\"content\":\"x\"}]}"_s
                                     << u"messages[1]"_s;
    QTest::newRow("tool content object")
        << u"{\"model\":\"m\",\"messages\":[{\"role\":\"tool\",\"tool_call_id\":\"c\",\"content\":{\"a\":1}}]}"_s
        << u"messages[0]"_s;
    QTest::newRow("user content number") << u"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":3}]}"_s
                                         << u"messages[0]"_s;
    QTest::newRow("user audio part")
        << u"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\"}]}]}"_s
        << u"input_audio"_s;
    QTest::newRow("tool call without id")
        << u"{\"model\":\"m\","
           u"\"messages\":[{\"role\":\"assistant\",\"tool_calls\":[{\"function\":{\"name\":\"f\"}}]}]}"_s
        << u"tool_calls[0]"_s;
    QTest::newRow("non-function tool")
        << u"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"q\"}],\"tools\":[{\"type\":\"custom\"}]}"_s
        << u"tools[0]"_s;
    QTest::newRow("bad tool_choice")
        << u"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"q\"}],\"tool_choice\":\"always\"}"_s
        << u"tool_choice"_s;
    QTest::newRow("bad response_format") << u"{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"q\"}],"
                                            u"\"response_format\":{\"type\":\"xml\"}}"_s
                                         << u"response_format"_s;
}

void TestTranslateChatRequest::invalidRequestsAreRejected()
{
    QFETCH(QString, body);
    QFETCH(QString, errorMentions);
    QString error;
    const QJsonObject out = sy::chatRequestToResponses(parse(body.toUtf8().constData()), &error);
    QVERIFY(out.isEmpty());
    QVERIFY2(error.contains(errorMentions), qPrintable(error));
}

void TestTranslateChatRequest::nullErrorPointerIsAllowed()
{
    QVERIFY(sy::chatRequestToResponses(QJsonObject(), nullptr).isEmpty());
    QVERIFY(!sy::chatRequestToResponses(parse(R"({"model":"m","messages":[{"role":"user","content":"q"}]})"), nullptr)
                 .isEmpty());
}

QTEST_GUILESS_MAIN(TestTranslateChatRequest)
#include "tst_translate_chatrequest.moc"
