// The dashboard's own store reads on PostgreSQL (issue 6 with the PostgreSQL dialect): the Requests page's keyset
// paging with every filter and the request-id search, the rows that arrived since, the usage chart series from
// the rollups, and the overview snapshot (today's aggregates, accounts, pin, paces). One seed goes into a SQLite
// file and into a throwaway PostgreSQL 15 server through the same repositories; every read must give the same
// answer on both, and the paging answers must also equal what the seed itself says (so a read that is wrong
// the same way on both still fails). The worker threads open the postgresql:// URL as GuiMain passes it
// (Config::databaseLocation()).
#include "GuiTestSupport.h"
#include "ManualClock.h"
#include "data/RequestPageQuery.h"
#include "data/StoreClient.h"
#include "data/StoreSnapshot.h"
#include "data/UsageSeries.h"
#include "lib/PostgresServer.h"
#include "models/RequestsModel.h"
#include "store/SettingsRepository.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <algorithm>
#include <functional>
#include <numeric>

using namespace sy;
using namespace sy::ui;

namespace {

constexpr qint64 kHour = 3600 * 1000;
constexpr qint64 kDay = 24 * kHour;
// Fixed moments keep the two reads (and the expectation) on the same buckets.
const qint64 kNow = QDateTime::currentMSecsSinceEpoch();
const qint64 kStartOfToday = QDateTime(QDate::currentDate(), QTime(0, 0)).toMSecsSinceEpoch();
constexpr int kRows = 2400;

struct Seeded
{
    QStringList accounts;
    QList<RequestLogRecord> rows; // newest first, as the page orders them
};

// The same writes on any database: accounts, usage observations, settings and the request log (which keeps
// the rollups in the same transaction).
bool seed(Database &db, Seeded *out, QString *error)
{
    test::ManualClock clock(kNow - 40 * kDay);
    AccountRepository accounts(db, clock);
    QStringList ids;
    for (int i = 0; i < 3; ++i) {
        AccountRepository::Identity identity;
        identity.chatgptAccountId = QStringLiteral("cgpt-pg-%1").arg(i);
        identity.userId = QStringLiteral("user-pg-%1").arg(i);
        identity.email = QStringLiteral("pg%1@example.test").arg(i);
        identity.plan = i == 2 ? QStringLiteral("pro") : QStringLiteral("plus");
        identity.alias = QStringLiteral("pg%1").arg(i);
        identity.tokenExpiresAtMs = kNow + (i + 1) * kDay;
        const auto r = accounts.upsert(identity, error);
        if (!r)
            return false;
        ids << r->id;
    }
    if (!accounts.setStatus(ids[2], QStringLiteral("paused"), QStringLiteral("paused by user"), error) ||
        !accounts.setCooldown(ids[1], kNow + 20 * 60000, 2, error))
        return false;
    // Two observations per account within the last hour (the overview's pace) and older ones (the chart).
    for (int i = 0; i < 3; ++i) {
        for (const auto &[ago, used] : {std::pair{qint64(29 * kDay), 5.0}, std::pair{qint64(3 * kDay), 9.0},
                                        std::pair{qint64(50 * 60000), 20.0 + i}, std::pair{qint64(0), 31.5 + 2 * i}}) {
            UsageRecord u;
            u.accountId = ids[i];
            u.primary = {used, 300, kNow + 2 * kHour + i * 60000};
            u.secondary = {used / 3, 10080, kNow + 4 * kDay};
            u.observedAtMs = kNow - ago;
            if (!accounts.saveUsage(u, error))
                return false;
        }
    }
    SettingsRepository settings(db);
    if (!settings.setPin(ids[0], true, error) || !settings.setStrategy(QStringLiteral("usage_weighted"), error) ||
        !settings.setValue(uikeys::trayNumber, QStringLiteral("weekly"), error))
        return false;

    QList<RequestLogRecord> rows;
    Transaction tx(db);
    if (!tx.begin(error))
        return false;
    RequestLogRepository log(db);
    for (int i = 0; i < kRows; ++i) {
        // Spread over 40 days, newest last; groups of three share a start time so the id breaks the tie, and
        // the ids mix case and punctuation so the byte order of both databases is what decides.
        const qint64 started = kNow - 40 * kDay + (i / 3) * (40 * kDay / (kRows / 3)) - 1000;
        static const char *const prefixes[] = {"req_", "req_A", "req-", "Req_"};
        RequestLogRecord r;
        r.requestId =
            QStringLiteral("%1%2").arg(QLatin1String(prefixes[i % 4])).arg(i * 7919 % 100000, 5, 10, QLatin1Char('0'));
        r.startedAtMs = started;
        r.route = i % 5 ? QStringLiteral("/backend-api/codex/responses") : QStringLiteral("/v1/responses");
        r.model = i % 4 == 0 ? QStringLiteral("gpt-5-mini") : QStringLiteral("gpt-5-codex");
        if (i % 13 != 0)
            r.accountId = ids[i % 3];
        r.status = i % 11 == 0 ? QStringLiteral("failed")
                               : (i % 17 == 0 ? QStringLiteral("cancelled") : QStringLiteral("completed"));
        if (i % 17 == 0 && i % 11 != 0)
            r.killStage = QStringLiteral("stream_idle");
        if (i % 3 == 0)
            r.upstreamRequestId = QStringLiteral("up-%1").arg(i);
        if (r.accountId) {
            r.attempts = {{*r.accountId, std::nullopt, r.status, 100 + i}};
            if (i % 9 == 0) {
                r.attempts.prepend({ids[(i + 1) % 3], QStringLiteral("egress-a"), QStringLiteral("rate_limited"), 12});
                r.blockedBy = {ids[2] + QStringLiteral(":paused")};
            }
        }
        r.latency = {i % 7, 3 + i % 5, 200 + i % 300, 900 + i};
        if (i % 19 != 0)
            r.tokens = {1000 + i, (1000 + i) / 3, 50 + i % 90, i % 20, 1050 + i + i % 90};
        if (!log.insert(r, error))
            return false;
        rows << r;
    }
    if (!tx.commit(error))
        return false;
    std::sort(rows.begin(), rows.end(), [](const RequestLogRecord &a, const RequestLogRecord &b) {
        return a.startedAtMs != b.startedAtMs ? a.startedAtMs > b.startedAtMs
                                              : a.requestId.toUtf8() > b.requestId.toUtf8();
    });
    out->accounts = ids;
    out->rows = rows;
    return true;
}

bool matches(const RequestLogRecord &r, const RequestFilter &f)
{
    const QString s = f.search.trimmed();
    return (f.accountId.isEmpty() || r.accountId == f.accountId) && (f.status.isEmpty() || r.status == f.status) &&
           (f.model.isEmpty() || r.model == f.model) && (!f.fromMs || r.startedAtMs >= *f.fromMs) &&
           (!f.toMs || r.startedAtMs < *f.toMs) &&
           (s.isEmpty() || r.requestId.contains(s) || r.upstreamRequestId.value_or(QString()).contains(s));
}

struct Walk
{
    QList<RequestLogRecord> rows;
    std::optional<qint64> matching;
    int pages = 0;
    QString error;
};

// Every page of a filter, following the keyset cursor.
Walk walk(Database &db, const RequestFilter &f, int limit)
{
    Walk w;
    std::optional<RequestCursor> after;
    do {
        const RequestPage page = loadRequestPage(db, f, after, limit, !after);
        if (!page.error.isEmpty()) {
            w.error = page.error;
            return w;
        }
        if (!after)
            w.matching = page.matching;
        w.rows << page.rows;
        ++w.pages;
        after = page.next;
    } while (after && w.pages < 1000);
    return w;
}

QString describe(const RequestFilter &f)
{
    return QStringLiteral("account=%1 status=%2 model=%3 from=%4 to=%5 search=%6")
        .arg(f.accountId, f.status, f.model)
        .arg(f.fromMs.value_or(-1))
        .arg(f.toMs.value_or(-1))
        .arg(f.search);
}

bool sameAccount(const AccountView &a, const AccountView &b)
{
    const AccountRecord &x = a.record, &y = b.record;
    const auto sameWindow = [](const UsageRecordWindow &p, const UsageRecordWindow &q) {
        return p.usedPercent == q.usedPercent && p.windowMinutes == q.windowMinutes && p.resetAtMs == q.resetAtMs;
    };
    return x.id == y.id && x.chatgptAccountId == y.chatgptAccountId && x.email == y.email && x.alias == y.alias &&
           x.plan == y.plan && x.status == y.status && x.statusReason == y.statusReason &&
           x.cooldownUntilMs == y.cooldownUntilMs && x.tokenExpiresAtMs == y.tokenExpiresAtMs &&
           x.lastSelectedMs == y.lastSelectedMs && x.createdAtMs == y.createdAtMs && a.pinned == b.pinned &&
           a.usage.observedAtMs == b.usage.observedAtMs && sameWindow(a.usage.primary, b.usage.primary) &&
           sameWindow(a.usage.secondary, b.usage.secondary);
}

bool sameRollup(const UsageRollupRow &a, const UsageRollupRow &b)
{
    return a.requests == b.requests && a.errors == b.errors && a.input == b.input && a.cached == b.cached &&
           a.output == b.output && a.reasoning == b.reasoning && a.total == b.total;
}

bool sameSamples(const QList<UsageSample> &a, const QList<UsageSample> &b)
{
    if (a.size() != b.size())
        return false;
    for (int i = 0; i < a.size(); ++i) {
        if (a[i].accountId != b[i].accountId || a[i].observedAtMs != b[i].observedAtMs ||
            a[i].primary.usedPercent != b[i].primary.usedPercent || a[i].primary.resetAtMs != b[i].primary.resetAtMs ||
            a[i].secondary.usedPercent != b[i].secondary.usedPercent)
            return false;
    }
    return true;
}

} // namespace

