#include "store/Database.h"

#include "store/Schema.h"
#include "util/Clock.h"
#include "util/Faults.h"

#include <QDir>
#include <QFileInfo>
#include <QStorageInfo>
#include <QThread>
#include <QVariant>
#include <atomic>

namespace sy {

namespace {

std::atomic<quint64> s_connectionCounter{0};

void setError(QString *error, const QString &text)
{
    if (error)
        *error = text;
}

// SQLite primary result codes (sqlite3.h); extended codes carry the primary one in their low byte.
enum SqliteCode
{
    Busy = 5,
    Locked = 6,
    ReadOnly = 8,
    IoError = 10,
    Corrupt = 11,
    Full = 13,
    CantOpen = 14,
    NotADatabase = 26
};

// Test-only (fault build, switch "store-full"): while the file named by SWITCHYARD_FAULT_STORE_FULL_FLAG exists,
// every statement that changes rows fails the way a full disk makes it fail, so tests can take the store away
// and give it back at an exact moment without mounting anything (tst_store_realfs fills a real tmpfs instead).
// In a product build SY_FAULT is the constant false.
bool injectedStoreFull(const QString &sql)
{
    if (!SY_FAULT("store-full"))
        return false;
    static const QString flag = qEnvironmentVariable("SWITCHYARD_FAULT_STORE_FULL_FLAG");
    if (flag.isEmpty() || !QFileInfo::exists(flag))
        return false;
    const QString head = sql.trimmed().left(6).toUpper();
    return head == QLatin1String("INSERT") || head == QLatin1String("UPDATE") || head == QLatin1String("DELETE");
}

QSqlError injectedFullError(SqlDialect dialect)
{
    return dialect == SqlDialect::Postgres
               ? QSqlError(QStringLiteral("could not extend file: No space left on device"),
                           QStringLiteral("could not extend file: No space left on device"),
                           QSqlError::StatementError, QStringLiteral("53100"))
               : QSqlError(QStringLiteral("database or disk is full"), QStringLiteral("database or disk is full"),
                           QSqlError::StatementError, QStringLiteral("13"));
}

} // namespace

Database::Database()
{
    m_connectionName = QStringLiteral("switchyard-%1-%2")
                           .arg(++s_connectionCounter)
                           .arg(reinterpret_cast<quintptr>(QThread::currentThread()), 0, 16);
}

Database::~Database()
{
    close();
}

bool Database::open(const QString &location, QString *error, OpenMode mode)
{
    close();
    m_mode = mode;
    // A plain string is a SQLite path as it always was (relative ones included); URLs are parsed.
    DatabaseLocation loc;
    if (location.contains(QLatin1String("://")) || location.startsWith(QLatin1String("sqlite:"))) {
        QString parseError;
        const std::optional<DatabaseLocation> parsed = DatabaseLocation::parse(location, &parseError);
        if (!parsed) {
            m_location.clear();
            setError(error, QStringLiteral("invalid database location: ") + parseError);
            return false;
        }
        loc = *parsed;
    } else {
        loc.sqlitePath = location;
    }
    m_dialect = loc.dialect;
    m_location = loc.redacted();
    const bool opened =
        m_dialect == Dialect::Sqlite ? openSqlite(loc, mode, error) : openPostgres(loc, mode, error);
    if (!opened) {
        noteFileSystemProblem(loc, error);
        return false;
    }
    m_writable = mode == OpenMode::ReadWrite;
    m_unwritableReason = m_writable ? QString() : QStringLiteral("opened read-only");

    QString step;
    const auto fail = [&](const QString &what) {
        setError(error, QStringLiteral("database %1: %2: %3").arg(m_location, what, step));
        noteFileSystemProblem(loc, error);
        close();
        return false;
    };
    // Reading the schema also proves the file is a SQLite database at all.
    const int version = schemaVersion(&step);
    if (version < 0)
        return fail(QStringLiteral("cannot read schema version"));
    if (version > kLatestSchemaVersion) {
        step = QStringLiteral("schema version %1 is newer than this Switchyard understands (%2)")
                   .arg(version)
                   .arg(kLatestSchemaVersion);
        return fail(QStringLiteral("refusing to open"));
    }
    if (mode == OpenMode::ReadOnly) {
        if (version != kLatestSchemaVersion) {
            step = QStringLiteral("schema version %1, expected %2").arg(version).arg(kLatestSchemaVersion);
            return fail(QStringLiteral("not upgraded yet (start Switchyard once to upgrade it)"));
        }
        return true;
    }
    if (m_dialect == Dialect::Sqlite) {
        // WAL lets the dashboard and the CLI read while the store thread writes. A file we may only read keeps
        // its journal mode; the write probe below then reports it.
        QSqlQuery journal = query();
        if (!journal.exec(QStringLiteral("PRAGMA journal_mode = WAL")) && !isStorageFailure(journal.lastError())) {
            step = journal.lastError().text();
            return fail(QStringLiteral("cannot switch to WAL"));
        }
        journal.finish();
    }
    if (version < kLatestSchemaVersion && !migrate(&step))
        return fail(QStringLiteral("cannot upgrade the schema"));
    probeWrite(SystemClock::instance().nowMs(), nullptr);
    return true;
}

bool Database::openSqlite(const DatabaseLocation &loc, OpenMode mode, QString *error)
{
    const QString &path = loc.sqlitePath;
    if (mode == OpenMode::ReadWrite) {
        const QString dir = QFileInfo(path).absolutePath();
        if (!QDir().mkpath(dir)) {
            setError(error, QStringLiteral("cannot create directory %1").arg(dir));
            return false;
        }
    } else if (!QFileInfo::exists(path)) {
        setError(error, QStringLiteral("database %1 does not exist").arg(path));
        return false;
    }

    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), m_connectionName);
        db.setDatabaseName(path);
        QString options = QStringLiteral("QSQLITE_BUSY_TIMEOUT=5000");
        if (mode == OpenMode::ReadOnly)
            options += QStringLiteral(";QSQLITE_OPEN_READONLY");
        db.setConnectOptions(options);
        if (!db.open()) {
            setError(error, QStringLiteral("cannot open database %1: %2").arg(path, db.lastError().text()));
            db = QSqlDatabase();
            close();
            return false;
        }
    }
    QString step;
    if (!exec(QStringLiteral("PRAGMA busy_timeout = 5000"), &step) ||
        !exec(QStringLiteral("PRAGMA foreign_keys = ON"), &step) ||
        !exec(QStringLiteral("PRAGMA synchronous = NORMAL"), &step)) {
        setError(error, QStringLiteral("database %1: cannot apply settings: %2").arg(path, step));
        close();
        return false;
    }
    return true;
}

