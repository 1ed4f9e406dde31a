#pragma once

#include <QString>

namespace sy::bench {

// Reads two /api/status answers of the same serve (before and after a load run) and prints, for every stage
// of "turn_stages", what the run added: `NAME_count=N NAME_p50_us=.. NAME_p90_us=.. NAME_p99_us=..`; and the
// run's share of the store thread's waits under "busy_poll": `busy_NAME=N`.
bool printStageDelta(const QString &beforeFile, const QString &afterFile, QString *error);

} // namespace sy::bench
