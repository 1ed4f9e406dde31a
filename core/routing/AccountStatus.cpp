#include "routing/AccountStatus.h"

#include <array>
#include <utility>

namespace sy {

namespace {

constexpr std::array<std::pair<AccountStatus, const char *>, 6> statusNames{{
    {AccountStatus::Active, "active"},
    {AccountStatus::RateLimited, "rate_limited"},
    {AccountStatus::QuotaExceeded, "quota_exceeded"},
    {AccountStatus::Paused, "paused"},
    {AccountStatus::ReauthRequired, "reauth_required"},
    {AccountStatus::Deactivated, "deactivated"},
}};

} // namespace

QString accountStatusName(AccountStatus status)
{
    for (const auto &[value, name] : statusNames) {
        if (value == status)
            return QLatin1String(name);
    }
    return QStringLiteral("active");
}

std::optional<AccountStatus> parseAccountStatus(const QString &name)
{
    const QString key = name.trimmed().toLower();
    for (const auto &[value, text] : statusNames) {
        if (key == QLatin1String(text))
            return value;
    }
    return std::nullopt;
}

} // namespace sy
