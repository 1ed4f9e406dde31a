// SWITCHYARD_NEEDS_KEYRING: accounts are imported into a real gnome-keyring.
//
// /api/status "turn_stages" (api/TurnStages.h) of `switchyard serve`, checked against what the client and the
// fake upstream saw (issue 8: every figure the proxy reports about itself can be recomputed): one turn adds one
// value to each of its stages; the upstream's scripted pauses land in no stage of the proxy's own; and the
// proxy's added time plus the upstream's cannot exceed the client's whole request (the proxy's interval lies
// inside the client's). Bucket bounds make every comparison exact.
#include "lib/CodexRequests.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/HttpTestClient.h"
#include "lib/ProxyProcess.h"
#include "lib/RawHttpClient.h"
#include "lib/TestFiles.h"
#include "util/LatencyHistogram.h"

#include <QElapsedTimer>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

using namespace sy;
using namespace sy::test;

namespace {

const HttpHeaderList kSse{
    {"content-type", "application/json"}, {"accept", "text/event-stream"}, {"authorization", "Bearer client-key"}};

QByteArray chatBody(const QString &text)
{
    const QJsonObject body{
        {QStringLiteral("model"), QStringLiteral("gpt-5")},
        {QStringLiteral("messages"),
         QJsonArray{QJsonObject{{QStringLiteral("role"), QStringLiteral("user")}, {QStringLiteral("content"), text}}}},
        {QStringLiteral("stream"), false}};
    return QJsonDocument(body).toJson(QJsonDocument::Compact);
}

// A JSON request's headers, with a session key when `sessionKey` is not empty.
HttpHeaderList jsonHeaders(const QByteArray &sessionKey = {})
{
    HttpHeaderList h{{QByteArrayLiteral("content-type"), QByteArrayLiteral("application/json")},
                     {QByteArrayLiteral("authorization"), QByteArrayLiteral("Bearer k")}};
    if (!sessionKey.isEmpty())
        h.append({QByteArrayLiteral("session-id"), sessionKey});
    return h;
}

// A stage's lower and upper bound for the one value a turn added to it: [lower, upper) of its bucket.
using Bounds = QPair<qint64, qint64>;

} // namespace

class TestTurnStagesProxy : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    ProxyProcess m_proxy;

    QJsonObject status() { return httpRequest("GET", QUrl(m_proxy.url(QStringLiteral("/api/status")))).json(); }

    QJsonObject turnStages() { return status().value(QLatin1String("turn_stages")).toObject(); }

    QJsonObject stages()
    {
        return status().value(QLatin1String("turn_stages")).toObject().value(QLatin1String("stages")).toObject();
    }

    bool scriptAll(const QString &action)
    {
        for (const FakeAccount &a : m_proxy.accounts()) {
            if (!m_fake.script(a.chatgptAccountId, {action}, true))
                return false;
        }
        return true;
    }

    // What one turn added to each named stage between two /api/status readings: {-1, -1} when a histogram
    // cannot be read, {-2, n} when the stage got n values instead of one.
    static QHash<QByteArray, Bounds> addedByOneTurn(const QJsonObject &before, const QJsonObject &after,
                                                    std::initializer_list<const char *> names)
    {
        QHash<QByteArray, Bounds> got;
        for (const char *name : names) {
            LatencyHistogram a, b;
            const QLatin1String key(name);
            if (!LatencyHistogram::fromBucketsJson(
                    after.value(key).toObject().value(QLatin1String("buckets")).toArray(), &a) ||
                !LatencyHistogram::fromBucketsJson(
                    before.value(key).toObject().value(QLatin1String("buckets")).toArray(), &b)) {
                got.insert(name, {-1, -1});
                continue;
            }
            const LatencyHistogram d = a.since(b);
            if (d.count() != 1) {
                got.insert(name, {-2, qint64(d.count())});
                continue;
            }
            const int bucket = LatencyHistogram::bucketOf(d.maxUs());
            got.insert(name, {LatencyHistogram::lowerBoundOf(bucket), LatencyHistogram::upperBoundOf(bucket)});
        }
        return got;
    }

    static qint64 count(const QJsonObject &stages, const char *name)
    {
        return stages.value(QLatin1String(name)).toObject().value(QLatin1String("count")).toInteger(-1);
    }

