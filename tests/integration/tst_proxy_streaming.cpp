// SWITCHYARD_NEEDS_KEYRING: accounts are imported into a real gnome-keyring.
//
// Streaming behaviour of `switchyard serve` against the fake upstream (issue 2, points 3, 4 and 8): client
// disconnects cancel the upstream, every stream ends with a terminal or explicit error event, /v1 streams
// hide vendor events, non-streaming answers, compressed request bodies, request-log durability before the
// terminal event, the WebSocket 426, bad input, the request-log JSON shape and usage capture.
#include "lib/FakeUpstreamProcess.h"
#include "lib/HttpTestClient.h"
#include "lib/ProxyProcess.h"
#include "lib/RawHttpClient.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QTest>
#include <zlib.h>
#include <zstd.h>

using namespace sy;
using namespace sy::test;

namespace {

QByteArray compact(const QJsonObject &o)
{
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

QJsonObject userMessage(const QString &text)
{
    return QJsonObject{
        {QStringLiteral("type"), QStringLiteral("message")},
        {QStringLiteral("role"), QStringLiteral("user")},
        {QStringLiteral("content"), QJsonArray{QJsonObject{{QStringLiteral("type"), QStringLiteral("input_text")},
                                                           {QStringLiteral("text"), text}}}}};
}

// A Codex-style body: already what the upstream accepts, so the proxy forwards it byte for byte.
QJsonObject codexBody(const QString &text)
{
    return QJsonObject{{QStringLiteral("model"), QStringLiteral("gpt-5-codex")},
                       {QStringLiteral("instructions"), QStringLiteral("You are a test.")},
                       {QStringLiteral("stream"), true},
                       {QStringLiteral("store"), false},
                       {QStringLiteral("input"), QJsonArray{userMessage(text)}}};
}

QJsonObject v1Body(const QString &text, bool stream)
{
    return QJsonObject{{QStringLiteral("model"), QStringLiteral("gpt-5")},
                       {QStringLiteral("input"), text},
                       {QStringLiteral("stream"), stream}};
}

QJsonObject chatBody(const QString &text, bool stream)
{
    return QJsonObject{
        {QStringLiteral("model"), QStringLiteral("gpt-5")},
        {QStringLiteral("messages"),
         QJsonArray{QJsonObject{{QStringLiteral("role"), QStringLiteral("system")},
                                {QStringLiteral("content"), QStringLiteral("Be brief.")}},
                    QJsonObject{{QStringLiteral("role"), QStringLiteral("user")}, {QStringLiteral("content"), text}}}},
        {QStringLiteral("stream"), stream}};
}

const HttpHeaderList kJson{{"content-type", "application/json"}, {"authorization", "Bearer client-key"}};
const HttpHeaderList kSse{
    {"content-type", "application/json"}, {"accept", "text/event-stream"}, {"authorization", "Bearer client-key"}};

QString responsesText(const QList<SseEvent> &events)
{
    QString text;
    for (const SseEvent &e : events) {
        if (e.event == "response.output_text.delta")
            text += e.json().value(QLatin1String("delta")).toString();
    }
    return text;
}

QString chatText(const QList<SseEvent> &events)
{
    QString text;
    for (const SseEvent &e : events) {
        if (e.data == "[DONE]")
            continue;
        const QJsonArray choices = e.json().value(QLatin1String("choices")).toArray();
        if (!choices.isEmpty())
            text += choices.first()
                        .toObject()
                        .value(QLatin1String("delta"))
                        .toObject()
                        .value(QLatin1String("content"))
                        .toString();
    }
    return text;
}

QList<QByteArray> eventTypes(const QList<SseEvent> &events)
{
    QList<QByteArray> types;
    for (const SseEvent &e : events)
        types.append(e.event);
    return types;
}

QByteArray zstdCompress(const QByteArray &in)
{
    QByteArray out(qsizetype(ZSTD_compressBound(size_t(in.size()))), Qt::Uninitialized);
    const size_t n = ZSTD_compress(out.data(), size_t(out.size()), in.constData(), size_t(in.size()), 3);
    if (ZSTD_isError(n))
        return {};
    out.resize(qsizetype(n));
    return out;
}

// One gzip member (RFC 1952), as curl or a browser would send it; qCompress's zlib format is not gzip.
QByteArray gzipCompress(const QByteArray &in)
{
    z_stream zs{};
    if (deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return {};
    QByteArray out(qsizetype(deflateBound(&zs, uLong(in.size())) + 32), Qt::Uninitialized);
    zs.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(in.constData()));
    zs.avail_in = uInt(in.size());
    zs.next_out = reinterpret_cast<Bytef *>(out.data());
    zs.avail_out = uInt(out.size());
    const int rc = deflate(&zs, Z_FINISH);
    const uLong written = zs.total_out;
    deflateEnd(&zs);
    if (rc != Z_STREAM_END)
        return {};
    out.resize(qsizetype(written));
    return out;
}

QStringList sortedKeys(const QJsonObject &o)
{
    QStringList keys = o.keys();
    keys.sort();
    return keys;
}

QStringList sorted(QStringList l)
{
    l.sort();
    return l;
}

// Holds SQLite's write lock on the proxy's database from a second connection (BEGIN IMMEDIATE), so the
// proxy's store thread cannot commit until release(). Released on destruction too: a failed check must not
// leave the proxy unable to write.
class DatabaseWriteLock
{
public:
    explicit DatabaseWriteLock(const QString &path) : m_path(path) {}
    ~DatabaseWriteLock()
    {
        release();
        {
            QSqlDatabase db = QSqlDatabase::database(m_name, false);
            db.close();
        }
        QSqlDatabase::removeDatabase(m_name);
    }
    bool open()
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), m_name);
        db.setDatabaseName(m_path);
        db.setConnectOptions(QStringLiteral("QSQLITE_BUSY_TIMEOUT=5000"));
        if (!db.open()) {
            m_error = db.lastError().text();
            return false;
        }
        return true;
    }
    bool acquire() { return run(QStringLiteral("BEGIN IMMEDIATE"), true); }
    bool release() { return !m_held || run(QStringLiteral("ROLLBACK"), false); }
    QString error() const { return m_error; }

