// The repositories on a real PostgreSQL 15 server (PostgresServer): accounts (dedup, lookup, aliases, runtime
// state, removal) with the change counter, usage, the request log, anchors and affinity, settings and the pin,
// refresh claims, token totals, a failover's given-up claim closed by the next claim, the ledger's retention, and two
// replicas importing the same accounts at once. The secret store on PostgreSQL: tst_secret_database_postgres.
#include "ManualClock.h"
#include "TestSupport.h"
#include "accounts/AuthJson.h"
#include "lib/PostgresServer.h"
#include "ownership/LedgerRetention.h"
#include "ownership/OwnerSlotRepository.h"
#include "store/AccountRepository.h"
#include "store/AnchorRepository.h"
#include "store/Database.h"
#include "store/RefreshClaimRepository.h"
#include "store/RequestLogRepository.h"
#include "store/SettingsRepository.h"
#include "store/UsageTotals.h"
#include "util/Ids.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QMutex>
#include <QProcess>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <QWaitCondition>
#include <algorithm>

using namespace sy;

namespace {

const QString kLibcLocale = QStringLiteral("en_US.UTF-8");

AccountRepository::Identity identityFrom(const QString &fixture)
{
    QString error;
    const AuthJsonImport imported = parseAuthJson(test::readTestData(QStringLiteral("auth/") + fixture), &error);
    if (!error.isEmpty())
        qFatal("fixture %s: %s", qPrintable(fixture), qPrintable(error));
    return {imported.chatgptAccountId,       imported.userId,        imported.email, imported.plan,
            imported.accessTokenExpiresAtMs, imported.lastRefreshMs, std::nullopt};
}

QVariant scalar(Database &db, const QString &sql)
{
    QSqlQuery q = db.query();
    if (!q.exec(sql) || !q.next())
        return {};
    return q.value(0);
}

// Lets two threads start each step together, so their look-up-then-insert sequences really overlap.
class Barrier
{
public:
    void arriveAndWait()
    {
        QMutexLocker lock(&m_mutex);
        const int generation = m_generation;
        if (++m_arrived == 2) {
            m_arrived = 0;
            ++m_generation;
            m_all.wakeAll();
            return;
        }
        while (generation == m_generation)
            m_all.wait(&m_mutex);
    }

private:
    QMutex m_mutex;
    QWaitCondition m_all;
    int m_arrived = 0;
    int m_generation = 0;
};

class UpsertThread : public QThread
{
public:
    UpsertThread(QString url, QList<AccountRepository::Identity> ids, Barrier *barrier)
        : m_url(std::move(url)), m_ids(std::move(ids)), m_barrier(barrier)
    {
    }
    QStringList failures;

protected:
    void run() override
    {
        Database db;
        QString error;
        const bool opened = db.open(m_url, &error);
        if (!opened)
            failures << error;
        AccountRepository accounts(db);
        for (const auto &identity : std::as_const(m_ids)) {
            m_barrier->arriveAndWait();
            if (opened && !accounts.upsert(identity, &error))
                failures << error;
        }
    }

private:
    QString m_url;
    QList<AccountRepository::Identity> m_ids;
    Barrier *m_barrier;
};

} // namespace

class tst_StorePostgresRepos : public QObject
{
    Q_OBJECT

    QTemporaryDir m_locales{QStringLiteral("/tmp/sy-loc-XXXXXX")};
    test::PostgresServer m_pg;
    // Milliseconds far past 2^31 (as every real timestamp): a 32-bit column would overflow.
    test::ManualClock m_clock{4102444800000LL};
    int m_counter = 0;
    QString m_url;
    QString m_database;
    std::unique_ptr<Database> m_db;

    QString addAccount(const QString &fixture, const std::optional<QString> &alias = std::nullopt)
    {
        AccountRepository::Identity identity = identityFrom(fixture);
        identity.alias = alias;
        QString error;
        const auto result = AccountRepository(*m_db, m_clock).upsert(identity, &error);
        if (!result)
            qFatal("upsert %s: %s", qPrintable(fixture), qPrintable(error));
        return result->id;
    }

