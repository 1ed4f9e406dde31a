// sanitizeResponsesRequest: a client's Responses body -> the body the ChatGPT backend accepts. Inputs include
// the real client captures in tests/data/client-captures.

#include "TestSupport.h"
#include "api/translate/ResponsesRequestSanitizer.h"

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

QJsonObject userText(const QString &text)
{
    return QJsonObject{{u"type"_s, u"message"_s},
                       {u"role"_s, u"user"_s},
                       {u"content"_s, QJsonArray{QJsonObject{{u"type"_s, u"input_text"_s}, {u"text"_s, text}}}}};
}

} // namespace

class TestTranslateSanitizer : public QObject
{
    Q_OBJECT

private slots:
    void sanitizerStripsEachForbiddenField_data();
    void sanitizerStripsEachForbiddenField();
    void sanitizerKeepsEverythingElse();
    void sanitizerForcesStoreAndStream();
    void sanitizerStreamIntentComesFromBody_data();
    void sanitizerStreamIntentComesFromBody();
    void sanitizerConvertsStringInput();
    void sanitizerInstructions();
    void sanitizerReportsAnchorsAndModel();
    void sanitizerOpenCodeCaptures();
    void sanitizerCodexCapturesPassThrough_data();
    void sanitizerCodexCapturesPassThrough();
    void sanitizerRejectsInvalid_data();
    void sanitizerRejectsInvalid();
};
void TestTranslateSanitizer::sanitizerStripsEachForbiddenField_data()
{
    QTest::addColumn<QString>("field");
    for (const QString &f : sy::upstreamForbiddenResponsesFields())
        QTest::newRow(qPrintable(f)) << f;
}

void TestTranslateSanitizer::sanitizerStripsEachForbiddenField()
{
    QFETCH(QString, field);
    QJsonObject body = parse(R"({"model":"m","input":[],"instructions":"","store":false,"stream":true})");
    body.insert(field, 1);
    sy::SanitizedResponsesRequest r;
    QString error;
    QVERIFY(sy::sanitizeResponsesRequest(body, &r, &error));
    QVERIFY(!r.body.contains(field));
    QVERIFY(r.changed);
    QCOMPARE(r.removedFields, QStringList{field});
    body.remove(field);
    QCOMPARE(r.body, body);
}

void TestTranslateSanitizer::sanitizerKeepsEverythingElse()
{
    const QJsonObject keep =
        parse(R"({"model":"gpt-5","input":[{"role":"user","content":"x"}],"instructions":"be brief",
        "store":false,"stream":true,"service_tier":"auto","include":["reasoning.encrypted_content"],
        "reasoning":{"effort":"high"},"tools":[{"type":"web_search"}],"tool_choice":"auto","parallel_tool_calls":true,
        "prompt_cache_key":"k","previous_response_id":"resp_1","text":{"verbosity":"low"},
        "client_metadata":{"turn_id":"t"},"background":false})");
    QJsonObject body = keep;
    body.insert(u"max_output_tokens"_s, 100);
    body.insert(u"metadata"_s, QJsonObject{{u"a"_s, u"b"_s}});
    body.insert(u"temperature"_s, 0.5);
    body.insert(u"top_p"_s, 1);
    body.insert(u"user"_s, u"someone"_s);
    body.insert(u"truncation"_s, u"auto"_s);
    body.insert(u"safety_identifier"_s, u"sid"_s);
    body.insert(u"stream_options"_s, QJsonObject{{u"include_obfuscation"_s, false}});
    sy::SanitizedResponsesRequest r;
    QString error;
    QVERIFY(sy::sanitizeResponsesRequest(body, &r, &error));
    QCOMPARE(r.body, keep);
    QCOMPARE(r.removedFields.size(), 8);
    QVERIFY(r.changed);
}

void TestTranslateSanitizer::sanitizerForcesStoreAndStream()
{
    sy::SanitizedResponsesRequest r;
    QString error;
    QVERIFY(
        sy::sanitizeResponsesRequest(parse(R"({"model":"m","input":[],"instructions":"","store":true})"), &r, &error));
    QCOMPARE(r.body.value("store"_L1), QJsonValue(false));
    QCOMPARE(r.body.value("stream"_L1), QJsonValue(true));
    QVERIFY(r.changed);
    QVERIFY(r.removedFields.isEmpty());
    QVERIFY(!r.clientWantsStream);
}

