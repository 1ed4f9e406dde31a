// Issue 10 point 5: the store stops taking writes while turns stream, and comes back.
//  - SQLite "disk full": the fault build's `store-full` switch makes every row change fail with SQLITE_FULL
//    while a flag file exists (a real full disk needs a tiny filesystem, which CI containers cannot mount; the
//    same SQLITE_FULL path on a real file is covered by tst_store_worker with max_page_count).
//  - PostgreSQL: the server is stopped under the running proxy and started again (product build).
// Either way: new turns get 503 store_unavailable; the turns already streaming finish at their clients;
// /api/status, `switchyard status` and `switchyard health` say why; the proxy notices by itself (a probe
// every second) when the store takes writes again; the rows of the turns that finished meanwhile (kept in
// memory) and of the refused ones are then written, with their usage; new turns are served again; and the
// durable state still satisfies the ownership invariants.
#include "lib/DurableStateChecker.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/HttpTestClient.h"
#include "lib/PostgresServer.h"
#include "lib/ProxyProcess.h"
#include "lib/TurnTraffic.h"

#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QTest>
#include <functional>

using namespace sy;
using namespace sy::test;

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

} // namespace

class TestStoreUnavailable : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    QTemporaryDir m_tmp;
    QString m_keyFile;

    static QJsonObject status(const ProxyProcess &p)
    {
        return httpRequest("GET", QUrl(p.url(QStringLiteral("/api/status"))), {}, {}, 5000).json();
    }

    static int streaming(const QJsonObject &s)
    {
        int n = 0;
        for (const QJsonValue &v : s.value(QLatin1String("in_flight")).toArray())
            n += v.toObject().value(QLatin1String("stage")).toString() == QLatin1String("streaming") ? 1 : 0;
        return n;
    }

    static AsyncTurn *turn(const ProxyProcess &p, const QString &text, int timeoutMs = 60000)
    {
        auto *t = new AsyncTurn(p.port(), turnRequestBytes("/backend-api/codex/responses", codexTurnBody(text)));
        t->start(timeoutMs);
        return t;
    }

    // takeAway/giveBack: make the store refuse writes and accept them again. `cause`: the words the proxy
    // must use for it ("disk full", "connection lost").
    void outageScenario(ProxyProcess &proxy, const std::function<void()> &takeAway,
                        const std::function<void()> &giveBack, const QString &cause, const QString &database)
    {
        QVERIFY2(proxy.addAccounts(2), qPrintable(proxy.errorString()));
        for (const FakeAccount &a : proxy.accounts())
            QVERIFY(m_fake.script(a.chatgptAccountId, {QStringLiteral("slow:120")}, true));
        QVERIFY2(proxy.start(m_fake.baseUrl(), 30000), qPrintable(proxy.errorString()));
        QVERIFY(status(proxy).value(QLatin1String("store_writable")).toBool());

        // Long streams (about 40 events, 120 ms apart) that are mid-stream when the store goes away.
        QList<AsyncTurn *> inFlight;
        for (int i = 0; i < kStreams; ++i)
            inFlight << turn(proxy, words(30, QStringLiteral("s%1").arg(i)));
        QTRY_VERIFY_WITH_TIMEOUT(streaming(status(proxy)) == kStreams, 20000);

        takeAway();
        // A new turn is refused with 503 store_unavailable: by the claim that fails to write, or (once the
        // proxy knows) before it routes at all.
        QList<AsyncTurn *> refused;
        refused << turn(proxy, QStringLiteral("refused one"), 20000);
        QVERIFY(waitForTurns(refused, 30000));
        QCOMPARE(refused.last()->outcome().status, 503);
        QCOMPARE(refused.last()->outcome().errorCode, QStringLiteral("store_unavailable"));
        QVERIFY(!refused.last()->outcome().requestId.isEmpty());

        // The proxy says why, and so do the CLI's status and health.
        QJsonObject s = status(proxy);
        QCOMPARE(s.value(QLatin1String("store_writable")).toBool(true), false);
        QVERIFY2(s.value(QLatin1String("store_problem")).toString().startsWith(cause), qPrintable(compact(s)));
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
        QVERIFY(waitForTurns(refused, 30000));
        QCOMPARE(refused.last()->outcome().status, 503);
        QCOMPARE(refused.last()->outcome().errorCode, QStringLiteral("store_unavailable"));

        // The store comes back: the proxy notices by itself and writes what it kept.
        const int pendingBefore = s.value(QLatin1String("store_pending_writes")).toInt();
        QElapsedTimer back;
        back.start();
        giveBack();
        QTRY_VERIFY_WITH_TIMEOUT(status(proxy).value(QLatin1String("store_writable")).toBool(), 30000);
        qInfo("%s: writable again %lld ms after the store came back; %d request-log writes had been kept",
              qPrintable(cause), back.elapsed(), pendingBefore);
        QTRY_COMPARE_WITH_TIMEOUT(status(proxy).value(QLatin1String("store_pending_writes")).toInt(-1), 0, 20000);
        s = status(proxy);
        if (s.value(QLatin1String("store_lost_writes")).toInteger() != 0) {
            // Each lost row names its reason in serve's log (QVERIFY2 would cut the text short).
            QTest::qWait(1000);
            fprintf(stderr, "%s\n", proxy.serveStderr().constData());
            QFAIL("request-log writes were lost after the store came back (serve's log above)");
        }
        QVERIFY(s.value(QLatin1String("store_problem")).isNull());
        const CliResult healthy = proxy.cli({QStringLiteral("status")});
        QVERIFY2(!healthy.out.contains("store unavailable"), healthy.out.constData());

        QHash<QString, QJsonObject> rows;
        for (const QJsonValue &v : proxy.requestLog())
            rows.insert(v.toObject().value(QLatin1String("request_id")).toString(), v.toObject());
        for (const AsyncTurn *t : inFlight) {
            const QJsonObject row = rows.value(t->outcome().requestId);
            QVERIFY2(!row.isEmpty(), qPrintable(QStringLiteral("no row for %1").arg(t->outcome().requestId)));
            QCOMPARE(row.value(QLatin1String("status")).toString(), QStringLiteral("completed"));
            const QJsonObject tokens = row.value(QLatin1String("tokens")).toObject();
            const QJsonObject usage = t->outcome().completedUsage;
            QCOMPARE(tokens.value(QLatin1String("input")).toInteger(),
                     usage.value(QLatin1String("input_tokens")).toInteger());
            QCOMPARE(tokens.value(QLatin1String("output")).toInteger(),
                     usage.value(QLatin1String("output_tokens")).toInteger());
            QCOMPARE(tokens.value(QLatin1String("total")).toInteger(),
                     usage.value(QLatin1String("total_tokens")).toInteger());
        }
        for (const AsyncTurn *t : refused) {
            const QJsonObject row = rows.value(t->outcome().requestId);
            QVERIFY2(!row.isEmpty(), qPrintable(QStringLiteral("no row for refused %1").arg(t->outcome().requestId)));
            QCOMPARE(row.value(QLatin1String("status")).toString(), QStringLiteral("rejected"));
            QCOMPARE(row.value(QLatin1String("error_code")).toString(), QStringLiteral("store_unavailable"));
        }

        // Served again.
        QList<AsyncTurn *> after{turn(proxy, QStringLiteral("after the outage"))};
        QVERIFY(waitForTurns(after, 60000));
        QCOMPARE(after.first()->outcome().status, 200);
        QVERIFY(after.first()->outcome().sawCompleted);
        QVERIFY(!proxy.waitForRequest(after.first()->outcome().requestId).isEmpty());

        QCOMPARE(proxy.stop(30000), 0);
        DurableStateChecker checker(database);
        checker.setQuiescent(true);
        QString error;
        QVERIFY2(checker.run(&error), qPrintable(error));
        QVERIFY2(checker.violations().isEmpty(), qPrintable(checker.report(10)));
        qDeleteAll(inFlight);
        qDeleteAll(refused);
        qDeleteAll(after);
    }

    void configure(ProxyProcess &p, const QString &database)
    {
        p.setConfig(QJsonObject{{QStringLiteral("slots_per_account"), 4},
                                {QStringLiteral("stream_idle_s"), 20},
                                {QStringLiteral("request_total_s"), 120},
                                {QStringLiteral("stream_max_s"), 120}});
        p.setEnv(QStringLiteral("SWITCHYARD_DATABASE_URL"), database);
        p.setEnv(QStringLiteral("SWITCHYARD_SECRET_BACKEND"), QStringLiteral("database"));
        p.setEnv(QStringLiteral("SWITCHYARD_SECRET_KEY_FILE"), m_keyFile);
        p.setEnv(QStringLiteral("DBUS_SESSION_BUS_ADDRESS"), QStringLiteral("unix:path=/nonexistent/bus"));
        p.setEnv(QStringLiteral("DISPLAY"), QString());
        p.setSpinEventsWhileStarting(true);
    }