class TestDashboardPostgres : public QObject
{
    Q_OBJECT

    test::PostgresServer m_pg;
    test::TempStore m_sqlite;
    Database m_postgres;
    QString m_url;
    Seeded m_seed;
    Seeded m_seedPg;

    QList<RequestFilter> filters() const
    {
        const QStringList &ids = m_seed.accounts;
        QList<RequestFilter> out;
        out << RequestFilter{};
        RequestFilter f;
        f.accountId = ids[1];
        out << f;
        f = {};
        f.status = QStringLiteral("failed");
        out << f;
        f = {};
        f.model = QStringLiteral("gpt-5-mini");
        f.status = QStringLiteral("completed");
        out << f;
        f = {};
        f.fromMs = kNow - 7 * kDay;
        out << f;
        f = {};
        f.fromMs = kNow - 20 * kDay;
        f.toMs = kNow - 10 * kDay;
        f.accountId = ids[0];
        out << f;
        f = {};
        f.search = QStringLiteral("req_A"); // a prefix that only a quarter of the ids carry (case matters)
        out << f;
        f = {};
        f.search = QStringLiteral("up-12"); // the upstream request id counts too
        out << f;
        f = {};
        f.search = QStringLiteral("%_"); // no wildcard: a literal that no id contains
        out << f;
        f = {};
        f.search = QStringLiteral("7");
        f.status = QStringLiteral("cancelled");
        out << f;
        return out;
    }

private slots:
    void initTestCase()
    {
        QString error;
        QVERIFY2(m_pg.start(&error), qPrintable(error));
        m_url = m_pg.url();
        QVERIFY2(m_postgres.open(m_url, &error), qPrintable(error));
        QCOMPARE(m_postgres.dialect(), SqlDialect::Postgres);
        QVERIFY(m_sqlite.ok());
        QCOMPARE(m_sqlite.db().dialect(), SqlDialect::Sqlite);
        QVERIFY2(seed(m_sqlite.db(), &m_seed, &error), qPrintable(error));
        QVERIFY2(seed(m_postgres, &m_seedPg, &error), qPrintable(error));
        QCOMPARE(m_seedPg.accounts, m_seed.accounts); // ids are derived from the identity, not made up
        // The way the app reaches PostgreSQL: SWITCHYARD_DATABASE_URL -> Config::databaseLocation().
        QHash<QString, QString> env;
        env.insert(QStringLiteral("HOME"), m_sqlite.dir());
        env.insert(QStringLiteral("SWITCHYARD_DATA_DIR"), m_sqlite.dir() + QStringLiteral("/data"));
        env.insert(QStringLiteral("SWITCHYARD_DATABASE_URL"), m_url);
        const QString configFile = m_sqlite.dir() + QStringLiteral("/config.json");
        QFile config(configFile);
        QVERIFY(config.open(QIODevice::WriteOnly));
        config.write("{}\n");
        config.close();
        env.insert(QStringLiteral("SWITCHYARD_CONFIG"), configFile);
        const ConfigResult loaded = loadConfig({}, env);
        QVERIFY2(loaded.ok(), qPrintable(loaded.error));
        QCOMPARE(loaded.config.databaseLocation(), m_url);
    }