void TestTranslateSanitizer::sanitizerStreamIntentComesFromBody_data()
{
    QTest::addColumn<QString>("body");
    QTest::addColumn<bool>("wantsStream");
    QTest::newRow("stream true") << u"{\"model\":\"m\",\"input\":\"x\",\"stream\":true}"_s << true;
    QTest::newRow("stream false") << u"{\"model\":\"m\",\"input\":\"x\",\"stream\":false}"_s << false;
    QTest::newRow("stream missing") << u"{\"model\":\"m\",\"input\":\"x\"}"_s << false;
}

void TestTranslateSanitizer::sanitizerStreamIntentComesFromBody()
{
    QFETCH(QString, body);
    QFETCH(bool, wantsStream);
    sy::SanitizedResponsesRequest r;
    QVERIFY(sy::sanitizeResponsesRequest(parse(body.toUtf8().constData()), &r, nullptr));
    QCOMPARE(r.clientWantsStream, wantsStream);
    QCOMPARE(r.body.value("stream"_L1), QJsonValue(true));
}

void TestTranslateSanitizer::sanitizerConvertsStringInput()
{
    // The openai SDK capture: {"model":"gpt-5","input":"hi","stream":true}, sent with accept: application/json.
    const QJsonObject body = captureBodies(u"sdk-responses-stream.json"_s).at(0);
    sy::SanitizedResponsesRequest r;
    QString error;
    QVERIFY(sy::sanitizeResponsesRequest(body, &r, &error));
    QVERIFY(r.clientWantsStream);
    QCOMPARE(r.body.value("input"_L1).toArray(), QJsonArray{userText(u"hi"_s)});
    QCOMPARE(r.body.value("instructions"_L1), QJsonValue(u""_s));
    QCOMPARE(r.body.value("store"_L1), QJsonValue(false));
    QCOMPARE(r.model, u"gpt-5"_s);
    QVERIFY(r.changed);
}

void TestTranslateSanitizer::sanitizerInstructions()
{
    sy::SanitizedResponsesRequest r;
    const QJsonObject withInstructions =
        parse(R"({"model":"m","input":[],"instructions":"keep me","store":false,"stream":true})");
    QVERIFY(sy::sanitizeResponsesRequest(withInstructions, &r, nullptr));
    QCOMPARE(r.body, withInstructions);
    QVERIFY(!r.changed);

    const QJsonObject nullInstructions =
        parse(R"({"model":"m","input":[],"instructions":null,"store":false,"stream":true})");
    QVERIFY(sy::sanitizeResponsesRequest(nullInstructions, &r, nullptr));
    QCOMPARE(r.body.value("instructions"_L1), QJsonValue(u""_s));
    QVERIFY(r.changed);

    const QJsonObject none = parse(R"({"model":"m","input":[],"store":false,"stream":true})");
    QVERIFY(sy::sanitizeResponsesRequest(none, &r, nullptr));
    QCOMPARE(r.body.value("instructions"_L1), QJsonValue(u""_s));
    QVERIFY(r.changed);

    sy::ResponsesSanitizeOptions options;
    options.ensureInstructions = false;
    QVERIFY(sy::sanitizeResponsesRequest(none, &r, nullptr, options));
    QVERIFY(!r.body.contains("instructions"_L1));
    QVERIFY(!r.changed);
}

void TestTranslateSanitizer::sanitizerReportsAnchorsAndModel()
{
    sy::SanitizedResponsesRequest r;
    QVERIFY(sy::sanitizeResponsesRequest(
        parse(R"({"model":"gpt-5-codex","input":[],"previous_response_id":"resp_abc","prompt_cache_key":"ses_9"})"), &r,
        nullptr));
    QCOMPARE(r.model, u"gpt-5-codex"_s);
    QCOMPARE(r.previousResponseId, u"resp_abc"_s);
    QCOMPARE(r.promptCacheKey, u"ses_9"_s);
    QCOMPARE(r.body.value("previous_response_id"_L1), QJsonValue(u"resp_abc"_s));

    QVERIFY(sy::sanitizeResponsesRequest(parse(R"({"model":"m","input":[]})"), &r, nullptr));
    QVERIFY(r.previousResponseId.isEmpty());
    QVERIFY(r.promptCacheKey.isEmpty());
}

