// SWITCHYARD_NEEDS_KEYRING: accounts are imported into a real gnome-keyring.
#include "lib/FakeUpstreamProcess.h"
#include "lib/HttpTestClient.h"
#include "lib/ProxyProcess.h"
#include "lib/TestFiles.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

using namespace sy;
using namespace sy::test;

class TestProxyRoutes : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    ProxyProcess m_proxy;

    QByteArray body(const QJsonObject &o) { return QJsonDocument(o).toJson(QJsonDocument::Compact); }

private slots:
    void initTestCase()
    {
        QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString()));
        QVERIFY2(m_proxy.addAccounts(2), qPrintable(m_proxy.errorString()));
        QVERIFY2(m_proxy.start(m_fake.baseUrl()), qPrintable(m_proxy.errorString()));
    }

    void healthLive()
    {
        const HttpResult r = httpRequest("GET", QUrl(m_proxy.url(QStringLiteral("/health/live"))));
        QCOMPARE(r.status, 200);
        QCOMPARE(r.json().value(QLatin1String("status")).toString(), QStringLiteral("ok"));
    }

    void codexStreamPassesVendorEventsAndBooksTheAccount()
    {
        const QJsonObject req{{QStringLiteral("model"), QStringLiteral("gpt-5-codex")},
                              {QStringLiteral("stream"), true},
                              {QStringLiteral("store"), false},
                              {QStringLiteral("input"),
                               QJsonArray{QJsonObject{{QStringLiteral("type"), QStringLiteral("message")},
                                                      {QStringLiteral("role"), QStringLiteral("user")},
                                                      {QStringLiteral("content"),
                                                       QJsonArray{QJsonObject{{QStringLiteral("type"), QStringLiteral("input_text")},
                                                                              {QStringLiteral("text"), QStringLiteral("ECHO: hi codex")}}}}}}}};
        const SseResult r = sseRequest("POST", QUrl(m_proxy.url(QStringLiteral("/backend-api/codex/responses"))),
                                       {{"content-type", "application/json"}, {"authorization", "Bearer client-key"}},
                                       body(req));
        QCOMPARE(r.status, 200);
        QVERIFY(r.eventTypes().contains(QByteArrayLiteral("codex.rate_limits")));
        QCOMPARE(r.eventTypes().constLast(), QByteArrayLiteral("response.completed"));
        const QByteArray requestId = r.header("x-request-id");
        QVERIFY(requestId.startsWith("req_"));
        QVERIFY(!r.header("x-switchyard-account").isEmpty());
        // The upstream's quota headers reach the client as they came.
        for (const char *name :
             {"x-codex-primary-used-percent", "x-codex-secondary-reset-at", "x-codex-credits-has-credits"})
            QVERIFY2(!r.header(name).isEmpty(), name);

        // The upstream saw our request id and the booked account's credentials, never the client's.
        const QJsonArray log = m_fake.log();
        const QJsonObject seen = log.last().toObject();
        QCOMPARE(seen.value(QLatin1String("x_request_id")).toString().toLatin1(), requestId);
        QVERIFY(seen.value(QLatin1String("authorization")).toString() != QLatin1String("client-key"));
        const QJsonObject row = m_proxy.waitForRequest(QString::fromLatin1(requestId));
        QCOMPARE(row.value(QLatin1String("status")).toString(), QStringLiteral("completed"));
        QCOMPARE(row.value(QLatin1String("chatgpt_account_id")).toString(),
                 seen.value(QLatin1String("chatgpt_account_id")).toString());
        const FakeAccount *acct = m_proxy.accountByChatgptId(seen.value(QLatin1String("chatgpt_account_id")).toString());
        QVERIFY(acct);
        QCOMPARE(seen.value(QLatin1String("authorization")).toString(), acct->accessToken);
        QCOMPARE(r.header("x-switchyard-account"), acct->alias.toUtf8());
        QVERIFY(row.value(QLatin1String("tokens")).toObject().value(QLatin1String("total")).toInt() > 0);
    }

    // A turn builds its upstream request (URL, headers, the head) while its slot claim is on its way
    // (Turn::prepareDispatch), and adds only the access token at the dispatch. Whatever the route, and whether
    // the claim went out before the body's scan (a Codex turn with a session header) or after it, the upstream
    // gets the same request as one built at the dispatch: the booked account's token once, its account id, our
    // request id, the forwarded session header, the body as sent. The body is also sent then, all but its last
    // byte, which the dispatch sends (Turn::sendEarly); one above 1 MiB with a session header even before its
    // scan. Red with SWITCHYARD_PREPARE_DISPATCH=0 or SWITCHYARD_EARLY_SEND=0 (the counts), or with a tail lost or
    // sent twice (the body). (SWITCHYARD_EARLY_SEND_MIN_BYTES=262144, as before session 39, sends only the large
    // ones early: the small rows' counts go red then.)
    void upstreamRequestsAreBuiltWhileTheirClaimIsOnItsWay_data()
    {
        QTest::addColumn<QString>("path");
        QTest::addColumn<bool>("sessionHeader");
        QTest::addColumn<bool>("stream");
        QTest::addColumn<int>("padding");
        const QString codex = QStringLiteral("/backend-api/codex/responses");
        const QString v1 = QStringLiteral("/v1/responses");
        QTest::newRow("codex, session header (claim before the scan)") << codex << true << true << 0;
        QTest::newRow("codex, no session header") << codex << false << true << 0;
        QTest::newRow("v1 responses, stream") << v1 << true << true << 0;
        QTest::newRow("v1 responses, JSON") << v1 << false << false << 0;
        QTest::newRow("codex, session header, 300 KiB (sent early)") << codex << true << true << 300 * 1024;
        QTest::newRow("codex, session header, 1.5 MiB (sent while scanned)") << codex << true << true << 1536 * 1024;
        QTest::newRow("codex, no session header, 300 KiB (sent early)") << codex << false << true << 300 * 1024;
        QTest::newRow("v1 responses, JSON, 300 KiB (sent early)") << v1 << false << false << 300 * 1024;
    }

    void upstreamRequestsAreBuiltWhileTheirClaimIsOnItsWay()
    {
        QFETCH(QString, path);
        QFETCH(bool, sessionHeader);
        QFETCH(bool, stream);
        QFETCH(int, padding);
        const auto dispatches = [this] {
            const HttpResult st = httpRequest("GET", QUrl(m_proxy.url(QStringLiteral("/api/status"))));
            const QJsonObject stages = st.json().value(QLatin1String("turn_stages")).toObject();
            QList<qint64> counts;
            for (const char *name : {"dispatches", "dispatches_prepared", "dispatches_sent_early", "early_sends"})
                counts.append(stages.value(QLatin1String(name)).toInteger(-1));
            return counts;
        };
        const QList<qint64> before = dispatches();
        for (qint64 count : before)
            QVERIFY(count >= 0);

        const QByteArray session = "sess-prepared-" + QByteArray::number(QDateTime::currentMSecsSinceEpoch());
        QJsonArray input{
            QJsonObject{{QStringLiteral("type"), QStringLiteral("message")},
                        {QStringLiteral("role"), QStringLiteral("user")},
                        {QStringLiteral("content"),
                         QJsonArray{QJsonObject{{QStringLiteral("type"), QStringLiteral("input_text")},
                                                {QStringLiteral("text"), QStringLiteral("ECHO: built ahead")}}}}}};
        if (padding > 0) // earlier history, as Codex sends it
            input.prepend(
                QJsonObject{{QStringLiteral("type"), QStringLiteral("message")},
                            {QStringLiteral("role"), QStringLiteral("developer")},
                            {QStringLiteral("content"),
                             QJsonArray{QJsonObject{{QStringLiteral("type"), QStringLiteral("input_text")},
                                                    {QStringLiteral("text"), QString(padding, QLatin1Char('h'))}}}}});
        const QJsonObject req{{QStringLiteral("model"), QStringLiteral("gpt-5-codex")},
                              {QStringLiteral("stream"), stream},
                              {QStringLiteral("store"), false},
                              {QStringLiteral("input"), input}};
        HttpHeaderList headers{{"content-type", "application/json"}, {"authorization", "Bearer client-key"}};
        if (sessionHeader)
            headers.append({"session-id", session});
        QByteArray requestId;
        if (stream) {
            const SseResult r = sseRequest("POST", QUrl(m_proxy.url(path)), headers, body(req));
            QCOMPARE(r.status, 200);
            QCOMPARE(r.eventTypes().constLast(), QByteArrayLiteral("response.completed"));
            requestId = r.header("x-request-id");
        } else {
            const HttpResult r = httpRequest("POST", QUrl(m_proxy.url(path)), headers, body(req));
            QCOMPARE(r.status, 200);
            QCOMPARE(r.json().value(QLatin1String("status")).toString(), QStringLiteral("completed"));
            requestId = r.header("x-request-id");
        }
        QVERIFY(requestId.startsWith("req_"));
        const QList<qint64> after = dispatches();
        QCOMPARE(after[0] - before[0], 1);
        QCOMPARE(after[1] - before[1], 1); // 0 with SWITCHYARD_PREPARE_DISPATCH=0
        QCOMPARE(after[2] - before[2], 1); // 0 with SWITCHYARD_EARLY_SEND=0
        QCOMPARE(after[3] - before[3], 1);

        const QJsonObject seen = m_fake.log().last().toObject();
        QCOMPARE(seen.value(QLatin1String("x_request_id")).toString().toLatin1(), requestId);
        const FakeAccount *acct =
            m_proxy.accountByChatgptId(seen.value(QLatin1String("chatgpt_account_id")).toString());
        QVERIFY(acct);
        QCOMPARE(seen.value(QLatin1String("authorization")).toString(), acct->accessToken);
        const QJsonObject upstreamHeaders = seen.value(QLatin1String("headers")).toObject();
        // Each header once (the fake joins repeated ones with ", "): the token added at the dispatch included.
        for (const char *name : {"authorization", "chatgpt-account-id", "x-request-id", "content-length", "host"}) {
            const QString value = upstreamHeaders.value(QLatin1String(name)).toString();
            QVERIFY2(!value.isEmpty() && !value.contains(QLatin1String(", ")), qPrintable(name + (": " + value)));
        }
        QCOMPARE(upstreamHeaders.value(QLatin1String("accept")).toString(), QStringLiteral("text/event-stream"));
        QCOMPARE(seen.value(QLatin1String("session_id")).toString().toLatin1(), sessionHeader ? session : QByteArray());
        QCOMPARE(seen.value(QLatin1String("body")).toObject().value(QLatin1String("input")),
                 req.value(QLatin1String("input")));
        QCOMPARE(upstreamHeaders.value(QLatin1String("content-length")).toString().toLongLong(),
                 seen.value(QLatin1String("body_size")).toInteger());
        QCOMPARE(m_proxy.waitForRequest(QString::fromLatin1(requestId)).value(QLatin1String("status")).toString(),
                 QStringLiteral("completed"));
    }

    // A chat completion's client sees a chatcmpl- id of the proxy's own, never the upstream's response id, and its
    // request goes with store:false: nothing can continue it, so its settlement writes no response anchor (red
    // when it does). A /v1/responses turn of the same kind leaves its anchor, under its session.
    void aChatCompletionLeavesNoAnchor()
    {
        const auto keyed = [](const QByteArray &key) {
            return HttpHeaderList{
                {"content-type", "application/json"}, {"authorization", "Bearer k"}, {"session-id", key}};
        };
        const QByteArray stamp = QByteArray::number(QDateTime::currentMSecsSinceEpoch());
        const QJsonArray messages{QJsonObject{{QStringLiteral("role"), QStringLiteral("user")},
                                              {QStringLiteral("content"), QStringLiteral("ECHO: no anchor")}}};
        const QUrl chat(m_proxy.url(QStringLiteral("/v1/chat/completions")));
        QStringList chatIds;
        for (const bool stream : {false, true}) {
            const QJsonObject req{{QStringLiteral("model"), QStringLiteral("gpt-5")},
                                  {QStringLiteral("messages"), messages},
                                  {QStringLiteral("stream"), stream}};
            const QByteArray key = "chat-" + QByteArray::number(int(stream)) + "-" + stamp;
            if (stream) {
                const SseResult r = sseRequest("POST", chat, keyed(key), body(req));
                QCOMPARE(r.status, 200);
                QVERIFY(r.events.size() > 1);
                chatIds.append(
                    QJsonDocument::fromJson(r.events.constFirst().data).object().value(QLatin1String("id")).toString());
            } else {
                const HttpResult r = httpRequest("POST", chat, keyed(key), body(req));
                QCOMPARE(r.status, 200);
                chatIds.append(r.json().value(QLatin1String("id")).toString());
            }
        }
        for (const QString &id : chatIds)
            QVERIFY2(id.startsWith(QLatin1String("chatcmpl-")), qPrintable(id));
        const QJsonObject v1{{QStringLiteral("model"), QStringLiteral("gpt-5")},
                             {QStringLiteral("input"), QStringLiteral("ECHO: anchored")}};
        const HttpResult r =
            httpRequest("POST", QUrl(m_proxy.url(QStringLiteral("/v1/responses"))), keyed("v1-" + stamp), body(v1));
        QCOMPARE(r.status, 200);
        const QString responseId = r.json().value(QLatin1String("id")).toString();
        QVERIFY(responseId.startsWith(QLatin1String("resp_")));
        QCOMPARE(m_proxy.waitForRequest(QString::fromLatin1(r.header("x-request-id")))
                     .value(QLatin1String("status"))
                     .toString(),
                 QStringLiteral("completed"));

        QString error;
        const QStringList anchored = readSqliteColumn(
            m_proxy.dataDir() + QStringLiteral("/switchyard.sqlite"),
            QStringLiteral(
                "SELECT session_key || ' ' || response_id FROM response_anchors WHERE session_key LIKE '%-%1' "
                "ORDER BY session_key")
                .arg(QString::fromLatin1(stamp)),
            &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(anchored, QStringList{QStringLiteral("v1-%1 %2").arg(QString::fromLatin1(stamp), responseId)});
    }
};

QTEST_GUILESS_MAIN(TestProxyRoutes)
#include "tst_proxy_routes.moc"
