// The fake ChatGPT Codex backend behaves like PROTOCOL.md says, faults included.
#include "lib/FakeUpstreamProcess.h"
#include "lib/HttpTestClient.h"
#include "lib/RawHttpClient.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QTest>
#include <zstd.h>

using namespace sy;
using namespace sy::test;

namespace {

QByteArray turnBody(const QString &text, QJsonObject extra = {})
{
    QJsonObject body{
        {QStringLiteral("model"), QStringLiteral("gpt-5-codex")},
        {QStringLiteral("stream"), true},
        {QStringLiteral("store"), false},
        {QStringLiteral("prompt_cache_key"), QStringLiteral("sess-1")},
        {QStringLiteral("input"),
         QJsonArray{QJsonObject{
             {QStringLiteral("type"), QStringLiteral("message")},
             {QStringLiteral("role"), QStringLiteral("user")},
             {QStringLiteral("content"), QJsonArray{QJsonObject{{QStringLiteral("type"), QStringLiteral("input_text")},
                                                                {QStringLiteral("text"), text}}}}}}},
    };
    for (auto it = extra.begin(); it != extra.end(); ++it)
        body.insert(it.key(), it.value());
    return QJsonDocument(body).toJson(QJsonDocument::Compact);
}

HttpHeaderList auth(const QByteArray &account, const QByteArray &token = "tok-default")
{
    return {{"Authorization", "Bearer " + token}, {"chatgpt-account-id", account}};
}

QString deltasOf(const SseResult &r)
{
    QString text;
    for (const SseEvent &e : r.events) {
        if (e.event == "response.output_text.delta")
            text += e.json().value(QStringLiteral("delta")).toString();
    }
    return text;
}

QJsonObject completedResponse(const SseResult &r)
{
    return r.first("response.completed").json().value(QStringLiteral("response")).toObject();
}

} // namespace

class TestFakeUpstream : public QObject
{
    Q_OBJECT

private:
    FakeUpstreamProcess m_fake;

    QUrl turnsUrl() const { return QUrl(m_fake.baseUrl() + QStringLiteral("/codex/responses")); }

