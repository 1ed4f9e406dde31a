#include "StageDelta.h"

#include "util/LatencyHistogram.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <cstdio>

namespace sy::bench {

namespace {

bool readStages(const QString &file, QJsonObject *stages, QJsonObject *busyPoll, QString *error)
{
    QFile f(file);
    if (!f.open(QIODevice::ReadOnly)) {
        *error = QStringLiteral("%1: %2").arg(file, f.errorString());
        return false;
    }
    const QJsonObject status = QJsonDocument::fromJson(f.readAll()).object();
    *stages = status.value(QLatin1String("turn_stages")).toObject().value(QLatin1String("stages")).toObject();
    *busyPoll = status.value(QLatin1String("busy_poll")).toObject();
    if (stages->isEmpty()) {
        *error = QStringLiteral("%1: no turn_stages in it").arg(file);
        return false;
    }
    return true;
}

} // namespace

bool printStageDelta(const QString &beforeFile, const QString &afterFile, QString *error)
{
    QJsonObject before, after, busyBefore, busyAfter;
    if (!readStages(beforeFile, &before, &busyBefore, error) || !readStages(afterFile, &after, &busyAfter, error))
        return false;
    // The store thread's waits and the proxy thread's polls (counters, so the run's share is their difference):
    // busy_<name>=delta.
    for (const char *key :
         {"store_waits_after_job", "store_jobs_found_awake_after_job", "store_no_wait_after_job", "store_awake_wait_us",
          "store_waits_after_warm_up", "store_jobs_found_awake", "polls", "hits", "helper_stalls"}) {
        const QLatin1String k(key);
        if (busyAfter.contains(k))
            std::printf("busy_%s=%lld\n", key,
                        static_cast<long long>(busyAfter.value(k).toInteger() - busyBefore.value(k).toInteger()));
    }
    for (auto it = after.begin(); it != after.end(); ++it) {
        LatencyHistogram a, b;
        if (!LatencyHistogram::fromBucketsJson(it.value().toObject().value(QLatin1String("buckets")).toArray(), &a) ||
            !LatencyHistogram::fromBucketsJson(
                before.value(it.key()).toObject().value(QLatin1String("buckets")).toArray(), &b)) {
            *error = QStringLiteral("stage %1: malformed buckets").arg(it.key());
            return false;
        }
        const LatencyHistogram d = a.since(b);
        const QByteArray name = it.key().toLatin1();
        std::printf("%s_count=%llu %s_p50_us=%lld %s_p90_us=%lld %s_p99_us=%lld\n", name.constData(),
                    static_cast<unsigned long long>(d.count()), name.constData(),
                    static_cast<long long>(d.percentileUs(0.5)), name.constData(),
                    static_cast<long long>(d.percentileUs(0.9)), name.constData(),
                    static_cast<long long>(d.percentileUs(0.99)));
    }
    return true;
}

} // namespace sy::bench