bool Database::setWalAutoCheckpoint(int pages, QString *error)
{
    if (m_dialect != Dialect::Sqlite)
        return true;
    return exec(QStringLiteral("PRAGMA wal_autocheckpoint = %1").arg(qMax(0, pages)), error);
}

void Database::close()
{
    // Every query must be gone before its connection is removed.
    clearStatements();
    if (QSqlDatabase::contains(m_connectionName)) {
        {
            QSqlDatabase db = QSqlDatabase::database(m_connectionName, false);
            db.close();
        }
        QSqlDatabase::removeDatabase(m_connectionName);
    }
    m_writable = false;
    m_transactionDepth = 0;
    m_abortedBy.clear();
    m_connectionLost = false;
    m_lastReconnectMs = -1;
}

bool Database::isOpen() const
{
    return QSqlDatabase::contains(m_connectionName) && connection().isOpen();
}

QSqlDatabase Database::connection() const
{
    return QSqlDatabase::database(m_connectionName, false);
}

bool Database::exec(QSqlQuery &q, QString *error)
{
    if (injectedStoreFull(q.lastQuery())) {
        const QSqlError full = injectedFullError(m_dialect);
        noteFailure(full);
        setError(error, full.text().trimmed());
        return false;
    }
    if (q.exec())
        return true;
    noteFailure(q.lastError());
    setError(error, q.lastError().text().trimmed());
    return false;
}

bool Database::exec(const QString &sql, QString *error)
{
    if (m_dialect == Dialect::Sqlite) {
        QSqlQuery q = query();
        return prepare(q, sql, error) && exec(q, error);
    }
    if (injectedStoreFull(sql)) {
        const QSqlError full = injectedFullError(m_dialect);
        noteFailure(full);
        setError(error, full.text().trimmed());
        return false;
    }
    reconnectIfLost();
    QSqlQuery q = query();
    // PostgreSQL cannot PREPARE transaction control, SET or DDL: run it as a simple query.
    if (q.exec(sql))
        return true;
    noteFailure(q.lastError());
    setError(error, q.lastError().text().trimmed());
    return false;
}

int Database::latestSchemaVersion()
{
    return kLatestSchemaVersion;
}