private:
    bool run(const QString &sql, bool held)
    {
        QSqlQuery q(QSqlDatabase::database(m_name, false));
        if (!q.exec(sql)) {
            m_error = sql + QStringLiteral(": ") + q.lastError().text();
            return false;
        }
        m_held = held;
        return true;
    }

    QString m_path;
    QString m_name = QStringLiteral("tst_proxy_streaming_lock");
    QString m_error;
    bool m_held = false;
};

} // namespace

class TestProxyStreaming : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    ProxyProcess m_proxy;

    QUrl proxyUrl(const QString &path) const { return QUrl(m_proxy.url(path)); }

    // Every account answers with `action` until the next reset (init() resets before each test).
    bool scriptAll(const QString &action)
    {
        for (const FakeAccount &a : m_proxy.accounts()) {
            if (!m_fake.script(a.chatgptAccountId, {action}, true))
                return false;
        }
        return true;
    }

    QJsonObject fakeEntry(const QByteArray &requestId)
    {
        for (const QJsonValue &v : m_fake.log()) {
            if (v.toObject().value(QLatin1String("x_request_id")).toString().toLatin1() == requestId)
                return v.toObject();
        }
        return {};
    }

    // The row as GET /api/requests?limit=N shows it right now (no waiting).
    QJsonObject apiRow(const QByteArray &requestId, int limit = 5)
    {
        const HttpResult r = httpRequest("GET", proxyUrl(QStringLiteral("/api/requests?limit=%1").arg(limit)));
        if (r.status != 200)
            return {};
        for (const QJsonValue &v : r.jsonDocument().array()) {
            if (v.toObject().value(QLatin1String("request_id")).toString().toLatin1() == requestId)
                return v.toObject();
        }
        return {};
    }

    // Sends one request on a fresh raw connection and waits for the complete (de-chunked) response.
    std::optional<RawResponse> rawExchange(const QByteArray &method, const QByteArray &target,
                                           const HttpHeaderList &headers, const QByteArray &body, int timeoutMs = 15000)
    {
        RawHttpClient c;
        if (!c.connectTo(m_proxy.port()))
            return std::nullopt;
        c.send(RawHttpClient::buildRequest(method, target, headers, body));
        return c.readResponse(timeoutMs);
    }

    void verifyJsonError(const HttpResult &r, int status, const QString &type = {})
    {
        QCOMPARE(r.status, status);
        QVERIFY2(r.header("content-type").startsWith("application/json"), r.header("content-type").constData());
        const QJsonObject error = r.json().value(QLatin1String("error")).toObject();
        QVERIFY2(!error.isEmpty(), r.body.constData());
        QVERIFY(!error.value(QLatin1String("message")).toString().isEmpty());
        if (!type.isEmpty())
            QCOMPARE(error.value(QLatin1String("type")).toString(), type);
    }

