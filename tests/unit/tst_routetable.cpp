#include "api/RouteTable.h"

#include <QTest>

using namespace sy;

class TestRouteTable : public QObject
{
    Q_OBJECT
private slots:
    void routes_data()
    {
        QTest::addColumn<QByteArray>("method");
        QTest::addColumn<QByteArray>("path");
        QTest::addColumn<int>("route");
        QTest::newRow("codex") << QByteArray("POST") << QByteArray("/backend-api/codex/responses")
                               << int(Route::CodexResponses);
        QTest::newRow("codex v1 alias") << QByteArray("POST") << QByteArray("/backend-api/codex/v1/responses")
                                        << int(Route::CodexResponses);
        QTest::newRow("compact") << QByteArray("POST") << QByteArray("/backend-api/codex/responses/compact")
                                 << int(Route::CodexResponsesCompact);
        QTest::newRow("compact alias") << QByteArray("POST") << QByteArray("/backend-api/codex/v1/responses/compact")
                                       << int(Route::CodexResponsesCompact);
        QTest::newRow("codex models") << QByteArray("GET") << QByteArray("/backend-api/codex/models")
                                      << int(Route::CodexModels);
        QTest::newRow("v1 responses") << QByteArray("POST") << QByteArray("/v1/responses") << int(Route::V1Responses);
        QTest::newRow("trailing slash") << QByteArray("POST") << QByteArray("/v1/responses/") << int(Route::V1Responses);
        QTest::newRow("chat") << QByteArray("POST") << QByteArray("/v1/chat/completions")
                              << int(Route::V1ChatCompletions);
        QTest::newRow("models") << QByteArray("GET") << QByteArray("/v1/models") << int(Route::V1Models);
        QTest::newRow("live") << QByteArray("GET") << QByteArray("/health/live") << int(Route::HealthLive);
        QTest::newRow("unknown") << QByteArray("GET") << QByteArray("/v2/models") << int(Route::NotFound);
        QTest::newRow("prefix is not a match") << QByteArray("POST") << QByteArray("/v1/responsesX")
                                               << int(Route::NotFound);
    }
    void routes()
    {
        QFETCH(QByteArray, method);
        QFETCH(QByteArray, path);
        QFETCH(int, route);
        const RouteMatch m = matchRoute(method, path, {});
        QCOMPARE(int(m.route), route);
        QVERIFY(m.methodAllowed);
        QVERIFY(!m.websocketUpgrade);
    }
    void wrongMethodIs405()
    {
        const RouteMatch m = matchRoute("GET", "/v1/chat/completions", {});
        QCOMPARE(int(m.route), int(Route::NotFound));
        QVERIFY(!m.methodAllowed);
    }
    void websocketUpgradeOnResponses()
    {
        const RouteMatch m = matchRoute("GET", "/backend-api/codex/responses", "websocket");
        QVERIFY(m.websocketUpgrade);
        QCOMPARE(int(m.route), int(Route::CodexResponses));
        QVERIFY(!matchRoute("GET", "/v1/models", "websocket").websocketUpgrade);
    }
};

QTEST_GUILESS_MAIN(TestRouteTable)
#include "tst_routetable.moc"
