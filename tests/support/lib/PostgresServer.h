#pragma once

#include <QByteArray>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>
#include <memory>

namespace sy::test {

// A throwaway PostgreSQL 15 server for one test process (the Debian recipe: initdb as the postgres user, fsync off): initdb into
// a temporary directory, pg_ctl start on a free 127.0.0.1 port with the unix socket in that directory and
// fsync off, trust authentication for the superuser "postgres". As root (CI), every server command runs as
// the system user postgres, because initdb refuses root. The destructor stops the server and removes it.
//
// Missing binaries are an error, never a skip: start() fails naming the package to install (postgresql).
// The binaries are looked up in SWITCHYARD_PG_BIN, else /usr/lib/postgresql/15/bin.
class PostgresServer
{
public:
    PostgresServer();
    ~PostgresServer();
    PostgresServer(const PostgresServer &) = delete;
    PostgresServer &operator=(const PostgresServer &) = delete;

    // initdb, start, and create the database `database`. False with *error saying what failed.
    bool start(QString *error, const QString &database = QStringLiteral("switchyard"));
    // Stops the server (fast shutdown) and keeps its data; resume() starts it again on the same port.
    bool pause(QString *error);
    bool resume(QString *error);
    bool isRunning() const { return m_running; }

    // An environment variable for the server process alone (pg_ctl start and the postmaster it starts), set before
    // start(): e.g. LOCPATH, so that the server finds a locale compiled by the test.
    void setServerEnvironment(const QString &name, const QString &value) { m_serverEnvironment.insert(name, value); }

    bool createDatabase(const QString &name, QString *error);
    // Runs one SQL command through psql as the superuser (on `database`, the start() one by default).
    bool sql(const QString &command, QString *error, const QString &database = {});
    // postgresql://postgres@127.0.0.1:PORT/NAME (the start() database by default). `password` is put in the
    // URL (the server ignores it: trust authentication) so tests can check that it is never shown.
    QString url(const QString &database = {}, const QString &password = {}) const;
    quint16 port() const { return m_port; }
    QString binDir() const { return m_bin; }

    // pg_dump of a database in plain SQL (data included): what an operator's backup would hold.
    bool dump(const QString &database, QByteArray *out, QString *error);
    // The server log so far (for failure messages).
    QByteArray log() const;

private:
    bool run(const QString &tool, const QStringList &args, QString *error, QByteArray *out = nullptr,
             int timeoutMs = 60000, bool asServer = false) const;
    bool startServer(QString *error);

    std::unique_ptr<QTemporaryDir> m_dir;
    QString m_bin;
    QString m_database;
    quint16 m_port = 0;
    bool m_asPostgresUser = false;
    bool m_initialized = false;
    bool m_running = false;
    QProcessEnvironment m_serverEnvironment;
};

} // namespace sy::test