private slots:
    void initTestCase()
    {
        QVERIFY2(!qEnvironmentVariableIsEmpty("SWITCHYARD_BIN"), "run through ctest (SWITCHYARD_BIN)");
        QVERIFY2(!qEnvironmentVariableIsEmpty("SWITCHYARD_FAULTS_BIN"), "run through ctest (SWITCHYARD_FAULTS_BIN)");
        QVERIFY(m_tmp.isValid());
        QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString()));
        m_keyFile = m_tmp.filePath(QStringLiteral("secrets.key"));
        QByteArray key(32, Qt::Uninitialized);
        QRandomGenerator::securelySeeded().fillRange(reinterpret_cast<quint32 *>(key.data()), 8);
        QFile f(m_keyFile);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.write(key.toHex() + '\n');
        f.close();
        QVERIFY(f.setPermissions(QFile::ReadOwner | QFile::WriteOwner));
    }

    void init() { QVERIFY(m_fake.reset()); }

    void sqliteDiskFull()
    {
        const QString flag = m_tmp.filePath(QStringLiteral("disk-full.flag"));
        const QString database = m_tmp.filePath(QStringLiteral("full.sqlite"));
        ProxyProcess proxy;
        configure(proxy, database);
        proxy.setBinary(qEnvironmentVariable("SWITCHYARD_FAULTS_BIN"));
        proxy.setEnv(QStringLiteral("SWITCHYARD_FAULTS"), QStringLiteral("store-full"));
        proxy.setEnv(QStringLiteral("SWITCHYARD_FAULT_STORE_FULL_FLAG"), flag);
        outageScenario(
            proxy,
            [&] {
                QFile f(flag);
                QVERIFY(f.open(QIODevice::WriteOnly));
            },
            [&] { QVERIFY(QFile::remove(flag)); }, QStringLiteral("disk full"), database);
    }

    void postgresServerStopped()
    {
        PostgresServer pg;
        QString error;
        QVERIFY2(pg.start(&error, QStringLiteral("switchyard_outage")), qPrintable(error));
        ProxyProcess proxy;
        configure(proxy, pg.url());
        outageScenario(
            proxy,
            [&] {
                QString e;
                QVERIFY2(pg.pause(&e), qPrintable(e));
            },
            [&] {
                QString e;
                QVERIFY2(pg.resume(&e), qPrintable(e));
            },
            QStringLiteral("connection lost"), pg.url());
    }
};

QTEST_GUILESS_MAIN(TestStoreUnavailable)
#include "tst_store_unavailable.moc"
