#pragma once

#include "accounts/AccountRecord.h"
#include "usage/UsageWindows.h"

namespace sy {

// The stored form of an account's usage (accounts/AccountRecord.h) and the one routing works with.
UsageRecord toUsageRecord(const QString &accountId, const AccountUsage &usage);
AccountUsage fromUsageRecord(const UsageRecord &record);

} // namespace sy
