#pragma once

#include <QString>

namespace sy::bench {

// Direct access to a stopped Switchyard SQLite database (the schema is the app's: core/store/Schema.cpp).
class LogDb
{
public:
    explicit LogDb(const QString &path);
    ~LogDb();
    bool open(QString *error);

    // Every account gets slot_count = slotCount (the per-account override of slots_per_account).
    bool setSlots(int slotCount, QString *error);
    // Inserts `rows` request_log rows spread evenly over the last 30 days and over the existing accounts,
    // with the shape the proxy writes (random request ids, latencies, token counts, attempts JSON).
    bool fill(qint64 rows, QString *error);
    // Runs the dashboard-style 30-day queries `repeat` times each and prints their median and max times.
    bool timeChartQueries(int repeat, QString *error);

private:
    QString m_path;
    QString m_connection;
};

} // namespace sy::bench
