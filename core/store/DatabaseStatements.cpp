// Database's statements: the per-connection statement cache (StatementScope, prepare) and how values are bound.
#include "store/Database.h"

#include <QSqlResult>
#include <QVariant>
#include <algorithm>

namespace sy {

namespace {

void setError(QString *error, const QString &text)
{
    if (error)
        *error = text;
}

// A second handle on the same compiled statement: the cache and the caller's query share one QSqlResult.
// Qt 6 deprecates copying QSqlQuery because the sharing surprises callers; here the sharing is the point.
QSqlQuery share(const QSqlQuery &q)
{
    QT_WARNING_PUSH
    QT_WARNING_DISABLE_DEPRECATED
    return QSqlQuery(q);
    QT_WARNING_POP
}

// QSqlResult::boundValues() is the list both SQL drivers bind from when a prepared statement runs (QSQLite
// and QPSQL read it in exec()). It is protected; a pointer to it taken in a derived class may be applied to
// any QSqlResult.
struct ResultValues : QSqlResult
{
    static QList<QVariant> &of(const QSqlResult *r) { return (r->*(&ResultValues::boundValues))(); }
};

} // namespace

void Database::clearStatements()
{
    m_statementsInUse.clear();
    m_statements.clear();
}

size_t Database::SqlTextHash::operator()(const QString &sql) const noexcept
{
    const QStringView text(sql);
    return qHash(text.right(qMin<qsizetype>(text.size(), 48)), size_t(text.size()));
}

Database::StatementScope::StatementScope(Database &db)
    : m_db(db), m_mark(db.m_statementsInUse.size()), m_failuresAtStart(db.m_failures)
{
    ++m_db.m_statementScopes;
}

Database::StatementScope::~StatementScope()
{
    --m_db.m_statementScopes;
    // A statement may leave a failed job with values bound but never executed (an injected or real failure
    // between its binds and its exec, e.g. a BEGIN that failed): Qt appends further positional binds after
    // those, so its next use would fail with "Parameter count mismatch". After any failure the scope's
    // statements are dropped and compiled afresh next time; failures are rare, compiling is cheap then.
    const bool failed = m_db.m_failures != m_failuresAtStart;
    // close() may have emptied the list under an open scope.
    while (m_db.m_statementsInUse.size() > m_mark) {
        StatementCache::value_type *statement = m_db.m_statementsInUse.takeLast();
        statement->second.query.finish();
        if (failed)
            m_db.m_statements.erase(QString(statement->first)); // a copy: the key dies with the element
        else
            statement->second.inUse = false;
    }
}

QSqlQuery Database::query() const
{
    QSqlQuery q(connection());
    // Forward-only on SQLite: every statement here is read once, front to back. Otherwise Qt's cached result
    // makes room for 128 rows of QVariants on every exec() and destroys them again (callgrind of a claim and
    // its settlement: a fifth of the store thread's instructions). Not on PostgreSQL, where a forward-only
    // query streams its rows and starting another statement on the connection drops those not read yet.
    if (m_dialect == Dialect::Sqlite)
        q.setForwardOnly(true);
    return q;
}

bool Database::prepare(QSqlQuery &q, const QString &sql, QString *error)
{
    reconnectIfLost();
    const bool caching = m_statementScopes > 0 && m_dialect == Dialect::Sqlite;
    if (caching) {
        const auto it = m_statements.find(sql);
        if (it != m_statements.end() && !it->second.inUse) {
            it->second.inUse = true;
            m_statementsInUse.append(&*it);
            q = share(it->second.query);
            return true;
        }
        // q may share its result with a cached statement: preparing on it would recompile that one.
        QSqlQuery fresh = query();
        fresh.setForwardOnly(q.isForwardOnly());
        fresh.setNumericalPrecisionPolicy(q.numericalPrecisionPolicy());
        q = std::move(fresh);
    }
    ++m_compiled;
    if (q.prepare(sql)) {
        if (caching && qsizetype(m_statements.size()) < kMaxCachedStatements) {
            const auto [it, added] = m_statements.emplace(sql, CachedStatement{share(q), true});
            if (added)
                m_statementsInUse.append(&*it);
        }
        return true;
    }
    noteFailure(q.lastError());
    setError(error, q.lastError().text().trimmed());
    return false;
}

void Database::bindAll(QSqlQuery &q, const QVariant *values, qsizetype count)
{
    QList<QVariant> &bound = ResultValues::of(q.result());
    bound.resize(count);
    std::copy(values, values + count, bound.begin());
}

} // namespace sy
