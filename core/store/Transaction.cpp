#include "store/Database.h"

namespace sy {

namespace {

void setError(QString *error, const QString &text)
{
    if (error)
        *error = text;
}

} // namespace

Transaction::Transaction(Database &db, Kind kind) : m_db(db), m_kind(kind) {}

Transaction::~Transaction()
{
    if (m_depth >= 0 && !m_finished)
        rollback();
}

bool Transaction::begin(QString *error)
{
    const int depth = m_db.m_transactionDepth;
    QString sql;
    if (depth > 0)
        sql = QStringLiteral("SAVEPOINT sy_%1").arg(depth);
    else if (m_db.dialect() == Database::Dialect::Sqlite)
        sql = m_kind == Kind::Write ? QStringLiteral("BEGIN IMMEDIATE") : QStringLiteral("BEGIN");
    else
        sql = m_kind == Kind::Write ? QStringLiteral("BEGIN") : QStringLiteral("BEGIN ISOLATION LEVEL REPEATABLE READ");
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
    // PostgreSQL answers COMMIT of an aborted transaction with a silent ROLLBACK: report it as the failure it is.
    if (!m_db.m_abortedBy.isEmpty()) {
        setError(error, QStringLiteral("transaction aborted by an earlier failed statement: ") + m_db.m_abortedBy);
        rollback();
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
    // Either way the server's transaction is usable again (or gone).
    m_db.m_abortedBy.clear();
}

} // namespace sy
