// SWITCHYARD_NEEDS_KEYRING: accounts are imported into a real gnome-keyring.
#include "lib/FakeUpstreamProcess.h"
#include "lib/HttpTestClient.h"
#include "lib/ProxyProcess.h"

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
};

QTEST_GUILESS_MAIN(TestProxyRoutes)
#include "tst_proxy_routes.moc"
