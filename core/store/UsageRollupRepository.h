#pragma once

#include "accounts/AccountRecord.h"
#include "store/RequestLogRecord.h"

#include <QList>
#include <QString>
#include <optional>

namespace sy {

class Database;

// Sums of request-log rows for one (hour, account); accountId is empty for requests that chose none.
struct UsageRollupRow
{
    qint64 hourStartMs = 0;
    QString accountId;
    qint64 requests = 0;
    qint64 errors = 0; // rows whose status is not "completed"
    qint64 input = 0;
    qint64 cached = 0;
    qint64 output = 0;
    qint64 reasoning = 0;
    qint64 total = 0;

    void add(const UsageRollupRow &o);
};

// One quota observation kept for the charts (the latest per account and 5-minute bucket).
struct UsageSample
{
    QString accountId;
    qint64 observedAtMs = 0;
    UsageRecordWindow primary;
    UsageRecordWindow secondary;
};

// The dashboard's rollups (schema version 5): hourly request/token sums maintained with every request-log
// insert, and a thinned history of quota observations maintained with every saved usage record. Charts and
// the overview read these instead of the raw request log, so they stay fast with millions of rows.
class UsageRollupRepository
{
public:
    static constexpr qint64 kHourMs = 3600 * 1000;
    static constexpr qint64 kSampleBucketMs = 5 * 60 * 1000;
    // Samples older than this are dropped when a newer one for the same account arrives.
    static constexpr qint64 kSampleRetentionMs = 35LL * 24 * kHourMs;

    explicit UsageRollupRepository(Database &db);

    // Adds one request-log row to its hour. Called by RequestLogRepository::insert inside its transaction.
    bool add(const RequestLogRecord &record, QString *error);
    // Rows whose hour starts in [fromMs, toMs), oldest hour first.
    QList<UsageRollupRow> hourly(qint64 fromMs, qint64 toMs, QString *error = nullptr);
    // All accounts together for the hours starting in [fromMs, toMs) (hourStartMs = fromMs, accountId empty).
    UsageRollupRow total(qint64 fromMs, qint64 toMs, QString *error = nullptr);

    // Keeps `usage` as its account's sample for the usage's 5-minute bucket (a later one replaces it).
    bool recordSample(const UsageRecord &usage, QString *error);
    // Samples observed in [fromMs, toMs), per account oldest first; accountId empty = every account.
    QList<UsageSample> samples(qint64 fromMs, qint64 toMs, const QString &accountId = {}, QString *error = nullptr);

    static qint64 hourStart(qint64 epochMs) { return epochMs - epochMs % kHourMs; }

private:
    Database &m_db;
};

} // namespace sy
