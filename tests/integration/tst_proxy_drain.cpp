// SWITCHYARD_NEEDS_KEYRING: accounts are imported into a real gnome-keyring.
#include "lib/FakeUpstreamProcess.h"
#include "lib/ProxyProcess.h"
#include "lib/RawHttpClient.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

using namespace sy;
using namespace sy::test;

// SIGTERM drains: the turn in flight finishes and is booked, and no new turn starts, not even on a keep-alive
// connection that was already open (the model's shutdown-admit control, Inv8ShutdownDrain).
class TestProxyDrain : public QObject
{
    Q_OBJECT

    static QByteArray codexBody(const QString &text)
    {
        const QJsonObject body{{QStringLiteral("model"), QStringLiteral("gpt-5-codex")},
                               {QStringLiteral("stream"), true},
                               {QStringLiteral("input"), QString(QStringLiteral("ECHO: ") + text)}};
        return QJsonDocument(body).toJson(QJsonDocument::Compact);
    }

private slots:
    void inFlightTurnFinishesAndNothingNewStarts()
    {
        FakeUpstreamProcess fake;
        QVERIFY2(fake.start(), qPrintable(fake.errorString()));
        ProxyProcess proxy;
        QVERIFY2(proxy.addAccounts(1), qPrintable(proxy.errorString()));
        QVERIFY2(proxy.start(fake.baseUrl()), qPrintable(proxy.errorString()));
        QVERIFY(fake.script(proxy.accounts().at(0).chatgptAccountId, {QStringLiteral("slow:150")}));

        // An idle keep-alive connection, opened before the shutdown.
        RawHttpClient idle;
        QVERIFY(idle.connectTo(proxy.port()));
        idle.send(RawHttpClient::buildRequest("GET", "/health/live"));
        const auto live = idle.readResponse();
        QVERIFY(live && live->status == 200);

        // A turn in flight when SIGTERM arrives.
        RawHttpClient streaming;
        QVERIFY(streaming.connectTo(proxy.port()));
        streaming.send(RawHttpClient::buildRequest("POST", "/backend-api/codex/responses",
                                                   {{"content-type", "application/json"}},
                                                   codexBody(QStringLiteral("drained turn"))));
        QVERIFY(streaming.waitForBodyContaining("response.output_text.delta", 10000));
        proxy.terminate();
        QTest::qWait(300);

        idle.send(RawHttpClient::buildRequest("POST", "/backend-api/codex/responses",
                                              {{"content-type", "application/json"}},
                                              codexBody(QStringLiteral("too late"))));
        const auto refused = idle.readResponse(10000);
        QVERIFY(refused);
        QCOMPARE(refused->status, 503);
        QCOMPARE(refused->json().value(QLatin1String("error")).toObject().value(QLatin1String("code")).toString(),
                 QStringLiteral("shutting_down"));

        const auto finished = streaming.readResponse(20000);
        QVERIFY(finished && finished->complete);
        QVERIFY(finished->body.contains("response.completed"));
        const QByteArray requestId = finished->header("x-request-id");
        QCOMPARE(proxy.stop(), 0);

        // Exactly one turn reached the upstream, and it is booked as completed.
        int turns = 0;
        for (const QJsonValue &v : fake.log())
            turns += v.toObject().value(QLatin1String("path")).toString().endsWith(QLatin1String("/codex/responses"));
        QCOMPARE(turns, 1);
        const QJsonObject row = proxy.waitForRequest(QString::fromLatin1(requestId));
        QCOMPARE(row.value(QLatin1String("status")).toString(), QStringLiteral("completed"));
    }

    void turnOutlivingTheDrainIsCancelledAndBooked()
    {
        FakeUpstreamProcess fake;
        QVERIFY2(fake.start(), qPrintable(fake.errorString()));
        ProxyProcess proxy;
        // serve drains for drain_s = 3 s; the stalled stream would idle for 120 s.
        proxy.setConfig({{QStringLiteral("drain_s"), 3}, {QStringLiteral("stream_idle_s"), 120}});
        QVERIFY2(proxy.addAccounts(1), qPrintable(proxy.errorString()));
        QVERIFY2(proxy.start(fake.baseUrl()), qPrintable(proxy.errorString()));
        QVERIFY(fake.script(proxy.accounts().at(0).chatgptAccountId, {QStringLiteral("stall_mid")}));

        RawHttpClient streaming;
        QVERIFY(streaming.connectTo(proxy.port()));
        streaming.send(RawHttpClient::buildRequest("POST", "/backend-api/codex/responses",
                                                   {{"content-type", "application/json"}},
                                                   codexBody(QStringLiteral("stalled turn"))));
        QVERIFY(streaming.waitForBodyContaining("response.output_text.delta", 10000));
        proxy.terminate();
        // The client is told, explicitly, and the stream is properly terminated.
        const auto ended = streaming.readResponse(30000);
        QVERIFY(ended && ended->complete);
        QVERIFY(ended->body.contains("event: error"));
        QVERIFY(ended->body.contains("response.failed"));
        QVERIFY(ended->body.contains("\"shutdown\""));
        QCOMPARE(proxy.stop(), 0);
        const QJsonObject row = proxy.waitForRequest(QString::fromLatin1(ended->header("x-request-id")));
        QCOMPARE(row.value(QLatin1String("status")).toString(), QStringLiteral("cancelled"));
        QCOMPARE(row.value(QLatin1String("error_code")).toString(), QStringLiteral("shutdown"));
    }
};

QTEST_GUILESS_MAIN(TestProxyDrain)
#include "tst_proxy_drain.moc"
