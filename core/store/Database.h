#pragma once

#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QString>
#include <optional>

namespace sy {

// One SQLite connection (QtSql "QSQLITE") with Switchyard's pragmas: WAL, busy_timeout 5000 ms,
// foreign_keys on, synchronous NORMAL.
//
// Threading: a Database is opened, used and destroyed on one thread. QtSql connections must not cross
// threads, so each Database registers its own uniquely named connection; another thread (the dashboard,
// the CLI, a test) opens its own Database on the same file. The store thread's connection is the writer
// (see StoreWorker).
//
// Writability: open() succeeds on a file it can only read (reads still work) and reports
// writable() == false; a write that later fails because the file became read-only, full or unreadable
// flips writable() to false too, with the reason in unwritableReason(). Only a successful probeWrite()
// sets it back.
class Database
{
public:
    enum class OpenMode
    {
        ReadWrite,
        ReadOnly
    };

    Database();
    ~Database();
    Database(const Database &) = delete;
    Database &operator=(const Database &) = delete;

    // Opens (creating the file in ReadWrite mode), applies the pragmas and, in ReadWrite mode, migrates the
    // schema to the latest version. Fails for a file it cannot open, a schema newer than this build
    // understands, an older schema it cannot upgrade (ReadOnly mode or read-only file), or a failed migration.
    bool open(const QString &path, QString *error, OpenMode mode = OpenMode::ReadWrite);
    void close();
    bool isOpen() const;
    QString path() const { return m_path; }
    QString connectionName() const { return m_connectionName; }
    QSqlDatabase connection() const;

    // A query on this connection.
    QSqlQuery query() const;
    // Prepares `sql` on q; false (with *error) when it does not prepare.
    bool prepare(QSqlQuery &q, const QString &sql, QString *error);
    // Executes a prepared query; on failure sets *error and notes storage failures (see writable()).
    bool exec(QSqlQuery &q, QString *error);
    // Prepares and runs a statement without bound values.
    bool exec(const QString &sql, QString *error);

    // Schema: one row per applied version in `schema_version`.
    static int latestSchemaVersion();
    int schemaVersion(QString *error = nullptr);
    bool migrate(QString *error);

    // meta.change_counter: bumped in the same transaction as every change to accounts or settings made
    // through the repositories, so an instance can poll it (about once a second) to notice other processes'
    // changes. nullopt when it cannot be read.
    std::optional<qint64> changeCounter(QString *error = nullptr);
    bool bumpChangeCounter(QString *error);

    bool writable() const { return m_writable; }
    QString unwritableReason() const { return m_unwritableReason; }
    // Tries a small real write (meta.write_probe_ms); updates writable() either way.
    bool probeWrite(qint64 nowMs, QString *error);

    // SQLite primary result codes that mean the file cannot take writes, as opposed to a statement's own
    // fault (a constraint) or contention (busy).
    static bool isStorageFailure(const QSqlError &error);

private:
    friend class Transaction;
    void noteFailure(const QSqlError &error);

    QString m_connectionName;
    QString m_path;
    bool m_writable = false;
    QString m_unwritableReason;
    int m_transactionDepth = 0;
};

// A write transaction on a Database: BEGIN IMMEDIATE when outermost (taking the write lock up front, so a
// WAL snapshot never has to be upgraded), a SAVEPOINT when nested. Rolls back unless committed.
class Transaction
{
public:
    enum class Kind
    {
        Write,
        Read
    };

    explicit Transaction(Database &db, Kind kind = Kind::Write);
    ~Transaction();
    Transaction(const Transaction &) = delete;
    Transaction &operator=(const Transaction &) = delete;

    bool begin(QString *error);
    bool commit(QString *error);
    void rollback();

private:
    Database &m_db;
    Kind m_kind;
    int m_depth = -1; // -1: not begun
    bool m_finished = false;
};

} // namespace sy
