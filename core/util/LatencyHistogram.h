#pragma once

#include <QJsonArray>
#include <QJsonObject>
#include <array>

namespace sy {

// Counts durations in microseconds into log-linear buckets: exact below 32 us, then 16 buckets per power of
// two (a bucket is at most 1/16 of its lower bound wide), up to 2^40 us. Percentiles read from it are the
// middle of their bucket, so within about 3 % of the true value. Fixed size (592 counters), no allocation
// per value; not thread-safe (one owner thread).
class LatencyHistogram
{
public:
    static constexpr int kSubBuckets = 16;
    static constexpr int kBuckets = kSubBuckets + (40 - 4) * kSubBuckets;

    void record(qint64 us);

    quint64 count() const { return m_count; }
    qint64 maxUs() const { return m_max; }
    qint64 meanUs() const { return m_count ? qint64(m_sum / m_count) : 0; }
    // The value below which a share p (0..1] of the recorded values lie (the middle of its bucket); 0 when
    // empty.
    qint64 percentileUs(double p) const;

    // {count, p50_us, p90_us, p99_us, max_us, mean_us, buckets: [[lower_us, upper_us, count], ...]} with only
    // the buckets that counted something; a bucket holds lower_us <= value < upper_us.
    QJsonObject toJson() const;
    // Rebuilds the counts from toJson()'s buckets (max and mean from the buckets: upper bound, middles).
    // False for a malformed array.
    static bool fromBucketsJson(const QJsonArray &buckets, LatencyHistogram *out);
    // What was recorded since `earlier` (an older snapshot of the same histogram); max from the buckets. When
    // a bucket went down (the process restarted in between), everything in this one.
    LatencyHistogram since(const LatencyHistogram &earlier) const;

    static int bucketOf(qint64 us);
    static qint64 lowerBoundOf(int bucket);
    static qint64 upperBoundOf(int bucket) { return lowerBoundOf(bucket + 1); }

private:
    void recomputeFromBuckets();

    std::array<quint64, kBuckets> m_buckets{};
    quint64 m_count = 0;
    double m_sum = 0;
    qint64 m_max = 0;
};

} // namespace sy
