#include "ownership/SlotLedger.h"

#include "config/Config.h"
#include "ownership/OwnerSlotRepository.h"
#include "store/AccountRepository.h"
#include "store/StoreWorker.h"
#include "util/Clock.h"
#include "util/Faults.h"
#include "util/Ids.h"

#include <QDir>
#include <QFile>
#include <QLoggingCategory>
#include <QSaveFile>
#include <QUuid>
#include <cstdlib>

#ifdef SWITCHYARD_FAULT_INJECTION // payTakeCost() only
#include "store/Database.h"

#include <QSqlQuery>
#include <fcntl.h>
#include <unistd.h>
#endif

Q_LOGGING_CATEGORY(lcLedger, "switchyard.ownership")

namespace sy {

namespace {

#ifdef SWITCHYARD_FAULT_INJECTION
// Fault build, benchmark only (`claim-ahead-cost`, with `claim-in-memory`): what a take of a claim made ahead
// would cost the proxy thread (docs/CLAIM-AHEAD.md): the account's row read on a SQLite connection of this
// thread's own, and one write() of the request id to a journal file beside the database (no fsync). Decides
// nothing: the counterfactual claim is answered either way.
void payTakeCost(const QString &databaseLocation, const QString &accountId, const QString &requestId)
{
    static thread_local std::unique_ptr<Database> db;
    static thread_local int journal = -1;
    if (!db) {
        db = std::make_unique<Database>();
        QString error;
        if (!db->open(databaseLocation, &error, Database::OpenMode::ReadOnly))
            qCWarning(lcLedger) << "claim-ahead-cost: cannot open the database:" << error;
        journal = ::open(QFile::encodeName(databaseLocation + QStringLiteral(".takes")).constData(),
                         O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    }
    if (db->isOpen()) {
        QString error;
        Database::StatementScope statements(*db);
        QSqlQuery q = db->query();
        if (db->prepare(q, OwnerSlotRepository::accountCheckSql(), &error)) {
            Database::bindAll(q, {accountId});
            if (db->exec(q, &error))
                while (q.next()) {
                }
        }
    }
    if (journal >= 0) {
        const QByteArray line = requestId.toLatin1() + '\n';
        if (::write(journal, line.constData(), size_t(line.size())) < 0)
            qCWarning(lcLedger) << "claim-ahead-cost: journal write failed";
    }
}
#endif

// A stable id per data dir: slot rows name it, so the next start of this replica recognises its own slots.
QString loadReplicaId(const QString &dataDir, QString *error)
{
    const QString path = dataDir + QStringLiteral("/replica-id");
    QFile in(path);
    if (in.open(QIODevice::ReadOnly)) {
        const QString id = QString::fromLatin1(in.readAll().trimmed());
        if (!id.isEmpty())
            return id;
    }
    const QString id = QStringLiteral("rep_") + QUuid::createUuid().toString(QUuid::Id128).left(16);
    QSaveFile out(path);
    if (!out.open(QIODevice::WriteOnly) || out.write(id.toLatin1() + '\n') < 0 || !out.commit()) {
        *error = QStringLiteral("cannot write %1: %2").arg(path, out.errorString());
        return {};
    }
    return id;
}

} // namespace

SlotLedger::SlotLedger(std::shared_ptr<const Config> config, const Clock &clock, StoreWorker *store, QObject *parent)
    : QObject(parent), m_config(std::move(config)), m_clock(clock), m_store(store),
      m_gate(m_config->gateMaxWaiters, m_config->gateMaxWaitersPerAccount), m_retention(store, clock, this)
{
    m_renewTimer.setInterval(qMax(1, m_config->leaseRenewS) * 1000);
    connect(&m_renewTimer, &QTimer::timeout, this, &SlotLedger::tick);
    m_snapshotTimer.setInterval(1000);
    connect(&m_snapshotTimer, &QTimer::timeout, this, &SlotLedger::refreshSnapshot);
}

void SlotLedger::setConfig(std::shared_ptr<const Config> config)
{
    m_config = std::move(config);
    m_gate.setLimits(m_config->gateMaxWaiters, m_config->gateMaxWaitersPerAccount);
    // setInterval restarts a running timer: the next renewal comes one new interval from now.
    if (m_renewTimer.interval() != qMax(1, m_config->leaseRenewS) * 1000)
        m_renewTimer.setInterval(qMax(1, m_config->leaseRenewS) * 1000);
}

void SlotLedger::start(std::function<void(const QString &)> ready)
{
    QString idError;
    const QString replicaId = loadReplicaId(m_config->dataDir, &idError);
    if (replicaId.isEmpty()) {
        ready(idError);
        return;
    }
    struct Started
    {
        ReplicaIdentity identity;
        int reclaimed = 0;
        int abandoned = 0;
        QList<SlotState> rows;
    };
    auto started = std::make_shared<Started>();
    const qint64 now = m_clock.nowMs();
    const qint64 leaseMs = qint64(m_config->leaseTtlS) * 1000;
    m_store->submit(
        [started, replicaId, now, leaseMs](Database &db, QString *error) {
            OwnerSlotRepository repo(db);
            const std::optional<ReplicaIdentity> me = repo.registerReplica(replicaId, now, error, leaseMs);
            if (!me)
                return false;
            started->identity = *me;
            started->reclaimed = repo.reclaimPreviousIncarnations(*me, now, error);
            if (started->reclaimed < 0)
                return false;
            started->abandoned = repo.settleAbandonedFailovers(*me, now, leaseMs, error);
            if (started->abandoned < 0)
                return false;
            started->rows = repo.allSlots(error);
            return error->isEmpty();
        },
        this,
        [this, started, ready](bool ok, const QString &error) {
            if (!ok) {
                // Name the cause the way a running instance would ("store unavailable: disk full (...)").
                ready(QStringLiteral("cannot register this replica: %1")
                          .arg(m_store->writable()
                                   ? error
                                   : QStringLiteral("store unavailable: %1").arg(m_store->unwritableReason())));
                return;
            }
            m_identity = started->identity;
            m_leaseReclaims += started->reclaimed;
            if (started->reclaimed > 0)
                qCInfo(lcLedger).noquote() << "reclaimed" << started->reclaimed
                                           << "slots of this replica's previous incarnation";
            if (started->abandoned > 0)
                qCInfo(lcLedger).noquote() << "booked" << started->abandoned
                                           << "requests abandoned between a failover and their next claim as lost";
            QHash<QString, QList<SlotState>> byAccount;
            for (const SlotState &s : started->rows)
                byAccount[s.accountId].append(s);
            for (auto it = byAccount.cbegin(); it != byAccount.cend(); ++it)
                applyRows(it.key(), it.value());
            m_renewTimer.start();
            m_snapshotTimer.start();
            m_retention.start();
            ready({});
        });
}

void SlotLedger::applyRows(const QString &accountId, const QList<SlotState> &rows)
{
    QHash<int, SlotState> &mine = m_rows[accountId];
    for (const SlotState &s : rows) {
        // Never go back to an older epoch: a refresh read before our own claim committed must not undo it.
        const auto it = mine.constFind(s.slot);
        if (it == mine.cend() || it->epoch <= s.epoch)
            mine.insert(s.slot, s);
    }
}

int SlotLedger::freeSlots(const QString &accountId, int slotTotal, int limit) const
{
    const qint64 now = m_clock.nowMs();
    const QHash<int, SlotState> rows = m_rows.value(accountId);
    const QSet<int> pending = m_pending.value(accountId);
    int free = 0;
    for (int i = 0; i < slotTotal && free < limit; ++i) {
        const auto it = rows.constFind(i);
        if (!pending.contains(i) && (it == rows.cend() || !it->heldAt(now)))
            ++free;
    }
    return free;
}

int SlotLedger::heldBy(const QString &accountId) const
{
    int n = 0;
    for (const HeldSlot &h : m_held)
        n += h.accountId == accountId ? 1 : 0;
    return n;
}

void SlotLedger::claim(const ClaimRequest &request, std::function<void(const ClaimOutcome &)> done)
{
    const qint64 now = m_clock.nowMs();
    const QHash<int, SlotState> rows = m_rows.value(request.accountId);
    QSet<int> &pending = m_pending[request.accountId];
    int slot = -1;
    qint64 expectedEpoch = 0;
    for (int i = 0; i < request.slotTotal && slot < 0; ++i) {
        const auto it = rows.constFind(i);
        if (pending.contains(i) || (it != rows.cend() && it->heldAt(now)))
            continue;
        slot = i;
        expectedEpoch = it == rows.cend() ? 0 : it->epoch;
    }
    if (slot < 0) {
        ClaimOutcome none;
        none.kind = ClaimOutcome::Kind::Conflict;
        done(none);
        return;
    }
    bool urgent = request.previousResponseId.isEmpty();
    if (SY_FAULT("claim-in-memory")) {
        claimInMemory(request, done);
        if (!SY_FAULT("claim-ahead-store-cost"))
            return;
        // The store thread still makes the durable claim, queued behind its other writes as a claim made ahead
        // by a settlement would be; its answer only keeps this ledger's books (the turn was answered above). The
        // turn's settlement goes into the same first-in-first-out queue later, so this claim's answer (m_held)
        // comes before the settlement's (which removes it). Benchmark only: a failover released before this
        // answer would leave the claim in m_held, renewed until the process ends.
        done = [](const ClaimOutcome &) {};
        urgent = false;
    }
    pending.insert(slot);
    ClaimAttempt a;
    a.requestId = request.requestId;
    a.accountId = request.accountId;
    a.slot = slot;
    a.expectedEpoch = expectedEpoch;
    a.route = request.route;
    a.startedAtMs = request.startedAtMs;
    a.previousResponseId = request.previousResponseId;
    a.replica = m_identity;
    a.nowMs = now;
    a.leaseMs = qint64(m_config->leaseTtlS) * 1000;
    a.closesGivenUpClaims = m_gaveUpClaim.contains(request.requestId);
    auto outcome = std::make_shared<ClaimOutcome>();
    // A claim goes before queued writes (settlements with their log rows and anchors): it is what the client
    // waits for. Not a continuation's: it checks the anchor that its previous response's settlement writes,
    // which may still be queued.
    const auto submit = urgent ? &StoreWorker::submitUrgent : &StoreWorker::submit;
    (m_store->*submit)(
        [a, outcome, anchor = request.unwrittenAnchor, clock = &m_clock](Database &db, QString *error) {
            const qint64 startUs = clock->monotonicUs();
            if (anchor && !AnchorRepository(db).rememberServed(*anchor, error))
                return false;
            *outcome = OwnerSlotRepository(db).claim(a, error);
            outcome->storeStartUs = startUs;
            // The selection time goes with the claim, in the same transaction (strategies read it).
            if (outcome->kind == ClaimOutcome::Kind::Claimed) {
                qint64 stored = 0;
                // The claim's transaction read the account's row first (OwnerSlotRepository::claim).
                if (!AccountRepository(db).touchSelectedAfterReading(a.accountId, outcome->previousSelectedMs, error,
                                                                     &stored))
                    return false;
                outcome->selectedAtMs = stored;
            }
            outcome->storeEndUs = clock->monotonicUs();
            // A refused or lost claim still commits its books (conflict counters), never half a claim.
            return outcome->kind != ClaimOutcome::Kind::Error;
        },
        this,
        [this, a, outcome, done](bool ok, const QString &error) {
            m_pending[a.accountId].remove(a.slot);
            if (!ok) {
                outcome->kind = ClaimOutcome::Kind::Error;
                outcome->reason = outcome->reason.isEmpty() ? error : outcome->reason;
            }
            applyRows(a.accountId, outcome->rows);
            if (outcome->kind == ClaimOutcome::Kind::Conflict)
                ++m_casConflicts;
            if (outcome->reclaimedExpired)
                ++m_leaseReclaims;
            if (outcome->kind == ClaimOutcome::Kind::Claimed) {
                m_held.insert(a.requestId, outcome->held);
                m_leaseUntilMs.insert(a.requestId, a.nowMs + a.leaseMs);
            }
            done(*outcome);
        });
}

void SlotLedger::claimInMemory(const ClaimRequest &request, std::function<void(const ClaimOutcome &)> done)
{
    // What a turn would gain if its claim cost nothing (bench/HISTORY.md, "the claim's share"): the turn is told
    // at once, through this thread's event queue as a store answer would be, that it holds slot 0. No row,
    // no lease: the ownership guarantees are off, so this exists only in the fault build.
    const QString requestId = request.requestId;
#ifdef SWITCHYARD_FAULT_INJECTION
    if (SY_FAULT("claim-ahead-cost"))
        payTakeCost(m_config->databaseLocation(), request.accountId, requestId);
#endif
    m_leaseUntilMs.insert(requestId, m_clock.nowMs() + qint64(m_config->leaseTtlS) * 1000);
    ClaimOutcome outcome;
    outcome.kind = ClaimOutcome::Kind::Claimed;
    outcome.held = HeldSlot{requestId, request.accountId, 0, 0};
    QMetaObject::invokeMethod(
        this, [done, outcome] { done(outcome); }, Qt::QueuedConnection);
}

void SlotLedger::expectClaim()
{
    if (SY_FAULT("claim-in-memory"))
        return; // no claim will need the store thread
    // Any account will do: the claim's reads walk the same statements and (with a few accounts) pages.
    const QString accountId = m_rows.isEmpty() ? QString() : m_rows.constBegin().key();
    m_store->warmUp(
        [accountId](Database &db, QString *error) { return OwnerSlotRepository(db).warmClaim(accountId, error); });
}

void SlotLedger::releaseForFailover(const QString &requestId, std::function<void()> released,
                                    std::optional<SelectionUndo> undo)
{
    const HeldSlot held = m_held.take(requestId);
    m_leaseUntilMs.remove(requestId);
    if (held.isValid())
        m_gaveUpClaim.insert(requestId);
    const ReplicaIdentity me = m_identity;
    const qint64 now = m_clock.nowMs();
    m_store->submit(
        [me, held, now, undo](Database &db, QString *error) {
            if (undo && !AccountRepository(db).undoSelected(undo->accountId, undo->previousMs, undo->storedMs, error))
                return false;
            return OwnerSlotRepository(db).releaseForFailover(me, held, now, error);
        },
        this,
        [this, held, released](bool ok, const QString &) {
            // (Fault build only: die in the window between the release and the request's next claim.)
            if (ok && held.isValid() && !m_held.contains(held.requestId) && SY_FAULT("crash-after-failover-release"))
                std::_Exit(86);
            if (ok && held.isValid()) {
                auto &rows = m_rows[held.accountId];
                auto it = rows.find(held.slot);
                if (it != rows.end() && it->epoch == held.epoch)
                    it->ownerReplica.clear();
            }
            if (released)
                released();
            emit slotFreed();
        });
}

void SlotLedger::settled(const QString &requestId, const SettleOutcome &outcome)
{
    m_held.remove(requestId);
    m_leaseUntilMs.remove(requestId);
    m_gaveUpClaim.remove(requestId);
    if (outcome.released) {
        auto &rows = m_rows[outcome.released->accountId];
        auto it = rows.find(outcome.released->slot);
        if (it != rows.end() && it->epoch == outcome.released->epoch)
            it->ownerReplica.clear();
    }
    emit slotFreed();
}

bool SlotLedger::leaseCurrent(const QString &requestId) const
{
    const auto it = m_leaseUntilMs.constFind(requestId);
    return it != m_leaseUntilMs.cend() && *it >= m_clock.nowMs();
}

void SlotLedger::tick()
{
    if (m_renewing || !m_identity.isValid())
        return;
    m_renewing = true;
    const QList<HeldSlot> held = m_held.values();
    const ReplicaIdentity me = m_identity;
    const qint64 now = m_clock.nowMs();
    const qint64 leaseMs = qint64(m_config->leaseTtlS) * 1000;
    auto lost = std::make_shared<QList<HeldSlot>>();
    auto reclaimed = std::make_shared<int>(0);
    const qint64 admitted = m_gate.admitted(), left = m_gate.left(), queued = m_gate.queued(),
                 overloaded = m_gate.overloaded();
    m_store->submit(
        [=](Database &db, QString *error) {
            OwnerSlotRepository repo(db);
            if (!repo.renew(me, held, now, leaseMs, lost.get(), error))
                return false;
            *reclaimed = repo.reclaimExpired(me, now, error);
            if (*reclaimed < 0 || repo.settleAbandonedFailovers(me, now, leaseMs, error) < 0)
                return false;
            return repo.saveGateBooks(me, admitted, left, queued, overloaded, now, error);
        },
        this,
        [this, held, lost, reclaimed, now, leaseMs](bool ok, const QString &error) {
            m_renewing = false;
            if (!ok) {
                qCWarning(lcLedger).noquote() << "lease renewal failed:" << error;
                return;
            }
            m_leaseReclaims += qMax(0, *reclaimed);
            // Only about claims still held: a request that moved to another claim meanwhile (failover) is
            // neither renewed nor lost by what this renewal found of its previous one.
            const auto stillHeld = [this](const HeldSlot &h) {
                const auto it = m_held.constFind(h.requestId);
                return it != m_held.cend() && it->accountId == h.accountId && it->slot == h.slot &&
                       it->epoch == h.epoch;
            };
            QSet<QString> lostIds;
            for (const HeldSlot &h : std::as_const(*lost)) {
                if (stillHeld(h))
                    lostIds.insert(h.requestId);
            }
            for (const HeldSlot &h : held) {
                if (stillHeld(h) && !lostIds.contains(h.requestId))
                    m_leaseUntilMs.insert(h.requestId, now + leaseMs);
            }
            for (const QString &id : std::as_const(lostIds)) {
                qCWarning(lcLedger).noquote() << id << "lost its owner slot (lease taken over)";
                emit ownerLost(id);
            }
            if (*reclaimed > 0)
                emit slotFreed();
        });
}

void SlotLedger::refreshSnapshot()
{
    if (m_refreshing)
        return;
    m_refreshing = true;
    auto rows = std::make_shared<QList<SlotState>>();
    m_store->submitRead(
        [rows](Database &db, QString *error) {
            *rows = OwnerSlotRepository(db).allSlots(error);
            return error->isEmpty();
        },
        this,
        [this, rows](bool ok, const QString &) {
            m_refreshing = false;
            if (!ok)
                return;
            QHash<QString, QList<SlotState>> byAccount;
            for (const SlotState &s : std::as_const(*rows))
                byAccount[s.accountId].append(s);
            bool freed = false;
            for (auto it = byAccount.cbegin(); it != byAccount.cend(); ++it) {
                const int before = freeSlots(it.key(), it.value().size());
                applyRows(it.key(), it.value());
                freed = freed || freeSlots(it.key(), it.value().size()) > before;
            }
            if (freed)
                emit slotFreed();
        });
}

void SlotLedger::noteDraining()
{
    const ReplicaIdentity me = m_identity;
    const qint64 now = m_clock.nowMs();
    if (!me.isValid())
        return;
    m_store->submit([me, now](Database &db, QString *error) { return OwnerSlotRepository(db).noteDraining(me, now, error); },
                    this, {});
}

void SlotLedger::noteStopped()
{
    const ReplicaIdentity me = m_identity;
    if (!me.isValid())
        return;
    const qint64 now = m_clock.nowMs();
    const qint64 admitted = m_gate.admitted(), left = m_gate.left(), queued = m_gate.queued(),
                 overloaded = m_gate.overloaded();
    m_renewTimer.stop();
    m_snapshotTimer.stop();
    m_retention.stop();
    m_store->submit(
        [=](Database &db, QString *error) {
            OwnerSlotRepository repo(db);
            return repo.saveGateBooks(me, admitted, left, queued, overloaded, now, error) &&
                   repo.noteStopped(me, now, error);
        },
        nullptr, {});
}

QJsonObject SlotLedger::statusJson() const
{
    const qint64 now = m_clock.nowMs();
    QJsonArray slotRows;
    for (auto acc = m_rows.cbegin(); acc != m_rows.cend(); ++acc) {
        for (const SlotState &s : acc.value()) {
            const bool held = s.heldAt(now);
            slotRows.append(QJsonObject{
                {QStringLiteral("account_id"), s.accountId},
                {QStringLiteral("slot"), s.slot},
                {QStringLiteral("epoch"), s.epoch},
                {QStringLiteral("owner_replica"), s.ownerReplica.isEmpty() ? QJsonValue() : QJsonValue(s.ownerReplica)},
                {QStringLiteral("owner_incarnation"),
                 s.ownerReplica.isEmpty() ? QJsonValue() : QJsonValue(s.ownerIncarnation)},
                {QStringLiteral("request_id"), s.ownerRequestId.isEmpty() ? QJsonValue() : QJsonValue(s.ownerRequestId)},
                {QStringLiteral("lease_expires_at"),
                 s.leaseExpiresMs && !s.ownerReplica.isEmpty() ? QJsonValue(isoUtc(*s.leaseExpiresMs)) : QJsonValue()},
                {QStringLiteral("state"), held ? QStringLiteral("held")
                                               : (s.ownerReplica.isEmpty() ? QStringLiteral("free")
                                                                           : QStringLiteral("expired"))},
            });
        }
    }
    return QJsonObject{
        {QStringLiteral("replica"), QJsonObject{{QStringLiteral("replica_id"), m_identity.replicaId},
                                                {QStringLiteral("incarnation"), m_identity.incarnation}}},
        {QStringLiteral("slots"), slotRows},
        {QStringLiteral("gate"), QJsonObject{{QStringLiteral("queued"), m_gate.queued()},
                                             {QStringLiteral("max_waiters"), m_gate.maxWaiters()},
                                             {QStringLiteral("max_waiters_per_account"), m_gate.maxWaitersPerAccount()},
                                             {QStringLiteral("admitted"), m_gate.admitted()},
                                             {QStringLiteral("left"), m_gate.left()},
                                             {QStringLiteral("overloaded"), m_gate.overloaded()}}},
        {QStringLiteral("cas_conflicts"), m_casConflicts},
        {QStringLiteral("lease_reclaims"), m_leaseReclaims},
    };
}

} // namespace sy
