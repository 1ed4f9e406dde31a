#include "api/TurnLog.h"

#include "store/RequestLogRepository.h"
#include "store/StoreWorker.h"

#include <QLoggingCategory>

Q_LOGGING_CATEGORY(lcTurnLog, "switchyard.requestlog")

namespace sy {

namespace {
std::optional<qint64> known(qint64 v)
{
    return v < 0 ? std::nullopt : std::optional<qint64>(v);
}
} // namespace

RequestLogRecord::Latency toLogLatency(const StageLatencies &l)
{
    RequestLogRecord::Latency r;
    r.queueMs = known(l.queueMs);
    r.connectMs = known(l.connectMs);
    r.firstEventMs = known(l.firstEventMs);
    r.totalMs = known(l.totalMs);
    return r;
}

RequestLogRecord::Tokens toLogTokens(const TokenUsage &u)
{
    RequestLogRecord::Tokens t;
    t.input = u.input;
    t.cached = u.cached;
    t.output = u.output;
    t.reasoning = u.reasoning;
    t.total = u.total;
    return t;
}

void writeRequestLog(StoreWorker *store, const RequestLogRecord &record, QObject *context,
                     std::function<void(bool ok)> done)
{
    store->submit(
        [record](Database &db, QString *error) { return RequestLogRepository(db).insert(record, error); }, context,
        [id = record.requestId, done](bool ok, const QString &error) {
            if (!ok)
                qCWarning(lcTurnLog).noquote() << "request" << id << "could not be logged:" << error;
            done(ok);
        });
}

} // namespace sy
