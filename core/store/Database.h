#pragma once

#include "store/DatabaseLocation.h"

#include <QList>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QString>
#include <initializer_list>
#include <optional>
#include <unordered_map>

namespace sy {

// One database connection: SQLite (QtSql "QSQLITE", with Switchyard's pragmas: WAL, busy_timeout 5000 ms,
// foreign_keys on, synchronous NORMAL) or PostgreSQL (QtSql "QPSQL": time zone UTC, lock_timeout 5 s, so a
// lock wait is bounded like SQLite's busy timeout). Which one is decided by the location given to open()
// (DatabaseLocation: a file path or a postgresql:// URL). dialect() is there for the rare statement that must
// differ; everything else is written once. Schema rules: Schema.h. Portable SQL for statements:
//  - Upsert with INSERT ... ON CONFLICT (key columns) DO UPDATE SET c = excluded.c (or DO NOTHING); never
//    INSERT OR REPLACE / OR IGNORE / REPLACE INTO. Rows changed: QSqlQuery::numRowsAffected(), never
//    changes(); ids are made by the caller (no last_insert_rowid(), AUTOINCREMENT or rowid; RETURNING works on
//    both).
//  - Bind qint64 for milliseconds and 0/1 ints for flags, never a bool QVariant (PostgreSQL refuses a boolean
//    in a BIGINT column). CAST(x AS BIGINT), not AS INTEGER (32-bit on PostgreSQL). SUM() of integers is
//    NUMERIC on PostgreSQL: read it with toLongLong()/toDouble().
//  - Only positional `?` placeholders, each where its type follows from the context (a column compared or
//    assigned); write CAST(? AS BIGINT) / CAST(? AS TEXT) for a bare `?` (SELECT ?, ? + ?).
//  - No PRAGMA, sqlite_master, rowid, date functions, GLOB, COLLATE NOCASE or LIMIT -1; LIKE differs in case
//    handling, so compare lower(a) = lower(?). DDL, SET and transaction control go through exec(sql).
//  - Transaction::Kind::Write on PostgreSQL is a plain BEGIN (READ COMMITTED), not a database-wide writer
//    lock: make a read-then-write atomic with one statement (UPDATE ... WHERE version = ?, ON CONFLICT ...
//    DO UPDATE ... WHERE) checked by numRowsAffected(), or call lockForWrite(scope) first (a no-op on SQLite,
//    which already serialises writers).
//  - A failed statement aborts the whole PostgreSQL transaction (commit() then fails and rolls back): a
//    statement that may fail and be tolerated runs inside a nested Transaction (a savepoint).
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

    using Dialect = SqlDialect;

    // Opens `location` (a SQLite file path, sqlite:///path or postgresql://user[:password]@host[:port]/db, see
    // DatabaseLocation), creating a SQLite file in ReadWrite mode, applies the connection settings and, in
    // ReadWrite mode, migrates the schema to the latest version. Fails for a location it cannot open, a schema
    // newer than this build understands, an older schema it cannot upgrade (ReadOnly mode or read-only file),
    // or a failed migration. Errors name the location without its password. ReadOnly on PostgreSQL makes every
    // transaction of the session read-only.
    bool open(const QString &location, QString *error, OpenMode mode = OpenMode::ReadWrite);
    void close();
    bool isOpen() const;
    Dialect dialect() const { return m_dialect; }
    // The location for messages: the SQLite file path, or the PostgreSQL URL with its password redacted.
    QString location() const { return m_location; }
    QString path() const { return m_location; }
    QString connectionName() const { return m_connectionName; }
    QSqlDatabase connection() const;

    // A query on this connection; forward-only on SQLite (next() only: no previous(), seek() back or first()).
    QSqlQuery query() const;
    // Prepares `sql` on q; false (with *error) when it does not prepare. Inside a StatementScope (SQLite only)
    // q becomes this connection's cached statement for `sql`, compiled once and reused, unless that statement
    // is already in use in the open scopes (then q gets a fresh one, as outside a scope).
    bool prepare(QSqlQuery &q, const QString &sql, QString *error);

    // Marks a unit of work whose queries are all read before it ends, e.g. one store job. Compiling SQL costs
    // more than running the proxy's small statements, so inside a scope prepare() reuses statements. When a
    // scope ends, every statement handed out in it is reset (QSqlQuery::finish()): a cached statement never
    // keeps a read snapshot or a lock open between units, and none is handed out twice at once. Scopes nest.
    // A query prepared in a scope must not be used after the scope ended.
    class StatementScope
    {
    public:
        explicit StatementScope(Database &db);
        ~StatementScope();
        StatementScope(const StatementScope &) = delete;
        StatementScope &operator=(const StatementScope &) = delete;

    private:
        Database &m_db;
        qsizetype m_mark;
        quint64 m_failuresAtStart;
    };
    // Statements compiled and kept by the cache (tests).
    qsizetype cachedStatementCount() const { return qsizetype(m_statements.size()); }
    // How many times SQL was compiled on this connection (prepare() that did not reuse a cached statement).
    quint64 compiledStatements() const { return m_compiled; }
    // Sets all of q's values at once: q is prepared with positional parameters, and `values` has one value
    // for each of them, in order. The same as one addBindValue() per value, without QSqlResult's
    // bookkeeping for each (it names the position ":N" and indexes that name in a hash: about 2,000
    // instructions a value in callgrind, 40 values per turn). Do not mix it with addBindValue() on one exec().
    static void bindAll(QSqlQuery &q, const QVariant *values, qsizetype count);
    static void bindAll(QSqlQuery &q, std::initializer_list<QVariant> values)
    {
        bindAll(q, values.begin(), qsizetype(values.size()));
    }
    static void bindAll(QSqlQuery &q, const QList<QVariant> &values) { bindAll(q, values.constData(), values.size()); }
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

