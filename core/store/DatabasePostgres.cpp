#include "store/Database.h"
#include "util/Clock.h"

#include <QCryptographicHash>
#include <QSqlQuery>
#include <QVariant>

// Database's PostgreSQL half: connecting through QPSQL, the session settings, reconnecting after the server
// went away, and the advisory lock that stands in for SQLite's database-wide write lock.

namespace sy {

namespace {

void setError(QString *error, const QString &text)
{
    if (error)
        *error = text;
}

} // namespace

bool Database::openPostgres(const DatabaseLocation &loc, OpenMode mode, QString *error)
{
    if (!QSqlDatabase::isDriverAvailable(QStringLiteral("QPSQL"))) {
        setError(error, QStringLiteral("database %1: the Qt PostgreSQL driver (QPSQL, Debian package libqt6sql6-psql) "
                                       "is not installed")
                            .arg(m_location));
        return false;
    }
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QPSQL"), m_connectionName);
        db.setHostName(loc.host);
        db.setPort(loc.port);
        db.setUserName(loc.user);
        db.setPassword(loc.password);
        db.setDatabaseName(loc.databaseName);
        db.setConnectOptions(loc.postgresConnectOptions());
        if (!db.open()) {
            // libpq's message names host, port and user, never the password.
            setError(error, QStringLiteral("cannot connect to database %1: %2")
                                .arg(m_location, db.lastError().databaseText().simplified()));
            db = QSqlDatabase();
            close();
            return false;
        }
    }
    QString step;
    if (!applyPostgresSession(&step) ||
        (mode == OpenMode::ReadOnly && !exec(QStringLiteral("SET default_transaction_read_only = on"), &step))) {
        setError(error, QStringLiteral("database %1: cannot apply settings: %2").arg(m_location, step));
        close();
        return false;
    }
    return true;
}

bool Database::applyPostgresSession(QString *error)
{
    // Times are stored as epoch milliseconds, so the zone only matters to people reading the database by
    // hand. lock_timeout bounds lock waits like SQLite's busy timeout; notices (CREATE ... IF NOT EXISTS that
    // skipped) would otherwise go to stderr.
    return exec(QStringLiteral("SET TIME ZONE 'UTC'"), error) &&
           exec(QStringLiteral("SET lock_timeout = '5s'"), error) &&
           exec(QStringLiteral("SET client_min_messages = warning"), error) &&
           exec(QStringLiteral("SET application_name = 'switchyard'"), error);
}

bool Database::reconnectPostgres(QString *error)
{
    if (m_transactionDepth != 0) {
        setError(error, QStringLiteral("cannot reconnect inside a transaction"));
        return false;
    }
    QSqlDatabase db = connection();
    db.close();
    if (!db.open()) {
        setError(error, db.lastError().databaseText().simplified());
        return false;
    }
    m_connectionLost = false;
    const bool ok = applyPostgresSession(error) &&
                    (m_mode != OpenMode::ReadOnly || exec(QStringLiteral("SET default_transaction_read_only = on"), error));
    if (!ok)
        m_connectionLost = true;
    return ok;
}

void Database::reconnectIfLost()
{
    if (!m_connectionLost || m_transactionDepth != 0 || m_dialect != Dialect::Postgres)
        return;
    const qint64 now = SystemClock::instance().monotonicMs();
    // An unreachable host may take connect_timeout to refuse: do not pay that on every statement.
    if (m_lastReconnectMs >= 0 && now - m_lastReconnectMs < 1000)
        return;
    m_lastReconnectMs = now;
    QString ignored;
    reconnectPostgres(&ignored);
}

namespace {

// A stable 64-bit key for an advisory lock (qHash is seeded per process, and every replica must derive the same).
qint64 advisoryKey(const QString &scope)
{
    const QByteArray name = QByteArrayLiteral("switchyard:") + scope.toUtf8();
    const QByteArray digest = QCryptographicHash::hash(name, QCryptographicHash::Sha256);
    qint64 key = 0;
    for (int i = 0; i < 8; ++i)
        key = (key << 8) | quint8(digest.at(i));
    return key;
}

} // namespace

bool Database::lockForWrite(const QString &scope, QString *error)
{
    if (m_transactionDepth == 0) {
        setError(error, QStringLiteral("lockForWrite needs an open transaction"));
        return false;
    }
    if (m_dialect == Dialect::Sqlite)
        return true;
    return exec(QStringLiteral("SELECT pg_advisory_xact_lock(%1)").arg(advisoryKey(scope)), error);
}

bool Database::tryLockForWrite(const QString &scope, bool *taken, QString *error)
{
    *taken = false;
    if (m_transactionDepth == 0) {
        setError(error, QStringLiteral("tryLockForWrite needs an open transaction"));
        return false;
    }
    if (m_dialect == Dialect::Sqlite) {
        *taken = true;
        return true;
    }
    QSqlQuery q = query();
    if (!prepare(q, QStringLiteral("SELECT pg_try_advisory_xact_lock(%1)").arg(advisoryKey(scope)), error) ||
        !exec(q, error))
        return false;
    *taken = q.next() && q.value(0).toBool();
    return true;
}

} // namespace sy
