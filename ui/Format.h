#pragma once

#include <QCoreApplication>
#include <QString>
#include <optional>

namespace sy::ui {

// How the UI writes numbers, times and statuses, in one place so every page and the tray agree.
class Format
{
    Q_DECLARE_TR_FUNCTIONS(Format)
public:
    // "42%" (rounded), "?" when unknown.
    static QString percent(const std::optional<double> &v);
    // "3 h 12 min", "5 min", "40 s"; for durations >= 0.
    static QString duration(qint64 ms);
    // "in 3 h 12 min" / "now" for a moment ahead of nowMs; "-" when unknown.
    static QString countdown(const std::optional<qint64> &atMs, qint64 nowMs);
    // Local date and time ("2026-11-30 05:00"); "-" when unknown.
    static QString dateTime(const std::optional<qint64> &epochMs);
    // "1.2 M", "35.4 k", "812".
    static QString tokens(qint64 n);
    // The status name people read ("Rate limited" for "rate_limited").
    static QString accountStatus(const QString &status);
    // The stage name people read ("Streaming" for "streaming"); unknown names pass through.
    static QString stage(const QString &stage);
};

} // namespace sy::ui
