#include "routing/Cooldown.h"

#include <algorithm>

namespace sy {

qint64 cooldownUntil(const FailureInfo &info, int consecutiveFailures, qint64 nowMs, int maxBackoffS)
{
    switch (info.cls) {
    case FailureClass::None:
    case FailureClass::RequestError:
    case FailureClass::AuthExpired:
        return 0;
    case FailureClass::RateLimited:
    case FailureClass::QuotaExceeded:
    case FailureClass::Transient:
        break;
    }
    if (info.retryAtMs && *info.retryAtMs > nowMs)
        return *info.retryAtMs;

    const qint64 capS = std::max(1, maxBackoffS);
    qint64 backoffS = std::min<qint64>(backoffFloorS, capS);
    // Doubling stops at the cap, so a long failure streak cannot overflow.
    for (int i = 1; i < consecutiveFailures && backoffS < capS; ++i)
        backoffS = std::min(backoffS * 2, capS);
    return nowMs + backoffS * 1000;
}

} // namespace sy