    // Request req_pg's claim of `account`'s slot 0, made now by `me` with a 60 s lease.
    ClaimAttempt firstClaim(const ReplicaIdentity &me, const QString &account) const
    {
        ClaimAttempt c;
        c.requestId = QStringLiteral("req_pg");
        c.accountId = account;
        c.route = QStringLiteral("/v1/responses");
        c.startedAtMs = c.nowMs = m_clock.nowMs();
        c.replica = me;
        c.leaseMs = 60000;
        return c;
    }

private slots:
    void initTestCase()
    {
        QString error;
        // en_US.UTF-8 for a database with a libc collation, without asking the system to have generated it:
        // compiled into a directory of this test's own (localedef, package locales), which glibc reads through
        // LOCPATH in the server alone (runuser keeps the environment). -c: a warning (exit 1) still writes the
        // locale; whether it is usable is what the LC_COLLATE file and the test's own collation check decide.
        QVERIFY(m_locales.isValid());
        QProcess localedef;
        const QString compiled = m_locales.filePath(kLibcLocale);
        localedef.start(QStringLiteral("localedef"),
                        {QStringLiteral("-c"), QStringLiteral("-i"), QStringLiteral("en_US"), QStringLiteral("-f"),
                         QStringLiteral("UTF-8"), compiled});
        QVERIFY2(localedef.waitForFinished(60000) && localedef.exitStatus() == QProcess::NormalExit &&
                     QFile::exists(compiled + QStringLiteral("/LC_COLLATE")),
                 qPrintable(QStringLiteral("localedef (Debian package locales) could not compile en_US.UTF-8: ") +
                            localedef.errorString() + QLatin1Char(' ') +
                            QString::fromLocal8Bit(localedef.readAllStandardError())));
        // Readable by the server's user (the postgres user when the test runs as root), whatever the umask.
        const auto readable = QFile::ReadOwner | QFile::WriteOwner | QFile::ReadGroup | QFile::ReadOther;
        const auto enterable = readable | QFile::ExeOwner | QFile::ExeGroup | QFile::ExeOther;
        QVERIFY(QFile::setPermissions(m_locales.path(), enterable) && QFile::setPermissions(compiled, enterable));
        for (const QFileInfo &file : QDir(compiled).entryInfoList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot)) {
            QVERIFY(QFile::setPermissions(file.filePath(), file.isDir() ? enterable : readable));
            if (file.isDir()) {
                for (const QFileInfo &inner : QDir(file.filePath()).entryInfoList(QDir::Files))
                    QVERIFY(QFile::setPermissions(inner.filePath(), readable));
            }
        }
        m_pg.setServerEnvironment(QStringLiteral("LOCPATH"), m_locales.path());
        QVERIFY2(m_pg.start(&error), qPrintable(error));
    }

    void init()
    {
        m_database = QStringLiteral("r%1").arg(++m_counter);
        QString error;
        QVERIFY2(m_pg.createDatabase(m_database, &error), qPrintable(error));
        m_url = m_pg.url(m_database);
        m_db = std::make_unique<Database>();
        QVERIFY2(m_db->open(m_url, &error), qPrintable(error));
    }

    void cleanup() { m_db.reset(); }

    void accountsCrudAndChangeCounter()
    {
        AccountRepository accounts(*m_db, m_clock);
        QString error;
        const auto alice = accounts.upsert(identityFrom(QStringLiteral("personal-alice.json")), &error);
        QVERIFY2(alice && alice->created, qPrintable(error));
        const auto aliceTeam = accounts.upsert(identityFrom(QStringLiteral("team-alice.json")), &error);
        QVERIFY(aliceTeam && aliceTeam->created && aliceTeam->id != alice->id);
        const auto bob = accounts.upsert(identityFrom(QStringLiteral("team-bob.json")), &error);
        QVERIFY(bob && bob->created);
        QCOMPARE(accounts.list().size(), 3);
        QCOMPARE(m_db->changeCounter(), std::optional<qint64>(3));
        QCOMPARE(accounts.find(alice->id)->createdAtMs, 4102444800000LL);

        // Re-import: same row, fresh tokens lift reauth_required.
        QVERIFY(accounts.setStatus(aliceTeam->id, QStringLiteral("reauth_required"), QStringLiteral("401"), &error));
        m_clock.advance(60000);
        AccountRepository::Identity again = identityFrom(QStringLiteral("team-alice.json"));
        again.plan = QStringLiteral("business");
        again.tokenExpiresAtMs = 4200000000000LL;
        const auto reimported = accounts.upsert(again, &error);
        QVERIFY2(reimported && !reimported->created, qPrintable(error));
        QCOMPARE(reimported->id, aliceTeam->id);
        AccountRecord a = *accounts.find(aliceTeam->id);
        QCOMPARE(a.plan, QStringLiteral("business"));
        QCOMPARE(a.status, QStringLiteral("active"));
        QVERIFY(a.statusReason.isEmpty());
        QCOMPARE(a.tokenExpiresAtMs, std::optional<qint64>(4200000000000LL));
        QCOMPARE(a.updatedAtMs, m_clock.nowMs());
        QCOMPARE(accounts.list().size(), 3);

        // Lookup by id, alias and email (any case); aliases unique.
        QVERIFY2(accounts.setAlias(bob->id, QStringLiteral("main"), &error), qPrintable(error));
        QVERIFY(!accounts.setAlias(alice->id, QStringLiteral("main"), &error));
        QVERIFY2(error.contains(QLatin1String("already used")), qPrintable(error));
        QCOMPARE(accounts.findByRef(QStringLiteral("main")).account->id, bob->id);
        QCOMPARE(accounts.findByRef(bob->id).account->id, bob->id);
        const auto byEmail = accounts.findByRef(QStringLiteral("ALICE@example.test"));
        QCOMPARE(byEmail.matches.size(), 2);
        QVERIFY2(byEmail.error.contains(QLatin1String("ambiguous")), qPrintable(byEmail.error));

        // Runtime state: no counter bump; user-visible changes bump.
        const qint64 before = *m_db->changeCounter();
        QVERIFY(accounts.setCooldown(alice->id, m_clock.nowMs() + 30000, 2, &error));
        QVERIFY(accounts.touchSelected(alice->id, &error));
        QVERIFY(accounts.setTokenTimes(alice->id, 4300000000000LL, m_clock.nowMs(), &error));
        QCOMPARE(*m_db->changeCounter(), before);
        QVERIFY(accounts.setSlotCount(alice->id, 2, &error));
        QCOMPARE(*m_db->changeCounter(), before + 1);
        a = *accounts.find(alice->id);
        QCOMPARE(a.cooldownUntilMs, std::optional<qint64>(m_clock.nowMs() + 30000));
        QCOMPARE(a.consecutiveFailures, 2);
        QCOMPARE(a.lastSelectedMs, std::optional<qint64>(m_clock.nowMs()));
        QCOMPARE(a.tokenExpiresAtMs, std::optional<qint64>(4300000000000LL));
        QCOMPARE(a.slotCount, std::optional<int>(2));
        QVERIFY(accounts.setCooldown(alice->id, std::nullopt, 0, &error));
        QVERIFY(!accounts.find(alice->id)->cooldownUntilMs);
        QVERIFY(!accounts.touchSelected(QStringLiteral("acc_missing"), &error));

        // A given-up claim's selection time goes back, to NULL too, but never over a later claim's.
        qint64 stored = 0;
        QVERIFY2(accounts.touchSelected(bob->id, &error, &stored), qPrintable(error));
        QCOMPARE(stored, m_clock.nowMs());
        QVERIFY2(accounts.undoSelected(bob->id, std::nullopt, stored, &error), qPrintable(error));
        QCOMPARE(accounts.find(bob->id)->lastSelectedMs, std::nullopt);
        QVERIFY(accounts.touchSelected(bob->id, &error, &stored));
        m_clock.advance(5);
        qint64 later = 0;
        QVERIFY(accounts.touchSelected(bob->id, &error, &later));
        QVERIFY2(accounts.undoSelected(bob->id, 123, stored, &error), qPrintable(error));
        QCOMPARE(accounts.find(bob->id)->lastSelectedMs, std::optional<qint64>(later));
        QVERIFY(accounts.undoSelected(bob->id, 123, later, &error));
        QCOMPARE(accounts.find(bob->id)->lastSelectedMs, std::optional<qint64>(123));
        // Two claims in one millisecond store values of their own (the second one's is the first's + 1 ms).
        qint64 first = 0, second = 0;
        QVERIFY2(accounts.touchSelected(bob->id, &error, &first), qPrintable(error));
        QVERIFY2(accounts.touchSelected(bob->id, &error, &second), qPrintable(error));
        QCOMPARE(first, m_clock.nowMs());
        QCOMPARE(second, first + 1);
        QVERIFY(accounts.undoSelected(bob->id, 123, first, &error));
        QCOMPARE(accounts.find(bob->id)->lastSelectedMs, std::optional<qint64>(second));
        QVERIFY(!accounts.setStatus(alice->id, QStringLiteral("sleepy"), QString(), &error));

        // Removal cascades to usage, anchors, affinity and the pin; the request log stays.
        UsageRecord u;
        u.accountId = alice->id;
        u.observedAtMs = m_clock.nowMs();
        QVERIFY(accounts.saveUsage(u, &error));
        QVERIFY(AnchorRepository(*m_db, m_clock).remember(QStringLiteral("resp_1"), alice->id, &error));
        QVERIFY(AffinityRepository(*m_db, m_clock).set(QStringLiteral("s1"), alice->id, &error));
        QVERIFY(SettingsRepository(*m_db).setPin(alice->id, true, &error));
        RequestLogRecord r;
        r.requestId = QStringLiteral("req_1");
        r.route = QStringLiteral("/v1/responses");
        r.status = QStringLiteral("completed");
        r.accountId = alice->id;
        QVERIFY(RequestLogRepository(*m_db).insert(r, &error));
        QVERIFY2(accounts.remove(alice->id, &error), qPrintable(error));
        QVERIFY(!accounts.find(alice->id));
        QVERIFY(!accounts.loadUsage(alice->id));
        QVERIFY(!AnchorRepository(*m_db).ownerOf(QStringLiteral("resp_1")));
        QVERIFY(!AffinityRepository(*m_db).accountFor(QStringLiteral("s1")));
        QVERIFY(!SettingsRepository(*m_db).pin());
        QCOMPARE(RequestLogRepository(*m_db).recent(10).size(), 1);
        QVERIFY(!accounts.remove(alice->id, &error));
        QVERIFY(m_db->writable());
    }

    void usageKeepsUnknownsNullAndReplacesWhole()
    {
        const QString id = addAccount(QStringLiteral("personal-alice.json"));
        AccountRepository accounts(*m_db, m_clock);
        UsageRecord u;
        u.accountId = id;
        u.primary.usedPercent = 12.5;
        u.primary.windowMinutes = 300;
        u.secondary.resetAtMs = 4102444800123LL;
        u.hasCredits = false;
        u.creditsBalance = 0.1;
        u.observedAtMs = m_clock.nowMs();
        QString error;
        QVERIFY2(accounts.saveUsage(u, &error), qPrintable(error));
        UsageRecord back = *accounts.loadUsage(id);
        QCOMPARE(back.primary.usedPercent, std::optional<double>(12.5));
        QCOMPARE(back.primary.windowMinutes, std::optional<int>(300));
        QVERIFY(!back.primary.resetAtMs);
        QCOMPARE(back.secondary.resetAtMs, std::optional<qint64>(4102444800123LL));
        QCOMPARE(back.hasCredits, std::optional<bool>(false));
        QCOMPARE(back.creditsBalance, std::optional<double>(0.1)); // double precision, not a 4-byte real
        QVERIFY(!back.unlimited);
        // The next observation replaces the row, unknowns included.
        UsageRecord next;
        next.accountId = id;
        next.unlimited = true;
        next.observedAtMs = m_clock.nowMs() + 1;
        QVERIFY2(accounts.saveUsage(next, &error), qPrintable(error));
        back = *accounts.loadUsage(id);
        QVERIFY(!back.primary.usedPercent && !back.hasCredits);
        QCOMPARE(back.unlimited, std::optional<bool>(true));
        QCOMPARE(back.observedAtMs, m_clock.nowMs() + 1);
        QCOMPARE(accounts.loadAllUsage().size(), 1);
    }

    void requestLogInsertListAndTotals()
    {
        RequestLogRepository log(*m_db);
        QString error;
        RequestLogRecord full;
        full.requestId = QStringLiteral("req_full");
        full.startedAtMs = m_clock.nowMs();
        full.route = QStringLiteral("/backend-api/codex/responses");
        full.model = QStringLiteral("gpt-5-codex");
        full.sessionKey = QStringLiteral("0199-session");
        full.accountId = QStringLiteral("acc_0123456789ab");
        full.accountAlias = QStringLiteral("work");
        full.chatgptAccountId = QStringLiteral("11111111-aaaa-4aaa-8aaa-000000000001");
        full.status = QStringLiteral("completed");
        full.upstreamRequestId = QStringLiteral("up-42");
        full.attempts = {{QStringLiteral("acc_other"), QStringLiteral("proxy-eu"), QStringLiteral("rate_limited"), 12},
                         {QStringLiteral("acc_0123456789ab"), std::nullopt, QStringLiteral("completed"), 880}};
        full.blockedBy = {QStringLiteral("acc_paused:paused")};
        full.latency = {0, 3, 40, 900};
        full.tokens = {10, 0, 20, 0, 3000000000LL};
        QVERIFY2(log.insert(full, &error), qPrintable(error));
        QVERIFY(*log.find(QStringLiteral("req_full")) == full);

        const auto minimal = [&](const QString &id, qint64 at) {
            RequestLogRecord r;
            r.requestId = id;
            r.startedAtMs = at;
            r.route = QStringLiteral("/v1/chat/completions");
            r.status = QStringLiteral("rejected");
            r.accountId = QStringLiteral("acc_0123456789ab");
            r.tokens.input = 5;
            return r;
        };
        const qint64 t = m_clock.nowMs();
        QVERIFY(log.insert(minimal(QStringLiteral("req_b"), t + 2000), &error));
        QVERIFY(log.insert(minimal(QStringLiteral("req_a"), t + 1000), &error));
        QVERIFY(log.insert(minimal(QStringLiteral("req_c"), t + 3000), &error));
        QVERIFY(log.insert(minimal(QStringLiteral("req_c2"), t + 3000), &error)); // same ms, inserted later
        const QList<RequestLogRecord> recent = log.recent(3, &error);
        QCOMPARE(recent.size(), 3);
        QCOMPARE(recent.at(0).requestId, QStringLiteral("req_c2"));
        QCOMPARE(recent.at(1).requestId, QStringLiteral("req_c"));
        QCOMPARE(recent.at(2).requestId, QStringLiteral("req_b"));
        QCOMPARE(log.recent(100).size(), 5);
        QVERIFY(!recent.at(0).model && !recent.at(0).latency.totalMs);
        QVERIFY(!log.insert(minimal(QStringLiteral("req_a"), t), &error)); // primary key
        // A model filled in after the booking: only where there is none.
        QVERIFY2(log.fillMissingModel(QStringLiteral("req_c2"), QStringLiteral("gpt-5"), &error), qPrintable(error));
        QVERIFY(log.fillMissingModel(QStringLiteral("req_full"), QStringLiteral("gpt-5"), &error));
        QCOMPARE(log.find(QStringLiteral("req_c2"))->model, std::optional<QString>(QStringLiteral("gpt-5")));
        QCOMPARE(log.find(QStringLiteral("req_full"))->model, std::optional<QString>(QStringLiteral("gpt-5-codex")));

        error.clear();
        const QHash<QString, TokenTotals> totals = tokenTotalsByAccount(*m_db, t, &error);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const TokenTotals acc = totals.value(QStringLiteral("acc_0123456789ab"));
        QCOMPARE(acc.requests, 5LL);
        QCOMPARE(acc.input, 30LL);
        QCOMPARE(acc.output, 20LL);
        QCOMPARE(acc.total, 3000000000LL);
        QCOMPARE(tokenTotalsByAccount(*m_db, t + 2500, &error).value(QStringLiteral("acc_0123456789ab")).requests, 2LL);
    }

    void anchorsAndAffinity()
    {
        const QString a = addAccount(QStringLiteral("personal-alice.json"));
        const QString b = addAccount(QStringLiteral("team-bob.json"));
        AnchorRepository anchors(*m_db, m_clock);
        QString error;
        QVERIFY2(anchors.remember(QStringLiteral("resp_a"), a, &error), qPrintable(error));
        QCOMPARE(anchors.ownerOf(QStringLiteral("resp_a")), std::optional<QString>(a));
        QVERIFY(anchors.remember(QStringLiteral("resp_a"), b, &error)); // re-anchored: the later owner wins
        QCOMPARE(anchors.ownerOf(QStringLiteral("resp_a")), std::optional<QString>(b));
        QVERIFY(!anchors.ownerOf(QStringLiteral("resp_unknown"), &error));
        QVERIFY(!anchors.remember(QStringLiteral("resp_x"), QStringLiteral("acc_ghost"), &error)); // foreign key
        m_clock.advance(1000);
        QVERIFY(anchors.remember(QStringLiteral("resp_b"), b, &error));
        // Each anchor carries the time it was made, which the ledger's retention goes by.
        QCOMPARE(
            scalar(*m_db, QStringLiteral("SELECT created_at_ms FROM response_anchors WHERE response_id = 'resp_b'"))
                .toLongLong(),
            m_clock.nowMs());
        QCOMPARE(
            scalar(*m_db, QStringLiteral("SELECT created_at_ms FROM response_anchors WHERE response_id = 'resp_a'"))
                .toLongLong(),
            m_clock.nowMs() - 1000);
        QCOMPARE(anchors.ownerOf(QStringLiteral("resp_b")), std::optional<QString>(b));

        AffinityRepository affinity(*m_db, m_clock);
        QVERIFY(affinity.set(QStringLiteral("s1"), a, &error));
        m_clock.advance(1000); // the upsert moves the binding's time too
        QVERIFY(affinity.set(QStringLiteral("s1"), b, &error));
        QCOMPARE(affinity.accountFor(QStringLiteral("s1")), std::optional<QString>(b));
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT updated_at_ms FROM session_affinity WHERE session_key = 's1'"))
                     .toLongLong(),
                 m_clock.nowMs());
        QVERIFY2(affinity.clear(QStringLiteral("s1"), &error), qPrintable(error));
        QVERIFY(!affinity.accountFor(QStringLiteral("s1")));
    }

    // The next claim of a request that gave up a claim (a failover) closes it in the claim's own transaction,
    // so a restart's reclaim settles the request once, on the next claim (tst_ownership_store, finding F5).
    void aNextClaimClosesTheGivenUpClaim()
    {
        const QString a = addAccount(QStringLiteral("personal-alice.json"));
        OwnerSlotRepository repo(*m_db);
        QString error;
        const auto me = repo.registerReplica(QStringLiteral("rep_pg"), m_clock.nowMs(), &error);
        QVERIFY2(me, qPrintable(error));
        ClaimAttempt c = firstClaim(*me, a);
        QVERIFY(repo.claim(c, &error).kind == ClaimOutcome::Kind::Claimed);
        c.slot = 1;
        c.nowMs += 1;
        c.closesGivenUpClaims = true;
        QVERIFY2(repo.claim(c, &error).kind == ClaimOutcome::Kind::Claimed, qPrintable(error));
        const auto restarted = repo.registerReplica(QStringLiteral("rep_pg"), c.nowMs + 1, &error);
        QVERIFY2(restarted, qPrintable(error));
        QCOMPARE(repo.reclaimPreviousIncarnations(*restarted, c.nowMs + 1, &error), 2);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT string_agg(slot_index || ':' || release_kind || ':' || "
                                              "settlements, ',' ORDER BY slot_index) FROM slot_claims"))
                     .toString(),
                 QStringLiteral("0:failover:0,1:reclaimed_restart:1"));
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT count(*) FROM request_log WHERE request_id = 'req_pg'")).toInt(),
                 1);
    }

    // settleAbandonedFailovers' SQL (a join, EXISTS, the partial index) on PostgreSQL: a request whose
    // failover release committed before the process died is booked once by the restart, and another
    // replica's once it no longer vouches for itself.
    void aRestartBooksAFailoverThatNeverReachedItsNextClaim()
    {
        const QString a = addAccount(QStringLiteral("personal-alice.json"));
        OwnerSlotRepository repo(*m_db);
        QString error;
        const auto me = repo.registerReplica(QStringLiteral("rep_pg"), m_clock.nowMs(), &error);
        QVERIFY2(me, qPrintable(error));
        ClaimAttempt c = firstClaim(*me, a);
        const ClaimOutcome first = repo.claim(c, &error);
        QVERIFY2(first.kind == ClaimOutcome::Kind::Claimed, qPrintable(error));
        QVERIFY2(repo.releaseForFailover(*me, first.held, c.nowMs + 1, &error), qPrintable(error));
        QCOMPARE(repo.settleAbandonedFailovers(*me, c.nowMs + 1000000, 60000, &error), 0);
        const auto restarted = repo.registerReplica(QStringLiteral("rep_pg"), c.nowMs + 2, &error);
        QVERIFY2(restarted, qPrintable(error));
        QCOMPARE(repo.settleAbandonedFailovers(*restarted, c.nowMs + 2, 60000, &error), 1);
        QCOMPARE(repo.settleAbandonedFailovers(*restarted, c.nowMs + 3, 60000, &error), 0);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT release_kind || ':' || settlements FROM slot_claims")).toString(),
                 QStringLiteral("failover:1"));
        QCOMPARE(
            scalar(*m_db, QStringLiteral("SELECT error_code FROM request_log WHERE request_id = 'req_pg'")).toString(),
            QStringLiteral("owner_lost"));
        // Another replica that renewed with its own (longer) lease TTL is judged by it.
        const auto other = repo.registerReplica(QStringLiteral("rep_pg_2"), c.nowMs, &error);
        QVERIFY2(other, qPrintable(error));
        ClaimAttempt o = firstClaim(*other, a);
        o.requestId = QStringLiteral("req_pg_2");
        o.slot = 1;
        const ClaimOutcome ofOther = repo.claim(o, &error);
        QVERIFY2(ofOther.kind == ClaimOutcome::Kind::Claimed, qPrintable(error));
        QVERIFY2(repo.releaseForFailover(*other, ofOther.held, o.nowMs + 1, &error), qPrintable(error));
        QVERIFY2(repo.renew(*other, {}, o.nowMs + 1, 600000, nullptr, &error), qPrintable(error));
        QCOMPARE(repo.settleAbandonedFailovers(*restarted, o.nowMs + 120000, 60000, &error), 0);
        QCOMPARE(repo.settleAbandonedFailovers(*restarted, o.nowMs + 600002, 60000, &error), 1);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT sum(settlements) FROM slot_claims WHERE request_id = 'req_pg_2'"))
                     .toInt(),
                 1);
    }

    // LedgerRetention's batch on PostgreSQL (its DELETE ... IN (SELECT ... LIMIT ?), the request-id range): an old
    // settled request and an old anchor go, an old open claim, a recent request and a recent anchor stay, the limit
    // holds, and two batches do not meet. In a database with the server's C collation (initdb --no-locale), and in
    // databases whose default collation is a language's, as on a server set up with a locale (libc en_US.UTF-8,
    // ICU en-US and sv-SE): the request-id range relies on ids that begin with their time sorting in time order
    // under it too.
    void ledgerRetentionDropsOnlyOldClosedRequests_data()
    {
        QTest::addColumn<QString>("locale");
        QTest::newRow("C collation") << QString();
        QTest::newRow("libc en_US.UTF-8") << QStringLiteral("LOCALE '%1'").arg(kLibcLocale);
        QTest::newRow("ICU en-US") << QStringLiteral("LOCALE_PROVIDER icu ICU_LOCALE 'en-US'");
        QTest::newRow("ICU sv-SE") << QStringLiteral("LOCALE_PROVIDER icu ICU_LOCALE 'sv-SE'");
    }

    void ledgerRetentionDropsOnlyOldClosedRequests()
    {
        QFETCH(QString, locale);
        if (!locale.isEmpty()) {
            QString error;
            const QString name = m_database + QStringLiteral("_collated");
            QVERIFY2(m_pg.sql(QStringLiteral("CREATE DATABASE %1 TEMPLATE template0 %2").arg(name, locale), &error,
                              QStringLiteral("postgres")),
                     qPrintable(error));
            m_url = m_pg.url(name);
            m_db = std::make_unique<Database>();
            QVERIFY2(m_db->open(m_url, &error), qPrintable(error));
            // The collation is in effect and is not byte order: under it a lower-case letter sorts before the next
            // upper-case one, under C every upper-case letter sorts first.
            QVERIFY(scalar(*m_db, QStringLiteral("SELECT 'a' < 'B'")).toBool());
        } else {
            const QVariant aBeforeB = scalar(*m_db, QStringLiteral("SELECT 'a' < 'B'"));
            QVERIFY(aBeforeB.isValid() && !aBeforeB.toBool());
        }
        // Ids of times from 2017 to 2081 with floors among them, and random ids as 0.1.0 made them (req_ and 24
        // hex digits): the database orders them as bytes do, so a floor separates earlier ids from later ones.
        QStringList ids;
        for (qint64 i = 0; i < 300; ++i) {
            const qint64 at = 1500000000000LL + i * 6700000000LL + (i * 7919 % 1000);
            ids << newRequestId(at) << QStringLiteral("req_") + newOpaqueId();
            if (i % 10 == 0)
                ids << requestIdFloor(at);
        }
        QStringList byBytes = ids;
        std::sort(byBytes.begin(), byBytes.end()); // QString's order: UTF-16 code units, for ASCII byte order
        QCOMPARE(
            scalar(*m_db, QStringLiteral("SELECT string_agg(id, ',' ORDER BY id) FROM unnest(string_to_array('%1', "
                                         "',')) id")
                              .arg(ids.join(QLatin1Char(','))))
                .toString(),
            byBytes.join(QLatin1Char(',')));
        const QString a = addAccount(QStringLiteral("personal-alice.json"));
        OwnerSlotRepository repo(*m_db);
        QString error;
        const qint64 now = m_clock.nowMs();
        const qint64 cutoff = now - LedgerRetention::kRetentionMs;
        const auto me = repo.registerReplica(QStringLiteral("rep_pg"), cutoff - 10000, &error);
        QVERIFY2(me, qPrintable(error));
        int slot = 0;
        const auto turnAt = [&](qint64 at, bool settle, const QString &id = {}) {
            ClaimAttempt c = firstClaim(*me, a);
            c.requestId = id.isEmpty() ? newRequestId(at) : id;
            c.slot = slot++;
            c.startedAtMs = c.nowMs = at;
            if (repo.claim(c, &error).kind != ClaimOutcome::Kind::Claimed ||
                (settle && !repo.settleTurn(*me, c.requestId, QString(), at + 5, &error)))
                qFatal("turn: %s", qPrintable(error));
            test::ManualClock clock(at + 5);
            if (!AnchorRepository(*m_db, clock).remember(QStringLiteral("resp_") + c.requestId, a, &error))
                qFatal("anchor: %s", qPrintable(error));
            return c.requestId;
        };
        const QString old1 = turnAt(cutoff - 3000, true), old2 = turnAt(cutoff - 2000, true);
        const QString open = turnAt(cutoff - 1000, false);
        const QString recent = turnAt(now - 1000, true);
        LedgerRetention::Batch batch;
        // A batch in a write transaction of its own, as on the store thread.
        const auto prune = [&](int limit) {
            Transaction tx(*m_db);
            return tx.begin(&error) && LedgerRetention::pruneBatch(*m_db, cutoff, limit, &batch, &error) &&
                   tx.commit(&error);
        };
        QVERIFY2(prune(1), qPrintable(error));
        QCOMPARE(batch.claims, 1);
        QCOMPARE(batch.anchors, 1);
        QVERIFY2(prune(10), qPrintable(error));
        QCOMPARE(batch.claims, 1);
        QCOMPARE(batch.anchors, 2); // the open request's anchor is old too
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT string_agg(request_id, ',' ORDER BY request_id) FROM "
                                              "slot_claims"))
                     .toString(),
                 open + QLatin1Char(',') + recent);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT string_agg(response_id, ',') FROM response_anchors")).toString(),
                 QStringLiteral("resp_") + recent);
        QVERIFY(!old1.isEmpty() && !old2.isEmpty());

        // One replica's batch at a time: while a batch's transaction is open on one connection, a batch on
        // another deletes nothing and does not wait for it. Red without the advisory lock: the second batch
        // waits on the first one's rows (lock_timeout turns the wait into an error here).
        const QString old3 = turnAt(cutoff - 500, true);
        Database other;
        QVERIFY2(other.open(m_url, &error), qPrintable(error));
        QVERIFY2(other.exec(QStringLiteral("SET lock_timeout = '2s'"), &error), qPrintable(error));
        {
            Transaction first(*m_db);
            QVERIFY2(first.begin(&error), qPrintable(error));
            QVERIFY2(LedgerRetention::pruneBatch(*m_db, cutoff, 10, &batch, &error), qPrintable(error));
            QCOMPARE(batch.claims, 1);
            Transaction second(other);
            QVERIFY2(second.begin(&error), qPrintable(error));
            QVERIFY2(LedgerRetention::pruneBatch(other, cutoff, 10, &batch, &error), qPrintable(error));
            QCOMPARE(batch.claims, 0);
            QCOMPARE(batch.anchors, 0);
            QVERIFY2(second.commit(&error), qPrintable(error));
            QVERIFY2(first.commit(&error), qPrintable(error));
        }
        QCOMPARE(
            scalar(*m_db, QStringLiteral("SELECT count(*) FROM slot_claims WHERE request_id = '%1'").arg(old3)).toInt(),
            0);

        // Random ids as 0.1.0 made them, one above every time-first id and one below the first pass's range: the
        // walk finds both, one part of the index in one batch and the other in the next.
        const QString above = turnAt(cutoff - 400, true, QStringLiteral("req_f") + newOpaqueId().left(23));
        const QString below = turnAt(cutoff - 300, true, QStringLiteral("req_00") + newOpaqueId().left(22));
        for (int i = 0; i < 2; ++i) {
            QVERIFY2(prune(10), qPrintable(error));
            QCOMPARE(batch.claims, 0);
            QCOMPARE(batch.legacyClaims, 1);
            QVERIFY(batch.legacyAfter.isEmpty());
        }
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT count(*) FROM slot_claims WHERE request_id IN ('%1', '%2')")
                                   .arg(above, below))
                     .toInt(),
                 0);

        // A window that holds more of them than a batch takes: the next batch goes on after the last one taken, in
        // the database's order of the ids.
        for (int i = 0; i < 3; ++i)
            turnAt(cutoff - 200 + i, true, QStringLiteral("req_f") + newOpaqueId().left(23));
        batch = LedgerRetention::Batch{};
        for (int i = 0; i < 3; ++i) {
            QVERIFY2(prune(1), qPrintable(error));
            QCOMPARE(batch.legacyClaims, 1);
            QCOMPARE(batch.legacyAfter.isEmpty(), i == 2); // the last one ends the window and its part
            QCOMPARE(batch.legacyBelow, i == 2);
        }
    }

    void settingsPinAndStrategy()
    {
        const QString id = addAccount(QStringLiteral("personal-alice.json"));
        SettingsRepository settings(*m_db);
        QString error;
        QVERIFY(!settings.pin());
        const qint64 before = *m_db->changeCounter();
        QVERIFY(!settings.setPin(QStringLiteral("acc_nobody"), false, &error));
        QVERIFY2(settings.setPin(id, true, &error), qPrintable(error));
        QCOMPARE(settings.pin()->accountId, id);
        QVERIFY(settings.pin()->strict);
        QVERIFY(settings.setPin(id, false, &error)); // overwrites the existing rows
        QVERIFY(!settings.pin()->strict);
        QVERIFY(settings.clearPin(&error));
        QVERIFY(!settings.pin());
        QVERIFY(settings.setStrategy(QStringLiteral("round_robin"), &error));
        QVERIFY(settings.setStrategy(QStringLiteral("fill_first"), &error));
        QCOMPARE(settings.strategy(), QStringLiteral("fill_first"));
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT count(*) FROM settings WHERE key = 'strategy'")).toInt(), 1);
        QVERIFY(*m_db->changeCounter() > before + 4);
    }

    void refreshClaimsAreSingleFlight()
    {
        RefreshClaimRepository claims(*m_db);
        QString error;
        const qint64 now = m_clock.nowMs();
        QVERIFY(claims.claim(QStringLiteral("acc_1"), QStringLiteral("replica-a"), now, 30000, &error));
        QCOMPARE(claims.heldUntil(QStringLiteral("acc_1"), &error), std::optional<qint64>(now + 30000));
        QVERIFY(!claims.claim(QStringLiteral("acc_1"), QStringLiteral("replica-b"), now + 1000, 30000, &error));
        QVERIFY(error.isEmpty());
        QVERIFY(claims.release(QStringLiteral("acc_1"), QStringLiteral("replica-b"), &error)); // not the holder
        QVERIFY(claims.heldUntil(QStringLiteral("acc_1"), &error));
        // Expired: another replica takes it over.
        QVERIFY(claims.claim(QStringLiteral("acc_1"), QStringLiteral("replica-b"), now + 31000, 30000, &error));
        QCOMPARE(claims.heldUntil(QStringLiteral("acc_1"), &error), std::optional<qint64>(now + 61000));
        QVERIFY(claims.release(QStringLiteral("acc_1"), QStringLiteral("replica-a"), &error)); // stale holder
        QVERIFY(claims.heldUntil(QStringLiteral("acc_1"), &error));
        QVERIFY(claims.release(QStringLiteral("acc_1"), QStringLiteral("replica-b"), &error));
        QVERIFY(!claims.heldUntil(QStringLiteral("acc_1"), &error));
    }

    // Two replicas importing the same accounts at the same moment: no failure, no duplicate.
    void concurrentImportsOfTheSameAccounts()
    {
        QList<AccountRepository::Identity> ids;
        for (int i = 0; i < 25; ++i)
            ids << AccountRepository::Identity{QStringLiteral("ws-%1").arg(i), QStringLiteral("user"),
                                               QStringLiteral("u%1@example.test").arg(i), QStringLiteral("plus"),
                                               std::nullopt, std::nullopt, std::nullopt};
        Barrier barrier;
        UpsertThread a(m_url, ids, &barrier);
        UpsertThread b(m_url, ids, &barrier);
        a.start();
        b.start();
        QVERIFY(a.wait(60000) && b.wait(60000));
        QVERIFY2(a.failures.isEmpty(), qPrintable(a.failures.join(u'\n')));
        QVERIFY2(b.failures.isEmpty(), qPrintable(b.failures.join(u'\n')));
        QCOMPARE(AccountRepository(*m_db).list().size(), 25);
        QCOMPARE(*m_db->changeCounter(), 50LL);
    }
};

QTEST_GUILESS_MAIN(tst_StorePostgresRepos)
#include "tst_store_postgres_repos.moc"