int Database::schemaVersion(QString *error)
{
    QSqlQuery q = query();
    const QString exists = m_dialect == Dialect::Sqlite
                               ? QStringLiteral("SELECT count(*) FROM sqlite_master WHERE type = 'table' "
                                                "AND name = 'schema_version'")
                               : QStringLiteral("SELECT CASE WHEN to_regclass('schema_version') IS NULL THEN 0 "
                                                "ELSE 1 END");
    if (!prepare(q, exists, error) || !exec(q, error) || !q.next())
        return -1;
    if (q.value(0).toInt() == 0)
        return 0;
    if (!prepare(q, QStringLiteral("SELECT coalesce(max(version), 0) FROM schema_version"), error) || !exec(q, error) ||
        !q.next())
        return -1;
    return q.value(0).toInt();
}

bool Database::migrate(QString *error)
{
    Transaction tx(*this);
    if (!tx.begin(error))
        return false;
    // Read inside the write lock: two processes starting at once must not both apply a version. On PostgreSQL
    // the lock is an advisory one (BEGIN takes none), waited for longer than ordinary locks: the other
    // replica may be busy migrating.
    if (m_dialect == Dialect::Postgres &&
        (!exec(QStringLiteral("SET LOCAL lock_timeout = '120s'"), error) ||
         !lockForWrite(QStringLiteral("schema migration"), error)))
        return false;
    if (!exec(translateDdl(QStringLiteral("CREATE TABLE IF NOT EXISTS schema_version ("
                                          "version INTEGER PRIMARY KEY, applied_at_ms INTEGER NOT NULL)"),
                           m_dialect),
              error))
        return false;
    const int current = schemaVersion(error);
    if (current < 0)
        return false;
    if (current > kLatestSchemaVersion) {
        setError(error, QStringLiteral("schema version %1 is newer than this Switchyard understands (%2)")
                            .arg(current)
                            .arg(kLatestSchemaVersion));
        return false;
    }
    for (int version = current + 1; version <= kLatestSchemaVersion; ++version) {
        if (!applySchemaVersion(*this, version, error))
            return false;
        QSqlQuery q = query();
        if (!prepare(q, QStringLiteral("INSERT INTO schema_version (version, applied_at_ms) VALUES (?, ?)"), error))
            return false;
        q.addBindValue(version);
        q.addBindValue(QVariant::fromValue<qint64>(SystemClock::instance().nowMs()));
        if (!exec(q, error))
            return false;
    }
    return tx.commit(error);
}

std::optional<qint64> Database::changeCounter(QString *error)
{
    QSqlQuery q = query();
    if (!prepare(q, QStringLiteral("SELECT value FROM meta WHERE key = 'change_counter'"), error) || !exec(q, error))
        return std::nullopt;
    if (!q.next()) {
        setError(error, QStringLiteral("meta.change_counter is missing"));
        return std::nullopt;
    }
    return q.value(0).toLongLong();
}

bool Database::bumpChangeCounter(QString *error)
{
    // BIGINT: PostgreSQL's INTEGER is 32-bit; to SQLite both are its 64-bit integer.
    return exec(QStringLiteral("UPDATE meta SET value = CAST(CAST(value AS BIGINT) + 1 AS TEXT) "
                               "WHERE key = 'change_counter'"),
                error);
}

bool Database::probeWrite(qint64 nowMs, QString *error)
{
    QString probeError;
    if (m_dialect == Dialect::Postgres && m_connectionLost && m_transactionDepth == 0) {
        m_lastReconnectMs = SystemClock::instance().monotonicMs();
        if (!reconnectPostgres(&probeError)) {
            m_writable = false;
            m_unwritableReason = QStringLiteral("connection lost, reconnecting failed: ") + probeError;
            setError(error, m_unwritableReason);
            return false;
        }
    }
    QSqlQuery q = query();
    bool ok = prepare(q,
                      QStringLiteral("INSERT INTO meta (key, value) VALUES ('write_probe_ms', ?) "
                                     "ON CONFLICT (key) DO UPDATE SET value = excluded.value"),
                      &probeError);
    if (ok) {
        q.addBindValue(QString::number(nowMs));
        ok = exec(q, &probeError);
    }
    if (ok) {
        m_writable = true;
        m_unwritableReason.clear();
        return true;
    }
    // A failure that is not about the file (say, a lock held past busy_timeout) proves nothing either way.
    // A storage failure was noted (with its cause) by exec() already.
    if (!isOpen()) {
        m_writable = false;
        m_unwritableReason = probeError;
    }
    setError(error, probeError);
    return false;
}

