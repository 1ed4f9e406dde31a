#pragma once

#include "api/translate/RequestScan.h"
#include "api/translate/TokenUsage.h"
#include "ownership/OwnershipTypes.h"
#include "store/AnchorRepository.h"
#include "store/RequestLogRecord.h"
#include "upstream/StageBudget.h"

#include <functional>

class QObject;

namespace sy {

class StoreWorker;

RequestLogRecord::Latency toLogLatency(const StageLatencies &latencies);
RequestLogRecord::Tokens toLogTokens(const TokenUsage &usage);

// What the settlement transaction does besides writing the row: settle the request's open slot claim (exactly
// once) and release its slot, fenced by the claim's epoch; and write the continuity anchor of the response the
// turn served (AccountPool::rememberAnchor), durable before the terminal event reaches the client.
struct Settlement
{
    bool settleClaim = false;
    ReplicaIdentity replica;
    QString responseId;
    qint64 nowMs = 0;
    std::optional<AnchorRecord> anchor;
    // The client's next turn, and its claim, may follow at once: the store thread waits awake for it.
    bool nextClaimSoon = true;
};

// Commits the row (and the settlement) in one transaction on the store thread; `done(ok, outcome)` runs in
// `context`'s thread after the commit (or failure). A request that a reclaim already booked keeps that row.
void writeRequestLog(StoreWorker *store, const RequestLogRecord &record, const Settlement &settlement,
                     QObject *context, std::function<void(bool ok, const SettleOutcome &outcome)> done);

// Sets the model of `requestId`'s booked row from its body's scan, where the row has none (a turn settled while
// its large body was scanned). Kept through a store outage like the row (StoreWorker::submitRetained); a row not
// written yet takes the model when writeRequestLog() writes it.
void fillBookedModel(StoreWorker *store, const QString &requestId, const std::optional<ResponsesScan> &scan);

} // namespace sy