    SseResult turn(const QByteArray &account, const QByteArray &body, HttpHeaderList extra = {}, int timeoutMs = 10000)
    {
        return sseRequest("POST", turnsUrl(), auth(account) + extra, body, timeoutMs);
    }

private slots:
    void initTestCase() { QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString())); }
    void init() { QVERIFY2(m_fake.reset(), qPrintable(m_fake.errorString())); }

    void normalStream()
    {
        const SseResult r = turn("acct-a", turnBody(QStringLiteral("say hi")));
        QCOMPARE(r.status, 200);
        QVERIFY(r.header("content-type").startsWith("text/event-stream"));
        QCOMPARE(r.header("x-codex-primary-used-percent"), QByteArray("12"));
        QCOMPARE(r.header("x-codex-primary-window-minutes"), QByteArray("300"));
        QCOMPARE(r.header("x-codex-secondary-window-minutes"), QByteArray("10080"));
        QVERIFY(r.header("x-codex-secondary-reset-at").toLongLong() > QDateTime::currentSecsSinceEpoch());
        QVERIFY(r.header("x-request-id").startsWith("up_"));
        QVERIFY(r.header("x-codex-turn-state").startsWith("ts_"));

        QList<QByteArray> expected{"response.created", "response.in_progress", "response.output_item.added",
                                   "response.content_part.added"};
        const int deltas = int(r.eventTypes().count("response.output_text.delta"));
        QVERIFY(deltas >= 3);
        for (int i = 0; i < deltas; ++i)
            expected << "response.output_text.delta";
        expected << "response.output_text.done"
                 << "response.content_part.done"
                 << "response.output_item.done"
                 << "codex.rate_limits"
                 << "response.completed";
        QCOMPARE(r.eventTypes(), expected);
        QCOMPARE(deltasOf(r), QStringLiteral("Hello from fake upstream (account acct-a)."));

        const QJsonObject response = completedResponse(r);
        QVERIFY(response.value(QStringLiteral("id")).toString().startsWith(QLatin1String("resp_")));
        QCOMPARE(response.value(QStringLiteral("status")).toString(), QStringLiteral("completed"));
        QCOMPARE(response.value(QStringLiteral("model")).toString(), QStringLiteral("gpt-5-codex"));
        QCOMPARE(response.value(QStringLiteral("output")).toArray().size(), 1);
        const QJsonObject usage = response.value(QStringLiteral("usage")).toObject();
        const int input = usage.value(QStringLiteral("input_tokens")).toInt();
        const int output = usage.value(QStringLiteral("output_tokens")).toInt();
        QVERIFY(input > 0 && output > 0);
        QCOMPARE(usage.value(QStringLiteral("total_tokens")).toInt(), input + output);
        QVERIFY(
            usage.value(QStringLiteral("input_tokens_details")).toObject().contains(QStringLiteral("cached_tokens")));
        QVERIFY(usage.value(QStringLiteral("output_tokens_details"))
                    .toObject()
                    .contains(QStringLiteral("reasoning_tokens")));
        const QJsonObject limits = r.first("codex.rate_limits").json().value(QStringLiteral("rate_limits")).toObject();
        QCOMPARE(limits.value(QStringLiteral("primary")).toObject().value(QStringLiteral("window_minutes")).toInt(),
                 300);

        // A second turn: new ids, turn state echoed, the prompt cache now counts.
        const SseResult again =
            turn("acct-a", turnBody(QStringLiteral("say hi")), {{"x-codex-turn-state", "ts_given"}});
        QCOMPARE(again.header("x-codex-turn-state"), QByteArray("ts_given"));
        QVERIFY(again.header("x-request-id") != r.header("x-request-id"));
        const QJsonObject second = completedResponse(again);
        QVERIFY(second.value(QStringLiteral("id")) != response.value(QStringLiteral("id")));
        QCOMPARE(second.value(QStringLiteral("usage"))
                     .toObject()
                     .value(QStringLiteral("input_tokens_details"))
                     .toObject()
                     .value(QStringLiteral("cached_tokens"))
                     .toInt(),
                 input);
    }

    void echoAndToolCall()
    {
        const SseResult echo = turn("acct-a", turnBody(QStringLiteral("please ECHO: one two three four")));
        QCOMPARE(deltasOf(echo), QStringLiteral("one two three four"));

        const QJsonArray tools{QJsonObject{{QStringLiteral("type"), QStringLiteral("function")},
                                           {QStringLiteral("name"), QStringLiteral("read_file")}},
                               QJsonObject{{QStringLiteral("type"), QStringLiteral("function")},
                                           {QStringLiteral("name"), QStringLiteral("other")}}};
        const SseResult call =
            turn("acct-a", turnBody(QStringLiteral("CALL_TOOL now"), {{QStringLiteral("tools"), tools}}));
        QCOMPARE(call.status, 200);
        QVERIFY(call.eventTypes().contains("response.function_call_arguments.delta"));
        QString arguments;
        for (const SseEvent &e : call.events) {
            if (e.event == "response.function_call_arguments.delta")
                arguments += e.json().value(QStringLiteral("delta")).toString();
        }
        QCOMPARE(arguments, QStringLiteral("{\"path\":\"README.md\"}"));
        QCOMPARE(
            call.first("response.function_call_arguments.done").json().value(QStringLiteral("arguments")).toString(),
            arguments);
        const QJsonObject item = completedResponse(call).value(QStringLiteral("output")).toArray().first().toObject();
        QCOMPARE(item.value(QStringLiteral("type")).toString(), QStringLiteral("function_call"));
        QCOMPARE(item.value(QStringLiteral("name")).toString(), QStringLiteral("read_file"));
        QVERIFY(item.value(QStringLiteral("call_id")).toString().startsWith(QLatin1String("call_")));
    }

    void rejectsLikeRealUpstream_data()
    {
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<QByteArray>("account");
        QTest::addColumn<int>("status");
        QTest::newRow("store true") << turnBody(QStringLiteral("x"), {{QStringLiteral("store"), true}})
                                    << QByteArray("acct-a") << 400;
        QTest::newRow("temperature") << turnBody(QStringLiteral("x"), {{QStringLiteral("temperature"), 0.2}})
                                     << QByteArray("acct-a") << 400;
        QTest::newRow("max_output_tokens")
            << turnBody(QStringLiteral("x"), {{QStringLiteral("max_output_tokens"), 100}}) << QByteArray("acct-a")
            << 400;
        QTest::newRow("stream false") << turnBody(QStringLiteral("x"), {{QStringLiteral("stream"), false}})
                                      << QByteArray("acct-a") << 400;
        QTest::newRow("missing account") << turnBody(QStringLiteral("x")) << QByteArray() << 401;
    }

    void rejectsLikeRealUpstream()
    {
        QFETCH(QByteArray, body);
        QFETCH(QByteArray, account);
        QFETCH(int, status);
        const HttpHeaderList headers =
            account.isEmpty() ? HttpHeaderList{{"Authorization", "Bearer t"}} : auth(account);
        const HttpResult r = httpRequest("POST", turnsUrl(), headers, body);
        QCOMPARE(r.status, status);
        QVERIFY(
            !r.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("message")).toString().isEmpty());
        const QJsonArray log = m_fake.log();
        QCOMPARE(log.size(), 1);
        QCOMPARE(log.first().toObject().value(QStringLiteral("status_sent")).toInt(), status);
    }

    void scriptedErrors()
    {
        QVERIFY(m_fake.script(QStringLiteral("acct-b"), {QStringLiteral("429"), QStringLiteral("ok")}));
        const HttpResult limited = httpRequest("POST", turnsUrl(), auth("acct-b"), turnBody(QStringLiteral("x")));
        QCOMPARE(limited.status, 429);
        const QJsonObject error = limited.json().value(QStringLiteral("error")).toObject();
        QCOMPARE(error.value(QStringLiteral("type")).toString(), QStringLiteral("usage_limit_reached"));
        QCOMPARE(error.value(QStringLiteral("code")).toString(), QStringLiteral("usage_limit_reached"));
        QCOMPARE(error.value(QStringLiteral("resets_in_seconds")).toInt(), 3600);
        QVERIFY(!limited.header("x-codex-primary-used-percent").isEmpty());
        // Other accounts are unaffected; the script is consumed.
        QCOMPARE(turn("acct-a", turnBody(QStringLiteral("x"))).status, 200);
        QCOMPARE(turn("acct-b", turnBody(QStringLiteral("x"))).status, 200);
        QCOMPARE(turn("acct-b", turnBody(QStringLiteral("x"))).status, 200);

        // By token, sticky: the last action repeats.
        QVERIFY(m_fake.scriptToken(QStringLiteral("tok-rl"), {QStringLiteral("429_rate")}, true));
        for (int i = 0; i < 2; ++i) {
            const HttpResult r =
                httpRequest("POST", turnsUrl(), auth("acct-c", "tok-rl"), turnBody(QStringLiteral("x")));
            QCOMPARE(r.status, 429);
            QVERIFY(r.json()
                        .value(QStringLiteral("error"))
                        .toObject()
                        .value(QStringLiteral("message"))
                        .toString()
                        .contains(QLatin1String("try again in 1m30s")));
        }
        QVERIFY(!m_fake.script(QStringLiteral("acct-b"), {QStringLiteral("no_such_action")}));
    }

    void faultsMidStream()
    {
        QVERIFY(m_fake.script(QStringLiteral("acct-f"),
                              {QStringLiteral("stall_mid"), QStringLiteral("drop_mid"), QStringLiteral("silent"),
                               QStringLiteral("failed"), QStringLiteral("delay_first:300")}));
        const SseResult stalled = turn("acct-f", turnBody(QStringLiteral("x")), {}, 700);
        QVERIFY(stalled.timedOut);
        QCOMPARE(stalled.eventTypes().count("response.output_text.delta"), 2);
        QVERIFY(!stalled.eventTypes().contains("response.completed"));

        const SseResult dropped = turn("acct-f", turnBody(QStringLiteral("x")), {}, 5000);
        QVERIFY(!dropped.timedOut);
        QCOMPARE(dropped.status, 200);
        QCOMPARE(dropped.eventTypes().count("response.output_text.delta"), 2);
        QVERIFY(!dropped.eventTypes().contains("response.completed"));

        const SseResult silent = turn("acct-f", turnBody(QStringLiteral("x")), {}, 500);
        QVERIFY(silent.timedOut);
        QVERIFY(silent.body.isEmpty());

        const SseResult failed = turn("acct-f", turnBody(QStringLiteral("x")));
        QCOMPARE(failed.eventTypes(),
                 (QList<QByteArray>{"response.created", "response.in_progress", "response.failed"}));

        const SseResult delayed = turn("acct-f", turnBody(QStringLiteral("x")));
        QVERIFY(delayed.firstByteMs >= 280);
        QVERIFY(delayed.eventTypes().contains("response.completed"));

        const QJsonArray log = m_fake.log();
        QCOMPARE(log.size(), 5);
        QCOMPARE(log.at(0).toObject().value(QStringLiteral("outcome")).toString(), QStringLiteral("stall_mid"));
        QCOMPARE(log.at(1).toObject().value(QStringLiteral("outcome")).toString(), QStringLiteral("drop_mid"));
        QCOMPARE(log.at(2).toObject().value(QStringLiteral("outcome")).toString(), QStringLiteral("silent"));
        QCOMPARE(log.at(3).toObject().value(QStringLiteral("outcome")).toString(), QStringLiteral("failed"));
        QCOMPARE(log.at(4).toObject().value(QStringLiteral("outcome")).toString(), QStringLiteral("completed"));
        QTRY_VERIFY(m_fake.log().at(0).toObject().value(QStringLiteral("client_gone")).toBool());
    }

    void previousResponseAnchors()
    {
        const SseResult first = turn("acct-a", turnBody(QStringLiteral("x")));
        const QString id = completedResponse(first).value(QStringLiteral("id")).toString();
        QVERIFY(!id.isEmpty());
        const QJsonObject anchor{{QStringLiteral("previous_response_id"), id}};
        QCOMPARE(turn("acct-a", turnBody(QStringLiteral("x"), anchor)).status, 200);
        const SseResult foreign = turn("acct-z", turnBody(QStringLiteral("x"), anchor), {}, 500);
        QVERIFY(foreign.timedOut);
        QVERIFY(foreign.events.isEmpty());
        const HttpResult unknown = httpRequest(
            "POST", turnsUrl(), auth("acct-a"),
            turnBody(QStringLiteral("x"), {{QStringLiteral("previous_response_id"), QStringLiteral("resp_nope")}}));
        QCOMPARE(unknown.status, 400);
        QCOMPARE(m_fake.log().at(2).toObject().value(QStringLiteral("outcome")).toString(),
                 QStringLiteral("foreign_anchor"));
    }

    void logRecordsCredentialsAndIds()
    {
        QByteArray compressed(qsizetype(ZSTD_compressBound(4096)), Qt::Uninitialized);
        const QByteArray plain = turnBody(QStringLiteral("logged"));
        compressed.resize(qsizetype(
            ZSTD_compress(compressed.data(), size_t(compressed.size()), plain.constData(), size_t(plain.size()), 3)));
        const SseResult r = turn("acct-l", compressed,
                                 {{"Authorization", "Bearer tok-secret-1"},
                                  {"x-request-id", "req_0123"},
                                  {"session_id", "sess-9"},
                                  {"Content-Encoding", "zstd"},
                                  {"x-codex-turn-state", "ts_prev"}});
        QCOMPARE(r.status, 200);
        const QJsonObject entry = m_fake.log().first().toObject();
        QCOMPARE(entry.value(QStringLiteral("path")).toString(), QStringLiteral("/backend-api/codex/responses"));
        QCOMPARE(entry.value(QStringLiteral("method")).toString(), QStringLiteral("POST"));
        QCOMPARE(entry.value(QStringLiteral("authorization")).toString(), QStringLiteral("tok-secret-1"));
        QCOMPARE(entry.value(QStringLiteral("chatgpt_account_id")).toString(), QStringLiteral("acct-l"));
        QCOMPARE(entry.value(QStringLiteral("x_request_id")).toString(), QStringLiteral("req_0123"));
        QCOMPARE(entry.value(QStringLiteral("session_id")).toString(), QStringLiteral("sess-9"));
        QCOMPARE(entry.value(QStringLiteral("turn_state")).toString(), QStringLiteral("ts_prev"));
        QCOMPARE(entry.value(QStringLiteral("content_encoding")).toString(), QStringLiteral("zstd"));
        QCOMPARE(entry.value(QStringLiteral("body")).toObject().value(QStringLiteral("prompt_cache_key")).toString(),
                 QStringLiteral("sess-1"));
        QCOMPARE(entry.value(QStringLiteral("status_sent")).toInt(), 200);
        QCOMPARE(entry.value(QStringLiteral("outcome")).toString(), QStringLiteral("completed"));
        QCOMPARE(entry.value(QStringLiteral("upstream_request_id")).toString(),
                 QString::fromLatin1(r.header("x-request-id")));
        QCOMPARE(entry.value(QStringLiteral("response_id")).toString(),
                 completedResponse(r).value(QStringLiteral("id")).toString());
    }

    void otherEndpoints()
    {
        QVERIFY(m_fake.setUsage(QStringLiteral("acct-u"), {{QStringLiteral("primary_used_percent"), 97.5},
                                                           {QStringLiteral("plan_type"), QStringLiteral("pro")}}));
        const HttpResult usage =
            httpRequest("GET", QUrl(m_fake.baseUrl() + QStringLiteral("/wham/usage")), auth("acct-u"));
        QCOMPARE(usage.status, 200);
        const QJsonObject u = usage.json();
        QCOMPARE(u.value(QStringLiteral("plan_type")).toString(), QStringLiteral("pro"));
        const QJsonObject primary =
            u.value(QStringLiteral("rate_limit")).toObject().value(QStringLiteral("primary_window")).toObject();
        QCOMPARE(primary.value(QStringLiteral("used_percent")).toDouble(), 97.5);
        QCOMPARE(primary.value(QStringLiteral("limit_window_seconds")).toInt(), 18000);
        QVERIFY(u.value(QStringLiteral("credits")).toObject().contains(QStringLiteral("has_credits")));
        QCOMPARE(turn("acct-u", turnBody(QStringLiteral("x"))).header("x-codex-primary-used-percent"),
                 QByteArray("97.5"));

        const HttpResult models = httpRequest(
            "GET", QUrl(m_fake.baseUrl() + QStringLiteral("/codex/models?client_version=0.171.0")), auth("acct-u"));
        QCOMPARE(models.status, 200);
        QCOMPARE(models.json()
                     .value(QStringLiteral("models"))
                     .toArray()
                     .first()
                     .toObject()
                     .value(QStringLiteral("slug"))
                     .toString(),
                 QStringLiteral("gpt-5-codex"));

        const HttpResult compact =
            httpRequest("POST", QUrl(m_fake.baseUrl() + QStringLiteral("/codex/responses/compact")), auth("acct-u"),
                        turnBody(QStringLiteral("keep me")));
        QCOMPARE(compact.status, 200);
        const QJsonArray output = compact.json().value(QStringLiteral("output")).toArray();
        QCOMPARE(output.size(), 2);
        QCOMPARE(output.last().toObject().value(QStringLiteral("type")).toString(), QStringLiteral("compaction"));

        QVERIFY(m_fake.script(QStringLiteral("acct-u"), {QStringLiteral("500")}, false, QStringLiteral("usage")));
        QCOMPARE(httpRequest("GET", QUrl(m_fake.baseUrl() + QStringLiteral("/wham/usage")), auth("acct-u")).status,
                 500);
        QCOMPARE(httpRequest("GET", QUrl(m_fake.baseUrl() + QStringLiteral("/wham/usage")), auth("acct-u")).status,
                 200);
    }

    void manyConcurrentStreams()
    {
        const int n = 64;
        QVERIFY(m_fake.script(QStringLiteral("acct-c"), {QStringLiteral("slow:25")}, true));
        std::vector<std::unique_ptr<RawHttpClient>> clients;
        const QByteArray body = turnBody(QStringLiteral("parallel"));
        for (int i = 0; i < n; ++i) {
            clients.push_back(std::make_unique<RawHttpClient>());
            QVERIFY(clients.back()->connectTo(m_fake.port()));
            clients.back()->send(RawHttpClient::buildRequest("POST", "/backend-api/codex/responses",
                                                             {{"Authorization", "Bearer tok-c"},
                                                              {"chatgpt-account-id", "acct-c"},
                                                              {"Content-Type", "application/json"}},
                                                             body));
        }
        QSet<QString> ids;
        for (auto &client : clients) {
            const std::optional<RawResponse> r = client->readResponse(30000);
            QVERIFY(r);
            QCOMPARE(r->status, 200);
            const QList<SseEvent> events = parseSse(r->body);
            QVERIFY(!events.isEmpty());
            QCOMPARE(events.last().event, QByteArray("response.completed"));
            ids.insert(events.last()
                           .json()
                           .value(QStringLiteral("response"))
                           .toObject()
                           .value(QStringLiteral("id"))
                           .toString());
        }
        QCOMPARE(ids.size(), n);
        const QJsonObject stats = m_fake.stats();
        QVERIFY2(stats.value(QStringLiteral("max_concurrent_streams")).toInt() >= n,
                 QJsonDocument(stats).toJson().constData());
        QCOMPARE(stats.value(QStringLiteral("active_streams")).toInt(), 0);
    }
};

QTEST_GUILESS_MAIN(TestFakeUpstream)
#include "tst_fakeupstream.moc"
