#include "data/PoolSummary.h"

#include <algorithm>
#include <cmath>

namespace sy::ui::pool {

const UsageRecordWindow &window(const AccountView &a, Window w)
{
    return w == Window::FiveHour ? a.usage.primary : a.usage.secondary;
}

std::optional<double> remainingPercent(const UsageRecordWindow &w, qint64 nowMs)
{
    if (w.resetAtMs && *w.resetAtMs <= nowMs)
        return 100.0;
    if (!w.usedPercent)
        return std::nullopt;
    return std::clamp(100.0 - *w.usedPercent, 0.0, 100.0);
}

bool countsForCapacity(const AccountView &a)
{
    return a.record.status != QLatin1String("paused") && a.record.status != QLatin1String("deactivated");
}

namespace {

bool windowUsedUp(const UsageRecordWindow &w, qint64 nowMs)
{
    return w.usedPercent && *w.usedPercent >= 100.0 && (!w.resetAtMs || *w.resetAtMs > nowMs);
}

bool limitedStatus(const AccountView &a)
{
    return a.record.status == QLatin1String("rate_limited") || a.record.status == QLatin1String("quota_exceeded");
}

} // namespace

std::optional<qint64> limitResetsAt(const AccountView &a, qint64 nowMs)
{
    std::optional<qint64> at;
    const auto later = [&at, nowMs](const std::optional<qint64> &t) {
        if (t && *t > nowMs && (!at || *t > *at))
            at = t;
    };
    for (const UsageRecordWindow *w : {&a.usage.primary, &a.usage.secondary}) {
        if (windowUsedUp(*w, nowMs))
            later(w->resetAtMs);
    }
    if (limitedStatus(a))
        later(a.record.cooldownUntilMs);
    return at;
}

bool isLimited(const AccountView &a, qint64 nowMs)
{
    if (windowUsedUp(a.usage.primary, nowMs) || windowUsedUp(a.usage.secondary, nowMs))
        return true;
    if (!limitedStatus(a))
        return false;
    // A limited status whose every known reset has passed is eligible again (DESIGN "Selection").
    const bool resetPassed = [&] {
        const std::optional<qint64> cooldown = a.record.cooldownUntilMs;
        if (cooldown && *cooldown > nowMs)
            return false;
        for (const UsageRecordWindow *w : {&a.usage.primary, &a.usage.secondary}) {
            if (w->resetAtMs && *w->resetAtMs <= nowMs)
                return true;
        }
        return cooldown.has_value();
    }();
    return !resetPassed;
}

bool isUsable(const AccountView &a, qint64 nowMs)
{
    if (!countsForCapacity(a) || a.record.status == QLatin1String("reauth_required") || isLimited(a, nowMs))
        return false;
    return !(a.record.cooldownUntilMs && *a.record.cooldownUntilMs > nowMs);
}

std::optional<double> pooledRemaining(const StoreSnapshot &s, Window w, qint64 nowMs)
{
    double sum = 0;
    int n = 0;
    for (const AccountView &a : s.accounts) {
        if (!countsForCapacity(a))
            continue;
        if (const auto r = remainingPercent(window(a, w), nowMs)) {
            sum += *r;
            ++n;
        }
    }
    if (n == 0)
        return std::nullopt;
    return sum / n;
}

std::optional<qint64> earliestReset(const StoreSnapshot &s, qint64 nowMs)
{
    std::optional<qint64> earliest;
    for (const AccountView &a : s.accounts) {
        if (!countsForCapacity(a) || !isLimited(a, nowMs))
            continue;
        const std::optional<qint64> at = limitResetsAt(a, nowMs);
        if (at && (!earliest || *at < *earliest))
            earliest = at;
    }
    return earliest;
}

bool allLimited(const StoreSnapshot &s, qint64 nowMs)
{
    bool any = false;
    for (const AccountView &a : s.accounts) {
        if (!countsForCapacity(a) || a.record.status == QLatin1String("reauth_required"))
            continue;
        any = true;
        if (!isLimited(a, nowMs))
            return false;
    }
    return any;
}

TrayState trayState(const StoreSnapshot &s, bool proxyAnswers, bool storeWritable, qint64 nowMs)
{
    if (!proxyAnswers)
        return TrayState::Stopped;
    if (s.proxyPaused)
        return TrayState::Paused;
    if (allLimited(s, nowMs))
        return TrayState::AllLimited;
    if (!storeWritable || !s.error.isEmpty())
        return TrayState::Degraded;
    bool anyUsable = false;
    for (const AccountView &a : s.accounts) {
        if (!countsForCapacity(a))
            continue;
        if (!isUsable(a, nowMs))
            return TrayState::Degraded;
        anyUsable = true;
    }
    return anyUsable ? TrayState::Serving : TrayState::Degraded;
}

std::optional<int> trayNumber(const StoreSnapshot &s, qint64 nowMs)
{
    const auto lowest = [](std::optional<double> a, std::optional<double> b) -> std::optional<double> {
        if (a && b)
            return std::min(*a, *b);
        return a ? a : b;
    };
    std::optional<double> value;
    switch (s.trayNumber) {
    case TrayNumber::None:
        return std::nullopt;
    case TrayNumber::FiveHour:
        value = pooledRemaining(s, Window::FiveHour, nowMs);
        break;
    case TrayNumber::Weekly:
        value = pooledRemaining(s, Window::Weekly, nowMs);
        break;
    case TrayNumber::Pinned:
        if (const AccountView *a = s.pin ? s.account(s.pin->accountId) : nullptr) {
            value = lowest(remainingPercent(a->usage.primary, nowMs), remainingPercent(a->usage.secondary, nowMs));
            break;
        }
        [[fallthrough]];
    case TrayNumber::Lowest:
        value = lowest(pooledRemaining(s, Window::FiveHour, nowMs), pooledRemaining(s, Window::Weekly, nowMs));
        break;
    }
    if (!value)
        return std::nullopt;
    return int(std::floor(*value));
}

const AccountView *featuredAccount(const StoreSnapshot &s)
{
    if (s.pin) {
        if (const AccountView *a = s.account(s.pin->accountId))
            return a;
    }
    const AccountView *latest = nullptr;
    for (const AccountView &a : s.accounts) {
        if (a.record.lastSelectedMs && (!latest || *a.record.lastSelectedMs > *latest->record.lastSelectedMs))
            latest = &a;
    }
    return latest;
}

} // namespace sy::ui::pool
