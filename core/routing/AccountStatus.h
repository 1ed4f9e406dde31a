#pragma once

#include <QString>
#include <optional>

namespace sy {

// An account's administrative/limit state as stored and shown (DESIGN "Accounts, slots and replicas").
enum class AccountStatus
{
    Active,
    RateLimited,
    QuotaExceeded,
    Paused,
    ReauthRequired,
    Deactivated
};

// "active", "rate_limited", "quota_exceeded", "paused", "reauth_required", "deactivated".
QString accountStatusName(AccountStatus status);
std::optional<AccountStatus> parseAccountStatus(const QString &name);

} // namespace sy
