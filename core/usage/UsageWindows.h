#pragma once

#include <QByteArray>
#include <QJsonObject>
#include <QList>
#include <QPair>
#include <QString>
#include <optional>

namespace sy {

// One quota window as the upstream reports it. Every field may be unknown: a missing number is
// never treated as zero here, only by policies that say so explicitly.
struct QuotaWindow
{
    std::optional<double> usedPercent; // 0..100 (values above 100 are clamped to 100)
    std::optional<int> windowMinutes;
    std::optional<qint64> resetAtMs; // epoch ms

    bool isEmpty() const { return !usedPercent && !windowMinutes && !resetAtMs; }
    bool operator==(const QuotaWindow &o) const
    {
        return usedPercent == o.usedPercent && windowMinutes == o.windowMinutes && resetAtMs == o.resetAtMs;
    }
    bool operator!=(const QuotaWindow &o) const { return !(*this == o); }
};

struct AccountUsage
{
    QuotaWindow primary;   // the 5-hour window (300 min)
    QuotaWindow secondary; // the weekly window (10080 min)
    std::optional<bool> hasCredits;
    std::optional<bool> unlimited;
    std::optional<double> creditsBalance;
    qint64 observedAtMs = 0;

    // True when no usage fact at all is known (observedAtMs does not count).
    bool isEmpty() const
    {
        return primary.isEmpty() && secondary.isEmpty() && !hasCredits && !unlimited && !creditsBalance;
    }
};

// What GET /wham/usage says: the windows and credits plus the account's plan ("plus", "pro", ...).
struct WhamUsage
{
    AccountUsage usage;
    QString planType; // empty when absent
};

// From the x-codex-* rate-limit headers of any upstream response (names compared case-insensitively).
// Missing or unparsable values stay unknown.
AccountUsage usageFromHeaders(const QList<QPair<QByteArray, QByteArray>> &headers, qint64 nowMs);

// From the data of a `codex.rate_limits` stream event. nullopt when it carries no usable fact.
std::optional<AccountUsage> usageFromRateLimitsEvent(const QJsonObject &codexRateLimitsEventData, qint64 nowMs);

// From the JSON body of GET /wham/usage. nullopt when it carries no usable fact.
std::optional<WhamUsage> usageFromWhamUsage(const QJsonObject &whamUsage, qint64 nowMs);

// Field by field: a value known in `newer` replaces the one in `older`; unknown values in `newer` keep the
// older knowledge, except facts of a window that had already reset when `newer` was observed (an old reset
// time is dropped next to a fresh percentage, an old percentage next to a new reset time).
// observedAtMs becomes the later of the two.
AccountUsage merge(const AccountUsage &older, const AccountUsage &newer);

// Used percent as of nowMs: once the window's reset time has passed the window counts as 0 % used
// (the upstream starts a fresh window), even before new numbers arrive. nullopt when unknown.
std::optional<double> effectiveUsedPercent(const QuotaWindow &window, qint64 nowMs);

// True when the window is known to be used up (>= 100 %) and its reset time has not passed yet.
bool isExhausted(const QuotaWindow &window, qint64 nowMs);

} // namespace sy
