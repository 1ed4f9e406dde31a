// The store on a real PostgreSQL 15 server started by the test (PostgresServer): the schema from empty and
// its equality with SQLite's, 64-bit types, upgrades, concurrent migration by two connections under the
// advisory lock, transactions (rollback, savepoints, a failed statement aborting the transaction), read-only
// sessions, lock timeouts reported as busy, a lost connection and its reconnection, and the StoreWorker.
// Repositories and the secret store on PostgreSQL: tst_store_postgres_repos.
#include "lib/PostgresServer.h"
#include "store/Database.h"
#include "store/Schema.h"
#include "store/SettingsRepository.h"
#include "store/StoreWorker.h"

#include <QElapsedTimer>
#include <QSemaphore>
#include <QSet>
#include <QSignalSpy>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>

using namespace sy;

namespace {

QVariant scalar(Database &db, const QString &sql)
{
    QSqlQuery q = db.query();
    if (!q.exec(sql) || !q.next())
        return {};
    return q.value(0);
}

QSet<QString> column0(Database &db, const QString &sql)
{
    QSet<QString> out;
    QSqlQuery q = db.query();
    if (!q.exec(sql))
        qFatal("%s: %s", qPrintable(sql), qPrintable(q.lastError().text()));
    while (q.next())
        out.insert(q.value(0).toString());
    return out;
}

// Opens `location` on a thread of its own once `go` is released; the outcome is read after wait().
class OpenerThread : public QThread
{
public:
    OpenerThread(QString location, QSemaphore *go) : m_location(std::move(location)), m_go(go) {}
    bool ok = false;
    QString error;
    int version = -1;

protected:
    void run() override
    {
        if (m_go)
            m_go->acquire();
        Database db;
        ok = db.open(m_location, &error);
        version = ok ? db.schemaVersion() : -1;
    }

private:
    QString m_location;
    QSemaphore *m_go;
};

} // namespace

class tst_StorePostgres : public QObject
{
    Q_OBJECT

    test::PostgresServer m_pg;
    QTemporaryDir m_dir;
    int m_counter = 0;
    QString m_url;
    std::unique_ptr<Database> m_db;

    QString freshDatabase()
    {
        const QString name = QStringLiteral("t%1").arg(++m_counter);
        QString error;
        if (!m_pg.createDatabase(name, &error))
            qFatal("createdb: %s", qPrintable(error));
        return m_pg.url(name);
    }

    bool resetToEmptySchema(Database &db)
    {
        QString error;
        const bool ok = db.exec(QStringLiteral("DROP SCHEMA public CASCADE"), &error) &&
                        db.exec(QStringLiteral("CREATE SCHEMA public"), &error);
        if (!ok)
            qWarning("%s", qPrintable(error));
        return ok;
    }

private slots:
    void initTestCase()
    {
        QString error;
        QVERIFY2(m_pg.start(&error), qPrintable(error));
    }

    void init()
    {
        m_url = freshDatabase();
        m_db = std::make_unique<Database>();
        QString error;
        QVERIFY2(m_db->open(m_url, &error), qPrintable(error));
    }

    void cleanup() { m_db.reset(); }