    // Inside a write transaction: concurrent writers naming the same scope wait for this transaction to end.
    // PostgreSQL: pg_advisory_xact_lock on a key derived from `scope`. SQLite: nothing to do, BEGIN IMMEDIATE
    // already holds the database's only write lock.
    bool lockForWrite(const QString &scope, QString *error);
    // The same lock without the wait: *taken false (and true returned) when another transaction holds it.
    // PostgreSQL: pg_try_advisory_xact_lock; SQLite: always taken.
    bool tryLockForWrite(const QString &scope, bool *taken, QString *error);

    // SQLite: checkpoint from inside the COMMIT that takes the WAL past `pages` pages (PRAGMA
    // wal_autocheckpoint; SQLite's default is 1000, 0 never). PostgreSQL: nothing to do, true.
    bool setWalAutoCheckpoint(int pages, QString *error);

    bool writable() const { return m_writable; }
    QString unwritableReason() const { return m_unwritableReason; }
    // Tries a small real write (meta.write_probe_ms); updates writable() either way. On PostgreSQL a
    // connection that was lost is reopened first.
    bool probeWrite(qint64 nowMs, QString *error);
    // PostgreSQL: the last storage failure was the connection itself. The next prepare() or exec(sql) outside
    // a transaction reconnects (at most once a second), so long-lived readers (the dashboard, the secret
    // store) survive a server restart; writable() still waits for a successful probeWrite().
    bool connectionLost() const { return m_connectionLost; }

    // Errors that mean the database cannot take writes, as opposed to a statement's own fault (a constraint)
    // or contention (busy). SQLite: the primary result codes READONLY, IOERR, CORRUPT, FULL, CANTOPEN, NOTADB.
    // PostgreSQL (SQLSTATE): class 08 (connection), 53 (disk full, out of memory, too many connections), 58
    // (system I/O), 25006 (read-only transaction), 57P01-57P03 (server shutting down), XX001/XX002
    // (corruption), and an error with no SQLSTATE at all (nothing reached the server).
    static bool isStorageFailure(const QSqlError &error, Dialect dialect = Dialect::Sqlite);
    // A storage failure for people: its cause first ("disk full", "read-only", "I/O error", "corrupt",
    // "connection lost"...), then the database's own words in parentheses. What unwritableReason() holds.
    static QString describeStorageFailure(const QSqlError &error, Dialect dialect);
    // Why files at `path` (or the nearest directory that exists) cannot be made or grown, as far as the file
    // system tells: "read-only file system (...)", "disk full (...)", or empty. For errors that do not carry
    // the cause: SQLite says "unable to open database file" on a read-only mount, a lock file just fails.
    static QString describeFileSystemProblem(const QString &path);
    // Contention that a retry may cure: SQLite BUSY/LOCKED; PostgreSQL lock timeout, deadlock, serialization
    // failure, cancelled statement.
    bool isBusy(const QSqlError &error) const;

private:
    friend class Transaction;
    bool openSqlite(const DatabaseLocation &loc, OpenMode mode, QString *error);
    bool openPostgres(const DatabaseLocation &loc, OpenMode mode, QString *error);
    bool applyPostgresSession(QString *error);
    bool reconnectPostgres(QString *error);
    void reconnectIfLost();
    void noteFailure(const QSqlError &error);
    // Puts the file system's word (read-only, full) in front of a failed open's *error.
    static void noteFileSystemProblem(const DatabaseLocation &loc, QString *error);

    void clearStatements();

    struct CachedStatement
    {
        QSqlQuery query;
        bool inUse = false;
    };
    static constexpr qsizetype kMaxCachedStatements = 256;

    QString m_connectionName;
    QString m_location; // redacted
    // Statements are long and many share a prefix; hashing their last 48 characters and their length is enough
    // to tell them apart, and is a tenth of the cost of qHash over the whole text (callgrind).
    struct SqlTextHash
    {
        size_t operator()(const QString &sql) const noexcept;
    };
    using StatementCache = std::unordered_map<QString, CachedStatement, SqlTextHash>;
    StatementCache m_statements;
    // Handed out in the open scopes, in order. Elements of an unordered_map stay where they are until erased.
    QList<StatementCache::value_type *> m_statementsInUse;
    int m_statementScopes = 0;
    quint64 m_compiled = 0;
    quint64 m_failures = 0; // every noted failure; a scope that saw one drops its statements (see StatementScope)
    Dialect m_dialect = Dialect::Sqlite;
    OpenMode m_mode = OpenMode::ReadWrite;
    bool m_writable = false;
    QString m_unwritableReason;
    int m_transactionDepth = 0;
    // PostgreSQL: a statement failed inside the open transaction, which the server has therefore aborted.
    QString m_abortedBy;
    // PostgreSQL: the last storage failure was about the connection itself; when reconnecting was last tried.
    bool m_connectionLost = false;
    qint64 m_lastReconnectMs = -1;
};

// A write transaction on a Database: BEGIN IMMEDIATE when outermost on SQLite (taking the write lock up front,
// so a WAL snapshot never has to be upgraded), BEGIN on PostgreSQL; a SAVEPOINT when nested. A Read
// transaction is a plain BEGIN on SQLite and REPEATABLE READ on PostgreSQL (one snapshot either way). Rolls
// back unless committed.
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
