#include "data/RequestPageQuery.h"

#include "store/Database.h"
#include "store/RequestLogRepository.h"

#include <QElapsedTimer>
#include <QSqlQuery>
#include <QVariantList>

namespace sy::ui {

namespace {

struct Where
{
    QStringList clauses;
    QVariantList values;

    QString sql() const
    {
        return clauses.isEmpty() ? QString() : QStringLiteral(" WHERE ") + clauses.join(QStringLiteral(" AND "));
    }
};

Where whereFor(const RequestFilter &f, SqlDialect dialect)
{
    Where w;
    if (!f.accountId.isEmpty()) {
        w.clauses << QStringLiteral("account_id = ?");
        w.values << f.accountId;
    }
    if (!f.status.isEmpty()) {
        w.clauses << QStringLiteral("status = ?");
        w.values << f.status;
    }
    if (!f.model.isEmpty()) {
        w.clauses << QStringLiteral("model = ?");
        w.values << f.model;
    }
    if (f.fromMs) {
        w.clauses << QStringLiteral("started_at_ms >= ?");
        w.values << QVariant::fromValue<qint64>(*f.fromMs);
    }
    if (f.toMs) {
        w.clauses << QStringLiteral("started_at_ms < ?");
        w.values << QVariant::fromValue<qint64>(*f.toMs);
    }
    const QString search = f.search.trimmed();
    if (!search.isEmpty()) {
        // A plain substring test (no LIKE: its wildcards and case rules differ). SQLite spells it instr(),
        // PostgreSQL strpos(); both scan, the other filters and the keyset order still use the index.
        const QString fn = dialect == SqlDialect::Postgres ? QStringLiteral("strpos") : QStringLiteral("instr");
        w.clauses << QStringLiteral("(%1(request_id, ?) > 0 OR %1(coalesce(upstream_request_id, ''), ?) > 0)").arg(fn);
        w.values << search << search;
    }
    return w;
}

// Runs `sql` (selecting started_at_ms, request_id) and loads the full records of up to `limit` rows.
bool fetchIds(Database &db, const QString &sql, const QVariantList &values, QList<RequestCursor> *ids, QString *error)
{
    QSqlQuery q = db.query();
    q.setForwardOnly(true);
    if (!db.prepare(q, sql, error))
        return false;
    for (const QVariant &v : values)
        q.addBindValue(v);
    if (!db.exec(q, error))
        return false;
    while (q.next())
        ids->append({q.value(0).toLongLong(), q.value(1).toString()});
    return true;
}

bool loadRecords(Database &db, const QList<RequestCursor> &ids, QList<RequestLogRecord> *rows, QString *error)
{
    RequestLogRepository repo(db);
    for (const RequestCursor &c : ids) {
        std::optional<RequestLogRecord> r = repo.find(c.requestId, error);
        if (!r) {
            if (!error->isEmpty())
                return false;
            continue; // gone since the id was read
        }
        rows->append(*r);
    }
    return true;
}

} // namespace

RequestPage loadRequestPage(Database &db, const RequestFilter &filter, const std::optional<RequestCursor> &after,
                            int limit, bool count)
{
    QElapsedTimer timer;
    timer.start();
    RequestPage page;
    Transaction tx(db, Transaction::Kind::Read);
    if (!tx.begin(&page.error))
        return page;
    Where w = whereFor(filter, db.dialect());
    if (count) {
        QSqlQuery q = db.query();
        if (!db.prepare(q, QStringLiteral("SELECT count(*) FROM request_log") + w.sql(), &page.error))
            return page;
        for (const QVariant &v : std::as_const(w.values))
            q.addBindValue(v);
        if (!db.exec(q, &page.error) || !q.next())
            return page;
        page.matching = q.value(0).toLongLong();
    }
    if (after) {
        w.clauses << QStringLiteral("(started_at_ms, request_id) < (?, ?)");
        w.values << QVariant::fromValue<qint64>(after->startedAtMs) << after->requestId;
    }
    QVariantList values = w.values;
    values << limit + 1; // one more than asked tells whether older rows follow
    QList<RequestCursor> ids;
    if (!fetchIds(db,
                  QStringLiteral("SELECT started_at_ms, request_id FROM request_log") + w.sql() +
                      QStringLiteral(" ORDER BY started_at_ms DESC, request_id DESC LIMIT ?"),
                  values, &ids, &page.error))
        return page;
    const bool more = ids.size() > limit;
    if (more)
        ids.removeLast();
    if (!loadRecords(db, ids, &page.rows, &page.error))
        return page;
    if (more && !ids.isEmpty())
        page.next = ids.last();
    page.elapsedMs = timer.elapsed();
    return page;
}

RequestPage loadNewerRequests(Database &db, const RequestFilter &filter, const RequestCursor &than, int limit)
{
    QElapsedTimer timer;
    timer.start();
    RequestPage page;
    Transaction tx(db, Transaction::Kind::Read);
    if (!tx.begin(&page.error))
        return page;
    Where w = whereFor(filter, db.dialect());
    w.clauses << QStringLiteral("(started_at_ms, request_id) > (?, ?)");
    w.values << QVariant::fromValue<qint64>(than.startedAtMs) << than.requestId;
    QVariantList values = w.values;
    values << limit;
    QList<RequestCursor> ids;
    if (!fetchIds(db,
                  QStringLiteral("SELECT started_at_ms, request_id FROM request_log") + w.sql() +
                      QStringLiteral(" ORDER BY started_at_ms DESC, request_id DESC LIMIT ?"),
                  values, &ids, &page.error))
        return page;
    loadRecords(db, ids, &page.rows, &page.error);
    page.elapsedMs = timer.elapsed();
    return page;
}

} // namespace sy::ui
