#pragma once

#include "data/StoreSnapshot.h"

#include <optional>

namespace sy::ui {

enum class Window
{
    FiveHour,
    Weekly
};

// What the tray icon tells at a glance.
enum class TrayState
{
    Serving,    // every account that may serve can
    Degraded,   // serving, but some account needs attention (re-login, backoff) or the store cannot write
    AllLimited, // every account that may serve has hit a limit
    Paused,     // the user paused the proxy
    Stopped,    // the proxy does not answer
};

// Pure readings of a snapshot at time `nowMs`, shared by the tray, the notifications and the overview.
namespace pool {

const UsageRecordWindow &window(const AccountView &a, Window w);
// 100 - used %, clamped to 0..100; 100 once the window's reset time has passed; nullopt when unknown.
std::optional<double> remainingPercent(const UsageRecordWindow &w, qint64 nowMs);
// Paused and deactivated accounts are the user's choice, not capacity: they never count.
bool countsForCapacity(const AccountView &a);
// Limited until a reset: status rate_limited/quota_exceeded, or a window used up, whose reset lies ahead.
bool isLimited(const AccountView &a, qint64 nowMs);
// When a limited account can serve again (the latest of its pending resets and cooldown), if known.
std::optional<qint64> limitResetsAt(const AccountView &a, qint64 nowMs);
// May take a new turn now: counts for capacity, not limited, not waiting for a re-login, no cooldown ahead.
bool isUsable(const AccountView &a, qint64 nowMs);

// Mean remaining % of the accounts that count for capacity and whose window is known.
std::optional<double> pooledRemaining(const StoreSnapshot &s, Window w, qint64 nowMs);
// The earliest moment some limited account serves again.
std::optional<qint64> earliestReset(const StoreSnapshot &s, qint64 nowMs);
bool allLimited(const StoreSnapshot &s, qint64 nowMs);

TrayState trayState(const StoreSnapshot &s, bool proxyAnswers, bool storeWritable, qint64 nowMs);
// The number the tray icon shows for the snapshot's TrayNumber setting (0..100), nullopt for none/unknown.
std::optional<int> trayNumber(const StoreSnapshot &s, qint64 nowMs);
// The account the tooltip names: the pinned one, else the most recently selected one.
const AccountView *featuredAccount(const StoreSnapshot &s);

} // namespace pool

} // namespace sy::ui
