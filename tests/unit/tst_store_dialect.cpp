// The parts of the PostgreSQL dialect that need no server: the schema type translation, database locations
// (SWITCHYARD_DATABASE_URL) and their redaction, configuration loading, and the storage-failure mapping.
#include "config/Config.h"
#include "store/Database.h"
#include "store/DatabaseLocation.h"
#include "store/Schema.h"

#include <QSqlError>
#include <QTemporaryDir>
#include <QTest>

using namespace sy;

class tst_StoreDialect : public QObject
{
    Q_OBJECT

    QTemporaryDir m_home;

    QHash<QString, QString> env(const QString &databaseUrl) const
    {
        QHash<QString, QString> e{{QStringLiteral("HOME"), m_home.path()}};
        if (!databaseUrl.isNull())
            e.insert(QStringLiteral("SWITCHYARD_DATABASE_URL"), databaseUrl);
        return e;
    }

private slots:
    void translateDdl_data()
    {
        QTest::addColumn<QString>("sqlite");
        QTest::addColumn<QString>("postgres");
        QTest::newRow("types") << "CREATE TABLE t (a INTEGER NOT NULL, b REAL, c BLOB, d TEXT, e INT)"
                               << "CREATE TABLE t (a BIGINT NOT NULL, b DOUBLE PRECISION, c BYTEA, d TEXT, e BIGINT)";
        QTest::newRow("any case") << "x integer, y Real, z blob" << "x BIGINT, y DOUBLE PRECISION, z BYTEA";
        QTest::newRow("whole words only")
            << "integer_ms INTEGER, realm TEXT, blobs INTEGER, points_integer TEXT, int4 INT"
            << "integer_ms BIGINT, realm TEXT, blobs BIGINT, points_integer TEXT, int4 BIGINT";
        QTest::newRow("punctuation is a boundary") << "(INTEGER,REAL)" << "(BIGINT,DOUBLE PRECISION)";
        QTest::newRow("string literals untouched")
            << "kind TEXT DEFAULT 'INTEGER' CHECK (kind IN ('REAL', 'it''s a BLOB')), n INTEGER"
            << "kind TEXT DEFAULT 'INTEGER' CHECK (kind IN ('REAL', 'it''s a BLOB')), n BIGINT";
        QTest::newRow("quoted identifiers untouched") << "\"integer\" INTEGER, \"a \"\"real\"\"\" REAL"
                                                      << "\"integer\" BIGINT, \"a \"\"real\"\"\" DOUBLE PRECISION";
        QTest::newRow("comments untouched") << "a INTEGER -- an INTEGER of ms\n, b BLOB"
                                            << "a BIGINT -- an INTEGER of ms\n, b BYTEA";
        QTest::newRow("version 4 style") << "ALTER TABLE accounts ADD COLUMN version INTEGER NOT NULL DEFAULT 0"
                                         << "ALTER TABLE accounts ADD COLUMN version BIGINT NOT NULL DEFAULT 0";
        QTest::newRow("unterminated literal is copied") << "x 'INTEGER" << "x 'INTEGER";
    }

    void translateDdl()
    {
        QFETCH(QString, sqlite);
        QFETCH(QString, postgres);
        QCOMPARE(sy::translateDdl(sqlite, SqlDialect::Postgres), postgres);
        QCOMPARE(sy::translateDdl(sqlite, SqlDialect::Sqlite), sqlite);
    }

    void parsesPostgresUrls()
    {
        QString error;
        auto loc = DatabaseLocation::parse(
            QStringLiteral("postgresql://sy:p%40ss%3Aw%2Frd@db.example:6543/switch_yard?sslmode=require"), &error);
        QVERIFY2(loc, qPrintable(error));
        QCOMPARE(loc->dialect, SqlDialect::Postgres);
        QCOMPARE(loc->host, QStringLiteral("db.example"));
        QCOMPARE(loc->port, 6543);
        QCOMPARE(loc->user, QStringLiteral("sy"));
        QCOMPARE(loc->password, QStringLiteral("p@ss:w/rd"));
        QCOMPARE(loc->databaseName, QStringLiteral("switch_yard"));
        QCOMPARE(loc->postgresConnectOptions(), QStringLiteral("sslmode=require;connect_timeout=10"));
        QCOMPARE(loc->redacted(),
                 QStringLiteral("postgresql://sy:***@db.example:6543/switch_yard?sslmode=require"));

        loc = DatabaseLocation::parse(QStringLiteral("postgres://u@[::1]/db?connect_timeout=3"), &error);
        QVERIFY2(loc, qPrintable(error));
        QCOMPARE(loc->host, QStringLiteral("::1"));
        QCOMPARE(loc->port, 5432);
        QVERIFY(loc->password.isEmpty());
        QCOMPARE(loc->postgresConnectOptions(), QStringLiteral("connect_timeout=3"));
        QCOMPARE(loc->redacted(), QStringLiteral("postgresql://u@[::1]:5432/db?connect_timeout=3"));
    }

