#pragma once

#include "api/translate/TokenUsage.h"
#include "store/RequestLogRecord.h"
#include "upstream/StageBudget.h"

#include <functional>

class QObject;

namespace sy {

class StoreWorker;

RequestLogRecord::Latency toLogLatency(const StageLatencies &latencies);
RequestLogRecord::Tokens toLogTokens(const TokenUsage &usage);

// Commits the row on the store thread; `done(ok)` runs in `context`'s thread after the commit (or failure).
void writeRequestLog(StoreWorker *store, const RequestLogRecord &record, QObject *context,
                     std::function<void(bool ok)> done);

} // namespace sy
