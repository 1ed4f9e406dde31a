// SWITCHYARD_NEEDS_KEYRING: accounts are imported into a real gnome-keyring.
#include "lib/FakeUpstreamProcess.h"
#include "lib/HttpTestClient.h"
#include "lib/ProxyProcess.h"

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
    // request id, the forwarded session header, the body as sent.
    void upstreamRequestsAreBuiltWhileTheirClaimIsOnItsWay_data()
    {
        QTest::addColumn<QString>("path");
        QTest::addColumn<bool>("sessionHeader");
        QTest::addColumn<bool>("stream");
        QTest::newRow("codex, session header (claim before the scan)")
            << QStringLiteral("/backend-api/codex/responses") << true << true;
        QTest::newRow("codex, no session header") << QStringLiteral("/backend-api/codex/responses") << false << true;
        QTest::newRow("v1 responses, stream") << QStringLiteral("/v1/responses") << true << true;
        QTest::newRow("v1 responses, JSON") << QStringLiteral("/v1/responses") << false << false;
    }

    void upstreamRequestsAreBuiltWhileTheirClaimIsOnItsWay()
    {
        QFETCH(QString, path);
        QFETCH(bool, sessionHeader);
        QFETCH(bool, stream);
        const auto dispatches = [this] {
            const HttpResult st = httpRequest("GET", QUrl(m_proxy.url(QStringLiteral("/api/status"))));
            const QJsonObject stages = st.json().value(QLatin1String("turn_stages")).toObject();
            return qMakePair(stages.value(QLatin1String("dispatches")).toInteger(-1),
                             stages.value(QLatin1String("dispatches_prepared")).toInteger(-1));
        };
        const auto before = dispatches();
        QVERIFY(before.first >= 0 && before.second >= 0);

        const QByteArray session = "sess-prepared-" + QByteArray::number(QDateTime::currentMSecsSinceEpoch());
        const QJsonObject req{
            {QStringLiteral("model"), QStringLiteral("gpt-5-codex")},
            {QStringLiteral("stream"), stream},
            {QStringLiteral("store"), false},
            {QStringLiteral("input"),
             QJsonArray{QJsonObject{
                 {QStringLiteral("type"), QStringLiteral("message")},
                 {QStringLiteral("role"), QStringLiteral("user")},
                 {QStringLiteral("content"),
                  QJsonArray{QJsonObject{{QStringLiteral("type"), QStringLiteral("input_text")},
                                         {QStringLiteral("text"), QStringLiteral("ECHO: built ahead")}}}}}}}};
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
        const auto after = dispatches();
        QCOMPARE(after.first - before.first, 1);
        QCOMPARE(after.second - before.second, 1); // 0 with SWITCHYARD_PREPARE_DISPATCH=0

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
        QCOMPARE(m_proxy.waitForRequest(QString::fromLatin1(requestId)).value(QLatin1String("status")).toString(),
                 QStringLiteral("completed"));
    }
};

QTEST_GUILESS_MAIN(TestProxyRoutes)
#include "tst_proxy_routes.moc"
