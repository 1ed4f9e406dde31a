// The SQLite store: schema and migration, accounts (dedup, lookup, aliases, removal), settings, the
// request log's JSON shape, anchors and affinity, and nested transactions.
#include "ManualClock.h"
#include "TestSupport.h"
#include "accounts/AuthJson.h"
#include "store/AccountRepository.h"
#include "store/AnchorRepository.h"
#include "store/Database.h"
#include "store/Schema.h"
#include "store/RequestLogRepository.h"
#include "store/SettingsRepository.h"

#include <QRegularExpression>
#include <QSet>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>

using namespace sy;

namespace {

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

QSet<QString> set(std::initializer_list<const char *> names)
{
    QSet<QString> s;
    for (const char *n : names)
        s.insert(QString::fromLatin1(n));
    return s;
}

} // namespace

class tst_Store : public QObject
{
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    test::ManualClock m_clock;
    std::unique_ptr<Database> m_db;

    QString path() const { return m_dir.filePath(QStringLiteral("switchyard.sqlite")); }

    // The indexes of `table` that a CREATE INDEX made (not those SQLite makes for a primary key or UNIQUE).
    QSet<QString> createdIndexes(const QString &table) const
    {
        QSet<QString> names;
        QSqlQuery q = m_db->query();
        q.prepare(QStringLiteral("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = ? AND "
                                 "sql IS NOT NULL"));
        q.addBindValue(table);
        if (q.exec()) {
            while (q.next())
                names << q.value(0).toString();
        }
        return names;
    }
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

private slots:
    void init()
    {
        QFile::remove(path());
        QFile::remove(path() + QStringLiteral("-wal"));
        QFile::remove(path() + QStringLiteral("-shm"));
        m_db = std::make_unique<Database>();
        QString error;
        QVERIFY2(m_db->open(path(), &error), qPrintable(error));
    }

    void cleanup() { m_db.reset(); }

    void migrationFromEmptyCreatesSchema()
    {
        QCOMPARE(m_db->schemaVersion(), kLatestSchemaVersion);
        QCOMPARE(Database::latestSchemaVersion(), 8);
        QVERIFY(m_db->writable());
        QSet<QString> tables;
        QSqlQuery q = m_db->query();
        QVERIFY(q.exec(QStringLiteral("SELECT name FROM sqlite_master WHERE type = 'table'")));
        while (q.next())
            tables << q.value(0).toString();
        QCOMPARE(tables, set({"schema_version", "meta", "accounts", "account_usage", "settings", "request_log",
                              "response_anchors", "session_affinity", "account_secrets", "refresh_claims", "replicas",
                              "owner_slots", "slot_claims", "usage_rollup_hourly", "usage_samples", "api_keys",
                              "api_key_requests"}));
        // The request log keeps one index led by started_at_ms: request_log_started_id, which also orders the
        // Requests page (version 7 dropped request_log_started, its first column alone).
        QCOMPARE(createdIndexes(QStringLiteral("request_log")), set({"request_log_account", "request_log_started_id"}));
        // The claim ledger keeps the two indexes its statements search by (version 7 dropped slot_claims_open,
        // which no statement used and every claim and settlement wrote), and the partial index of claims given
        // up by a failover and not settled (version 8), which the lease tick's sweep scans.
        QCOMPARE(createdIndexes(QStringLiteral("slot_claims")),
                 set({"slot_claims_request", "slot_claims_slot", "slot_claims_given_up"}));
        QCOMPARE(scalar(*m_db, QStringLiteral("PRAGMA journal_mode")).toString(), QStringLiteral("wal"));
        QCOMPARE(scalar(*m_db, QStringLiteral("PRAGMA foreign_keys")).toInt(), 1);
        QCOMPARE(scalar(*m_db, QStringLiteral("PRAGMA synchronous")).toInt(), 1); // NORMAL
        QCOMPARE(scalar(*m_db, QStringLiteral("PRAGMA busy_timeout")).toInt(), 5000);
        QCOMPARE(m_db->changeCounter(), std::optional<qint64>(0));
        // No stored slot count: the configured slots_per_account applies until an account overrides it.
        QVERIFY(scalar(*m_db, QStringLiteral("SELECT dflt_value FROM pragma_table_info('accounts') "
                                             "WHERE name = 'slot_count'"))
                    .isNull());
    }

