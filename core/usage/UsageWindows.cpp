#include "usage/UsageWindows.h"

#include <QHash>
#include <QJsonValue>
#include <algorithm>
#include <cmath>

namespace sy {

namespace {

// Anything outside these bounds is garbage from a broken or hostile upstream, not a fact.
constexpr double maxEpochSeconds = 1e11;   // year ~5100
constexpr double maxRelativeSeconds = 1e9; // ~31 years
constexpr double maxWindowMinutes = 1e7;

std::optional<double> finite(double v)
{
    if (!std::isfinite(v))
        return std::nullopt;
    return v;
}

std::optional<double> numberFromBytes(const QByteArray &raw)
{
    bool ok = false;
    const double v = raw.trimmed().toDouble(&ok);
    return ok ? finite(v) : std::nullopt;
}

std::optional<double> numberFromJson(const QJsonValue &v)
{
    if (v.isDouble())
        return finite(v.toDouble());
    if (v.isString())
        return numberFromBytes(v.toString().toUtf8());
    return std::nullopt;
}

std::optional<bool> boolFromText(const QByteArray &raw)
{
    const QByteArray t = raw.trimmed().toLower();
    if (t == "true" || t == "1")
        return true;
    if (t == "false" || t == "0")
        return false;
    return std::nullopt;
}

std::optional<bool> boolFromJson(const QJsonValue &v)
{
    if (v.isBool())
        return v.toBool();
    if (v.isString())
        return boolFromText(v.toString().toUtf8());
    if (v.isDouble() && (v.toDouble() == 0.0 || v.toDouble() == 1.0))
        return v.toDouble() == 1.0;
    return std::nullopt;
}

std::optional<double> percent(std::optional<double> v)
{
    if (!v || *v < 0)
        return std::nullopt;
    return std::min(*v, 100.0);
}

std::optional<int> minutes(std::optional<double> v)
{
    if (!v || *v <= 0 || *v > maxWindowMinutes)
        return std::nullopt;
    return static_cast<int>(std::lround(*v));
}

std::optional<qint64> epochSecondsToMs(std::optional<double> seconds)
{
    if (!seconds || *seconds <= 0 || *seconds > maxEpochSeconds)
        return std::nullopt;
    return static_cast<qint64>(std::llround(*seconds * 1000.0));
}

std::optional<qint64> relativeSecondsToMs(std::optional<double> seconds, qint64 nowMs)
{
    if (!seconds || *seconds < 0 || *seconds > maxRelativeSeconds)
        return std::nullopt;
    return nowMs + static_cast<qint64>(std::llround(*seconds * 1000.0));
}

QJsonValue firstPresent(const QJsonObject &o, std::initializer_list<const char *> keys)
{
    for (const char *k : keys) {
        const QJsonValue v = o.value(QLatin1String(k));
        if (!v.isUndefined() && !v.isNull())
            return v;
    }
    return QJsonValue(QJsonValue::Undefined);
}

// One window object as found in codex.rate_limits events and in /wham/usage: the two sources name the
// length and the reset differently, so both spellings are read. An absolute reset time wins over a
// relative one because it does not depend on when the message was received.
QuotaWindow windowFromJson(const QJsonValue &value, qint64 nowMs)
{
    QuotaWindow w;
    if (!value.isObject())
        return w;
    const QJsonObject o = value.toObject();
    w.usedPercent = percent(numberFromJson(firstPresent(o, {"used_percent"})));
    w.windowMinutes = minutes(numberFromJson(firstPresent(o, {"window_minutes"})));
    if (!w.windowMinutes) {
        const auto seconds = numberFromJson(firstPresent(o, {"limit_window_seconds", "window_seconds"}));
        if (seconds)
            w.windowMinutes = minutes(*seconds / 60.0);
    }
    w.resetAtMs = epochSecondsToMs(numberFromJson(firstPresent(o, {"reset_at", "resets_at"})));
    if (!w.resetAtMs) {
        w.resetAtMs = relativeSecondsToMs(
            numberFromJson(firstPresent(o, {"reset_after_seconds", "resets_in_seconds", "reset_in_seconds"})), nowMs);
    }
    return w;
}

void creditsFromJson(const QJsonValue &value, AccountUsage &usage)
{
    if (!value.isObject())
        return;
    const QJsonObject o = value.toObject();
    usage.hasCredits = boolFromJson(o.value(QLatin1String("has_credits")));
    usage.unlimited = boolFromJson(o.value(QLatin1String("unlimited")));
    usage.creditsBalance = numberFromJson(o.value(QLatin1String("balance")));
}

template <typename T> void takeKnown(std::optional<T> &into, const std::optional<T> &from)
{
    if (from)
        into = from;
}

QuotaWindow mergeWindow(const QuotaWindow &older, const QuotaWindow &newer, qint64 newerObservedAtMs)
{
    QuotaWindow w = older;
    takeKnown(w.usedPercent, newer.usedPercent);
    takeKnown(w.windowMinutes, newer.windowMinutes);
    takeKnown(w.resetAtMs, newer.resetAtMs);
    // Facts about a window that had already ended when the newer reading was taken must not be paired
    // with that reading: an old reset time would zero a fresh percentage, and an old percentage would be
    // attributed to the fresh window.
    const bool olderWindowEnded = older.resetAtMs && *older.resetAtMs <= newerObservedAtMs;
    if (olderWindowEnded && newer.usedPercent && !newer.resetAtMs)
        w.resetAtMs.reset();
    if (olderWindowEnded && newer.resetAtMs && !newer.usedPercent && *newer.resetAtMs != *older.resetAtMs)
        w.usedPercent.reset();
    return w;
}

} // namespace

AccountUsage usageFromHeaders(const QList<QPair<QByteArray, QByteArray>> &headers, qint64 nowMs)
{
    QHash<QByteArray, QByteArray> byName;
    for (const auto &h : headers) {
        const QByteArray name = h.first.trimmed().toLower();
        if (name.startsWith("x-codex-"))
            byName.insert(name, h.second);
    }
    const auto number = [&](const QByteArray &name) -> std::optional<double> {
        const auto it = byName.constFind(name);
        return it == byName.constEnd() ? std::nullopt : numberFromBytes(*it);
    };
    const auto window = [&](const QByteArray &prefix) {
        QuotaWindow w;
        w.usedPercent = percent(number(prefix + "-used-percent"));
        w.windowMinutes = minutes(number(prefix + "-window-minutes"));
        w.resetAtMs = epochSecondsToMs(number(prefix + "-reset-at"));
        if (!w.resetAtMs)
            w.resetAtMs = relativeSecondsToMs(number(prefix + "-reset-after-seconds"), nowMs);
        return w;
    };

    AccountUsage usage;
    usage.primary = window("x-codex-primary");
    usage.secondary = window("x-codex-secondary");
    const auto flag = [&](const QByteArray &name) -> std::optional<bool> {
        const auto it = byName.constFind(name);
        return it == byName.constEnd() ? std::nullopt : boolFromText(*it);
    };
    usage.hasCredits = flag("x-codex-credits-has-credits");
    usage.unlimited = flag("x-codex-credits-unlimited");
    usage.creditsBalance = number("x-codex-credits-balance");
    usage.observedAtMs = nowMs;
    return usage;
}

std::optional<AccountUsage> usageFromRateLimitsEvent(const QJsonObject &data, qint64 nowMs)
{
    // The windows normally sit under "rate_limits"; accept them at the top level too so a caller may pass
    // either the whole event or its rate_limits member.
    const QJsonValue nested = data.value(QLatin1String("rate_limits"));
    const QJsonObject limits = nested.isObject() ? nested.toObject() : data;

    AccountUsage usage;
    usage.primary = windowFromJson(limits.value(QLatin1String("primary")), nowMs);
    usage.secondary = windowFromJson(limits.value(QLatin1String("secondary")), nowMs);
    const QJsonValue credits = data.value(QLatin1String("credits"));
    creditsFromJson(credits.isObject() ? credits : limits.value(QLatin1String("credits")), usage);
    usage.observedAtMs = nowMs;
    if (usage.isEmpty())
        return std::nullopt;
    return usage;
}

std::optional<WhamUsage> usageFromWhamUsage(const QJsonObject &whamUsage, qint64 nowMs)
{
    WhamUsage result;
    const QJsonObject limits = whamUsage.value(QLatin1String("rate_limit")).toObject();
    result.usage.primary = windowFromJson(limits.value(QLatin1String("primary_window")), nowMs);
    result.usage.secondary = windowFromJson(limits.value(QLatin1String("secondary_window")), nowMs);
    creditsFromJson(whamUsage.value(QLatin1String("credits")), result.usage);
    result.usage.observedAtMs = nowMs;
    const QJsonValue plan = whamUsage.value(QLatin1String("plan_type"));
    if (plan.isString())
        result.planType = plan.toString().trimmed();
    if (result.usage.isEmpty() && result.planType.isEmpty())
        return std::nullopt;
    return result;
}

AccountUsage merge(const AccountUsage &older, const AccountUsage &newer)
{
    AccountUsage m = older;
    m.primary = mergeWindow(older.primary, newer.primary, newer.observedAtMs);
    m.secondary = mergeWindow(older.secondary, newer.secondary, newer.observedAtMs);
    takeKnown(m.hasCredits, newer.hasCredits);
    takeKnown(m.unlimited, newer.unlimited);
    takeKnown(m.creditsBalance, newer.creditsBalance);
    m.observedAtMs = std::max(older.observedAtMs, newer.observedAtMs);
    return m;
}

std::optional<double> effectiveUsedPercent(const QuotaWindow &window, qint64 nowMs)
{
    if (window.resetAtMs && *window.resetAtMs <= nowMs)
        return 0.0;
    return window.usedPercent;
}

bool isExhausted(const QuotaWindow &window, qint64 nowMs)
{
    const auto used = effectiveUsedPercent(window, nowMs);
    return used && *used >= 100.0;
}

} // namespace sy