    void requestPagesAreTheSameOnBoth()
    {
        for (const RequestFilter &f : filters()) {
            QList<RequestLogRecord> expected;
            for (const RequestLogRecord &r : std::as_const(m_seed.rows))
                if (matches(r, f))
                    expected << r;
            for (int limit : {1, 37, 500}) {
                if (limit == 1 && expected.size() > 200)
                    continue; // one row per page is for the small answers
                const Walk lite = walk(m_sqlite.db(), f, limit);
                const Walk pg = walk(m_postgres, f, limit);
                QVERIFY2(lite.error.isEmpty(), qPrintable(lite.error));
                QVERIFY2(pg.error.isEmpty(), qPrintable(describe(f) + QStringLiteral(": ") + pg.error));
                QCOMPARE(pg.matching, std::optional<qint64>(expected.size()));
                QCOMPARE(lite.matching, pg.matching);
                QCOMPARE(pg.rows.size(), expected.size());
                QCOMPARE(lite.rows.size(), expected.size());
                for (int i = 0; i < expected.size(); ++i) {
                    QVERIFY2(pg.rows[i] == lite.rows[i],
                             qPrintable(describe(f) + QStringLiteral(" row %1: %2 vs %3")
                                                          .arg(i)
                                                          .arg(pg.rows[i].requestId, lite.rows[i].requestId)));
                    QVERIFY2(pg.rows[i].requestId == expected[i].requestId,
                             qPrintable(describe(f) + QStringLiteral(" row %1: %2 expected %3")
                                                          .arg(i)
                                                          .arg(pg.rows[i].requestId, expected[i].requestId)));
                }
            }
        }
    }

