// Issue 10 point 5: the store stops taking writes while turns stream, and comes back.
//  - SQLite "disk full": the fault build's `store-full` switch makes every row change fail with SQLITE_FULL
//    while a flag file exists. The same outage on a real full filesystem (a tmpfs the test mounts in a private
//    mount namespace, the product build) is tst_store_realfs, which also covers a read-only filesystem.
//  - PostgreSQL: the server is stopped under the running proxy and started again (product build).
//  - PostgreSQL read-only: the server is switched to read-only transactions under the running proxy and back
//    (a real read-only database; a read-only SQLite file cannot be made so under an open writer, see
//    tst_store_realfs).
// Both run the scenario in tests/support/lib/StoreOutageScenario: new turns get 503 store_unavailable; the turns already streaming finish at their clients;
// /api/status, `switchyard status` and `switchyard health` say why; the proxy notices by itself (a probe
// every second) when the store takes writes again; the rows of the turns that finished meanwhile (kept in
// memory) and of the refused ones are then written, with their usage; new turns are served again; and the
// durable state still satisfies the ownership invariants.
#include "lib/TestFiles.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/PostgresServer.h"
#include "lib/ProxyProcess.h"
#include "lib/StoreOutageScenario.h"

#include <QFile>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QTest>

using namespace sy;
using namespace sy::test;

class TestStoreUnavailable : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    QTemporaryDir m_tmp;
    QString m_keyFile;

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
        QVERIFY(writeSecretKeyFile(m_keyFile));
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
        StoreOutage outage;
        outage.takeAway = [&] {
            QFile f(flag);
            QVERIFY(f.open(QIODevice::WriteOnly));
        };
        outage.giveBack = [&] { QVERIFY(QFile::remove(flag)); };
        outage.cause = QStringLiteral("disk full");
        outage.database = database;
        runStoreOutageScenario(proxy, m_fake, outage);
    }

    void postgresServerStopped()
    {
        PostgresServer pg;
        QString error;
        QVERIFY2(pg.start(&error, QStringLiteral("switchyard_outage")), qPrintable(error));
        ProxyProcess proxy;
        configure(proxy, pg.url());
        StoreOutage outage;
        outage.takeAway = [&] {
            QString e;
            QVERIFY2(pg.pause(&e), qPrintable(e));
        };
        outage.giveBack = [&] {
            QString e;
            QVERIFY2(pg.resume(&e), qPrintable(e));
        };
        outage.cause = QStringLiteral("connection lost");
        outage.database = pg.url();
        runStoreOutageScenario(proxy, m_fake, outage);
    }

    // A real read-only database under the running proxy: the server is switched to read-only transactions
    // (what an operator does before a migration, and what a hot standby answers after a failover) and back.
    // Every write of the proxy then fails with SQLSTATE 25006 on a connection that stays up.
    void postgresReadOnly()
    {
        PostgresServer pg;
        QString error;
        QVERIFY2(pg.start(&error, QStringLiteral("switchyard_readonly")), qPrintable(error));
        ProxyProcess proxy;
        configure(proxy, pg.url());
        const auto setReadOnly = [&](bool on) {
            QString e;
            QVERIFY2(pg.sql(QStringLiteral("ALTER SYSTEM SET default_transaction_read_only = %1")
                                .arg(on ? QStringLiteral("on") : QStringLiteral("off")),
                            &e),
                     qPrintable(e));
            QVERIFY2(pg.sql(QStringLiteral("SELECT pg_reload_conf()"), &e), qPrintable(e));
            // pg_reload_conf() only signals the postmaster, which re-reads the file and then passes the signal on to
            // every backend before it forks a new one. So once a new connection sees the new value, the proxy's open
            // connections hold the signal too and apply it before their next command (a backend reloads between
            // reading a command and running it). Without this wait the proxy's next write could still go through.
            const QString expected = on ? QStringLiteral("on") : QStringLiteral("off");
            const QString check =
                QStringLiteral("DO $$ BEGIN IF current_setting('default_transaction_read_only') <> '%1'"
                               " THEN RAISE EXCEPTION 'reload not applied yet'; END IF; END $$")
                    .arg(expected);
            QTRY_VERIFY2_WITH_TIMEOUT(pg.sql(check, &e), qPrintable(e), 10000);
        };
        StoreOutage outage;
        outage.takeAway = [&] { setReadOnly(true); };
        outage.giveBack = [&] { setReadOnly(false); };
        outage.cause = QStringLiteral("read-only");
        outage.database = pg.url();
        runStoreOutageScenario(proxy, m_fake, outage);
    }
};

QTEST_GUILESS_MAIN(TestStoreUnavailable)
#include "tst_store_unavailable.moc"
