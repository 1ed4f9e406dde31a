#pragma once

#include <QString>
#include <memory>

namespace sy {
class Database;
}

namespace sy::bench {

// A stopped Switchyard database opened through the product's own store code (core/store), so fixtures are
// written and charts read exactly the way the proxy and the dashboard do.
class LogDb
{
public:
    explicit LogDb(const QString &path);
    ~LogDb();
    bool open(QString *error);

    // Logs `rows` requests spread evenly over the last 30 days and over the existing accounts through
    // RequestLogRepository::insert, the proxy's write path, which keeps the hourly rollups with every row.
    bool fill(qint64 rows, QString *error);
    // Times the dashboard's Usage page loads (ui/data/UsageSeries: 30 days, 7 days, 24 hours), the per-account
    // totals of `switchyard usage`, and for comparison the same hourly sums computed from the raw log.
    bool timeChartQueries(int repeat, QString *error);

    // Times LedgerRetention's batches, each in a write transaction of its own as on the store thread, with the
    // cutoff `days` days ago: `batches` of them, or fewer when nothing more is that old.
    bool timeRetention(int days, int batches, QString *error);

private:
    QString m_path;
    std::unique_ptr<Database> m_db;
};

} // namespace sy::bench
