#include "usage/UsageRecordConversion.h"

namespace sy {

UsageRecord toUsageRecord(const QString &accountId, const AccountUsage &u)
{
    UsageRecord r;
    r.accountId = accountId;
    r.primary = {u.primary.usedPercent, u.primary.windowMinutes, u.primary.resetAtMs};
    r.secondary = {u.secondary.usedPercent, u.secondary.windowMinutes, u.secondary.resetAtMs};
    r.hasCredits = u.hasCredits;
    r.unlimited = u.unlimited;
    r.creditsBalance = u.creditsBalance;
    r.observedAtMs = u.observedAtMs;
    return r;
}

AccountUsage fromUsageRecord(const UsageRecord &r)
{
    AccountUsage u;
    u.primary = {r.primary.usedPercent, r.primary.windowMinutes, r.primary.resetAtMs};
    u.secondary = {r.secondary.usedPercent, r.secondary.windowMinutes, r.secondary.resetAtMs};
    u.hasCredits = r.hasCredits;
    u.unlimited = r.unlimited;
    u.creditsBalance = r.creditsBalance;
    u.observedAtMs = r.observedAtMs;
    return u;
}

} // namespace sy
