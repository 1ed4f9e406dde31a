#include "util/LatencyHistogram.h"

#include <QtAlgorithms>
#include <QtGlobal>
#include <cmath>

namespace sy {

namespace {

constexpr qint64 kMaxUs = (qint64(1) << 40) - 1;

int highestBit(quint64 v)
{
    return 63 - int(qCountLeadingZeroBits(v));
}

} // namespace

int LatencyHistogram::bucketOf(qint64 us)
{
    const quint64 v = quint64(qBound<qint64>(0, us, kMaxUs));
    if (v < quint64(kSubBuckets))
        return int(v);
    const int e = highestBit(v); // 4..39
    const int sub = int((v >> (e - 4)) & (kSubBuckets - 1));
    return kSubBuckets + (e - 4) * kSubBuckets + sub;
}

qint64 LatencyHistogram::lowerBoundOf(int bucket)
{
    if (bucket < kSubBuckets)
        return bucket;
    const int e = 4 + (bucket - kSubBuckets) / kSubBuckets;
    const int sub = (bucket - kSubBuckets) % kSubBuckets;
    return (qint64(kSubBuckets + sub)) << (e - 4);
}

void LatencyHistogram::record(qint64 us)
{
    us = qBound<qint64>(0, us, kMaxUs);
    ++m_buckets[size_t(bucketOf(us))];
    ++m_count;
    m_sum += double(us);
    m_max = qMax(m_max, us);
}

qint64 LatencyHistogram::percentileUs(double p) const
{
    if (m_count == 0)
        return 0;
    const quint64 rank = qMax<quint64>(1, quint64(std::ceil(qBound(0.0, p, 1.0) * double(m_count))));
    quint64 seen = 0;
    for (int b = 0; b < kBuckets; ++b) {
        seen += m_buckets[size_t(b)];
        if (seen >= rank) {
            const qint64 lo = lowerBoundOf(b);
            const qint64 hi = upperBoundOf(b);
            // The middle of the bucket, but never above the largest value seen.
            return qMin((lo + hi - 1) / 2, m_max);
        }
    }
    return m_max;
}

QJsonObject LatencyHistogram::toJson() const
{
    QJsonArray buckets;
    for (int b = 0; b < kBuckets; ++b) {
        if (m_buckets[size_t(b)])
            buckets.append(QJsonArray{lowerBoundOf(b), upperBoundOf(b), qint64(m_buckets[size_t(b)])});
    }
    return {{QStringLiteral("count"), qint64(m_count)},
            {QStringLiteral("p50_us"), percentileUs(0.5)},
            {QStringLiteral("p90_us"), percentileUs(0.9)},
            {QStringLiteral("p99_us"), percentileUs(0.99)},
            {QStringLiteral("max_us"), m_max},
            {QStringLiteral("mean_us"), meanUs()},
            {QStringLiteral("buckets"), buckets}};
}

bool LatencyHistogram::fromBucketsJson(const QJsonArray &buckets, LatencyHistogram *out)
{
    LatencyHistogram h;
    for (const QJsonValue &v : buckets) {
        const QJsonArray row = v.toArray();
        if (row.size() != 3 || !row.at(0).isDouble() || !row.at(2).isDouble())
            return false;
        const qint64 lower = row.at(0).toInteger(-1);
        const qint64 upper = row.at(1).toInteger(-1);
        const qint64 n = row.at(2).toInteger(-1);
        constexpr qint64 kMaxCount = qint64(1) << 53; // exact in a JSON number; no sum of rows can overflow
        if (lower < 0 || lower > kMaxUs || n < 0 || n > kMaxCount)
            return false;
        const int b = bucketOf(lower);
        if (lowerBoundOf(b) != lower || upperBoundOf(b) != upper)
            return false; // not a bucket of this layout
        if (h.m_buckets[size_t(b)] + quint64(n) > quint64(kMaxCount))
            return false;
        h.m_buckets[size_t(b)] += quint64(n);
    }
    h.recomputeFromBuckets();
    *out = h;
    return true;
}

LatencyHistogram LatencyHistogram::since(const LatencyHistogram &earlier) const
{
    // A bucket that went down means a restart in between (counters start over): all of this is new.
    for (size_t b = 0; b < m_buckets.size(); ++b) {
        if (m_buckets[b] < earlier.m_buckets[b]) {
            LatencyHistogram all = *this;
            all.recomputeFromBuckets();
            return all;
        }
    }
    LatencyHistogram d;
    for (size_t b = 0; b < m_buckets.size(); ++b)
        d.m_buckets[b] = m_buckets[b] - earlier.m_buckets[b];
    d.recomputeFromBuckets();
    return d;
}

void LatencyHistogram::recomputeFromBuckets()
{
    m_count = 0;
    m_sum = 0;
    m_max = 0;
    for (int b = 0; b < kBuckets; ++b) {
        const quint64 n = m_buckets[size_t(b)];
        if (!n)
            continue;
        m_count += n;
        m_sum += double(n) * double(lowerBoundOf(b) + upperBoundOf(b) - 1) / 2.0;
        m_max = upperBoundOf(b) - 1;
    }
}

} // namespace sy