    void newerRowsAreTheSameOnBoth()
    {
        for (const RequestFilter &f : filters()) {
            QList<RequestLogRecord> expected;
            for (const RequestLogRecord &r : std::as_const(m_seed.rows))
                if (matches(r, f))
                    expected << r;
            if (expected.size() < 10)
                continue;
            const RequestLogRecord &pivot = expected.at(expected.size() / 3 + 1);
            const RequestCursor cursor{pivot.startedAtMs, pivot.requestId};
            const RequestPage lite = loadNewerRequests(m_sqlite.db(), f, cursor, 100000);
            const RequestPage pg = loadNewerRequests(m_postgres, f, cursor, 100000);
            QVERIFY2(pg.error.isEmpty(), qPrintable(pg.error));
            QCOMPARE(pg.rows.size(), qsizetype(expected.size() / 3 + 1));
            QCOMPARE(pg.rows, lite.rows);
            QCOMPARE(pg.rows.first().requestId, expected.first().requestId);
        }
    }

    void usageSeriesAreTheSameOnBoth()
    {
        for (UsageRange range : {UsageRange::Day, UsageRange::Week, UsageRange::Month}) {
            const UsageSeries lite = loadUsageSeries(m_sqlite.db(), range, kNow, kStartOfToday);
            const UsageSeries pg = loadUsageSeries(m_postgres, range, kNow, kStartOfToday);
            QVERIFY2(pg.error.isEmpty(), qPrintable(pg.error));
            QVERIFY2(lite.error.isEmpty(), qPrintable(lite.error));
            QCOMPARE(pg.bucketStarts, lite.bucketStarts);
            QCOMPARE(pg.accountIds, lite.accountIds);
            QCOMPARE(pg.tokens, lite.tokens);
            QCOMPARE(pg.cachedInput, lite.cachedInput);
            QCOMPARE(pg.uncachedInput, lite.uncachedInput);
            QCOMPARE(pg.accountNames, lite.accountNames);
            QVERIFY(sameSamples(pg.samples, lite.samples));
            // And what the rows say: the totals of the range, per account.
            QHash<QString, qint64> expected;
            for (const RequestLogRecord &r : std::as_const(m_seed.rows)) {
                const qint64 hour = UsageRollupRepository::hourStart(r.startedAtMs);
                if (hour >= UsageRollupRepository::hourStart(pg.fromMs) && hour < pg.toMs)
                    expected[r.accountId.value_or(QString())] += r.tokens.total.value_or(0);
            }
            for (auto it = pg.tokens.begin(); it != pg.tokens.end(); ++it)
                QCOMPARE(std::accumulate(it->begin(), it->end(), qint64(0)), expected.value(it.key()));
            if (range == UsageRange::Month)
                QVERIFY(pg.accountIds.contains(QString())); // rows without an account chart as their own series
            QVERIFY(!pg.samples.isEmpty());
        }
    }

