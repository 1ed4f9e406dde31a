#pragma once

#include <QString>

namespace sy::bench {

// Times the durable slot claim on its own, through the proxy's store thread (StoreWorker, urgent submission,
// group commit, WAL checkpointer) and OwnerSlotRepository::claim, on a copy of a benchmark data dir: N claims
// one after another (the c=1 case: each waits for its answer) and N claims in bursts of `burst` submitted at
// once (the c=64 case: the last answer of a burst is what a client at the back sees). Each claimed slot is
// settled (settleTurn) before the next round, outside the timed part. Prints microsecond percentiles.
bool timeClaims(const QString &databasePath, int count, int burst, QString *error);

} // namespace sy::bench