private slots:
    void initTestCase()
    {
        QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString()));
        m_proxy.setConfig({{QStringLiteral("max_body_mb"), 1}});
        QVERIFY2(m_proxy.addAccounts(3, {QStringLiteral("plus"), QStringLiteral("pro"), QStringLiteral("team")}),
                 qPrintable(m_proxy.errorString()));
        QVERIFY2(m_proxy.start(m_fake.baseUrl()), qPrintable(m_proxy.errorString()));
    }

    void init() { QVERIFY(m_fake.reset()); }

    void cleanupTestCase() { m_proxy.stop(); }

    // Issue 2.3: a client that goes away mid-stream cancels the upstream request; the turn is "cancelled".
    void clientDisconnectAbortsUpstreamAndLogsCancelled()
    {
        QVERIFY(scriptAll(QStringLiteral("slow:200")));
        // ~30 frames at 200 ms: the upstream stream would run for ~6 s if nobody cancelled it.
        const QString words = QStringLiteral("one two three four five six seven eight nine ten eleven twelve "
                                             "thirteen fourteen fifteen sixteen seventeen eighteen nineteen twenty");
        RawHttpClient c;
        QVERIFY(c.connectTo(m_proxy.port()));
        c.send(RawHttpClient::buildRequest("POST", "/backend-api/codex/responses", kSse,
                                           compact(codexBody(QStringLiteral("ECHO: ") + words))));
        QVERIFY2(c.waitForBodyContaining("response.output_text.delta", 10000), c.partial().body.constData());
        QCOMPARE(c.partial().status, 200);
        const QByteArray requestId = c.partial().header("x-request-id");
        QVERIFY(requestId.startsWith("req_"));
        {
            const QJsonObject seen = fakeEntry(requestId);
            QCOMPARE(seen.value(QLatin1String("outcome")).toString(), QStringLiteral("streaming"));
            QCOMPARE(m_fake.stats().value(QLatin1String("active_streams")).toInt(), 1);
        }

        c.socket()->abort(); // the client is gone

        // The proxy aborts its upstream call at once: the fake sees its client leave mid-stream.
        QTRY_VERIFY_WITH_TIMEOUT(fakeEntry(requestId).value(QLatin1String("client_gone")).toBool(), 3000);
        const QJsonObject seen = fakeEntry(requestId);
        QCOMPARE(seen.value(QLatin1String("outcome")).toString(), QStringLiteral("client_gone"));
        QTRY_COMPARE_WITH_TIMEOUT(m_fake.stats().value(QLatin1String("active_streams")).toInt(), 0, 3000);

        const QJsonObject row = m_proxy.waitForRequest(QString::fromLatin1(requestId));
        QVERIFY2(!row.isEmpty(), "no request-log row for the cancelled turn");
        QCOMPARE(row.value(QLatin1String("status")).toString(), QStringLiteral("cancelled"));
        QCOMPARE(row.value(QLatin1String("error_code")).toString(), QStringLiteral("client_disconnected"));
        QCOMPARE(row.value(QLatin1String("chatgpt_account_id")).toString(),
                 seen.value(QLatin1String("chatgpt_account_id")).toString());

        // The proxy keeps serving.
        const HttpResult live = httpRequest("GET", proxyUrl(QStringLiteral("/health/live")));
        QCOMPARE(live.status, 200);
    }

    // Issue 2.3: every stream the proxy ends ends with a terminal event or an explicit error, properly framed;
    // and the failed turn's row is durable before that terminal event reaches the client.
    void droppedUpstreamEndsEveryStreamExplicitly_data()
    {
        QTest::addColumn<QByteArray>("target");
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<QString>("route");
        QTest::newRow("codex") << QByteArray("/backend-api/codex/responses")
                               << compact(codexBody(QStringLiteral("ECHO: alpha beta gamma delta epsilon")))
                               << QStringLiteral("codex");
        QTest::newRow("v1-responses") << QByteArray("/v1/responses")
                                      << compact(v1Body(QStringLiteral("ECHO: alpha beta gamma delta epsilon"), true))
                                      << QStringLiteral("responses");
        QTest::newRow("v1-chat") << QByteArray("/v1/chat/completions")
                                 << compact(chatBody(QStringLiteral("ECHO: alpha beta gamma delta epsilon"), true))
                                 << QStringLiteral("chat");
    }

    void droppedUpstreamEndsEveryStreamExplicitly()
    {
        QFETCH(QByteArray, target);
        QFETCH(QByteArray, body);
        QFETCH(QString, route);
        QVERIFY(scriptAll(QStringLiteral("drop_mid")));

        const std::optional<RawResponse> r = rawExchange("POST", target, kSse, body);
        QVERIFY2(r.has_value(), "the stream never ended (no chunked terminator within 15 s)");
        // Read the log at once: the row must already be committed when the terminal bytes arrived.
        const QByteArray requestId = r->header("x-request-id");
        const QJsonObject row = apiRow(requestId);

        QCOMPARE(r->status, 200);
        QVERIFY(r->header("content-type").startsWith("text/event-stream"));
        QVERIFY2(r->chunked, "an HTTP/1.1 stream must be chunked so its end is explicit");
        QVERIFY(r->complete);
        const QList<SseEvent> events = parseSse(r->body);
        QVERIFY2(!events.isEmpty(), r->body.constData());
        const QList<QByteArray> types = eventTypes(events);

        if (route == QLatin1String("chat")) {
            // Two text chunks arrived before the drop, then an error object and [DONE].
            QVERIFY2(events.size() >= 3, r->body.constData());
            QCOMPARE(events.constLast().data, QByteArrayLiteral("[DONE]"));
            const QJsonObject error = events.at(events.size() - 2).json().value(QLatin1String("error")).toObject();
            QVERIFY2(!error.isEmpty(), r->body.constData());
            QVERIFY(!error.value(QLatin1String("message")).toString().isEmpty());
            QVERIFY(chatText(events).startsWith(QLatin1String("alpha ")));
        } else {
            QVERIFY2(types.contains("error"), r->body.constData());
            QCOMPARE(types.constLast(), QByteArrayLiteral("response.failed"));
            QVERIFY(types.indexOf("error") < types.indexOf("response.failed"));
            QVERIFY(!types.contains("response.completed"));
            QCOMPARE(events.constLast()
                         .json()
                         .value(QLatin1String("response"))
                         .toObject()
                         .value(QLatin1String("status"))
                         .toString(),
                     QStringLiteral("failed"));
            QVERIFY(responsesText(events).startsWith(QLatin1String("alpha ")));
            if (route == QLatin1String("responses"))
                QCOMPARE(types.constFirst(), QByteArrayLiteral("response.created"));
        }

        QVERIFY2(!row.isEmpty(), "the failed turn's row was not committed before its terminal event was sent");
        QCOMPARE(row.value(QLatin1String("status")).toString(), QStringLiteral("failed"));
        QVERIFY(row.value(QLatin1String("error_code")).isString());
        const QJsonObject seen = fakeEntry(requestId);
        QCOMPARE(seen.value(QLatin1String("outcome")).toString(), QStringLiteral("drop_mid"));
    }

    // Issue 2.4: /v1 streams never carry codex.* events and start with response.created; Codex gets them.
    void v1StreamsHideVendorEventsCodexGetsThem()
    {
        const SseResult v1 = sseRequest("POST", proxyUrl(QStringLiteral("/v1/responses")), kSse,
                                        compact(v1Body(QStringLiteral("ECHO: plain v1 stream"), true)));
        QCOMPARE(v1.status, 200);
        QVERIFY(v1.error.isEmpty());
        QVERIFY(!v1.events.isEmpty());
        QCOMPARE(v1.eventTypes().constFirst(), QByteArrayLiteral("response.created"));
        QCOMPARE(v1.eventTypes().constLast(), QByteArrayLiteral("response.completed"));
        for (const QByteArray &t : v1.eventTypes())
            QVERIFY2(!t.startsWith("codex."), t.constData());
        QVERIFY(!v1.body.contains("codex.rate_limits"));
        QCOMPARE(responsesText(v1.events), QStringLiteral("plain v1 stream"));

        const SseResult chat = sseRequest("POST", proxyUrl(QStringLiteral("/v1/chat/completions")), kSse,
                                          compact(chatBody(QStringLiteral("ECHO: plain chat stream"), true)));
        QCOMPARE(chat.status, 200);
        QVERIFY(!chat.body.contains("codex."));
        QCOMPARE(chat.events.constLast().data, QByteArrayLiteral("[DONE]"));
        QCOMPARE(chatText(chat.events), QStringLiteral("plain chat stream"));

        const SseResult codex = sseRequest("POST", proxyUrl(QStringLiteral("/backend-api/codex/responses")), kSse,
                                           compact(codexBody(QStringLiteral("ECHO: codex stream"))));
        QCOMPARE(codex.status, 200);
        QVERIFY(codex.eventTypes().contains("codex.rate_limits"));
        QCOMPARE(codex.eventTypes().constFirst(), QByteArrayLiteral("response.created"));
        QCOMPARE(codex.eventTypes().constLast(), QByteArrayLiteral("response.completed"));
        const QJsonObject limits = codex.first("codex.rate_limits").json();
        QVERIFY(limits.value(QLatin1String("rate_limits")).toObject().contains(QLatin1String("primary")));

        // All three upstream streams carried the vendor event: the /v1 routes dropped it.
        const QJsonArray log = m_fake.log();
        QCOMPARE(log.size(), 3);
        for (const QJsonValue &v : log)
            QCOMPARE(v.toObject().value(QLatin1String("outcome")).toString(), QStringLiteral("completed"));
    }

    // Issue 2.4: non-streaming /v1/responses and chat completions, tool calls included.
    void nonStreamingAnswers()
    {
        const HttpResult resp = httpRequest("POST", proxyUrl(QStringLiteral("/v1/responses")), kJson,
                                            compact(v1Body(QStringLiteral("ECHO: json response please"), false)));
        QCOMPARE(resp.status, 200);
        QVERIFY2(resp.header("content-type").startsWith("application/json"), resp.header("content-type").constData());
        const QJsonObject ro = resp.json();
        QCOMPARE(ro.value(QLatin1String("object")).toString(), QStringLiteral("response"));
        QCOMPARE(ro.value(QLatin1String("status")).toString(), QStringLiteral("completed"));
        QVERIFY(ro.value(QLatin1String("id")).toString().startsWith(QLatin1String("resp_")));
        const QJsonArray output = ro.value(QLatin1String("output")).toArray();
        QVERIFY2(!output.isEmpty(), resp.body.constData());
        const QJsonObject message = output.first().toObject();
        QCOMPARE(message.value(QLatin1String("type")).toString(), QStringLiteral("message"));
        QCOMPARE(message.value(QLatin1String("content"))
                     .toArray()
                     .first()
                     .toObject()
                     .value(QLatin1String("text"))
                     .toString(),
                 QStringLiteral("json response please"));
        const QJsonObject usage = ro.value(QLatin1String("usage")).toObject();
        QVERIFY(usage.value(QLatin1String("input_tokens")).toInt() > 0);
        QVERIFY(usage.value(QLatin1String("output_tokens")).toInt() > 0);
        QCOMPARE(usage.value(QLatin1String("total_tokens")).toInt(),
                 usage.value(QLatin1String("input_tokens")).toInt() +
                     usage.value(QLatin1String("output_tokens")).toInt());

        const HttpResult chat = httpRequest("POST", proxyUrl(QStringLiteral("/v1/chat/completions")), kJson,
                                            compact(chatBody(QStringLiteral("ECHO: json chat please"), false)));
        QCOMPARE(chat.status, 200);
        QVERIFY(chat.header("content-type").startsWith("application/json"));
        const QJsonObject co = chat.json();
        QCOMPARE(co.value(QLatin1String("object")).toString(), QStringLiteral("chat.completion"));
        QCOMPARE(co.value(QLatin1String("model")).toString(), QStringLiteral("gpt-5"));
        const QJsonObject choice = co.value(QLatin1String("choices")).toArray().first().toObject();
        QCOMPARE(choice.value(QLatin1String("finish_reason")).toString(), QStringLiteral("stop"));
        QCOMPARE(choice.value(QLatin1String("message")).toObject().value(QLatin1String("role")).toString(),
                 QStringLiteral("assistant"));
        QCOMPARE(choice.value(QLatin1String("message")).toObject().value(QLatin1String("content")).toString(),
                 QStringLiteral("json chat please"));
        const QJsonObject cu = co.value(QLatin1String("usage")).toObject();
        QVERIFY2(cu.value(QLatin1String("prompt_tokens")).toInt() > 0, chat.body.constData());
        QVERIFY(cu.value(QLatin1String("completion_tokens")).toInt() > 0);
        QCOMPARE(cu.value(QLatin1String("total_tokens")).toInt(),
                 cu.value(QLatin1String("prompt_tokens")).toInt() +
                     cu.value(QLatin1String("completion_tokens")).toInt());

        QJsonObject toolReq = chatBody(QStringLiteral("CALL_TOOL read the readme"), false);
        toolReq.insert(QStringLiteral("tools"),
                       QJsonArray{QJsonObject{
                           {QStringLiteral("type"), QStringLiteral("function")},
                           {QStringLiteral("function"),
                            QJsonObject{{QStringLiteral("name"), QStringLiteral("read_file")},
                                        {QStringLiteral("description"), QStringLiteral("Reads a file")},
                                        {QStringLiteral("parameters"),
                                         QJsonObject{{QStringLiteral("type"), QStringLiteral("object")},
                                                     {QStringLiteral("properties"),
                                                      QJsonObject{{QStringLiteral("path"),
                                                                   QJsonObject{{QStringLiteral("type"),
                                                                                QStringLiteral("string")}}}}}}}}}}});
        const HttpResult tool =
            httpRequest("POST", proxyUrl(QStringLiteral("/v1/chat/completions")), kJson, compact(toolReq));
        QCOMPARE(tool.status, 200);
        const QJsonObject tc = tool.json().value(QLatin1String("choices")).toArray().first().toObject();
        QCOMPARE(tc.value(QLatin1String("finish_reason")).toString(), QStringLiteral("tool_calls"));
        const QJsonArray calls =
            tc.value(QLatin1String("message")).toObject().value(QLatin1String("tool_calls")).toArray();
        QCOMPARE(calls.size(), 1);
        const QJsonObject call = calls.first().toObject();
        QVERIFY(!call.value(QLatin1String("id")).toString().isEmpty());
        QCOMPARE(call.value(QLatin1String("type")).toString(), QStringLiteral("function"));
        const QJsonObject fn = call.value(QLatin1String("function")).toObject();
        QCOMPARE(fn.value(QLatin1String("name")).toString(), QStringLiteral("read_file"));
        QCOMPARE(QJsonDocument::fromJson(fn.value(QLatin1String("arguments")).toString().toUtf8()).object(),
                 QJsonObject({{QStringLiteral("path"), QStringLiteral("README.md")}}));
        QVERIFY(tool.json().value(QLatin1String("usage")).toObject().value(QLatin1String("prompt_tokens")).toInt() > 0);
    }

    // Issue 2.3: zstd (what Codex sends in ChatGPT-login mode) and gzip request bodies are decoded.
    void compressedRequestBodiesAreDecoded_data()
    {
        QTest::addColumn<QByteArray>("encoding");
        QTest::newRow("zstd") << QByteArray("zstd");
        QTest::newRow("gzip") << QByteArray("gzip");
    }

    void compressedRequestBodiesAreDecoded()
    {
        QFETCH(QByteArray, encoding);
        QJsonObject body = codexBody(QStringLiteral("ECHO: compressed body arrived"));
        // A realistic, compressible history.
        body.insert(QStringLiteral("instructions"),
                    QString(QStringLiteral("You are Codex, a coding agent. ")).repeated(600));
        body.insert(QStringLiteral("prompt_cache_key"),
                    QString(QStringLiteral("sess-compressed-") + QString::fromLatin1(encoding)));
        const QByteArray plain = compact(body);
        const QByteArray packed = encoding == "zstd" ? zstdCompress(plain) : gzipCompress(plain);
        QVERIFY(!packed.isEmpty());
        QVERIFY(packed.size() < plain.size() / 4);

        HttpHeaderList headers = kSse;
        headers.append(HttpHeader("content-encoding", encoding));
        const SseResult r =
            sseRequest("POST", proxyUrl(QStringLiteral("/backend-api/codex/responses")), headers, packed);
        QVERIFY2(r.status == 200, r.body.constData());
        QCOMPARE(r.eventTypes().constLast(), QByteArrayLiteral("response.completed"));
        QCOMPARE(responsesText(r.events), QStringLiteral("compressed body arrived"));

        const QJsonObject seen = fakeEntry(r.header("x-request-id"));
        QVERIFY(!seen.isEmpty());
        QCOMPARE(seen.value(QLatin1String("body")).toObject(), body);
        // The Codex route forwards the decoded bytes unchanged.
        QCOMPARE(seen.value(QLatin1String("body_size")).toInt(), int(plain.size()));
    }

    // bench/HISTORY.md "A large upload into memory already written": the proxy thread keeps a large body's
    // memory and its parser for the next large body. Each body must still go upstream byte for byte, and
    // /api/status must show the reuse (the body's buffer and the parser of every turn after the first).
    void largeBodiesReuseTheMemoryOfTheLastOne()
    {
        const auto reuses = [this] {
            const HttpResult st = httpRequest("GET", QUrl(m_proxy.url(QStringLiteral("/api/status"))));
            return QJsonDocument::fromJson(st.body).object().value(QLatin1String("large_buffers")).toObject();
        };
        const qint64 before = reuses().value(QLatin1String("reuses")).toInteger(-1);
        QVERIFY(before >= 0);
        for (int i = 0; i < 3; ++i) {
            QJsonObject body = codexBody(QStringLiteral("ECHO: large body %1").arg(i));
            // About 600 KiB of history (max_body_mb is 1 here), a little more each turn (as a conversation grows),
            // different bytes.
            body.insert(QStringLiteral("instructions"),
                        QString(QStringLiteral("Turn %1 of a long session. ").arg(i)).repeated(21000 + i * 100));
            body.insert(QStringLiteral("prompt_cache_key"), QStringLiteral("sess-large-body"));
            const QByteArray bytes = compact(body);
            const SseResult r =
                sseRequest("POST", proxyUrl(QStringLiteral("/backend-api/codex/responses")), kSse, bytes);
            QVERIFY2(r.status == 200, r.body.constData());
            QCOMPARE(responsesText(r.events), QStringLiteral("large body %1").arg(i));
            const QJsonObject seen = fakeEntry(r.header("x-request-id"));
            QCOMPARE(seen.value(QLatin1String("body_size")).toInt(), int(bytes.size()));
            QCOMPARE(seen.value(QLatin1String("body")).toObject(), body);
        }
        // The turn gives its body back at its first upstream event (if nothing else holds it any more): wait.
        QTRY_VERIFY_WITH_TIMEOUT(reuses().value(QLatin1String("buffers")).toInt() >= 1, 5000);
        const QJsonObject after = reuses();
        QVERIFY2(after.value(QLatin1String("reuses")).toInteger() >= before + 4,
                 QJsonDocument(after).toJson().constData());
        QVERIFY(after.value(QLatin1String("kept_bytes")).toInteger() >= 512 * 1024);
    }

    // DESIGN.md "Durability": the row is committed before the terminal event reaches the client.
    void requestLogRowIsDurableBeforeTerminalEvent()
    {
        for (int i = 0; i < 20; ++i) {
            RawHttpClient c;
            QVERIFY(c.connectTo(m_proxy.port()));
            c.send(RawHttpClient::buildRequest("POST", "/backend-api/codex/responses", kSse,
                                               compact(codexBody(QStringLiteral("ECHO: durable %1").arg(i)))));
            QVERIFY2(c.waitForBodyContaining("event: response.completed", 10000), c.partial().body.constData());
            const QByteArray requestId = c.partial().header("x-request-id");
            const QJsonObject row = apiRow(requestId); // immediately, no sleep
            QVERIFY2(!row.isEmpty(), qPrintable(QStringLiteral("round %1: row %2 missing when response.completed "
                                                               "had already reached the client")
                                                    .arg(i)
                                                    .arg(QString::fromLatin1(requestId))));
            QCOMPARE(row.value(QLatin1String("status")).toString(), QStringLiteral("completed"));
            const QJsonObject tokens = row.value(QLatin1String("tokens")).toObject();
            QVERIFY(tokens.value(QLatin1String("input")).toInt() > 0);
            QVERIFY(tokens.value(QLatin1String("output")).toInt() > 0);
            QCOMPARE(tokens.value(QLatin1String("total")).toInt(),
                     tokens.value(QLatin1String("input")).toInt() + tokens.value(QLatin1String("output")).toInt());
        }
    }

    // The same property without racing the proxy: while the test holds the database's write lock, the turn
    // can stream but cannot commit its row, so its terminal event must wait; once the lock is released the
    // row is committed and response.completed follows.
    void terminalEventWaitsUntilTheRowIsCommitted()
    {
        QVERIFY(scriptAll(QStringLiteral("slow:200")));
        DatabaseWriteLock lock(m_proxy.dataDir() + QStringLiteral("/switchyard.sqlite"));
        QVERIFY2(lock.open(), qPrintable(lock.error()));

        RawHttpClient c;
        QVERIFY(c.connectTo(m_proxy.port()));
        c.send(RawHttpClient::buildRequest("POST", "/backend-api/codex/responses", kSse,
                                           compact(codexBody(QStringLiteral("ECHO: held until durable")))));
        QVERIFY2(c.waitForBodyContaining("event: response.content_part.done", 10000), c.partial().body.constData());
        const QByteArray requestId = c.partial().header("x-request-id");
        QVERIFY2(lock.acquire(), qPrintable(lock.error()));
        // The upstream finishes its stream (output_item.done, codex.rate_limits, response.completed) while
        // the request log cannot be written.
        QTRY_VERIFY_WITH_TIMEOUT(
            fakeEntry(requestId).value(QLatin1String("outcome")).toString() != QLatin1String("streaming"), 3000);
        QTest::qWait(500);
        const bool deliveredEarly = c.partial().body.contains("response.completed");
        const bool sawItemDone = c.partial().body.contains("event: response.output_item.done");
        QVERIFY2(lock.release(), qPrintable(lock.error()));
        QVERIFY2(sawItemDone, "the stream itself stalled while the database was locked");
        QVERIFY2(!deliveredEarly,
                 "response.completed reached the client while its request-log row could not be committed");

        QVERIFY2(c.waitForBodyContaining("event: response.completed", 10000), c.partial().body.constData());
        const QJsonObject row = m_proxy.waitForRequest(QString::fromLatin1(requestId));
        QCOMPARE(row.value(QLatin1String("status")).toString(), QStringLiteral("completed"));
        QVERIFY(row.value(QLatin1String("tokens")).toObject().value(QLatin1String("total")).toInt() > 0);
    }

    // Issue 2.3 / DESIGN.md "WebSocket": an upgrade on .../responses is answered 426 with a JSON error.
    void websocketUpgradeGets426()
    {
        const std::optional<RawResponse> r = rawExchange("GET", "/backend-api/codex/responses",
                                                         {{"Connection", "Upgrade"},
                                                          {"Upgrade", "websocket"},
                                                          {"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="},
                                                          {"Sec-WebSocket-Version", "13"},
                                                          {"openai-beta", "responses_websockets=2026-02-04"}},
                                                         {});
        QVERIFY(r.has_value());
        QCOMPARE(r->status, 426);
        QVERIFY(r->header("content-type").startsWith("application/json"));
        QVERIFY2(
            !r->json().value(QLatin1String("error")).toObject().value(QLatin1String("message")).toString().isEmpty(),
            r->body.constData());
        QCOMPARE(m_fake.log().size(), 0);
        QCOMPARE(httpRequest("GET", proxyUrl(QStringLiteral("/health/live"))).status, 200);
    }

    // Issue 2.3: malformed or unacceptable requests get JSON errors, never reach the upstream, and the
    // proxy keeps serving.
    void badInputGetsJsonErrors()
    {
        for (const char *path : {"/backend-api/codex/responses", "/v1/responses", "/v1/chat/completions"}) {
            const HttpResult r =
                httpRequest("POST", proxyUrl(QString::fromLatin1(path)), kJson, "{\"model\": \"gpt-5\", ");
            verifyJsonError(r, 400, QStringLiteral("invalid_request_error"));
        }
        {
            // 2 MiB against max_body_mb = 1, announced by Content-Length.
            const QByteArray big = "{\"model\":\"gpt-5\",\"input\":\"" + QByteArray(2 * 1024 * 1024, 'x') + "\"}";
            const std::optional<RawResponse> r = rawExchange("POST", "/v1/responses", kJson, big);
            QVERIFY2(r.has_value(), "no response to an oversized body");
            QCOMPARE(r->status, 413);
            QVERIFY(r->header("content-type").startsWith("application/json"));
            QVERIFY(r->json().value(QLatin1String("error")).isObject());
        }
        {
            // The same, chunked (no length known up front).
            RawHttpClient c;
            QVERIFY(c.connectTo(m_proxy.port()));
            HttpHeaderList headers = kJson;
            headers.append(HttpHeader("Transfer-Encoding", "chunked"));
            c.send(RawHttpClient::buildRequest("POST", "/backend-api/codex/responses", headers, {}));
            const QByteArray piece(64 * 1024, 'y');
            for (int i = 0; i < 32 && c.isConnected() && !c.parser().hasComplete(); ++i) {
                c.send(QByteArray::number(piece.size(), 16) + "\r\n" + piece + "\r\n");
                QTest::qWait(5);
            }
            if (c.isConnected())
                c.send("0\r\n\r\n");
            const std::optional<RawResponse> r = c.readResponse(10000);
            QVERIFY2(r.has_value(), "no response to an oversized chunked body");
            QCOMPARE(r->status, 413);
            QVERIFY(r->json().value(QLatin1String("error")).isObject());
        }
        verifyJsonError(httpRequest("GET", proxyUrl(QStringLiteral("/v2/nothing/here"))), 404);
        verifyJsonError(httpRequest("POST", proxyUrl(QStringLiteral("/backend-api/codex/nothing")), kJson, "{}"), 404);
        verifyJsonError(httpRequest("GET", proxyUrl(QStringLiteral("/v1/responses"))), 405);
        verifyJsonError(httpRequest("POST", proxyUrl(QStringLiteral("/v1/chat/completions")), kJson,
                                    compact({{QStringLiteral("model"), QStringLiteral("gpt-5")},
                                             {QStringLiteral("messages"), QJsonArray()}})),
                        400, QStringLiteral("invalid_request_error"));
        verifyJsonError(httpRequest("POST", proxyUrl(QStringLiteral("/v1/chat/completions")), kJson,
                                    compact({{QStringLiteral("model"), QStringLiteral("gpt-5")}})),
                        400, QStringLiteral("invalid_request_error"));

        QCOMPARE(m_fake.log().size(), 0);
        QCOMPARE(httpRequest("GET", proxyUrl(QStringLiteral("/health/live"))).status, 200);
        const SseResult ok = sseRequest("POST", proxyUrl(QStringLiteral("/v1/responses")), kSse,
                                        compact(v1Body(QStringLiteral("ECHO: still serving"), true)));
        QCOMPARE(ok.status, 200);
        QCOMPARE(responsesText(ok.events), QStringLiteral("still serving"));
    }

    // Issue 2.8 / DESIGN.md "Local API and ids": the request-log JSON, field for field.
    void requestLogJsonFollowsDesign()
    {
        const SseResult ok = sseRequest("POST", proxyUrl(QStringLiteral("/backend-api/codex/responses")),
                                        kSse + HttpHeaderList{{"session-id", "sess-json-shape"}},
                                        compact(codexBody(QStringLiteral("ECHO: shape"))));
        QCOMPARE(ok.status, 200);
        const QByteArray okId = ok.header("x-request-id");
        const HttpResult bad = httpRequest("POST", proxyUrl(QStringLiteral("/v1/responses")), kJson, "not json");
        QCOMPARE(bad.status, 400);
        const QByteArray badId = bad.header("x-request-id");
        QVERIFY2(badId.startsWith("req_"), "a rejected turn has a request id too");
        const QJsonObject seen = fakeEntry(okId);
        QVERIFY(!seen.isEmpty());

        const QJsonObject cliOk = m_proxy.waitForRequest(QString::fromLatin1(okId));
        const QJsonObject cliBad = m_proxy.waitForRequest(QString::fromLatin1(badId));
        QVERIFY(!cliOk.isEmpty());
        QVERIFY(!cliBad.isEmpty());
        // /api/requests prints exactly what `switchyard requests --json` prints.
        QCOMPARE(apiRow(okId, 50), cliOk);
        QCOMPARE(apiRow(badId, 50), cliBad);

        const QStringList keys{QStringLiteral("request_id"),    QStringLiteral("started_at"),
                               QStringLiteral("route"),         QStringLiteral("model"),
                               QStringLiteral("session_key"),   QStringLiteral("account_id"),
                               QStringLiteral("account_alias"), QStringLiteral("chatgpt_account_id"),
                               QStringLiteral("status"),        QStringLiteral("kill_stage"),
                               QStringLiteral("error_code"),    QStringLiteral("upstream_request_id"),
                               QStringLiteral("attempts"),      QStringLiteral("blocked_by"),
                               QStringLiteral("latency_ms"),    QStringLiteral("tokens")};
        const QRegularExpression iso(QStringLiteral("^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z$"));
        for (const QJsonObject &row : {cliOk, cliBad}) {
            QCOMPARE(sortedKeys(row), sorted(keys));
            QVERIFY2(iso.match(row.value(QLatin1String("started_at")).toString()).hasMatch(),
                     qPrintable(row.value(QLatin1String("started_at")).toString()));
            QCOMPARE(sortedKeys(row.value(QLatin1String("latency_ms")).toObject()),
                     sorted({QStringLiteral("queue"), QStringLiteral("connect"), QStringLiteral("first_event"),
                             QStringLiteral("total")}));
            QCOMPARE(sortedKeys(row.value(QLatin1String("tokens")).toObject()),
                     sorted({QStringLiteral("input"), QStringLiteral("cached"), QStringLiteral("output"),
                             QStringLiteral("reasoning"), QStringLiteral("total")}));
            QVERIFY(row.value(QLatin1String("attempts")).isArray());
            QVERIFY(row.value(QLatin1String("blocked_by")).isArray());
        }
        const qint64 startedMs =
            QDateTime::fromString(cliOk.value(QLatin1String("started_at")).toString(), Qt::ISODateWithMs)
                .toMSecsSinceEpoch();
        QVERIFY(qAbs(QDateTime::currentMSecsSinceEpoch() - startedMs) < 120000);

        // The completed turn.
        const FakeAccount *acct =
            m_proxy.accountByChatgptId(seen.value(QLatin1String("chatgpt_account_id")).toString());
        QVERIFY(acct);
        QCOMPARE(seen.value(QLatin1String("authorization")).toString(), acct->accessToken);
        QCOMPARE(cliOk.value(QLatin1String("request_id")).toString().toLatin1(), okId);
        QCOMPARE(cliOk.value(QLatin1String("route")).toString(), QStringLiteral("/backend-api/codex/responses"));
        QCOMPARE(cliOk.value(QLatin1String("model")).toString(), QStringLiteral("gpt-5-codex"));
        QCOMPARE(cliOk.value(QLatin1String("session_key")).toString(), QStringLiteral("sess-json-shape"));
        QCOMPARE(cliOk.value(QLatin1String("account_id")).toString(), acct->id);
        QCOMPARE(cliOk.value(QLatin1String("account_alias")).toString(), acct->alias);
        QCOMPARE(cliOk.value(QLatin1String("chatgpt_account_id")).toString(), acct->chatgptAccountId);
        QCOMPARE(cliOk.value(QLatin1String("status")).toString(), QStringLiteral("completed"));
        QVERIFY(cliOk.value(QLatin1String("kill_stage")).isNull());
        QVERIFY(cliOk.value(QLatin1String("error_code")).isNull());
        QCOMPARE(cliOk.value(QLatin1String("upstream_request_id")).toString(),
                 seen.value(QLatin1String("upstream_request_id")).toString());
        QVERIFY(cliOk.value(QLatin1String("upstream_request_id")).toString().startsWith(QLatin1String("up_")));
        const QJsonArray attempts = cliOk.value(QLatin1String("attempts")).toArray();
        QCOMPARE(attempts.size(), 1);
        const QJsonObject attempt = attempts.first().toObject();
        QCOMPARE(sortedKeys(attempt), sorted({QStringLiteral("account_id"), QStringLiteral("egress_proxy"),
                                              QStringLiteral("outcome"), QStringLiteral("elapsed_ms")}));
        QCOMPARE(attempt.value(QLatin1String("account_id")).toString(), acct->id);
        QVERIFY(attempt.value(QLatin1String("egress_proxy")).isNull());
        QCOMPARE(attempt.value(QLatin1String("outcome")).toString(), QStringLiteral("completed"));
        QVERIFY(attempt.value(QLatin1String("elapsed_ms")).isDouble());
        QVERIFY(attempt.value(QLatin1String("elapsed_ms")).toDouble() >= 0);
        QCOMPARE(cliOk.value(QLatin1String("blocked_by")).toArray().size(), 0);
        const QJsonObject latency = cliOk.value(QLatin1String("latency_ms")).toObject();
        for (const char *k : {"queue", "connect", "first_event", "total"}) {
            QVERIFY2(latency.value(QLatin1String(k)).isDouble(),
                     qPrintable(QStringLiteral("latency_ms.%1 of a completed turn is unknown: %2")
                                    .arg(QLatin1String(k), QString::fromUtf8(compact(cliOk)))));
            QVERIFY2(latency.value(QLatin1String(k)).toDouble() >= 0, k);
        }
        QVERIFY(latency.value(QLatin1String("total")).toDouble() >=
                latency.value(QLatin1String("first_event")).toDouble());
        const QJsonObject tokens = cliOk.value(QLatin1String("tokens")).toObject();
        for (const char *k : {"input", "cached", "output", "reasoning", "total"})
            QVERIFY2(tokens.value(QLatin1String(k)).isDouble(), k);
        QVERIFY(tokens.value(QLatin1String("input")).toInt() > 0);
        QCOMPARE(tokens.value(QLatin1String("total")).toInt(),
                 tokens.value(QLatin1String("input")).toInt() + tokens.value(QLatin1String("output")).toInt());

        // The rejected turn: nothing was chosen or measured, so those are null, not 0.
        QCOMPARE(cliBad.value(QLatin1String("status")).toString(), QStringLiteral("rejected"));
        QCOMPARE(cliBad.value(QLatin1String("route")).toString(), QStringLiteral("/v1/responses"));
        QCOMPARE(cliBad.value(QLatin1String("error_code")).toString(), QStringLiteral("invalid_json"));
        for (const char *k : {"model", "session_key", "account_id", "account_alias", "chatgpt_account_id", "kill_stage",
                              "upstream_request_id"})
            QVERIFY2(cliBad.value(QLatin1String(k)).isNull(), k);
        QCOMPARE(cliBad.value(QLatin1String("attempts")).toArray().size(), 0);
        const QJsonObject badTokens = cliBad.value(QLatin1String("tokens")).toObject();
        for (const char *k : {"input", "cached", "output", "reasoning", "total"})
            QVERIFY2(badTokens.value(QLatin1String(k)).isNull(), k);
        const QJsonObject badLatency = cliBad.value(QLatin1String("latency_ms")).toObject();
        QVERIFY(badLatency.value(QLatin1String("connect")).isNull());
        QVERIFY(badLatency.value(QLatin1String("first_event")).isNull());
    }

    // Issue 2.8: rate-limit headers / codex.rate_limits update the booked account's 5 h and weekly windows.
    void usageCaptureUpdatesAccountWindows()
    {
        const QList<FakeAccount> accounts = m_proxy.accounts();
        for (int i = 0; i < accounts.size(); ++i) {
            QVERIFY(m_fake.setUsage(accounts.at(i).chatgptAccountId,
                                    {{QStringLiteral("primary_used_percent"), 41.5 + i},
                                     {QStringLiteral("secondary_used_percent"), 63.25 + i},
                                     {QStringLiteral("primary_reset_after_seconds"), 1800 + 60 * i},
                                     {QStringLiteral("secondary_reset_after_seconds"), 200000 + 1000 * i}}));
        }
        const qint64 before = QDateTime::currentSecsSinceEpoch();
        const SseResult r = sseRequest("POST", proxyUrl(QStringLiteral("/backend-api/codex/responses")), kSse,
                                       compact(codexBody(QStringLiteral("ECHO: usage"))));
        const qint64 after = QDateTime::currentSecsSinceEpoch();
        QCOMPARE(r.status, 200);
        QCOMPARE(r.eventTypes().constLast(), QByteArrayLiteral("response.completed"));
        const QJsonObject seen = fakeEntry(r.header("x-request-id"));
        const QString cgpt = seen.value(QLatin1String("chatgpt_account_id")).toString();
        int index = -1;
        for (int i = 0; i < accounts.size(); ++i) {
            if (accounts.at(i).chatgptAccountId == cgpt)
                index = i;
        }
        QVERIFY(index >= 0);
        const QString accountId = accounts.at(index).id;
        QVERIFY(!m_proxy.waitForRequest(QString::fromLatin1(r.header("x-request-id"))).isEmpty());

        auto checkWindow = [&](const QJsonObject &w, double percent, int minutes, qint64 resetAfter) {
            if (w.value(QLatin1String("used_percent")).toDouble() != percent)
                return QStringLiteral("used_percent %1, expected %2")
                    .arg(w.value(QLatin1String("used_percent")).toDouble())
                    .arg(percent);
            if (w.value(QLatin1String("window_minutes")).toInt() != minutes)
                return QStringLiteral("window_minutes %1, expected %2")
                    .arg(w.value(QLatin1String("window_minutes")).toInt())
                    .arg(minutes);
            const QString text = w.value(QLatin1String("resets_at")).toString();
            if (!text.endsWith(QLatin1Char('Z')))
                return QStringLiteral("resets_at '%1' is not ISO 8601 UTC").arg(text);
            const qint64 at = QDateTime::fromString(text, Qt::ISODateWithMs).toSecsSinceEpoch();
            if (at < before + resetAfter - 1 || at > after + resetAfter + 1)
                return QStringLiteral("resets_at %1 not within [%2, %3]")
                    .arg(text, QDateTime::fromSecsSinceEpoch(before + resetAfter, Qt::UTC).toString(Qt::ISODate),
                         QDateTime::fromSecsSinceEpoch(after + resetAfter, Qt::UTC).toString(Qt::ISODate));
            return QString();
        };
        auto checkAccount = [&](const QJsonArray &list) {
            for (const QJsonValue &v : list) {
                const QJsonObject a = v.toObject();
                if (a.value(QLatin1String("account_id")).toString() != accountId)
                    continue;
                if (a.value(QLatin1String("account_alias")).toString() != accounts.at(index).alias)
                    return QStringLiteral("account_alias mismatch");
                QString problem = checkWindow(a.value(QLatin1String("primary_window")).toObject(), 41.5 + index, 300,
                                              1800 + 60 * index);
                if (!problem.isEmpty())
                    return QString(QStringLiteral("primary: ") + problem);
                problem = checkWindow(a.value(QLatin1String("secondary_window")).toObject(), 63.25 + index, 10080,
                                      200000 + 1000 * index);
                if (!problem.isEmpty())
                    return QString(QStringLiteral("secondary: ") + problem);
                return QString();
            }
            return QStringLiteral("account %1 missing").arg(accountId);
        };
        // The usage write is asynchronous: allow it a moment, then insist.
        QString usageProblem;
        QString listProblem;
        (void)QTest::qWaitFor(
            [&] {
                usageProblem =
                    checkAccount(m_proxy.cli({QStringLiteral("usage"), QStringLiteral("--json")}).json().array());
                return usageProblem.isEmpty();
            },
            5000);
        QVERIFY2(usageProblem.isEmpty(), qPrintable(usageProblem));
        listProblem = checkAccount(
            m_proxy.cli({QStringLiteral("accounts"), QStringLiteral("list"), QStringLiteral("--json")}).json().array());
        QVERIFY2(listProblem.isEmpty(), qPrintable(listProblem));
    }
};

QTEST_GUILESS_MAIN(TestProxyStreaming)
#include "tst_proxy_streaming.moc"
