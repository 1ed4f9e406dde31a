#pragma once

#include "store/UsageRollupRepository.h"

#include <QHash>
#include <QList>
#include <QMetaType>
#include <QStringList>

namespace sy {
class Database;
}

namespace sy::ui {

enum class UsageRange
{
    Day,   // 24 hourly buckets
    Week,  // 28 buckets of 6 h
    Month, // 30 daily buckets
};

// What the Usage page draws, read from the rollups (never the raw request log) on a DbWorker thread.
struct UsageSeries
{
    UsageRange range = UsageRange::Day;
    qint64 fromMs = 0;
    qint64 toMs = 0;
    qint64 bucketMs = 0;
    QList<qint64> bucketStarts;
    QStringList accountIds;               // accounts with tokens in the range, by total descending
    QHash<QString, QString> accountNames; // id -> alias/id ("" = no account chosen)
    QHash<QString, QList<qint64>> tokens; // id -> total tokens per bucket
    QList<qint64> cachedInput;            // per bucket
    QList<qint64> uncachedInput;          // per bucket (input - cached)
    QList<UsageSample> samples;           // quota observations in the range, per account oldest first
    QString error;
    qint64 elapsedMs = 0;
};

// startOfTodayMs: local midnight, the day and 6-hour buckets start from it.
UsageSeries loadUsageSeries(Database &db, UsageRange range, qint64 nowMs, qint64 startOfTodayMs);

} // namespace sy::ui

Q_DECLARE_METATYPE(sy::ui::UsageSeries)