    void migrationFromEmptyMatchesSqliteSchema()
    {
        QCOMPARE(m_db->dialect(), Database::Dialect::Postgres);
        QCOMPARE(m_db->schemaVersion(), kLatestSchemaVersion);
        QVERIFY2(m_db->writable(), qPrintable(m_db->unwritableReason()));
        QCOMPARE(m_db->changeCounter(), std::optional<qint64>(0));
        QCOMPARE(m_db->location(), m_url);
        QCOMPARE(scalar(*m_db, QStringLiteral("SHOW TIME ZONE")).toString(), QStringLiteral("UTC"));
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT count(*) FROM schema_version")).toInt(), kLatestSchemaVersion);

        // The same DDL made the same tables, columns and indexes as on SQLite, whatever versions exist.
        Database lite;
        QString error;
        QVERIFY2(lite.open(m_dir.filePath(QStringLiteral("reference.sqlite")), &error), qPrintable(error));
        QCOMPARE(lite.dialect(), Database::Dialect::Sqlite);
        const QSet<QString> tables =
            column0(lite, QStringLiteral("SELECT name FROM sqlite_master WHERE type = 'table'"));
        QCOMPARE(column0(*m_db, QStringLiteral("SELECT table_name FROM information_schema.tables "
                                               "WHERE table_schema = 'public'")),
                 tables);
        for (const QString &table : tables) {
            QSet<QString> pgColumns = column0(*m_db, QStringLiteral("SELECT column_name FROM information_schema.columns "
                                                                    "WHERE table_schema = 'public' AND table_name = '%1'")
                                                         .arg(table));
            // PostgreSQL's stand-in for SQLite's implicit rowid (RequestLogRepository::recent orders by it).
            if (table == QLatin1String("request_log"))
                QVERIFY(pgColumns.remove(QStringLiteral("rowid")));
            QCOMPARE(pgColumns, column0(lite, QStringLiteral("SELECT name FROM pragma_table_info('%1')").arg(table)));
        }
        const QSet<QString> liteIndexes =
            column0(lite, QStringLiteral("SELECT name FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL"));
        const QSet<QString> pgIndexes =
            column0(*m_db, QStringLiteral("SELECT indexname FROM pg_indexes WHERE schemaname = 'public'"));
        QVERIFY(!liteIndexes.isEmpty());
        QVERIFY2(pgIndexes.contains(liteIndexes), qPrintable(QStringList(liteIndexes.values()).join(u',')));

        // No 32-bit integers or 4-byte floats anywhere: SQLite's INTEGER and REAL are 64-bit.
        const QSet<QString> narrow = column0(
            *m_db, QStringLiteral("SELECT table_name || '.' || column_name FROM information_schema.columns "
                                  "WHERE table_schema = 'public' AND data_type IN ('integer', 'smallint', 'real')"));
        QVERIFY2(narrow.isEmpty(), qPrintable(QStringList(narrow.values()).join(u',')));
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT data_type FROM information_schema.columns WHERE table_name = "
                                              "'accounts' AND column_name = 'created_at_ms'"))
                     .toString(),
                 QStringLiteral("bigint"));
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT data_type FROM information_schema.columns WHERE table_name = "
                                              "'account_usage' AND column_name = 'primary_used_percent'"))
                     .toString(),
                 QStringLiteral("double precision"));
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT data_type FROM information_schema.columns WHERE table_name = "
                                              "'account_secrets' AND column_name = 'ciphertext'"))
                     .toString(),
                 QStringLiteral("bytea"));
    }

    void migrationIsIdempotentAndTheFutureIsRefused()
    {
        QString error;
        QVERIFY2(m_db->migrate(&error), qPrintable(error));
        m_db = std::make_unique<Database>();
        QVERIFY2(m_db->open(m_url, &error), qPrintable(error));
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT count(*) FROM schema_version")).toInt(), kLatestSchemaVersion);

        QVERIFY(m_db->exec(QStringLiteral("INSERT INTO schema_version VALUES (99, 0)"), &error));
        Database newer;
        QVERIFY(!newer.open(m_url, &error));
        QVERIFY2(error.contains(QLatin1String("newer")), qPrintable(error));
    }

    // A version-1 database upgrades to the latest on open, keeping its rows.
    void upgradesFromVersion1()
    {
        QString error;
        QVERIFY(resetToEmptySchema(*m_db));
        {
            Transaction tx(*m_db);
            QVERIFY(tx.begin(&error));
            QVERIFY2(m_db->exec(translateDdl(QStringLiteral("CREATE TABLE schema_version (version INTEGER PRIMARY "
                                                            "KEY, applied_at_ms INTEGER NOT NULL)"),
                                             SqlDialect::Postgres),
                                &error),
                     qPrintable(error));
            QVERIFY2(applySchemaVersion(*m_db, 1, &error), qPrintable(error));
            QVERIFY(m_db->exec(QStringLiteral("INSERT INTO schema_version VALUES (1, 0)"), &error));
            QVERIFY2(m_db->exec(QStringLiteral("INSERT INTO accounts (id, chatgpt_account_id, user_id, created_at_ms, "
                                               "updated_at_ms) VALUES ('acc_v1', 'ws', 'user', 4102444800000, 1)"),
                                &error),
                     qPrintable(error));
            QVERIFY(tx.commit(&error));
        }
        QCOMPARE(m_db->schemaVersion(), 1);
        Database reader;
        QVERIFY(!reader.open(m_url, &error, Database::OpenMode::ReadOnly));
        QVERIFY2(error.contains(QLatin1String("not upgraded")), qPrintable(error));

        m_db = std::make_unique<Database>();
        QVERIFY2(m_db->open(m_url, &error), qPrintable(error));
        QCOMPARE(m_db->schemaVersion(), kLatestSchemaVersion);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT created_at_ms FROM accounts WHERE id = 'acc_v1'")).toLongLong(),
                 4102444800000LL);
        QVERIFY(scalar(*m_db, QStringLiteral("SELECT to_regclass('account_secrets') IS NOT NULL")).toBool());
    }

    // Two replicas starting at once: both open, the versions are applied exactly once.
    void concurrentMigrationByTwoConnections()
    {
        for (int round = 0; round < 3; ++round) {
            const QString url = freshDatabase();
            QSemaphore go;
            OpenerThread a(url, &go);
            OpenerThread b(url, &go);
            a.start();
            b.start();
            go.release(2);
            QVERIFY(a.wait(60000) && b.wait(60000));
            QVERIFY2(a.ok, qPrintable(a.error));
            QVERIFY2(b.ok, qPrintable(b.error));
            QCOMPARE(a.version, kLatestSchemaVersion);
            QCOMPARE(b.version, kLatestSchemaVersion);
            Database check;
            QString error;
            QVERIFY2(check.open(url, &error), qPrintable(error));
            QCOMPARE(scalar(check, QStringLiteral("SELECT count(*) FROM schema_version")).toInt(),
                     kLatestSchemaVersion);
            QCOMPARE(check.changeCounter(), std::optional<qint64>(0)); // version 1's seed row inserted once
        }
    }

    // The migration really waits for the advisory lock: while another session holds it, nothing is applied.
    void migrationWaitsForTheMigrationLock()
    {
        QString error;
        QVERIFY(resetToEmptySchema(*m_db));
        Transaction holder(*m_db);
        QVERIFY(holder.begin(&error));
        QVERIFY2(m_db->lockForWrite(QStringLiteral("schema migration"), &error), qPrintable(error));
        OpenerThread opener(m_url, nullptr);
        opener.start();
        QVERIFY(!opener.wait(1500));
        QVERIFY(scalar(*m_db, QStringLiteral("SELECT to_regclass('schema_version') IS NULL")).toBool());
        QVERIFY(holder.commit(&error));
        QVERIFY(opener.wait(60000));
        QVERIFY2(opener.ok, qPrintable(opener.error));
        QCOMPARE(m_db->schemaVersion(), kLatestSchemaVersion);
    }

    void transactionsRollBackAndNest()
    {
        SettingsRepository settings(*m_db);
        QString error;
        {
            Transaction outer(*m_db);
            QVERIFY(outer.begin(&error));
            QVERIFY(settings.setValue(QStringLiteral("k1"), QStringLiteral("v1"), &error));
            {
                Transaction inner(*m_db);
                QVERIFY(inner.begin(&error));
                QVERIFY(settings.setValue(QStringLiteral("k2"), QStringLiteral("v2"), &error));
            } // inner rolls back only its own work
            QVERIFY2(outer.commit(&error), qPrintable(error));
        }
        QCOMPARE(settings.value(QStringLiteral("k1")), std::optional<QString>(QStringLiteral("v1")));
        QVERIFY(!settings.value(QStringLiteral("k2")));
        {
            Transaction outer(*m_db);
            QVERIFY(outer.begin(&error));
            QVERIFY(settings.setValue(QStringLiteral("k3"), QStringLiteral("v3"), &error));
        }
        QVERIFY(!settings.value(QStringLiteral("k3")));

        // A failed statement aborts the PostgreSQL transaction: commit must say so, not report success.
        {
            Transaction tx(*m_db);
            QVERIFY(tx.begin(&error));
            QVERIFY(settings.setValue(QStringLiteral("k5"), QStringLiteral("v5"), &error));
            QVERIFY(!m_db->exec(QStringLiteral("INSERT INTO settings (key, value) VALUES ('k1', 'dup')"), &error));
            QVERIFY(!tx.commit(&error));
            QVERIFY2(error.contains(QLatin1String("aborted")), qPrintable(error));
        }
        QVERIFY(!settings.value(QStringLiteral("k5")));
        // ... unless the failure was contained in a nested transaction (a savepoint) that rolled back.
        {
            Transaction tx(*m_db);
            QVERIFY(tx.begin(&error));
            QVERIFY(settings.setValue(QStringLiteral("k6"), QStringLiteral("v6"), &error));
            {
                Transaction attempt(*m_db);
                QVERIFY(attempt.begin(&error));
                QVERIFY(!m_db->exec(QStringLiteral("INSERT INTO settings (key, value) VALUES ('k1', 'dup')"), &error));
                QVERIFY(!attempt.commit(&error));
            }
            QVERIFY2(tx.commit(&error), qPrintable(error));
        }
        QCOMPARE(settings.value(QStringLiteral("k6")), std::optional<QString>(QStringLiteral("v6")));
        QCOMPARE(settings.value(QStringLiteral("k1")), std::optional<QString>(QStringLiteral("v1")));
        QVERIFY2(m_db->writable(), "a constraint violation is not a storage failure");
        QVERIFY(settings.setValue(QStringLiteral("k4"), QStringLiteral("v4"), &error)); // depth back to 0
    }

    // A read transaction is one snapshot, as a SQLite read transaction is.
    void readTransactionSeesOneSnapshot()
    {
        Database other;
        QString error;
        QVERIFY2(other.open(m_url, &error), qPrintable(error));
        Transaction read(*m_db, Transaction::Kind::Read);
        QVERIFY(read.begin(&error));
        QCOMPARE(m_db->changeCounter(), std::optional<qint64>(0));
        QVERIFY(other.bumpChangeCounter(&error));
        QCOMPARE(m_db->changeCounter(), std::optional<qint64>(0));
        QVERIFY(read.commit(&error));
        QCOMPARE(m_db->changeCounter(), std::optional<qint64>(1));
    }

    void readOnlySessionNeverWrites()
    {
        Database reader;
        QString error;
        QVERIFY2(reader.open(m_url, &error, Database::OpenMode::ReadOnly), qPrintable(error));
        QVERIFY(!reader.writable());
        QCOMPARE(reader.changeCounter(), std::optional<qint64>(0));
        QVERIFY(!SettingsRepository(reader).setStrategy(QStringLiteral("round_robin"), &error));
        QVERIFY2(error.contains(QLatin1String("read-only")), qPrintable(error));
        QVERIFY(!reader.writable());
        QCOMPARE(SettingsRepository(*m_db).strategy(), QStringLiteral("capacity_weighted"));
    }

    // Lock waits are bounded (lock_timeout) and reported as contention, not as a broken database.
    void lockTimeoutIsBusyNotStorageFailure()
    {
        Database other;
        QString error;
        QVERIFY2(other.open(m_url, &error), qPrintable(error));
        Transaction holder(*m_db);
        QVERIFY(holder.begin(&error));
        QVERIFY(m_db->bumpChangeCounter(&error)); // row lock on meta.change_counter
        Transaction waiter(other);
        QVERIFY(waiter.begin(&error));
        QVERIFY(other.exec(QStringLiteral("SET LOCAL lock_timeout = '200ms'"), &error));
        QSqlQuery q = other.query();
        QElapsedTimer timer;
        timer.start();
        QVERIFY(!q.exec(QStringLiteral("UPDATE meta SET value = '7' WHERE key = 'change_counter'")));
        QVERIFY(timer.elapsed() < 4000);
        QVERIFY2(other.isBusy(q.lastError()), qPrintable(q.lastError().nativeErrorCode()));
        QVERIFY(!Database::isStorageFailure(q.lastError(), Database::Dialect::Postgres));
        QVERIFY(other.writable());
        waiter.rollback();
        QVERIFY(holder.commit(&error));
    }

    // The server going away makes the database unwritable; once it is back, the write probe reconnects.
    void lostConnectionRecoversThroughTheProbe()
    {
        SettingsRepository settings(*m_db);
        QString error;
        QVERIFY(settings.setValue(QStringLiteral("before"), QStringLiteral("1"), &error));
        // A long-lived reader (as the dashboard keeps one) with no probe of its own.
        Database reader;
        QVERIFY2(reader.open(m_url, &error, Database::OpenMode::ReadOnly), qPrintable(error));
        QCOMPARE(SettingsRepository(reader).value(QStringLiteral("before")), std::optional<QString>(QStringLiteral("1")));

        QVERIFY2(m_pg.pause(&error), qPrintable(error));
        QVERIFY(!settings.setValue(QStringLiteral("during"), QStringLiteral("1"), &error));
        QVERIFY(!m_db->writable());
        QVERIFY(m_db->connectionLost());
        QVERIFY(!m_db->unwritableReason().isEmpty());
        QVERIFY(!m_db->probeWrite(1, &error));
        QVERIFY(!m_db->writable());
        QVERIFY(!reader.changeCounter(&error));
        QVERIFY(reader.connectionLost());
        QVERIFY2(m_pg.resume(&error), qPrintable(error));
        // The reader reconnects by itself on a later statement, in its read-only session again.
        QTRY_VERIFY_WITH_TIMEOUT(reader.changeCounter().has_value(), 5000);
        QVERIFY(!reader.connectionLost());
        QVERIFY(!SettingsRepository(reader).setValue(QStringLiteral("reader"), QStringLiteral("1"), &error));
        QVERIFY2(error.contains(QLatin1String("read-only")), qPrintable(error));
        QVERIFY2(m_db->probeWrite(2, &error), qPrintable(error));
        QVERIFY(m_db->writable());
        QVERIFY2(settings.setValue(QStringLiteral("after"), QStringLiteral("1"), &error), qPrintable(error));
        QCOMPARE(settings.value(QStringLiteral("before")), std::optional<QString>(QStringLiteral("1")));
        QVERIFY(!settings.value(QStringLiteral("during")));
        QCOMPARE(scalar(*m_db, QStringLiteral("SHOW TIME ZONE")).toString(), QStringLiteral("UTC"));
    }

    void storeWorkerRunsJobsAndNoticesOtherReplicas()
    {
        StoreWorker worker;
        worker.setChangePollIntervalMs(50);
        QString error;
        QVERIFY2(worker.start(m_url, &error), qPrintable(error));
        QVERIFY(worker.writable());
        QSignalSpy changed(&worker, &StoreWorker::changeCounterChanged);
        QVERIFY2(worker.runBlocking(
                     [](Database &db, QString *e) {
                         return db.dialect() == Database::Dialect::Postgres &&
                                SettingsRepository(db).setValue(QStringLiteral("from_worker"), QStringLiteral("x"), e);
                     },
                     &error),
                 qPrintable(error));
        // A job that fails rolls back its transaction.
        QVERIFY(!worker.runBlocking(
            [](Database &db, QString *e) {
                return SettingsRepository(db).setValue(QStringLiteral("rolled_back"), QStringLiteral("x"), e) &&
                       db.exec(QStringLiteral("SELECT no_such_column FROM meta"), e);
            },
            &error));
        QVERIFY(worker.writable());
        QCOMPARE(SettingsRepository(*m_db).value(QStringLiteral("from_worker")),
                 std::optional<QString>(QStringLiteral("x")));
        QVERIFY(!SettingsRepository(*m_db).value(QStringLiteral("rolled_back")));
        QVERIFY(changed.wait(5000) || !changed.isEmpty());
        const qint64 seen = changed.constLast().at(0).toLongLong();
        QVERIFY(m_db->bumpChangeCounter(&error));
        QTRY_VERIFY_WITH_TIMEOUT(changed.constLast().at(0).toLongLong() == seen + 1, 5000);
        worker.stop();
    }
};

QTEST_GUILESS_MAIN(tst_StorePostgres)
#include "tst_store_postgres.moc"
