// The dashboard's rollups (schema version 5): every request-log insert adds to its hour's sums in the same
// transaction (a rejected row adds nothing), unknown token counts add nothing, the migration fills the rollup
// from rows logged before it existed, and saved usage leaves a thinned, pruned history of samples.
#include "store/AccountRepository.h"
#include "store/Database.h"
#include "store/RequestLogRepository.h"
#include "store/UsageRollupRepository.h"
#include "store/Schema.h"

#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>

using namespace sy;

namespace {

constexpr qint64 kHour = UsageRollupRepository::kHourMs;
constexpr qint64 kBase = 1796000400000; // an hour boundary (1796000400000 % 3600000 == 0)

RequestLogRecord row(const QString &id, qint64 at, const std::optional<QString> &account, const QString &status,
                     std::optional<qint64> total)
{
    RequestLogRecord r;
    r.requestId = id;
    r.startedAtMs = at;
    r.route = QStringLiteral("/v1/responses");
    r.accountId = account;
    r.status = status;
    r.tokens.total = total;
    r.tokens.input = total ? std::optional<qint64>(*total / 2) : std::nullopt;
    r.tokens.cached = total ? std::optional<qint64>(*total / 4) : std::nullopt;
    return r;
}

} // namespace

class TestStoreRollup : public QObject
{
    Q_OBJECT
private slots:
    void insertsKeepTheHourlyRollup()
    {
        QCOMPARE(kBase % kHour, 0);
        QTemporaryDir dir;
        Database db;
        QString error;
        QVERIFY2(db.open(dir.path() + QStringLiteral("/s.sqlite"), &error), qPrintable(error));
        RequestLogRepository log(db);
        const QString a = QStringLiteral("acc_a");
        QVERIFY(log.insert(row("r1", kBase + 10, a, "completed", 100), &error));
        QVERIFY(log.insert(row("r2", kBase + kHour - 1, a, "failed", std::nullopt), &error));
        QVERIFY(log.insert(row("r3", kBase + kHour, a, "completed", 40), &error));
        QVERIFY(log.insert(row("r4", kBase + 20, std::nullopt, "rejected", std::nullopt), &error));
        // A rejected insert (the id is logged already) must not count twice.
        QVERIFY(!log.insert(row("r1", kBase + 30, a, "completed", 1000), &error));

        QVERIFY(error.contains(QLatin1String("UNIQUE")));
        error.clear();
        UsageRollupRepository rollups(db);
        const QList<UsageRollupRow> hours = rollups.hourly(kBase, kBase + 2 * kHour, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(hours.size(), 3);
        QCOMPARE(hours.at(0).hourStartMs, kBase);
        QCOMPARE(hours.at(0).accountId, QString()); // no account chosen
        QCOMPARE(hours.at(0).requests, 1);
        QCOMPARE(hours.at(0).errors, 1);
        QCOMPARE(hours.at(1).accountId, a);
        QCOMPARE(hours.at(1).requests, 2);
        QCOMPARE(hours.at(1).errors, 1);
        QCOMPARE(hours.at(1).total, 100);
        QCOMPARE(hours.at(1).input, 50);
        QCOMPARE(hours.at(1).cached, 25);
        QCOMPARE(hours.at(2).hourStartMs, kBase + kHour);
        QCOMPARE(hours.at(2).total, 40);
        const UsageRollupRow all = rollups.total(kBase, kBase + 2 * kHour);
        QCOMPARE(all.requests, 4);
        QCOMPARE(all.total, 140);
        QCOMPARE(rollups.total(kBase + kHour, kBase + 2 * kHour).requests, 1);
    }

    void migrationFillsTheRollupFromTheLog()
    {
        QTemporaryDir dir;
        const QString path = dir.path() + QStringLiteral("/s.sqlite");
        QString error;
        {
            Database db;
            QVERIFY2(db.open(path, &error), qPrintable(error));
            RequestLogRepository log(db);
            QVERIFY(log.insert(row("r1", kBase, QStringLiteral("acc_a"), "completed", 10), &error));
            QVERIFY(log.insert(row("r2", kBase + 5, QStringLiteral("acc_a"), "timed_out", 5), &error));
            // Back to a version-4 file: no rollup tables, as before this version.
            QVERIFY(db.exec(QStringLiteral("DROP TABLE usage_rollup_hourly"), &error));
            QVERIFY(db.exec(QStringLiteral("DROP TABLE usage_samples"), &error));
            QVERIFY(db.exec(QStringLiteral("DROP INDEX request_log_started_id"), &error));
            // ...and without what later versions added, so the migrations run again from version 5 on.
            QVERIFY(db.exec(QStringLiteral("DROP TABLE api_key_requests"), &error));
            QVERIFY(db.exec(QStringLiteral("DROP TABLE api_keys"), &error));
            QVERIFY(db.exec(QStringLiteral("DROP INDEX slot_claims_given_up"), &error));
            QVERIFY(db.exec(QStringLiteral("ALTER TABLE slot_claims DROP COLUMN swept_at_ms"), &error));
            QVERIFY(db.exec(QStringLiteral("ALTER TABLE replicas DROP COLUMN alive_until_ms"), &error));
            QVERIFY(db.exec(QStringLiteral("DELETE FROM schema_version WHERE version >= 5"), &error));
        }
        Database db;
        QVERIFY2(db.open(path, &error), qPrintable(error));
        QCOMPARE(db.schemaVersion(), kLatestSchemaVersion);
        const QList<UsageRollupRow> hours = UsageRollupRepository(db).hourly(kBase, kBase + kHour);
        QCOMPARE(hours.size(), 1);
        QCOMPARE(hours.first().requests, 2);
        QCOMPARE(hours.first().errors, 1);
        QCOMPARE(hours.first().total, 15);
    }

    void savedUsageLeavesSamples()
    {
        QTemporaryDir dir;
        Database db;
        QString error;
        QVERIFY2(db.open(dir.path() + QStringLiteral("/s.sqlite"), &error), qPrintable(error));
        AccountRepository::Identity identity;
        identity.chatgptAccountId = QStringLiteral("c");
        identity.userId = QStringLiteral("u");
        const auto account = AccountRepository(db).upsert(identity, &error);
        QVERIFY2(account, qPrintable(error));
        const auto save = [&](qint64 at, double used) {
            UsageRecord u;
            u.accountId = account->id;
            u.primary = {used, 300, kBase + 5 * kHour};
            u.secondary = {used / 2, 10080, kBase + 100 * kHour};
            u.observedAtMs = at;
            return AccountRepository(db).saveUsage(u, &error);
        };
        QVERIFY(save(kBase, 10));
        QVERIFY(save(kBase + 60000, 12)); // same 5-minute bucket: replaces the first
        QVERIFY(save(kBase + 6 * 60000, 20));
        UsageRollupRepository rollups(db);
        QList<UsageSample> samples = rollups.samples(kBase, kBase + kHour);
        QCOMPARE(samples.size(), 2);
        QCOMPARE(samples.at(0).primary.usedPercent, std::optional<double>(12));
        QCOMPARE(samples.at(1).secondary.usedPercent, std::optional<double>(10));
        QCOMPARE(samples.at(1).primary.resetAtMs, std::optional<qint64>(kBase + 5 * kHour));
        QCOMPARE(AccountRepository(db).loadUsage(account->id)->primary.usedPercent, std::optional<double>(20));
        // Past the retention a new observation prunes the old ones.
        QVERIFY(save(kBase + UsageRollupRepository::kSampleRetentionMs + 10 * 60000, 30));
        samples = rollups.samples(0, kBase + 2 * UsageRollupRepository::kSampleRetentionMs);
        QCOMPARE(samples.size(), 1);
        QCOMPARE(samples.first().primary.usedPercent, std::optional<double>(30));
    }
};

QTEST_MAIN(TestStoreRollup)
#include "tst_store_rollup.moc"