private slots:
    void initTestCase()
    {
        QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString()));
        QVERIFY2(m_proxy.addAccounts(2), qPrintable(m_proxy.errorString()));
        // The longest busy-polling window (100 ms, not 1 ms): a hold's window runs from its latest acquire(), so a
        // proxy thread kept off the CPU for longer than the window (ctest -j2 on two loaded cores) blocks without a
        // poll, and the first test's check that this turn polled failed 9 times in 40 runs beside two busy loops.
        m_proxy.setEnv(QStringLiteral("SWITCHYARD_BUSY_POLL_US"), QStringLiteral("100000"));
        QVERIFY2(m_proxy.start(m_fake.baseUrl()), qPrintable(m_proxy.errorString()));
    }

    void init() { QVERIFY(m_fake.reset()); }

    void cleanupTestCase() { m_proxy.stop(); }

    // A streamed turn: the upstream's scripted 300 ms before its head is all in upstream_head, none in the
    // proxy's added_before_first_byte; busy polling polled for it and released its hold.
    void aStreamedTurnsStagesFitInsideWhatTheClientSaw()
    {
        const auto busyPoll = [this] { return status().value(QLatin1String("busy_poll")).toObject(); };
        const qint64 pollsBefore = busyPoll().value(QLatin1String("polls")).toInteger();
        const qint64 holdsBefore = busyPoll().value(QLatin1String("holds_taken")).toInteger(-1);
        QVERIFY(holdsBefore >= 0);
        const QJsonObject before = stages();
        QVERIFY(scriptAll(QStringLiteral("delay_first:300")));
        RawHttpClient c;
        QVERIFY(c.connectTo(m_proxy.port()));
        const QByteArray request = RawHttpClient::buildRequest("POST", "/backend-api/codex/responses", kSse,
                                                               codexBody(QStringLiteral("ECHO: stage by stage")));
        QElapsedTimer client;
        client.start();
        c.send(request);
        QVERIFY(c.waitForBody(1, 10000));
        const qint64 clientUs = client.nsecsElapsed() / 1000; // the client's time to its first body byte
        QVERIFY(c.waitForBodyContaining("response.completed", 10000));
        QVERIFY2(c.partial().statusLine.contains(" 200 "), c.partial().statusLine.constData());
        const QJsonObject after = stages();

        const QHash<QByteArray, Bounds> got =
            addedByOneTurn(before, after,
                           {"request_read", "request_to_claim", "claim", "claim_wait", "claim_statements",
                            "claim_commit_and_back", "claim_to_sent", "upstream_head", "head_handling",
                            "event_to_first_byte", "added_before_first_byte", "settle"});
        for (auto it = got.cbegin(); it != got.cend(); ++it)
            QVERIFY2(it.value().first >= 0,
                     qPrintable(QStringLiteral("%1: %2 values").arg(QLatin1String(it.key())).arg(it.value().second)));
        QCOMPARE(count(after, "added_before_answer"), count(before, "added_before_answer")); // not a non-stream turn
        // The upstream waited 300 ms before its head (a Qt coarse timer: it may fire up to 5 % early; 10 % here): all
        // of it in upstream_head, none in the proxy's own time.
        QVERIFY2(got.value("upstream_head").second > 270000,
                 qPrintable(QString::number(got.value("upstream_head").second)));
        QVERIFY2(got.value("added_before_first_byte").first < 270000,
                 qPrintable(QString::number(got.value("added_before_first_byte").first)));
        QVERIFY2(got.value("added_before_first_byte").first + got.value("upstream_head").first <= clientUs,
                 qPrintable(QStringLiteral("%1 + %2 > %3 us")
                                .arg(got.value("added_before_first_byte").first)
                                .arg(got.value("upstream_head").first)
                                .arg(clientUs)));
        // Sums by construction (the parts come from the same marks): they guard the arithmetic, not attribution.
        const auto lowerSum = [&](std::initializer_list<const char *> parts) {
            qint64 sum = 0;
            for (const char *p : parts)
                sum += got.value(p).first;
            return sum;
        };
        QVERIFY(lowerSum({"claim_wait", "claim_statements", "claim_commit_and_back"}) < got.value("claim").second);
        QVERIFY(lowerSum({"request_read", "request_to_claim", "claim", "claim_to_sent", "head_handling",
                          "event_to_first_byte"}) < got.value("added_before_first_byte").second);
        // `switchyard status` sums it up in one line, with the count of clean streamed turns /api/status has.
        const CliResult text = m_proxy.cli({QStringLiteral("status")});
        QCOMPARE(text.exitCode, 0);
        QVERIFY2(text.out.contains(QStringLiteral("proxy time before the first byte over %1 clean streamed turn(s)")
                                       .arg(count(after, "added_before_first_byte"))
                                       .toUtf8()),
                 text.out.constData());
        if (count(after, "added_before_answer") == 0) // no non-streaming turn yet (this test runs first)
            QVERIFY2(!text.out.contains("non-streaming answer"), text.out.constData());
        // Busy polling (util/BusyPoll.h): this turn took a hold, the proxy thread polled while the turn waited for
        // its claim and its upstream, and no hold outlives the turn that took it.
        QVERIFY(busyPoll().value(QLatin1String("holds_taken")).toInteger() > holdsBefore);
        QVERIFY(busyPoll().value(QLatin1String("polls")).toInteger() > pollsBefore);
        QTRY_COMPARE(busyPoll().value(QLatin1String("holds")).toInt(-1), 0);
    }

    // A non-streaming chat turn: its answer comes once the upstream's stream is over and the turn is settled.
    // The upstream paused 300 ms before its first event and 100 ms before each of the others: none of that is in
    // the proxy's added_before_answer, which measures from the terminal event on (red when the mark is the first
    // event's: terminal_to_settle would hold the stream). Its parts sum to it, and with the upstream's stream it
    // fits inside the client's wait.
    void aNonStreamingTurnsStagesFitInsideItsAnswer()
    {
        const QJsonObject before = stages();
        QVERIFY(scriptAll(QStringLiteral("delay_first:300+slow:100")));
        QElapsedTimer client;
        client.start();
        const HttpResult r = httpRequest("POST", QUrl(m_proxy.url(QStringLiteral("/v1/chat/completions"))),
                                         jsonHeaders(), chatBody(QStringLiteral("ECHO: one two three")));
        const qint64 clientUs = client.nsecsElapsed() / 1000; // the client's whole wait: its first byte is the answer
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value(QLatin1String("object")).toString(), QStringLiteral("chat.completion"));
        const QJsonObject after = stages();

        const QHash<QByteArray, Bounds> got =
            addedByOneTurn(before, after,
                           {"request_read", "request_to_claim", "claim", "claim_to_sent", "upstream_head",
                            "terminal_to_settle", "settle", "settled_to_answer", "added_before_answer"});
        for (auto it = got.cbegin(); it != got.cend(); ++it)
            QVERIFY2(it.value().first >= 0,
                     qPrintable(QStringLiteral("%1: %2 values").arg(QLatin1String(it.key())).arg(it.value().second)));
        QCOMPARE(count(after, "added_before_first_byte"), count(before, "added_before_first_byte")); // streamed only
        // The upstream's pauses: 300 ms before the first event, 100 ms before each of at least three more.
        QVERIFY2(got.value("terminal_to_settle").first < 90000,
                 qPrintable(QString::number(got.value("terminal_to_settle").first)));
        QVERIFY2(got.value("added_before_answer").first < 270000,
                 qPrintable(QString::number(got.value("added_before_answer").first)));
        QVERIFY2(got.value("added_before_answer").first + 270000 + 3 * 90000 <= clientUs,
                 qPrintable(QStringLiteral("%1 + the upstream's pauses > %2 us")
                                .arg(got.value("added_before_answer").first)
                                .arg(clientUs)));
        qint64 lower = 0;
        for (const char *p : {"request_read", "request_to_claim", "claim", "claim_to_sent", "terminal_to_settle",
                              "settle", "settled_to_answer"})
            lower += got.value(p).first;
        QVERIFY(lower < got.value("added_before_answer").second);
        // `switchyard status` has a line for them, with the count /api/status has.
        const CliResult text = m_proxy.cli({QStringLiteral("status")});
        QCOMPARE(text.exitCode, 0);
        QVERIFY2(text.out.contains(QStringLiteral("proxy time before a non-streaming answer over %1 clean turn(s)")
                                       .arg(count(after, "added_before_answer"))
                                       .toUtf8()),
                 text.out.constData());
    }

    // Routing reads no body: a chat turn with a session key in its headers claims its slot before its body is
    // parsed and translated, which the store thread's claim overlaps (prepared_while_claiming; red when the claim
    // waits for the translation); without a key the body (whose prompt_cache_key may be the key) goes first. The
    // translated request is what reaches the upstream either way. A body the translation refuses gets its 400,
    // and the claim sent ahead of it is settled and released exactly once.
    void aChatTurnWithASessionKeyClaimsWhileItsBodyIsTranslated()
    {
        const auto whileClaiming = [](const QJsonObject &t) {
            return t.value(QLatin1String("prepared_while_claiming")).toInteger(-1);
        };
        const auto prepared = [](const QJsonObject &t) {
            return count(t.value(QLatin1String("stages")).toObject(), "body_prepare");
        };
        const QUrl url(m_proxy.url(QStringLiteral("/v1/chat/completions")));
        const HttpHeaderList plain = jsonHeaders();
        const HttpHeaderList keyed = jsonHeaders("stages-chat-session");

        QJsonObject before = turnStages();
        HttpResult r = httpRequest("POST", url, keyed, chatBody(QStringLiteral("ECHO: claimed early")));
        QCOMPARE(r.status, 200);
        QVERIFY2(r.body.contains("claimed early"), r.body.constData());
        QJsonObject after = turnStages();
        QCOMPARE(prepared(after), prepared(before) + 1);
        QCOMPARE(whileClaiming(after), whileClaiming(before) + 1);
        // What went upstream is the translation, not the chat body.
        QJsonArray log = m_fake.log();
        QCOMPARE(log.size(), 1);
        const QJsonObject sent = log.first().toObject().value(QLatin1String("body")).toObject();
        QVERIFY(sent.value(QLatin1String("input")).isArray());
        QVERIFY(!sent.contains(QLatin1String("messages")));

        before = after;
        r = httpRequest("POST", url, plain, chatBody(QStringLiteral("ECHO: parsed first")));
        QCOMPARE(r.status, 200);
        after = turnStages();
        QCOMPARE(prepared(after), prepared(before) + 1);
        QCOMPARE(whileClaiming(after), whileClaiming(before));

        // Refused by the translation after its claim went out: a 400, no upstream request, and its one claim
        // released with one settlement.
        r = httpRequest("POST", url, keyed, QByteArrayLiteral(R"({"model":"gpt-5","messages":[{"role":"oracle"}]})"));
        QCOMPARE(r.status, 400);
        QCOMPARE(r.json().value(QLatin1String("error")).toObject().value(QLatin1String("code")).toString(),
                 QStringLiteral("invalid_request"));
        const QString requestId = QString::fromLatin1(r.header("x-request-id"));
        QVERIFY(!requestId.isEmpty());
        QCOMPARE(m_fake.log(true).size(), 2);
        QCOMPARE(whileClaiming(turnStages()), whileClaiming(after) + 1);
        const QJsonObject row = m_proxy.waitForRequest(requestId);
        QCOMPARE(row.value(QLatin1String("status")).toString(), QStringLiteral("rejected"));
        QString error;
        const QStringList claims = readSqliteColumn(
            m_proxy.dataDir() + QStringLiteral("/switchyard.sqlite"),
            QStringLiteral("SELECT (released_at_ms IS NOT NULL) || ':' || settlements FROM slot_claims "
                           "WHERE request_id = '%1'")
                .arg(requestId),
            &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(claims, QStringList{QStringLiteral("1:1")});
        const auto inFlight = [this] {
            int held = 0;
            for (const QJsonValue &a : status().value(QLatin1String("accounts")).toArray())
                held += a.toObject().value(QLatin1String("in_flight")).toInt(-100);
            return held;
        };
        QTRY_COMPARE(inFlight(), 0);
    }

    // Above 1 MiB the Codex rules stay Codex's. A keyed chat body is not sent early untranslated nor handed to the
    // scan thread (red when Turn::start() sends and scans it as a Codex body: one more early send and a scan);
    // its translation goes early instead, as any body since session 39. A keyed /v1/responses continuation is
    // searched whatever its size, so it claims once its owner is known, not before its parse (red when its
    // claim goes out first: prepared_while_claiming moves), and is served by its owner.
    void largeKeyedBodiesKeepTheirOwnRoutes()
    {
        const auto figure = [](const QJsonObject &t, const char *name) {
            return t.value(QLatin1String(name)).toInteger(-1);
        };
        const QString padding(1536 * 1024, QLatin1Char('x'));

        QJsonObject before = turnStages();
        HttpResult r = httpRequest("POST", QUrl(m_proxy.url(QStringLiteral("/v1/chat/completions"))),
                                   jsonHeaders("large-chat"), chatBody(QStringLiteral("large chat ") + padding));
        QVERIFY2(r.status == 200, r.body.left(400).constData());
        QJsonObject after = turnStages();
        QCOMPARE(figure(after, "scans_elsewhere"), figure(before, "scans_elsewhere"));
        QCOMPARE(figure(after, "early_sends"), figure(before, "early_sends") + 1);
        QCOMPARE(figure(after, "prepared_while_claiming"), figure(before, "prepared_while_claiming") + 1);
        QJsonArray log = m_fake.log();
        QCOMPARE(log.size(), 1);
        QVERIFY(log.first().toObject().value(QLatin1String("body")).toObject().value(QLatin1String("input")).isArray());

        const QUrl responses(m_proxy.url(QStringLiteral("/v1/responses")));
        const auto v1Body = [](const QString &input, const QString &previous) {
            QJsonObject body{{QStringLiteral("model"), QStringLiteral("gpt-5")}, {QStringLiteral("input"), input}};
            if (!previous.isEmpty())
                body.insert(QStringLiteral("previous_response_id"), previous);
            return QJsonDocument(body).toJson(QJsonDocument::Compact);
        };
        r = httpRequest("POST", responses, jsonHeaders("responses-first"), v1Body(QStringLiteral("ECHO: first"), {}));
        QVERIFY2(r.status == 200, r.body.left(400).constData());
        const QByteArray owner = r.header("x-switchyard-account");
        const QString anchor = r.json().value(QLatin1String("id")).toString();
        QVERIFY(!owner.isEmpty());
        QVERIFY(anchor.startsWith(QLatin1String("resp_")));
        before = turnStages();
        // An anchor belongs to its session: the continuation comes under the same key.
        r = httpRequest("POST", responses, jsonHeaders("responses-first"),
                        v1Body(QStringLiteral("continued ") + padding, anchor));
        QVERIFY2(r.status == 200, r.body.left(400).constData());
        QCOMPARE(r.header("x-switchyard-account"), owner);
        after = turnStages();
        QCOMPARE(figure(after, "prepared_while_claiming"), figure(before, "prepared_while_claiming"));
        QCOMPARE(count(after.value(QLatin1String("stages")).toObject(), "body_prepare"),
                 count(before.value(QLatin1String("stages")).toObject(), "body_prepare") + 1);
    }
};

QTEST_GUILESS_MAIN(TestTurnStagesProxy)
#include "tst_turn_stages_proxy.moc"
