// sy-bench-db: fixtures and timings on a Switchyard data directory for the benchmark (never on a live one).
#include "ClaimBench.h"
#include "FakeAuth.h"
#include "LogDb.h"
#include "StageDelta.h"

#include <QCoreApplication>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QStringList>
#include <cstdio>

namespace {

// A plain SQLite connection, without the migrations sy::Database runs on open: the data dir of an A/B run
// may belong to another (older) build of switchyard (BENCH_SY_BIN), whose schema version must stay.
bool setSlots(const QString &path, int slotCount, QString *error)
{
    bool ok = false;
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("slots"));
        db.setDatabaseName(path);
        QSqlQuery q(db);
        ok = db.open() && q.prepare(QStringLiteral("UPDATE accounts SET slot_count = ?"));
        if (ok) {
            q.addBindValue(slotCount);
            ok = q.exec();
        }
        if (ok)
            std::printf("slot_count=%d accounts=%d\n", slotCount, q.numRowsAffected());
        else
            *error = QStringLiteral("%1: %2").arg(path, q.lastError().text() + db.lastError().text());
    }
    QSqlDatabase::removeDatabase(QStringLiteral("slots"));
    return ok;
}

const char kUsage[] =
    "usage: sy-bench-db auth DIR COUNT       write DIR/auth-1..COUNT.json (fake accounts)\n"
    "       sy-bench-db slots DB N            set every account's slot_count to N (no migration)\n"
    "       sy-bench-db fill DB ROWS          add ROWS request_log rows over the last 30 days\n"
    "       sy-bench-db chart DB [REPEAT]     time the 30-day chart queries\n"
    "       sy-bench-db retention DB DAYS [N] time N (20) retention batches, cutoff DAYS days ago\n"
    "       sy-bench-db claims DB [N [BURST]] time N slot claims alone and in bursts (default 2000, 64)\n"
    "       sy-bench-db stages BEFORE AFTER   turn stage percentiles between two /api/status answers\n";

int fail(const QString &error)
{
    std::fprintf(stderr, "sy-bench-db: %s\n", qPrintable(error));
    return 1;
}

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    const QStringList args = app.arguments().mid(1);
    if (args.size() < 2) {
        std::fputs(kUsage, stderr);
        return 2;
    }
    const QString command = args[0];
    QString error;
    if (command == QLatin1String("stages") && args.size() == 3)
        return sy::bench::printStageDelta(args[1], args[2], &error) ? 0 : fail(error);
    bool ok = true;
    const qint64 n = args.size() > 2 ? args[2].toLongLong(&ok) : 0;
    if (!ok || n < 0) {
        std::fputs(kUsage, stderr);
        return 2;
    }
    if (command == QLatin1String("auth") && args.size() == 3) {
        error = sy::bench::writeFakeAuthFiles(args[1], int(n));
        return error.isEmpty() ? 0 : fail(error);
    }
    if (command == QLatin1String("claims") && args.size() <= 4) {
        const int burst = args.size() > 3 ? args[3].toInt(&ok) : 64;
        if (!ok || burst < 1) {
            std::fputs(kUsage, stderr);
            return 2;
        }
        return sy::bench::timeClaims(args[1], n > 0 ? int(n) : 2000, burst, &error) ? 0 : fail(error);
    }
    if (command == QLatin1String("slots") && args.size() == 3 && n >= 1)
        return setSlots(args[1], int(n), &error) ? 0 : fail(error);
    sy::bench::LogDb db(args[1]);
    if (!db.open(&error))
        return fail(error);
    bool done = false;
    if (command == QLatin1String("fill") && args.size() == 3 && n >= 1)
        done = db.fill(n, &error);
    else if (command == QLatin1String("retention") && (args.size() == 3 || args.size() == 4) && n >= 0) {
        const int batches = args.size() == 4 ? args[3].toInt(&ok) : 20;
        done = ok && batches > 0 && db.timeRetention(int(n), batches, &error);
        if (!ok || batches <= 0) {
            std::fputs(kUsage, stderr);
            return 2;
        }
    } else if (command == QLatin1String("chart") && args.size() <= 3)
        done = db.timeChartQueries(n > 0 ? int(n) : 5, &error);
    else {
        std::fputs(kUsage, stderr);
        return 2;
    }
    return done ? 0 : fail(error);
}