    void migrationIsIdempotent()
    {
        QString error;
        QVERIFY2(m_db->migrate(&error), qPrintable(error));
        m_db.reset();
        m_db = std::make_unique<Database>();
        QVERIFY2(m_db->open(path(), &error), qPrintable(error));
        QCOMPARE(m_db->schemaVersion(), kLatestSchemaVersion);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT count(*) FROM schema_version")).toInt(), kLatestSchemaVersion);
    }

    // A version-1 file (before account_secrets and refresh_claims) upgrades to the latest on open, keeping its data.
    void migrationFromVersion1AddsAccountSecrets()
    {
        const QString id = addAccount(QStringLiteral("personal-alice.json"));
        QString error;
        // Versions 2 to 6 only added tables and columns, so dropping them (and their version rows) gives a
        // version-1 file.
        for (const char *sql : {"DROP TABLE account_secrets", "DROP TABLE refresh_claims", "DROP TABLE replicas",
                                "DROP TABLE owner_slots", "DROP TABLE slot_claims", "DROP TABLE usage_rollup_hourly",
                                "DROP TABLE usage_samples", "DROP INDEX request_log_started_id",
                                "DROP TABLE api_keys", "DROP TABLE api_key_requests",
                                "ALTER TABLE accounts DROP COLUMN version",
                                "ALTER TABLE response_anchors DROP COLUMN lineage",
                                "ALTER TABLE response_anchors DROP COLUMN session_key",
                                "ALTER TABLE response_anchors DROP COLUMN slot_index",
                                "ALTER TABLE response_anchors DROP COLUMN owner_epoch",
                                "ALTER TABLE response_anchors DROP COLUMN provenance"})
            QVERIFY2(m_db->exec(QString::fromLatin1(sql), &error), qPrintable(error));
        QVERIFY2(m_db->exec(QStringLiteral("DELETE FROM schema_version WHERE version >= 2"), &error), qPrintable(error));
        QCOMPARE(m_db->schemaVersion(), 1);
        m_db.reset();

        // A read-only connection refuses the old schema instead of guessing.
        Database reader;
        QVERIFY(!reader.open(path(), &error, Database::OpenMode::ReadOnly));
        QVERIFY2(error.contains(QLatin1String("not upgraded")), qPrintable(error));

        m_db = std::make_unique<Database>();
        QVERIFY2(m_db->open(path(), &error), qPrintable(error));
        QCOMPARE(m_db->schemaVersion(), kLatestSchemaVersion);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT count(*) FROM schema_version")).toInt(), kLatestSchemaVersion);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
                                              "name = 'account_secrets'"))
                     .toInt(),
                 1);
        QVERIFY(AccountRepository(*m_db).find(id).has_value());
        // No foreign key: an import stores the secret before its account row exists.
        QVERIFY2(m_db->exec(QStringLiteral("INSERT INTO account_secrets VALUES ('acc_not_yet', 1, 'k', x'00', x'00', 0)"),
                            &error),
                 qPrintable(error));
    }

    void refusesSchemaFromTheFuture()
    {
        QVERIFY(m_db->exec(QStringLiteral("INSERT INTO schema_version VALUES (99, 0)"), nullptr));
        m_db.reset();
        Database db;
        QString error;
        QVERIFY(!db.open(path(), &error));
        QVERIFY2(error.contains(QStringLiteral("newer")), qPrintable(error));
    }

    void readOnlyConnectionReadsButNeverWrites()
    {
        addAccount(QStringLiteral("personal-alice.json"));
        Database reader;
        QString error;
        QVERIFY2(reader.open(path(), &error, Database::OpenMode::ReadOnly), qPrintable(error));
        QVERIFY(reader.connectionName() != m_db->connectionName());
        QVERIFY(!reader.writable());
        QCOMPARE(AccountRepository(reader).list().size(), 1);
        QVERIFY(!SettingsRepository(reader).setStrategy(QStringLiteral("round_robin"), &error));

        Database missing;
        QVERIFY(!missing.open(m_dir.filePath(QStringLiteral("absent.sqlite")), &error, Database::OpenMode::ReadOnly));
    }

    void upsertDeduplicatesByWorkspaceAndUser()
    {
        AccountRepository accounts(*m_db, m_clock);
        QString error;
        const auto alicePersonal = accounts.upsert(identityFrom(QStringLiteral("personal-alice.json")), &error);
        QVERIFY2(alicePersonal && alicePersonal->created, qPrintable(error));
        // Same email, another workspace: another account.
        const auto aliceTeam = accounts.upsert(identityFrom(QStringLiteral("team-alice.json")), &error);
        QVERIFY(aliceTeam && aliceTeam->created);
        QVERIFY(aliceTeam->id != alicePersonal->id);
        // Same workspace, another user: another account.
        const auto bobTeam = accounts.upsert(identityFrom(QStringLiteral("team-bob.json")), &error);
        QVERIFY(bobTeam && bobTeam->created);
        QVERIFY(bobTeam->id != aliceTeam->id);
        QCOMPARE(accounts.list().size(), 3);
        QCOMPARE(m_db->changeCounter(), std::optional<qint64>(3));

        // Re-import: same account, facts refreshed, fresh tokens lift reauth_required.
        QVERIFY(accounts.setStatus(aliceTeam->id, QStringLiteral("reauth_required"), QStringLiteral("401"), &error));
        m_clock.advance(60000);
        AccountRepository::Identity again = identityFrom(QStringLiteral("team-alice.json"));
        again.plan = QStringLiteral("business");
        again.tokenExpiresAtMs = 1900000000000;
        const auto reimported = accounts.upsert(again, &error);
        QVERIFY(reimported && !reimported->created);
        QCOMPARE(reimported->id, aliceTeam->id);
        const AccountRecord a = *accounts.find(aliceTeam->id);
        QCOMPARE(a.plan, QStringLiteral("business"));
        QCOMPARE(a.tokenExpiresAtMs, std::optional<qint64>(1900000000000));
        QCOMPARE(a.status, QStringLiteral("active"));
        QVERIFY(a.statusReason.isEmpty());
        QCOMPARE(a.updatedAtMs, m_clock.nowMs());
        QCOMPARE(a.createdAtMs, m_clock.nowMs() - 60000);
        QCOMPARE(a.email, QStringLiteral("alice@example.test"));
        QVERIFY(!a.slotCount.has_value());
        QCOMPARE(accounts.list().size(), 3);

        // A paused account stays paused on re-import: pausing is the user's decision.
        QVERIFY(accounts.setStatus(bobTeam->id, QStringLiteral("paused"), QString(), &error));
        QVERIFY(accounts.upsert(identityFrom(QStringLiteral("team-bob.json")), &error));
        QCOMPARE(accounts.find(bobTeam->id)->status, QStringLiteral("paused"));
    }

    void accountIdIsAShortStableHash()
    {
        const QString id = AccountRepository::makeAccountId(QStringLiteral("ws"), QStringLiteral("user"));
        QCOMPARE(id, AccountRepository::makeAccountId(QStringLiteral("ws"), QStringLiteral("user")));
        QVERIFY(id != AccountRepository::makeAccountId(QStringLiteral("ws"), QStringLiteral("user2")));
        QVERIFY(id != AccountRepository::makeAccountId(QStringLiteral("wsu"), QStringLiteral("ser")));
        QVERIFY(QRegularExpression(QStringLiteral("^acc_[0-9a-f]{12}$")).match(id).hasMatch());
        QCOMPARE(addAccount(QStringLiteral("team-bob.json")),
                 AccountRepository::makeAccountId(QStringLiteral("22222222-bbbb-4bbb-8bbb-000000000002"),
                                                  QStringLiteral("user-bob")));
    }

    void findByRefResolvesIdAliasEmailAndReportsAmbiguity()
    {
        const QString personal = addAccount(QStringLiteral("personal-alice.json"), QStringLiteral("home"));
        const QString team = addAccount(QStringLiteral("team-alice.json"));
        const QString bob = addAccount(QStringLiteral("team-bob.json"), QStringLiteral("bob"));
        AccountRepository accounts(*m_db, m_clock);

        QCOMPARE(accounts.findByRef(team).account->id, team);
        QCOMPARE(accounts.findByRef(QStringLiteral("home")).account->id, personal);
        QCOMPARE(accounts.findByRef(QStringLiteral("BOB@Example.TEST")).account->id, bob);

        const auto ambiguous = accounts.findByRef(QStringLiteral("alice@example.test"));
        QVERIFY(!ambiguous.account);
        QCOMPARE(ambiguous.matches.size(), 2);
        QVERIFY2(ambiguous.error.contains(QStringLiteral("ambiguous")) && ambiguous.error.contains(personal) &&
                     ambiguous.error.contains(team) && !ambiguous.error.contains(bob),
                 qPrintable(ambiguous.error));

        const auto none = accounts.findByRef(QStringLiteral("nobody"));
        QVERIFY(!none.account && none.matches.isEmpty());
        QVERIFY(none.error.contains(QStringLiteral("no account matches 'nobody'")));

        // An alias spelled like another account's id makes that id ambiguous rather than silently picking.
        QString error;
        QVERIFY(accounts.setAlias(bob, team, &error));
        QCOMPARE(accounts.findByRef(team).matches.size(), 2);
    }

    void aliasesAreUniqueAndValidated()
    {
        const QString a = addAccount(QStringLiteral("personal-alice.json"), QStringLiteral("main"));
        const QString b = addAccount(QStringLiteral("team-bob.json"));
        AccountRepository accounts(*m_db, m_clock);
        QString error;
        QVERIFY(!accounts.setAlias(b, QStringLiteral("main"), &error));
        QVERIFY2(error.contains(QStringLiteral("already used by ") + a), qPrintable(error));
        QVERIFY(!accounts.setAlias(b, QStringLiteral("has space"), &error));
        QVERIFY(!accounts.setAlias(b, QString(65, QLatin1Char('x')), &error));
        AccountRepository::Identity clash = identityFrom(QStringLiteral("team-alice.json"));
        clash.alias = QStringLiteral("main");
        QVERIFY(!accounts.upsert(clash, &error));
        QCOMPARE(accounts.list().size(), 2);

        QVERIFY(accounts.setAlias(a, std::nullopt, &error));
        QVERIFY(accounts.setAlias(b, QStringLiteral("main"), &error));
        QCOMPARE(accounts.find(b)->alias, std::optional<QString>(QStringLiteral("main")));
        QCOMPARE(accounts.find(a)->displayName(), a);
        QVERIFY(!accounts.setAlias(QStringLiteral("acc_missing"), QStringLiteral("x"), &error));
        QVERIFY(error.contains(QStringLiteral("no account acc_missing")));
    }

    void runtimeStateUpdatesAndCounterBumps()
    {
        const QString id = addAccount(QStringLiteral("personal-alice.json"));
        AccountRepository accounts(*m_db, m_clock);
        QString error;
        const qint64 before = *m_db->changeCounter();
        QVERIFY(!accounts.setStatus(id, QStringLiteral("sleepy"), QString(), &error));
        QVERIFY(error.contains(QStringLiteral("unknown account status")));
        QVERIFY(accounts.setStatus(id, QStringLiteral("rate_limited"), QStringLiteral("429"), &error));
        QCOMPARE(*m_db->changeCounter(), before + 1);

        m_clock.advance(1234);
        QVERIFY(accounts.setCooldown(id, m_clock.nowMs() + 30000, 2, &error));
        QVERIFY(accounts.touchSelected(id, &error));
        QVERIFY(accounts.setTokenTimes(id, 1900000000000, m_clock.nowMs(), &error));
        QCOMPARE(*m_db->changeCounter(), before + 1); // runtime churn does not wake pollers
        const AccountRecord a = *accounts.find(id);
        QCOMPARE(a.status, QStringLiteral("rate_limited"));
        QCOMPARE(a.statusReason, QStringLiteral("429"));
        QCOMPARE(a.cooldownUntilMs, std::optional<qint64>(m_clock.nowMs() + 30000));
        QCOMPARE(a.consecutiveFailures, 2);
        QCOMPARE(a.lastSelectedMs, std::optional<qint64>(m_clock.nowMs()));
        QCOMPARE(a.lastRefreshMs, std::optional<qint64>(m_clock.nowMs()));

        QVERIFY(accounts.setCooldown(id, std::nullopt, 0, &error));
        QVERIFY(!accounts.find(id)->cooldownUntilMs);
        QVERIFY(!accounts.setSlotCount(id, 0, &error));
        QVERIFY(accounts.setSlotCount(id, 2, &error));
        QCOMPARE(accounts.find(id)->slotCount, std::optional<int>(2));
        QVERIFY(!accounts.touchSelected(QStringLiteral("acc_missing"), &error));

        // Two claims in one millisecond store values of their own: the first one's undo leaves the second's.
        qint64 first = 0, second = 0;
        QVERIFY2(accounts.touchSelected(id, &error, &first), qPrintable(error));
        QVERIFY2(accounts.touchSelected(id, &error, &second), qPrintable(error));
        QCOMPARE(first, m_clock.nowMs() + 1); // the earlier touch above stored now
        QCOMPARE(second, first + 1);
        QVERIFY2(accounts.undoSelected(id, m_clock.nowMs(), first, &error), qPrintable(error));
        QCOMPARE(accounts.find(id)->lastSelectedMs, std::optional<qint64>(second));
        QVERIFY(accounts.undoSelected(id, m_clock.nowMs(), second, &error));
        QCOMPARE(accounts.find(id)->lastSelectedMs, std::optional<qint64>(m_clock.nowMs()));
        m_clock.advance(10); // the clock passed the stored value: now again
        QVERIFY(accounts.touchSelected(id, &error, &first));
        QCOMPARE(first, m_clock.nowMs());

        // After a read in the same write transaction (a claim's), one statement stores what touchSelected() would.
        Transaction tx(*m_db);
        QVERIFY2(tx.begin(&error), qPrintable(error));
        const auto selectedMs = [&] { return accounts.find(id)->lastSelectedMs; };
        qint64 stored = 0;
        QVERIFY2(accounts.touchSelectedAfterReading(id, selectedMs(), &error, &stored), qPrintable(error));
        QCOMPARE(stored, m_clock.nowMs() + 1); // it held now already
        QCOMPARE(selectedMs(), std::optional<qint64>(stored));
        QVERIFY(accounts.touchSelectedAfterReading(id, selectedMs(), &error, &stored));
        QCOMPARE(stored, m_clock.nowMs() + 2);
        m_clock.advance(10); // older than now: now
        QVERIFY(accounts.touchSelectedAfterReading(id, selectedMs(), &error, &stored));
        QCOMPARE(stored, m_clock.nowMs());
        QCOMPARE(selectedMs(), std::optional<qint64>(m_clock.nowMs()));
        QVERIFY(accounts.undoSelected(id, std::nullopt, stored, &error)); // back to NULL
        QCOMPARE(selectedMs(), std::optional<qint64>());
        m_clock.advance(1);
        QVERIFY(accounts.touchSelectedAfterReading(id, selectedMs(), &error, &stored)); // read NULL: now
        QCOMPARE(stored, m_clock.nowMs());
        QCOMPARE(selectedMs(), std::optional<qint64>(stored));
        // A read that the row no longer holds (stale): the row's own value decides, as in touchSelected().
        QVERIFY(accounts.touchSelectedAfterReading(id, m_clock.nowMs() - 5, &error, &stored));
        QCOMPARE(stored, m_clock.nowMs() + 1);
        QCOMPARE(selectedMs(), std::optional<qint64>(stored));
        QVERIFY(!accounts.touchSelectedAfterReading(QStringLiteral("acc_missing"), std::nullopt, &error, &stored));
        QVERIFY2(tx.commit(&error), qPrintable(error));
    }

    void usageKeepsUnknownsNull()
    {
        const QString id = addAccount(QStringLiteral("personal-alice.json"));
        AccountRepository accounts(*m_db, m_clock);
        UsageRecord u;
        u.accountId = id;
        u.primary.usedPercent = 12.5;
        u.primary.windowMinutes = 300;
        u.secondary.resetAtMs = 1796500000000;
        u.hasCredits = false;
        u.observedAtMs = m_clock.nowMs();
        QString error;
        QVERIFY2(accounts.saveUsage(u, &error), qPrintable(error));
        const UsageRecord back = *accounts.loadUsage(id);
        QCOMPARE(back.primary.usedPercent, std::optional<double>(12.5));
        QCOMPARE(back.primary.windowMinutes, std::optional<int>(300));
        QVERIFY(!back.primary.resetAtMs);
        QVERIFY(!back.secondary.usedPercent);
        QCOMPARE(back.secondary.resetAtMs, std::optional<qint64>(1796500000000));
        QCOMPARE(back.hasCredits, std::optional<bool>(false));
        QVERIFY(!back.unlimited && !back.creditsBalance);
        QVERIFY(scalar(*m_db, QStringLiteral("SELECT secondary_used_percent FROM account_usage")).isNull());
        QCOMPARE(accounts.loadAllUsage().size(), 1);
        QVERIFY(!accounts.loadUsage(QStringLiteral("acc_other")));
    }

    void removeDropsDependentsButKeepsHistory()
    {
        const QString id = addAccount(QStringLiteral("personal-alice.json"));
        const QString other = addAccount(QStringLiteral("team-bob.json"));
        QString error;
        AccountRepository accounts(*m_db, m_clock);
        SettingsRepository settings(*m_db);
        UsageRecord u;
        u.accountId = id;
        QVERIFY(accounts.saveUsage(u, &error));
        QVERIFY(AnchorRepository(*m_db, m_clock).remember(QStringLiteral("resp_1"), id, &error));
        QVERIFY(AnchorRepository(*m_db, m_clock).remember(QStringLiteral("resp_2"), other, &error));
        QVERIFY(AffinityRepository(*m_db, m_clock).set(QStringLiteral("session-1"), id, &error));
        QVERIFY(settings.setPin(id, true, &error));
        RequestLogRecord r;
        r.requestId = QStringLiteral("req_1");
        r.route = QStringLiteral("/v1/responses");
        r.status = QStringLiteral("completed");
        r.accountId = id;
        QVERIFY(RequestLogRepository(*m_db).insert(r, &error));

        QVERIFY2(accounts.remove(id, &error), qPrintable(error));
        QVERIFY(!accounts.find(id));
        QVERIFY(!accounts.loadUsage(id));
        QVERIFY(!AnchorRepository(*m_db).ownerOf(QStringLiteral("resp_1")));
        QCOMPARE(AnchorRepository(*m_db).ownerOf(QStringLiteral("resp_2")), std::optional<QString>(other));
        QVERIFY(!AffinityRepository(*m_db).accountFor(QStringLiteral("session-1")));
        QVERIFY(!settings.pin());
        QCOMPARE(RequestLogRepository(*m_db).recent(10).size(), 1);
        QVERIFY(!accounts.remove(id, &error));
    }

    void settingsPinAndStrategy()
    {
        const QString id = addAccount(QStringLiteral("personal-alice.json"));
        SettingsRepository settings(*m_db);
        QString error;
        QVERIFY(!settings.pin());
        QCOMPARE(settings.strategy(), QStringLiteral("capacity_weighted"));
        const qint64 before = *m_db->changeCounter();
        QVERIFY(!settings.setPin(QStringLiteral("acc_nobody"), false, &error));
        QVERIFY(settings.setPin(id, true, &error));
        QCOMPARE(settings.pin()->accountId, id);
        QVERIFY(settings.pin()->strict);
        QVERIFY(settings.setPin(id, false, &error));
        QVERIFY(!settings.pin()->strict);
        QVERIFY(settings.clearPin(&error));
        QVERIFY(!settings.pin());
        QVERIFY(!settings.setStrategy(QStringLiteral("random"), &error));
        QVERIFY(error.contains(QStringLiteral("fill_first")));
        QVERIFY(settings.setStrategy(QStringLiteral("round_robin"), &error));
        QCOMPARE(settings.strategy(), QStringLiteral("round_robin"));
        QVERIFY(*m_db->changeCounter() > before + 2);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT value FROM settings WHERE key = 'strategy'")).toString(),
                 QStringLiteral("round_robin"));
    }

    void anchorsAndAffinity()
    {
        const QString a = addAccount(QStringLiteral("personal-alice.json"));
        const QString b = addAccount(QStringLiteral("team-bob.json"));
        AnchorRepository anchors(*m_db, m_clock);
        QString error;
        QVERIFY(anchors.remember(QStringLiteral("resp_a"), a, &error));
        QCOMPARE(anchors.ownerOf(QStringLiteral("resp_a")), std::optional<QString>(a));
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
        QVERIFY(affinity.set(QStringLiteral("s1"), b, &error));
        QCOMPARE(affinity.accountFor(QStringLiteral("s1")), std::optional<QString>(b));
        QVERIFY(affinity.clear(QStringLiteral("s1"), &error));
        QVERIFY(!affinity.accountFor(QStringLiteral("s1")));
    }

    void nestedTransactions()
    {
        SettingsRepository settings(*m_db);
        QString error;
        {
            Transaction outer(*m_db);
            QVERIFY(outer.begin(&error));
            QVERIFY(settings.setValue(QStringLiteral("k1"), QStringLiteral("v1"), &error));
            {
                Transaction inner(*m_db);
                QVERIFY(inner.begin(&error));
                QVERIFY(settings.setValue(QStringLiteral("k2"), QStringLiteral("v2"), &error));
            } // inner rolls back only its own work
            QVERIFY(outer.commit(&error));
        }
        QCOMPARE(settings.value(QStringLiteral("k1")), std::optional<QString>(QStringLiteral("v1")));
        QVERIFY(!settings.value(QStringLiteral("k2")));
        {
            Transaction outer(*m_db);
            QVERIFY(outer.begin(&error));
            QVERIFY(settings.setValue(QStringLiteral("k3"), QStringLiteral("v3"), &error));
        }
        QVERIFY(!settings.value(QStringLiteral("k3")));
        QVERIFY(settings.setValue(QStringLiteral("k4"), QStringLiteral("v4"), &error)); // depth back to 0
    }
};

QTEST_GUILESS_MAIN(tst_Store)
#include "tst_store.moc"
