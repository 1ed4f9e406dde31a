#include "store/Database.h"

#include "store/Schema.h"
#include "util/Clock.h"

#include <QDir>
#include <QFileInfo>
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
    ReadOnly = 8,
    IoError = 10,
    Corrupt = 11,
    Full = 13,
    CantOpen = 14,
    NotADatabase = 26
};

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

bool Database::open(const QString &path, QString *error, OpenMode mode)
{
    close();
    m_path = path;
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
    m_writable = mode == OpenMode::ReadWrite;
    m_unwritableReason = m_writable ? QString() : QStringLiteral("opened read-only");

    QString step;
    const auto fail = [&](const QString &what) {
        setError(error, QStringLiteral("database %1: %2: %3").arg(path, what, step));
        close();
        return false;
    };
    if (!exec(QStringLiteral("PRAGMA busy_timeout = 5000"), &step) ||
        !exec(QStringLiteral("PRAGMA foreign_keys = ON"), &step) ||
        !exec(QStringLiteral("PRAGMA synchronous = NORMAL"), &step))
        return fail(QStringLiteral("cannot apply settings"));
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
    // WAL lets the dashboard and the CLI read while the store thread writes. A file we may only read keeps
    // its journal mode; the write probe below then reports it.
    QSqlQuery journal = query();
    if (!journal.exec(QStringLiteral("PRAGMA journal_mode = WAL")) && !isStorageFailure(journal.lastError())) {
        step = journal.lastError().text();
        return fail(QStringLiteral("cannot switch to WAL"));
    }
    journal.finish();
    if (version < kLatestSchemaVersion && !migrate(&step))
        return fail(QStringLiteral("cannot upgrade the schema"));
    probeWrite(SystemClock::instance().nowMs(), nullptr);
    return true;
}

void Database::close()
{
    if (QSqlDatabase::contains(m_connectionName)) {
        {
            QSqlDatabase db = QSqlDatabase::database(m_connectionName, false);
            db.close();
        }
        QSqlDatabase::removeDatabase(m_connectionName);
    }
    m_writable = false;
    m_transactionDepth = 0;
}

bool Database::isOpen() const
{
    return QSqlDatabase::contains(m_connectionName) && connection().isOpen();
}

QSqlDatabase Database::connection() const
{
    return QSqlDatabase::database(m_connectionName, false);
}

QSqlQuery Database::query() const
{
    return QSqlQuery(connection());
}

bool Database::prepare(QSqlQuery &q, const QString &sql, QString *error)
{
    if (q.prepare(sql))
        return true;
    noteFailure(q.lastError());
    setError(error, q.lastError().text());
    return false;
}

bool Database::exec(QSqlQuery &q, QString *error)
{
    if (q.exec())
        return true;
    noteFailure(q.lastError());
    setError(error, q.lastError().text());
    return false;
}

bool Database::exec(const QString &sql, QString *error)
{
    QSqlQuery q = query();
    return prepare(q, sql, error) && exec(q, error);
}

int Database::latestSchemaVersion()
{
    return kLatestSchemaVersion;
}

int Database::schemaVersion(QString *error)
{
    QSqlQuery q = query();
    if (!prepare(q,
                 QStringLiteral("SELECT count(*) FROM sqlite_master WHERE type = 'table' "
                                "AND name = 'schema_version'"),
                 error) ||
        !exec(q, error) || !q.next())
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
    // Read inside the write lock: two processes starting at once must not both apply a version.
    if (!exec(QStringLiteral("CREATE TABLE IF NOT EXISTS schema_version ("
                             "version INTEGER PRIMARY KEY, applied_at_ms INTEGER NOT NULL)"),
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
        q.addBindValue(SystemClock::instance().nowMs());
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
    return exec(QStringLiteral("UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) "
                               "WHERE key = 'change_counter'"),
                error);
}

bool Database::probeWrite(qint64 nowMs, QString *error)
{
    QSqlQuery q = query();
    QString probeError;
    bool ok = prepare(q, QStringLiteral("INSERT OR REPLACE INTO meta (key, value) VALUES ('write_probe_ms', ?)"),
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
    if (isStorageFailure(q.lastError()) || !isOpen()) {
        m_writable = false;
        m_unwritableReason = probeError;
    }
    setError(error, probeError);
    return false;
}

bool Database::isStorageFailure(const QSqlError &error)
{
    if (error.type() == QSqlError::NoError)
        return false;
    bool ok = false;
    const int code = error.nativeErrorCode().toInt(&ok) & 0xff;
    if (!ok)
        return false;
    return code == ReadOnly || code == IoError || code == Corrupt || code == Full || code == CantOpen ||
           code == NotADatabase;
}

void Database::noteFailure(const QSqlError &error)
{
    if (!isStorageFailure(error))
        return;
    m_writable = false;
    m_unwritableReason = error.databaseText().isEmpty() ? error.text() : error.databaseText();
}

// ---- Transaction ----

Transaction::Transaction(Database &db, Kind kind) : m_db(db), m_kind(kind) {}

Transaction::~Transaction()
{
    if (m_depth >= 0 && !m_finished)
        rollback();
}

bool Transaction::begin(QString *error)
{
    const int depth = m_db.m_transactionDepth;
    const QString sql = depth == 0
                            ? (m_kind == Kind::Write ? QStringLiteral("BEGIN IMMEDIATE") : QStringLiteral("BEGIN"))
                            : QStringLiteral("SAVEPOINT sy_%1").arg(depth);
    if (!m_db.exec(sql, error))
        return false;
    m_depth = depth;
    m_db.m_transactionDepth = depth + 1;
    return true;
}

bool Transaction::commit(QString *error)
{
    if (m_depth < 0 || m_finished) {
        setError(error, QStringLiteral("transaction not active"));
        return false;
    }
    const QString sql = m_depth == 0 ? QStringLiteral("COMMIT") : QStringLiteral("RELEASE sy_%1").arg(m_depth);
    if (!m_db.exec(sql, error)) {
        rollback();
        return false;
    }
    m_finished = true;
    m_db.m_transactionDepth = m_depth;
    return true;
}

void Transaction::rollback()
{
    if (m_depth < 0 || m_finished)
        return;
    m_finished = true;
    // Errors here are ignored on purpose: SQLite may already have rolled back (after SQLITE_FULL, say).
    QString ignored;
    if (m_depth == 0) {
        m_db.exec(QStringLiteral("ROLLBACK"), &ignored);
    } else {
        m_db.exec(QStringLiteral("ROLLBACK TO sy_%1").arg(m_depth), &ignored);
        m_db.exec(QStringLiteral("RELEASE sy_%1").arg(m_depth), &ignored);
    }
    m_db.m_transactionDepth = m_depth;
}

} // namespace sy
