// The proxy thread's ledger over a real store thread and SQLite file, in the order the store really runs jobs:
// a claim goes ahead of queued writes (StoreWorker::submitUrgent), so a request's next claim can commit before
// the queued failover release of its previous claim. That release must free the previous claim only, and the
// lease of the next one must keep renewing.
//
// This is what tst_egress_probe met under load: a request whose egress attempt failed released its slot and
// claimed another of the same account while the store was busy; the release freed both claims, the next lease
// renewal found the new slot free and the turn ended with owner_lost although no one had taken it over.
#include "config/Config.h"
#include "lib/StoreBlocking.h"
#include "ownership/SlotLedger.h"
#include "store/Database.h"
#include "store/StoreWorker.h"
#include "util/Clock.h"

#include <QSemaphore>
#include <QSignalSpy>
#include <QSqlError>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>
#include <optional>

using namespace sy;

namespace {

struct SlotRow
{
    QString owner;
    QString request;
    qint64 leaseExpiresMs = -1;
};

} // namespace

class tst_SlotLedgerFailover : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    SystemClock m_clock;
    StoreWorker m_store;
    std::unique_ptr<SlotLedger> m_ledger;

    SlotRow slotRow(int slot)
    {
        SlotRow row;
        QString error;
        const bool ok = m_store.runBlocking(
            [&](Database &db, QString *) {
                QSqlQuery q = db.query();
                q.prepare(QStringLiteral("SELECT owner_replica, owner_request_id, lease_expires_ms FROM owner_slots "
                                         "WHERE account_id = 'acc_1' AND slot_index = ?"));
                q.addBindValue(slot);
                if (q.exec() && q.next()) {
                    row.owner = q.value(0).toString();
                    row.request = q.value(1).toString();
                    row.leaseExpiresMs = q.value(2).isNull() ? -1 : q.value(2).toLongLong();
                }
                return true;
            },
            &error, false);
        if (!ok)
            qWarning() << error;
        return row;
    }

    SlotLedger::ClaimRequest request(const QString &requestId) const
    {
        SlotLedger::ClaimRequest r;
        r.requestId = requestId;
        r.accountId = QStringLiteral("acc_1");
        r.slotTotal = 2;
        r.route = QStringLiteral("/backend-api/codex/responses");
        r.startedAtMs = m_clock.nowMs();
        return r;
    }

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        QString error;
        QVERIFY2(m_store.start(m_dir.filePath(QStringLiteral("ledger.sqlite")), &error), qPrintable(error));
        QVERIFY2(m_store.runBlocking(
                     [](Database &db, QString *e) {
                         return db.exec(
                             QStringLiteral("INSERT INTO accounts (id, chatgpt_account_id, user_id, "
                                            "created_at_ms, updated_at_ms) VALUES ('acc_1', 'ws', 'u1', 0, 0)"),
                             e);
                     },
                     &error),
                 qPrintable(error));
        auto config = std::make_shared<Config>();
        config->dataDir = m_dir.path();
        config->leaseTtlS = 3;
        config->leaseRenewS = 1;
        m_ledger = std::make_unique<SlotLedger>(config, m_clock, &m_store);
        std::optional<QString> started;
        m_ledger->start([&started](const QString &e) { started = e; });
        QTRY_VERIFY(started.has_value());
        QVERIFY2(started->isEmpty(), qPrintable(*started));
        // The start vouches for this incarnation by its own lease TTL before its first renewal (a second away):
        // alive_until_ms = start + 3 s. Red when the ledger registers without its TTL (NULL).
        qint64 vouchedMs = -1;
        QVERIFY2(m_store.runBlocking(
                     [&vouchedMs](Database &db, QString *e) {
                         QSqlQuery q = db.query();
                         if (!q.exec(QStringLiteral("SELECT alive_until_ms - started_at_ms FROM replicas")) ||
                             !q.next()) {
                             *e = q.lastError().text();
                             return false;
                         }
                         vouchedMs = q.value(0).isNull() ? -1 : q.value(0).toLongLong();
                         return true;
                     },
                     &error, false),
                 qPrintable(error));
        QCOMPARE(vouchedMs, 3000);
    }

    void nextClaimOvertakingTheQueuedReleaseStaysHeld()
    {
        const QString id = QStringLiteral("req_overtaking");
        std::optional<ClaimOutcome> first;
        m_ledger->claim(request(id), [&first](const ClaimOutcome &o) { first = o; });
        QTRY_VERIFY(first.has_value());
        QVERIFY(first->kind == ClaimOutcome::Kind::Claimed);
        QCOMPARE(first->held.slot, 0);

        // The store thread is busy: the release queues, the next claim (urgent) goes ahead of it.
        QSemaphore gate, entered;
        sy::test::blockStoreThread(m_store, gate, entered);
        QSignalSpy freed(m_ledger.get(), &SlotLedger::slotFreed);
        QSignalSpy lost(m_ledger.get(), &SlotLedger::ownerLost);
        m_ledger->releaseForFailover(id);
        std::optional<ClaimOutcome> next;
        m_ledger->claim(request(id), [&next](const ClaimOutcome &o) { next = o; });
        gate.release();
        QTRY_VERIFY(next.has_value());
        QVERIFY(next->kind == ClaimOutcome::Kind::Claimed);
        QCOMPARE(next->held.slot, 1); // slot 0 still looked held: its release had not run
        QTRY_VERIFY(freed.count() >= 1);

        QCOMPARE(slotRow(0).owner, QString());
        const SlotRow held = slotRow(1);
        QCOMPARE(held.owner, m_ledger->identity().replicaId);
        QCOMPARE(held.request, id);
        QVERIFY(m_ledger->holds(id) && m_ledger->leaseCurrent(id));

        // The next renewals (every second) extend that lease and find nothing lost.
        QTRY_VERIFY_WITH_TIMEOUT(slotRow(1).leaseExpiresMs > held.leaseExpiresMs, 5000);
        QCOMPARE(lost.count(), 0);
        QVERIFY(m_ledger->holds(id) && m_ledger->leaseCurrent(id));
    }

    // F5 (spec/README.md): the failover release of a claim fails (here a trigger refuses it, as a store outage
    // would; nothing retries it). The request's next claim marks the given-up claim released for failover in its
    // own transaction, so when that claim's lease, which nobody renews any more, runs out, the ledger's sweep
    // frees its slot without settling it or booking the request: the request is settled once, by its turn.
    // Red when the ledger does not tell the next claim that a claim was given up (ClaimAttempt::closesGivenUpClaims).
    void aGivenUpClaimWhoseReleaseFailedIsSweptWithoutASettlement()
    {
        const QString id = QStringLiteral("req_release_failed");
        auto sql = [this](const QString &statement) {
            QString error;
            const bool ok =
                m_store.runBlocking([&statement](Database &db, QString *e) { return db.exec(statement, e); }, &error);
            if (!ok)
                qWarning() << error;
            return ok;
        };
        auto value = [this](const QString &query) {
            QVariant v;
            QString error;
            m_store.runBlocking(
                [&](Database &db, QString *) {
                    QSqlQuery q = db.query();
                    if (q.exec(query) && q.next())
                        v = q.value(0);
                    return true;
                },
                &error, false);
            return v;
        };
        QVERIFY(sql(QStringLiteral("INSERT INTO accounts (id, chatgpt_account_id, user_id, created_at_ms, "
                                   "updated_at_ms) VALUES ('acc_f5', 'ws', 'u5', 0, 0)")));
        SlotLedger::ClaimRequest r = request(id);
        r.accountId = QStringLiteral("acc_f5");
        std::optional<ClaimOutcome> first;
        m_ledger->claim(r, [&first](const ClaimOutcome &o) { first = o; });
        QTRY_VERIFY(first.has_value());
        QVERIFY(first->kind == ClaimOutcome::Kind::Claimed);
        QVERIFY(sql(QStringLiteral("CREATE TEMP TRIGGER refuse_release BEFORE UPDATE OF owner_replica ON owner_slots "
                                   "WHEN NEW.owner_replica IS NULL AND OLD.owner_request_id = '%1' "
                                   "BEGIN SELECT RAISE(ABORT, 'release refused'); END")
                        .arg(id)));
        bool released = false;
        m_ledger->releaseForFailover(id, [&released] { released = true; });
        QTRY_VERIFY(released);
        std::optional<ClaimOutcome> next;
        m_ledger->claim(r, [&next](const ClaimOutcome &o) { next = o; });
        QTRY_VERIFY(next.has_value());
        QVERIFY(next->kind == ClaimOutcome::Kind::Claimed);
        QCOMPARE(next->held.slot, 1);
        QVERIFY(sql(QStringLiteral("DROP TRIGGER refuse_release")));
        const QString firstRow = QStringLiteral("FROM slot_claims WHERE request_id = '%1' AND slot_index = 0").arg(id);
        QCOMPARE(value(QStringLiteral("SELECT release_kind ") + firstRow).toString(), QStringLiteral("failover"));
        QVERIFY(!value(QStringLiteral("SELECT owner_replica FROM owner_slots WHERE account_id = 'acc_f5' AND "
                                      "slot_index = 0"))
                     .isNull()); // the release did fail
        // The lease (3 s) runs out and the sweep (every second) takes the slot back.
        QTRY_VERIFY_WITH_TIMEOUT(value(QStringLiteral("SELECT owner_replica FROM owner_slots WHERE account_id = "
                                                      "'acc_f5' AND slot_index = 0"))
                                     .isNull(),
                                 10000);
        QCOMPARE(value(QStringLiteral("SELECT settlements ") + firstRow).toInt(), 0);
        QCOMPARE(value(QStringLiteral("SELECT release_kind ") + firstRow).toString(), QStringLiteral("failover"));
        QCOMPARE(value(QStringLiteral("SELECT count(*) FROM request_log WHERE request_id = '%1'").arg(id)).toInt(), 0);
        QVERIFY(m_ledger->holds(id) && m_ledger->leaseCurrent(id));
    }

    // The ledger runs its retention (LedgerRetention) from its registration to its stop. Red when the ledger does
    // not start it, or leaves it running after noteStopped().
    void theRetentionRunsFromTheStartToTheStop()
    {
        QVERIFY(m_ledger->retention().isStarted());
        m_ledger->noteStopped();
        QVERIFY(!m_ledger->retention().isStarted());
    }

    void cleanupTestCase()
    {
        m_ledger.reset();
        m_store.stop();
    }
};

QTEST_GUILESS_MAIN(tst_SlotLedgerFailover)
#include "tst_slot_ledger_failover.moc"
