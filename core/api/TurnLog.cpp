#include "api/TurnLog.h"

#include "ownership/OwnerSlotRepository.h"
#include "store/RequestLogRepository.h"
#include "store/StoreWorker.h"

#include <QHash>
#include <QLoggingCategory>
#include <QMutex>
#include <QQueue>

Q_LOGGING_CATEGORY(lcTurnLog, "switchyard.requestlog")

namespace sy {

namespace {
std::optional<qint64> known(qint64 v)
{
    return v < 0 ? std::nullopt : std::optional<qint64>(v);
}

// Models a large body's scan found for requests whose rows were not written yet (fillBookedModel): the row,
// written later (its settlement kept in memory through a store outage, or queued behind the fill), takes its
// model from here. Store threads only. An entry stays until newer ones push it out, not until its row is
// written: the row's transaction may still roll back and run again. As many as the store keeps retained writes
// (each fill waits for a row, and no more rows than that wait); one pushed out before any row took it is
// reported lost.
class LateModels
{
public:
    static constexpr int kMaxEntries = StoreWorker::kMaxRetainedWrites;

    // The id of an entry pushed out before any row took its model, or an empty string.
    QString remember(const QString &requestId, const QString &model)
    {
        QMutexLocker lock(&m_mutex);
        if (m_byRequest.contains(requestId))
            return {};
        m_byRequest.insert(requestId, Entry{model, false});
        m_order.enqueue(requestId);
        QString lost;
        while (m_order.size() > kMaxEntries) {
            const QString old = m_order.dequeue();
            if (!m_byRequest.take(old).taken)
                lost = old;
        }
        return lost;
    }

    // The model waiting for `requestId`'s row (empty: none); it counts as taken.
    QString take(const QString &requestId)
    {
        QMutexLocker lock(&m_mutex);
        const auto it = m_byRequest.find(requestId);
        if (it == m_byRequest.end())
            return {};
        it->taken = true;
        return it->model;
    }

private:
    struct Entry
    {
        QString model;
        bool taken = false;
    };
    QMutex m_mutex;
    QHash<QString, Entry> m_byRequest;
    QQueue<QString> m_order;
};

LateModels &lateModels()
{
    static LateModels models;
    return models;
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
            RequestLogRepository log(db);
            // A row booked by someone else (a reclaim) or by an earlier run of this job: a model the scan found
            // before it was there goes into it now.
            const auto lateIntoExisting = [&] {
                const QString late = lateModels().take(record.requestId);
                return late.isEmpty() || log.fillMissingModel(record.requestId, late, error);
            };
            if (settlement.settleClaim) {
                const std::optional<SettleOutcome> settled = OwnerSlotRepository(db).settleTurn(
                    settlement.replica, record.requestId, settlement.responseId, settlement.nowMs, error);
                if (!settled)
                    return false;
                *outcome = *settled;
                if (settled->settledElsewhere)
                    return lateIntoExisting(); // the reclaim that took the slot over booked this request already
            }
            if (log.exists(record.requestId, error))
                return lateIntoExisting();
            if (!error->isEmpty())
                return false;
            if (record.model && !record.model->isEmpty())
                return log.insert(record, error);
            const QString late = lateModels().take(record.requestId);
            if (late.isEmpty())
                return log.insert(record, error);
            RequestLogRecord row = record;
            row.model = late;
            return log.insert(row, error);
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
// it the model: the scan's answer fills it in afterwards, whether the turn is still there or not. Kept through a
// store outage like the row itself, and in either order with it: a row not written yet takes the model when it
// is (LateModels). Best effort: a scan still running when the proxy thread stops (a shutdown) is not answered.
void fillBookedModel(StoreWorker *store, const QString &requestId, const std::optional<ResponsesScan> &scan)
{
    if (!store || !scan || scan->model.isEmpty())
        return;
    store->submitRetained(
        [store, requestId, model = scan->model](Database &db, QString *error) {
            RequestLogRepository log(db);
            bool updated = false;
            if (!log.fillMissingModel(requestId, model, error, &updated))
                return false;
            if (updated || log.exists(requestId, error))
                return true;
            if (!error->isEmpty())
                return false;
            const QString lost = lateModels().remember(requestId, model);
            if (!lost.isEmpty())
                store->reportLostWrite(
                    QStringLiteral("model of %1").arg(lost),
                    QStringLiteral("%1 later models wait for their rows").arg(LateModels::kMaxEntries));
            return true;
        },
        QStringLiteral("model of %1").arg(requestId), nullptr,
        [requestId](bool ok, const QString &error) {
            if (!ok)
                qCWarning(lcTurnLog).noquote() << requestId << "model not added to the request log yet:" << error;
        },
        false);
}

} // namespace sy
