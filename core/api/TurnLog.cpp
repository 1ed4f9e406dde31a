#include "api/TurnLog.h"

#include "ownership/OwnerSlotRepository.h"
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

void writeRequestLog(StoreWorker *store, const RequestLogRecord &record, const Settlement &settlement,
                     QObject *context, std::function<void(bool ok, const SettleOutcome &outcome)> done)
{
    auto outcome = std::make_shared<SettleOutcome>();
    // Retained through a store outage: the turn ends for its client at once, its row follows when the store is
    // writable again. The job is idempotent (a settled claim or an existing row is left as it is).
    store->submitRetained(
        [record, settlement, outcome](Database &db, QString *error) {
            // First, as a continuation claim would see it; also when a reclaim booked the request already.
            if (settlement.anchor && !AnchorRepository(db).rememberServed(*settlement.anchor, error))
                return false;
            if (settlement.settleClaim) {
                const std::optional<SettleOutcome> settled = OwnerSlotRepository(db).settleTurn(
                    settlement.replica, record.requestId, settlement.responseId, settlement.nowMs, error);
                if (!settled)
                    return false;
                *outcome = *settled;
                if (settled->settledElsewhere)
                    return true; // the reclaim that took the slot over booked this request already
            }
            RequestLogRepository log(db);
            if (log.exists(record.requestId, error))
                return true;
            return error->isEmpty() && log.insert(record, error);
        },
        QStringLiteral("request-log row of %1").arg(record.requestId), context,
        [id = record.requestId, outcome, done](bool ok, const QString &error) {
            if (!ok)
                qCWarning(lcTurnLog).noquote() << "request" << id << "could not be logged yet:" << error;
            done(ok, *outcome);
        },
        settlement.nextClaimSoon);
}

// A turn settled while its large body was still being scanned (its client gone) was booked before anything told
// it the model: the scan's answer fills it in afterwards, whether the turn is still there or not. Best effort: a
// scan still running when the proxy thread stops (a shutdown) is not answered, and a fill that fails (a store
// outage, while the settlement is kept in memory) is only logged.
void fillBookedModel(StoreWorker *store, const QString &requestId, const std::optional<ResponsesScan> &scan)
{
    if (!store || !scan || scan->model.isEmpty())
        return;
    store->submit(
        [requestId, model = scan->model](Database &db, QString *error) {
            return RequestLogRepository(db).fillMissingModel(requestId, model, error);
        },
        nullptr,
        [requestId](bool ok, const QString &error) {
            if (!ok)
                qCWarning(lcTurnLog).noquote() << requestId << "model not added to the request log:" << error;
        });
}

} // namespace sy
