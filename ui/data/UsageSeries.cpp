#include "data/UsageSeries.h"

#include "store/AccountRepository.h"
#include "store/Database.h"

#include <QElapsedTimer>
#include <algorithm>

namespace sy::ui {

UsageSeries loadUsageSeries(Database &db, UsageRange range, qint64 nowMs, qint64 startOfTodayMs)
{
    QElapsedTimer timer;
    timer.start();
    constexpr qint64 hour = UsageRollupRepository::kHourMs;
    UsageSeries s;
    s.range = range;
    int buckets = 24;
    switch (range) {
    case UsageRange::Day:
        s.bucketMs = hour;
        s.fromMs = UsageRollupRepository::hourStart(nowMs) - 23 * hour;
        break;
    case UsageRange::Week:
        s.bucketMs = 6 * hour;
        buckets = 28;
        s.fromMs = startOfTodayMs - 6 * 24 * hour;
        break;
    case UsageRange::Month:
        s.bucketMs = 24 * hour;
        buckets = 30;
        s.fromMs = startOfTodayMs - 29 * 24 * hour;
        break;
    }
    s.toMs = s.fromMs + buckets * s.bucketMs;
    for (int i = 0; i < buckets; ++i)
        s.bucketStarts << s.fromMs + i * s.bucketMs;
    s.cachedInput = QList<qint64>(buckets, 0);
    s.uncachedInput = QList<qint64>(buckets, 0);

    Transaction tx(db, Transaction::Kind::Read);
    if (!tx.begin(&s.error))
        return s;
    UsageRollupRepository rollups(db);
    // Rollup hours are UTC hours; the hour containing a bucket boundary belongs to the bucket it starts in.
    const QList<UsageRollupRow> rows = rollups.hourly(UsageRollupRepository::hourStart(s.fromMs), s.toMs, &s.error);
    if (!s.error.isEmpty())
        return s;
    QHash<QString, qint64> totals;
    for (const UsageRollupRow &r : rows) {
        const int b = int(std::clamp<qint64>((r.hourStartMs - s.fromMs) / s.bucketMs, 0, buckets - 1));
        QList<qint64> &perBucket = s.tokens[r.accountId];
        if (perBucket.isEmpty())
            perBucket = QList<qint64>(buckets, 0);
        perBucket[b] += r.total;
        totals[r.accountId] += r.total;
        s.cachedInput[b] += r.cached;
        s.uncachedInput[b] += qMax<qint64>(0, r.input - r.cached);
    }
    s.accountIds = totals.keys();
    std::sort(s.accountIds.begin(), s.accountIds.end(), [&totals](const QString &a, const QString &b) {
        return totals.value(a) != totals.value(b) ? totals.value(a) > totals.value(b) : a < b;
    });
    s.samples = rollups.samples(s.fromMs, s.toMs, {}, &s.error);
    if (!s.error.isEmpty())
        return s;
    for (const AccountRecord &a : AccountRepository(db).list(&s.error))
        s.accountNames.insert(a.id, a.displayName());
    for (const QString &id : std::as_const(s.accountIds)) {
        if (!s.accountNames.contains(id))
            s.accountNames.insert(id, id); // removed since: the history keeps its id
    }
    s.elapsedMs = timer.elapsed();
    return s;
}

} // namespace sy::ui