bool Database::isStorageFailure(const QSqlError &error, Dialect dialect)
{
    if (error.type() == QSqlError::NoError)
        return false;
    if (dialect == Dialect::Postgres) {
        const QString state = error.nativeErrorCode();
        return state.isEmpty() || state.startsWith(QLatin1String("08")) || state.startsWith(QLatin1String("53")) ||
               state.startsWith(QLatin1String("58")) || state == QLatin1String("25006") ||
               state == QLatin1String("57P01") || state == QLatin1String("57P02") ||
               state == QLatin1String("57P03") || state == QLatin1String("XX001") || state == QLatin1String("XX002");
    }
    bool ok = false;
    const int code = error.nativeErrorCode().toInt(&ok) & 0xff;
    if (!ok)
        return false;
    return code == ReadOnly || code == IoError || code == Corrupt || code == Full || code == CantOpen ||
           code == NotADatabase;
}

QString Database::describeStorageFailure(const QSqlError &error, Dialect dialect)
{
    const QString text = (error.databaseText().isEmpty() ? error.text() : error.databaseText()).trimmed();
    QString cause;
    if (dialect == Dialect::Postgres) {
        const QString state = error.nativeErrorCode();
        if (state.isEmpty() || state.startsWith(QLatin1String("08")) || state.startsWith(QLatin1String("57P0")))
            cause = QStringLiteral("connection lost");
        else if (state == QLatin1String("53100"))
            cause = QStringLiteral("disk full");
        else if (state.startsWith(QLatin1String("53")))
            cause = QStringLiteral("server out of resources");
        else if (state == QLatin1String("25006"))
            cause = QStringLiteral("read-only");
        else if (state.startsWith(QLatin1String("58")))
            cause = QStringLiteral("I/O error");
        else if (state.startsWith(QLatin1String("XX")))
            cause = QStringLiteral("corrupt");
    } else {
        bool ok = false;
        switch (error.nativeErrorCode().toInt(&ok) & 0xff) {
        case Full:
            cause = QStringLiteral("disk full");
            break;
        case ReadOnly:
            cause = QStringLiteral("read-only");
            break;
        case IoError:
            cause = QStringLiteral("I/O error");
            break;
        case Corrupt:
        case NotADatabase:
            cause = QStringLiteral("corrupt");
            break;
        case CantOpen:
            cause = QStringLiteral("cannot open the file");
            break;
        default:
            break;
        }
    }
    if (cause.isEmpty())
        return text;
    return text.isEmpty() ? cause : QStringLiteral("%1 (%2)").arg(cause, text);
}

QString Database::describeFileSystemProblem(const QString &path)
{
    QFileInfo info(path);
    QString dir = info.isDir() ? info.absoluteFilePath() : info.absolutePath();
    while (!QFileInfo::exists(dir) && dir != QDir::rootPath())
        dir = QFileInfo(dir).absolutePath();
    const QStorageInfo storage(dir);
    if (!storage.isValid())
        return {};
    if (storage.isReadOnly())
        return QStringLiteral("read-only file system (%1 is mounted read-only)").arg(storage.rootPath());
    // Less than a page or two left: nothing SQLite or a lock file writes fits any more.
    if (storage.bytesAvailable() < 16 * 1024)
        return QStringLiteral("disk full (%1 bytes free on %2)").arg(storage.bytesAvailable()).arg(storage.rootPath());
    return {};
}

void Database::noteFileSystemProblem(const DatabaseLocation &loc, QString *error)
{
    if (!error || loc.dialect != Dialect::Sqlite)
        return;
    const QString problem = describeFileSystemProblem(loc.sqlitePath);
    if (!problem.isEmpty())
        *error = QStringLiteral("%1: %2").arg(problem, *error);
}

bool Database::isBusy(const QSqlError &error) const
{
    if (error.type() == QSqlError::NoError)
        return false;
    if (m_dialect == Dialect::Postgres) {
        const QString state = error.nativeErrorCode();
        return state == QLatin1String("55P03") || state == QLatin1String("40P01") ||
               state == QLatin1String("40001") || state == QLatin1String("57014");
    }
    bool ok = false;
    const int code = error.nativeErrorCode().toInt(&ok) & 0xff;
    return ok && (code == Busy || code == Locked);
}

void Database::noteFailure(const QSqlError &error)
{
    ++m_failures;
    if (m_dialect == Dialect::Postgres && m_transactionDepth > 0 && m_abortedBy.isEmpty())
        m_abortedBy = error.text().trimmed();
    if (!isStorageFailure(error, m_dialect))
        return;
    m_writable = false;
    m_unwritableReason = describeStorageFailure(error, m_dialect);
    if (m_dialect == Dialect::Postgres) {
        const QString state = error.nativeErrorCode();
        m_connectionLost = m_connectionLost || state.isEmpty() || state.startsWith(QLatin1String("08")) ||
                           state.startsWith(QLatin1String("57P0"));
    }
}

} // namespace sy