void TestTranslateSanitizer::sanitizerOpenCodeCaptures()
{
    const QList<QJsonObject> bodies = captureBodies(u"opencode-responses.json"_s);
    sy::SanitizedResponsesRequest r;
    QString error;
    for (int i = 0; i < bodies.size(); ++i) {
        QVERIFY2(sy::sanitizeResponsesRequest(bodies.at(i), &r, &error), qPrintable(error));
        QCOMPARE(r.removedFields, QStringList{u"max_output_tokens"_s});
        QVERIFY(!r.body.contains("max_output_tokens"_L1));
        QCOMPARE(r.body.value("input"_L1), bodies.at(i).value("input"_L1));
        QCOMPARE(r.body.value("include"_L1), bodies.at(i).value("include"_L1));
        QVERIFY(r.clientWantsStream);
    }
    QCOMPARE(r.promptCacheKey, u"ses_dd556b907ffe2GGUA21X1k8PYp"_s);
    QCOMPARE(r.body.value("tools"_L1), bodies.at(1).value("tools"_L1));

    const QJsonObject builtin = captureBodies(u"opencode-openai-builtin.json"_s).at(0);
    QVERIFY(sy::sanitizeResponsesRequest(builtin, &r, &error));
    QCOMPARE(r.removedFields, QStringList{u"temperature"_s});
}

void TestTranslateSanitizer::sanitizerCodexCapturesPassThrough_data()
{
    QTest::addColumn<QJsonObject>("body");
    for (const QString &file :
         {u"codex-apikey-builtin.json"_s, u"codex-apikey-custom.json"_s, u"codex-chatgpt-builtin.json"_s,
          u"codex-chatgpt-custom.json"_s, u"codex-resume-2nd-turn.json"_s, u"codex-tool-roundtrip.json"_s}) {
        const QList<QJsonObject> bodies = captureBodies(file);
        for (int i = 0; i < bodies.size(); ++i)
            QTest::addRow("%s#%d", qPrintable(file), i + 1) << bodies.at(i);
    }
}

void TestTranslateSanitizer::sanitizerCodexCapturesPassThrough()
{
    QFETCH(QJsonObject, body);
    sy::SanitizedResponsesRequest r;
    QString error;
    sy::ResponsesSanitizeOptions keepAsIs;
    keepAsIs.ensureInstructions = false;
    QVERIFY2(sy::sanitizeResponsesRequest(body, &r, &error, keepAsIs), qPrintable(error));
    QVERIFY(!r.changed);
    QCOMPARE(r.body, body);
    QVERIFY(r.clientWantsStream);
    QCOMPARE(r.promptCacheKey, body.value("prompt_cache_key"_L1).toString());
    QVERIFY(!r.promptCacheKey.isEmpty());

    // With the default options only the missing `instructions` is added.
    QVERIFY(sy::sanitizeResponsesRequest(body, &r, &error));
    QJsonObject expected = body;
    expected.insert(u"instructions"_s, u""_s);
    QCOMPARE(r.body, expected);
}

void TestTranslateSanitizer::sanitizerRejectsInvalid_data()
{
    QTest::addColumn<QString>("body");
    QTest::addColumn<QString>("errorMentions");
    QTest::newRow("no model") << u"{\"input\":\"x\"}"_s << u"model"_s;
    QTest::newRow("model not string") << u"{\"model\":5,\"input\":\"x\"}"_s << u"model"_s;
    QTest::newRow("no input") << u"{\"model\":\"m\"}"_s << u"input"_s;
    QTest::newRow("input number") << u"{\"model\":\"m\",\"input\":7}"_s << u"input"_s;
}

void TestTranslateSanitizer::sanitizerRejectsInvalid()
{
    QFETCH(QString, body);
    QFETCH(QString, errorMentions);
    sy::SanitizedResponsesRequest r;
    r.model = u"untouched"_s;
    QString error;
    QVERIFY(!sy::sanitizeResponsesRequest(parse(body.toUtf8().constData()), &r, &error));
    QVERIFY2(error.contains(errorMentions), qPrintable(error));
    QCOMPARE(r.model, u"untouched"_s);
}

QTEST_GUILESS_MAIN(TestTranslateSanitizer)
#include "tst_translate_sanitizer.moc"
