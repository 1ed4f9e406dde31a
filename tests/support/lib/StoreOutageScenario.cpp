#include "lib/StoreOutageScenario.h"

#include "lib/DurableStateChecker.h"
#include "lib/HttpTestClient.h"
#include "lib/TurnTraffic.h"

#include <QElapsedTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QTest>

namespace sy::test {

namespace {

constexpr int kStreams = 4;

QString words(int n, const QString &tag)
{
    QStringList w;
    for (int i = 0; i < n; ++i)
        w << QStringLiteral("%1w%2").arg(tag).arg(i);
    return w.join(QLatin1Char(' '));
}

QString compact(const QJsonObject &o)
{
    return QString::fromUtf8(QJsonDocument(o).toJson(QJsonDocument::Compact));
}

QJsonObject status(const ProxyProcess &p)
{
    return httpRequest("GET", QUrl(p.url(QStringLiteral("/api/status"))), {}, {}, 5000).json();
}

int streaming(const QJsonObject &s)
{
    int n = 0;
    for (const QJsonValue &v : s.value(QLatin1String("in_flight")).toArray())
        n += v.toObject().value(QLatin1String("stage")).toString() == QLatin1String("streaming") ? 1 : 0;
    return n;
}

AsyncTurn *turn(const ProxyProcess &p, const QString &text, int timeoutMs = 60000)
{
    auto *t = new AsyncTurn(p.port(), turnRequestBytes("/backend-api/codex/responses", codexTurnBody(text)));
    t->start(timeoutMs);
    return t;
}

void checkUsageRow(const QJsonObject &row, const AsyncTurn *t)
{
    QVERIFY2(!row.isEmpty(), qPrintable(QStringLiteral("no row for %1").arg(t->outcome().requestId)));
    QCOMPARE(row.value(QLatin1String("status")).toString(), QStringLiteral("completed"));
    const QJsonObject tokens = row.value(QLatin1String("tokens")).toObject();
    const QJsonObject usage = t->outcome().completedUsage;
    QCOMPARE(tokens.value(QLatin1String("input")).toInteger(), usage.value(QLatin1String("input_tokens")).toInteger());
    QCOMPARE(tokens.value(QLatin1String("output")).toInteger(),
             usage.value(QLatin1String("output_tokens")).toInteger());
    QCOMPARE(tokens.value(QLatin1String("total")).toInteger(), usage.value(QLatin1String("total_tokens")).toInteger());
}

void scenario(ProxyProcess &proxy, FakeUpstreamProcess &fake, const StoreOutage &outage, QList<AsyncTurn *> &turns)
{
    const QString &cause = outage.cause;
    QVERIFY2(proxy.addAccounts(2), qPrintable(proxy.errorString()));
    for (const FakeAccount &a : proxy.accounts())
        QVERIFY(fake.script(a.chatgptAccountId, {QStringLiteral("slow:120")}, true));
    QVERIFY2(proxy.start(fake.baseUrl(), 30000), qPrintable(proxy.errorString()));
    QVERIFY(status(proxy).value(QLatin1String("store_writable")).toBool());

    QList<AsyncTurn *> warmup;
    for (int i = 0; i < outage.warmupTurns; ++i)
        warmup << turn(proxy, words(3, QStringLiteral("warm%1").arg(i)));
    turns << warmup;
    QVERIFY(waitForTurns(warmup, 60000));
    for (const AsyncTurn *t : warmup) {
        QCOMPARE(t->outcome().status, 200);
        QVERIFY(t->outcome().sawCompleted);
        checkUsageRow(proxy.waitForRequest(t->outcome().requestId), t);
        if (QTest::currentTestFailed())
            return;
    }

    // Long streams (about 40 events, 120 ms apart) that are mid-stream when the store goes away.
    QList<AsyncTurn *> inFlight;
    for (int i = 0; i < kStreams; ++i)
        inFlight << turn(proxy, words(30, QStringLiteral("s%1").arg(i)));
    turns << inFlight;
    QTRY_VERIFY_WITH_TIMEOUT(streaming(status(proxy)) == kStreams, 20000);

    outage.takeAway();
    if (QTest::currentTestFailed())
        return;
    // A new turn is refused with 503 store_unavailable: by the claim that fails to write, or (once the
    // proxy knows) before it routes at all.
    QList<AsyncTurn *> refused;
    refused << turn(proxy, QStringLiteral("refused one"), 20000);
    turns << refused.last();
    QVERIFY(waitForTurns(refused, 30000));
    QCOMPARE(refused.last()->outcome().status, 503);
    QCOMPARE(refused.last()->outcome().errorCode, QStringLiteral("store_unavailable"));
    QVERIFY(!refused.last()->outcome().requestId.isEmpty());

    // The proxy says why, and so do the CLI's status and health.
    QJsonObject s = status(proxy);
    QCOMPARE(s.value(QLatin1String("store_writable")).toBool(true), false);
    QVERIFY2(s.value(QLatin1String("store_problem")).toString().startsWith(cause), qPrintable(compact(s)));
    qInfo("store_problem: %s", qPrintable(s.value(QLatin1String("store_problem")).toString()));
    const CliResult st = proxy.cli({QStringLiteral("status")});
    QCOMPARE(st.exitCode, 0);
    QVERIFY2(st.out.contains(QStringLiteral("store unavailable: %1").arg(cause).toUtf8()), st.out.constData());
    const CliResult health = proxy.cli({QStringLiteral("health")});
    QCOMPARE(health.exitCode, 2);
    QVERIFY2(health.out.contains(QStringLiteral("store unavailable: %1").arg(cause).toUtf8()),
             QByteArray(health.out + health.err).constData());

    // The turns that were streaming finish at their clients, completed, with their usage.
    QVERIFY(waitForTurns(inFlight, 60000));
    for (const AsyncTurn *t : inFlight) {
        QCOMPARE(t->outcome().status, 200);
        QVERIFY2(t->outcome().sawCompleted, qPrintable(t->outcome().errorCode));
        QVERIFY(t->outcome().completedUsage.value(QLatin1String("total_tokens")).toInteger() > 0);
    }
    // Their rows could not be written: they wait in memory (with the refused turn's), none lost.
    s = status(proxy);
    QVERIFY2(s.value(QLatin1String("store_pending_writes")).toInt() >= kStreams + 1, qPrintable(compact(s)));
    QCOMPARE(s.value(QLatin1String("store_lost_writes")).toInteger(), 0);
    QCOMPARE(s.value(QLatin1String("store_writable")).toBool(true), false);
    // Still refused while the store is away (now before routing).
    refused << turn(proxy, QStringLiteral("refused two"), 20000);
    turns << refused.last();
    QVERIFY(waitForTurns(refused, 30000));
    QCOMPARE(refused.last()->outcome().status, 503);
    QCOMPARE(refused.last()->outcome().errorCode, QStringLiteral("store_unavailable"));

    // The store comes back: the proxy notices by itself and writes what it kept.
    const int pendingBefore = s.value(QLatin1String("store_pending_writes")).toInt();
    QElapsedTimer back;
    back.start();
    outage.giveBack();
    if (QTest::currentTestFailed())
        return;
    QTRY_VERIFY_WITH_TIMEOUT(status(proxy).value(QLatin1String("store_writable")).toBool(), 30000);
    qInfo("%s: writable again %lld ms after the store came back; %d request-log writes had been kept",
          qPrintable(cause), back.elapsed(), pendingBefore);
    QTRY_COMPARE_WITH_TIMEOUT(status(proxy).value(QLatin1String("store_pending_writes")).toInt(-1), 0, 20000);
    s = status(proxy);
    if (s.value(QLatin1String("store_lost_writes")).toInteger() != 0) {
        QByteArrayList lost;
        for (const QByteArray &line : proxy.serveStderr().split('\n'))
            if (line.contains("LOST"))
                lost << line;
        QFAIL(qPrintable(QStringLiteral("%1 writes lost:\n%2")
                             .arg(s.value(QLatin1String("store_lost_writes")).toInteger())
                             .arg(QString::fromUtf8(lost.join('\n')))));
    }
    QVERIFY(s.value(QLatin1String("store_problem")).isNull());
    const CliResult healthy = proxy.cli({QStringLiteral("status")});
    QVERIFY2(!healthy.out.contains("store unavailable"), healthy.out.constData());

    QHash<QString, QJsonObject> rows;
    for (const QJsonValue &v : proxy.requestLog())
        rows.insert(v.toObject().value(QLatin1String("request_id")).toString(), v.toObject());
    for (const AsyncTurn *t : inFlight) {
        checkUsageRow(rows.value(t->outcome().requestId), t);
        if (QTest::currentTestFailed())
            return;
    }
    for (const AsyncTurn *t : refused) {
        const QJsonObject row = rows.value(t->outcome().requestId);
        QVERIFY2(!row.isEmpty(), qPrintable(QStringLiteral("no row for refused %1").arg(t->outcome().requestId)));
        QCOMPARE(row.value(QLatin1String("status")).toString(), QStringLiteral("rejected"));
        QCOMPARE(row.value(QLatin1String("error_code")).toString(), QStringLiteral("store_unavailable"));
    }

    // Served again.
    QList<AsyncTurn *> after{turn(proxy, QStringLiteral("after the outage"))};
    turns << after;
    QVERIFY(waitForTurns(after, 60000));
    QCOMPARE(after.first()->outcome().status, 200);
    QVERIFY(after.first()->outcome().sawCompleted);
    checkUsageRow(proxy.waitForRequest(after.first()->outcome().requestId), after.first());
    if (QTest::currentTestFailed())
        return;

    QCOMPARE(proxy.stop(30000), 0);
    if (!outage.database.contains(QLatin1String("://"))) {
        QString error;
        QCOMPARE(readSqliteColumn(outage.database, QStringLiteral("PRAGMA integrity_check"), &error),
                 QStringList{QStringLiteral("ok")});
        QVERIFY2(error.isEmpty(), qPrintable(error));
    }
    DurableStateChecker checker(outage.database);
    checker.setQuiescent(true);
    QString error;
    QVERIFY2(checker.run(&error), qPrintable(error));
    QVERIFY2(checker.violations().isEmpty(), qPrintable(checker.report(10)));
}

} // namespace

void runStoreOutageScenario(ProxyProcess &proxy, FakeUpstreamProcess &fake, const StoreOutage &outage)
{
    QList<AsyncTurn *> turns;
    scenario(proxy, fake, outage, turns);
    qDeleteAll(turns);
}

} // namespace sy::test