    void parsesSqliteLocations()
    {
        QString error;
        auto loc = DatabaseLocation::parse(QStringLiteral("sqlite:///var/lib/sy/shared.sqlite"), &error);
        QVERIFY2(loc, qPrintable(error));
        QCOMPARE(loc->dialect, SqlDialect::Sqlite);
        QCOMPARE(loc->sqlitePath, QStringLiteral("/var/lib/sy/shared.sqlite"));
        loc = DatabaseLocation::parse(QStringLiteral("/tmp/x/../pool.sqlite"), &error);
        QVERIFY2(loc, qPrintable(error));
        QCOMPARE(loc->sqlitePath, QStringLiteral("/tmp/pool.sqlite"));
        QCOMPARE(loc->redacted(), QStringLiteral("/tmp/pool.sqlite"));
    }

    void rejectsBadLocationsWithoutEchoingThem_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("reason");
        QTest::newRow("no database") << "postgresql://u:hunter2@host" << "database name";
        QTest::newRow("two path parts") << "postgresql://u:hunter2@host/a/b" << "database name";
        QTest::newRow("no user") << "postgresql://host/db" << "needs a user";
        QTest::newRow("bad port") << "postgresql://u:hunter2@host:99999/db" << "valid";
        QTest::newRow("bad sslmode") << "postgresql://u:hunter2@host/db?sslmode=sometimes" << "sslmode";
        // Fuzzing found (tests/fuzz/regressions/config_loader/sslmode-echoes-password): the bad value was quoted.
        QTest::newRow("sslmode holding the password") << "postgresql://u:hunter2@host/db?sslmode=hunter2" << "sslmode";
        QTest::newRow("unknown option") << "postgresql://u:hunter2@host/db?passfile=/x" << "passfile";
        QTest::newRow("bad timeout") << "postgresql://u:hunter2@host/db?connect_timeout=0" << "connect_timeout";
        QTest::newRow("option with space") << "postgresql://u:hunter2@host/db?application_name=a%20b" << "spaces";
        QTest::newRow("fragment") << "postgresql://u:hunter2@host/db#x" << "fragment";
        QTest::newRow("other scheme") << "mysql://u:hunter2@host/db" << "unsupported scheme";
        QTest::newRow("sqlite with host") << "sqlite://hunter2/db.sqlite" << "absolute file";
        QTest::newRow("sqlite relative") << "sqlite:hunter2.sqlite" << "absolute file";
        QTest::newRow("relative path") << "hunter2.sqlite" << "absolute SQLite file path";
        QTest::newRow("directory") << "/tmp/hunter2/" << "absolute SQLite file path";
    }

    void rejectsBadLocationsWithoutEchoingThem()
    {
        QFETCH(QString, text);
        QFETCH(QString, reason);
        QString error;
        QVERIFY(!DatabaseLocation::parse(text, &error));
        QVERIFY2(error.contains(reason), qPrintable(error));
        QVERIFY2(!error.contains(QLatin1String("hunter2")), qPrintable(error));
        QCOMPARE(redactDatabaseLocation(text), QStringLiteral("(invalid database location)"));

        // Configuration: exit-3 error naming the variable, never the password.
        const ConfigResult r = loadConfig({}, env(text));
        QVERIFY(!r.ok());
        QVERIFY2(r.error.startsWith(QLatin1String("SWITCHYARD_DATABASE_URL: ")), qPrintable(r.error));
        QVERIFY2(!r.error.contains(QLatin1String("hunter2")), qPrintable(r.error));
    }

    void configDatabaseLocation()
    {
        ConfigResult r = loadConfig({std::nullopt, m_home.filePath(QStringLiteral("data")), std::nullopt}, env({}));
        QVERIFY2(r.ok(), qPrintable(r.error));
        QCOMPARE(r.config.databaseLocation(), m_home.filePath(QStringLiteral("data/switchyard.sqlite")));
        QVERIFY(!r.config.usesPostgres());

        r = loadConfig({}, env(QStringLiteral("sqlite:///srv/shared/switchyard.sqlite")));
        QVERIFY2(r.ok(), qPrintable(r.error));
        QCOMPARE(r.config.databaseLocation(), QStringLiteral("/srv/shared/switchyard.sqlite"));
        r = loadConfig({}, env(QStringLiteral("/srv/shared/switchyard.sqlite")));
        QVERIFY2(r.ok(), qPrintable(r.error));
        QCOMPARE(r.config.databaseLocation(), QStringLiteral("/srv/shared/switchyard.sqlite"));

        const QString url = QStringLiteral("postgresql://sy:hunter2@127.0.0.1:5433/sy");
        r = loadConfig({}, env(url));
        QVERIFY2(r.ok(), qPrintable(r.error));
        QVERIFY(r.config.usesPostgres());
        QCOMPARE(r.config.databaseLocation(), url);
        QCOMPARE(redactDatabaseLocation(r.config.databaseLocation()),
                 QStringLiteral("postgresql://sy:***@127.0.0.1:5433/sy"));
    }

    void openErrorsNeverShowThePassword()
    {
        // Nothing listens on port 1: the connection is refused at once.
        Database db;
        QString error;
        QVERIFY(!db.open(QStringLiteral("postgresql://sy:hunter2@127.0.0.1:1/sy?connect_timeout=2"), &error));
        QVERIFY2(error.contains(QLatin1String("postgresql://sy:***@127.0.0.1:1/sy")), qPrintable(error));
        QVERIFY2(!error.contains(QLatin1String("hunter2")), qPrintable(error));
        QVERIFY(!db.isOpen());
        QVERIFY(!db.open(QStringLiteral("postgresql://sy:hunter2@127.0.0.1/sy?sslmode=never"), &error));
        QVERIFY2(error.startsWith(QLatin1String("invalid database location")), qPrintable(error));
        QVERIFY2(!error.contains(QLatin1String("hunter2")), qPrintable(error));
    }

    void storageFailureMapping_data()
    {
        QTest::addColumn<int>("dialect");
        QTest::addColumn<QString>("code");
        QTest::addColumn<bool>("storage");
        QTest::addColumn<bool>("busy");
        const int pg = int(SqlDialect::Postgres);
        const int lite = int(SqlDialect::Sqlite);
        QTest::newRow("pg disk full") << pg << "53100" << true << false;
        QTest::newRow("pg read-only transaction") << pg << "25006" << true << false;
        QTest::newRow("pg connection failure") << pg << "08006" << true << false;
        QTest::newRow("pg admin shutdown") << pg << "57P01" << true << false;
        QTest::newRow("pg io error") << pg << "58030" << true << false;
        QTest::newRow("pg nothing reached the server") << pg << "" << true << false;
        QTest::newRow("pg unique violation") << pg << "23505" << false << false;
        QTest::newRow("pg syntax error") << pg << "42601" << false << false;
        QTest::newRow("pg lock timeout") << pg << "55P03" << false << true;
        QTest::newRow("pg deadlock") << pg << "40P01" << false << true;
        QTest::newRow("sqlite full") << lite << "13" << true << false;
        QTest::newRow("sqlite ioerr extended") << lite << "1290" << true << false;
        QTest::newRow("sqlite constraint") << lite << "19" << false << false;
        QTest::newRow("sqlite busy") << lite << "5" << false << true;
    }

    void storageFailureMapping()
    {
        QFETCH(int, dialect);
        QFETCH(QString, code);
        QFETCH(bool, storage);
        QFETCH(bool, busy);
        const QSqlError error(QStringLiteral("driver"), QStringLiteral("database"), QSqlError::StatementError, code);
        QCOMPARE(Database::isStorageFailure(error, SqlDialect(dialect)), storage);
        QVERIFY(!Database::isStorageFailure(QSqlError(), SqlDialect(dialect)));
        if (dialect == int(SqlDialect::Sqlite)) {
            QCOMPARE(Database::isStorageFailure(error), storage); // the default stays SQLite
            Database db;                                           // not open: dialect() is SQLite
            QCOMPARE(db.isBusy(error), busy);
        }
    }
};

QTEST_GUILESS_MAIN(tst_StoreDialect)
#include "tst_store_dialect.moc"
