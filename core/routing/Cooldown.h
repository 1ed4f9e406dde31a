#pragma once

#include "usage/FailureClassifier.h"

namespace sy {

constexpr int defaultMaxBackoffS = 300;
constexpr int backoffFloorS = 30;

// Until when (epoch ms) an account should not be chosen after `info`. A retry time the upstream gave
// (retryAtMs in the future) is honoured as is, however far away; otherwise the wait doubles per
// consecutive failure from a 30 s floor up to maxBackoffS (30, 60, 120, 240, 300, 300, ...), so a broken
// account is always tried again eventually. consecutiveFailures counts this failure (1 = first).
// Returns 0 (no cooldown) for failures that say nothing about the account being limited: None,
// RequestError (the request's fault) and AuthExpired (the token refresh decides).
// A maxBackoffS below the floor wins over the floor.
qint64 cooldownUntil(const FailureInfo &info, int consecutiveFailures, qint64 nowMs,
                     int maxBackoffS = defaultMaxBackoffS);

} // namespace sy
