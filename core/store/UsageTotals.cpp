#include "store/UsageTotals.h"

#include "store/Database.h"

#include <QSqlQuery>
#include <QVariant>

namespace sy {

QHash<QString, TokenTotals> tokenTotalsByAccount(Database &db, qint64 sinceMs, QString *error)
{
    QHash<QString, TokenTotals> out;
    QSqlQuery q = db.query();
    if (!db.prepare(q,
                    QStringLiteral("SELECT account_id, COUNT(*), COALESCE(SUM(tokens_input),0), "
                                   "COALESCE(SUM(tokens_cached),0), COALESCE(SUM(tokens_output),0), "
                                   "COALESCE(SUM(tokens_reasoning),0), COALESCE(SUM(tokens_total),0) "
                                   "FROM request_log WHERE account_id IS NOT NULL AND started_at_ms >= ? "
                                   "GROUP BY account_id"),
                    error))
        return out;
    q.addBindValue(sinceMs);
    if (!db.exec(q, error))
        return out;
    while (q.next()) {
        TokenTotals t;
        t.requests = q.value(1).toLongLong();
        t.input = q.value(2).toLongLong();
        t.cached = q.value(3).toLongLong();
        t.output = q.value(4).toLongLong();
        t.reasoning = q.value(5).toLongLong();
        t.total = q.value(6).toLongLong();
        out.insert(q.value(0).toString(), t);
    }
    return out;
}

} // namespace sy