    void overviewSnapshotIsTheSameOnBoth()
    {
        const StoreSnapshot lite = loadStoreSnapshot(m_sqlite.db(), kNow, kStartOfToday);
        const StoreSnapshot pg = loadStoreSnapshot(m_postgres, kNow, kStartOfToday);
        QVERIFY2(pg.error.isEmpty(), qPrintable(pg.error));
        QVERIFY2(lite.error.isEmpty(), qPrintable(lite.error));
        QCOMPARE(pg.accounts.size(), 3);
        QCOMPARE(lite.accounts.size(), 3);
        for (int i = 0; i < 3; ++i)
            QVERIFY2(sameAccount(pg.accounts[i], lite.accounts[i]), qPrintable(pg.accounts[i].record.id));
        QVERIFY(pg.pin && lite.pin);
        QCOMPARE(pg.pin->accountId, m_seed.accounts[0]);
        QCOMPARE(pg.pin->strict, lite.pin->strict);
        QCOMPARE(pg.strategy, QStringLiteral("usage_weighted"));
        QCOMPARE(lite.strategy, pg.strategy);
        QCOMPARE(pg.trayNumber, TrayNumber::Weekly);
        QCOMPARE(lite.trayNumber, pg.trayNumber);
        QVERIFY(sameRollup(pg.today, lite.today));
        UsageRollupRow today;
        for (const RequestLogRecord &r : std::as_const(m_seed.rows)) {
            if (r.startedAtMs < UsageRollupRepository::hourStart(kStartOfToday))
                continue;
            today.requests += 1;
            today.errors += r.status != QLatin1String("completed");
            today.total += r.tokens.total.value_or(0);
        }
        QCOMPARE(pg.today.requests, today.requests);
        QCOMPARE(pg.today.errors, today.errors);
        QCOMPARE(pg.today.total, today.total);
        // Paces from the samples of the last hour: (31.5 + 2i) - (20 + i) in 50 minutes, averaged over i.
        QVERIFY(pg.primaryPacePerHour && lite.primaryPacePerHour);
        QCOMPARE(*pg.primaryPacePerHour, *lite.primaryPacePerHour);
        QCOMPARE(qRound(*pg.primaryPacePerHour * 100), qRound(12.5 * 60 / 50 * 100));
        QCOMPARE(pg.secondaryPacePerHour, lite.secondaryPacePerHour);
    }

    // The Requests model and the snapshot poller on their worker threads, opening the postgresql:// URL.
    void workersReadPostgres()
    {
        StoreClient client(m_url);
        QSignalSpy snapshots(&client, &StoreClient::snapshotChanged);
        client.start();
        QTRY_VERIFY(client.snapshot());
        QVERIFY2(client.snapshot()->error.isEmpty(), qPrintable(client.snapshot()->error));
        QCOMPARE(client.snapshot()->accounts.size(), 3);
        QCOMPARE(client.snapshot()->strategy, QStringLiteral("usage_weighted"));

        RequestsModel model(client.queryWorker());
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        RequestFilter f;
        f.status = QStringLiteral("failed");
        model.setFilter(f);
        QTRY_VERIFY(!model.isLoading() && model.rowCount() > 0);
        int failed = 0;
        for (const RequestLogRecord &r : std::as_const(m_seed.rows))
            failed += r.status == QLatin1String("failed");
        QCOMPARE(model.matchingCount(), std::optional<qint64>(failed));
        while (model.canFetchMore({})) {
            model.fetchMore({});
            QTRY_VERIFY(!model.isLoading());
        }
        QCOMPARE(model.rowCount(), failed);
        for (int row = 0; row < model.rowCount(); ++row)
            QCOMPARE(model.record(row).status, QStringLiteral("failed"));

        // A row written now (through the PostgreSQL connection) appears on top.
        RequestLogRecord fresh = test::TempStore::request(QStringLiteral("req_pg_fresh"), kNow + 1000,
                                                          m_seed.accounts[1], QStringLiteral("failed"));
        QString error;
        QVERIFY2(RequestLogRepository(m_postgres).insert(fresh, &error), qPrintable(error));
        model.loadNewer();
        QTRY_COMPARE(model.record(0).requestId, QStringLiteral("req_pg_fresh"));
        QCOMPARE(model.matchingCount(), std::optional<qint64>(failed + 1));
    }
};

QTEST_MAIN(TestDashboardPostgres)
#include "tst_dashboard_postgres.moc"
