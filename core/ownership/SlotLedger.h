#pragma once

#include "ownership/AdmissionGate.h"
#include "ownership/LedgerRetention.h"
#include "ownership/OwnershipTypes.h"
#include "store/AnchorRepository.h"

#include <QHash>
#include <QJsonArray>
#include <QJsonObject>
#include <QObject>
#include <QSet>
#include <QTimer>
#include <functional>
#include <limits>
#include <memory>

namespace sy {

class Clock;
class StoreWorker;
struct Config;

// The proxy thread's side of the ownership protocol: this replica's identity, a versioned snapshot of the
// owner_slots rows (refreshed every second and by every claim), the slots its turns hold with their leases,
// lease renewal, the sweep that reclaims other replicas' expired slots, and the admission gate's books.
// The database row is the only truth: a claim is a compare-and-set against the snapshot's epoch, and a
// stale snapshot just loses it (Conflict) and is refreshed.
class SlotLedger : public QObject
{
    Q_OBJECT

public:
    SlotLedger(std::shared_ptr<const Config> config, const Clock &clock, StoreWorker *store,
               QObject *parent = nullptr);
    // A configuration reloaded while running: the gate's bounds apply to the next waiter, the lease settings to
    // the next claim and renewal (the data dir stays the one the replica started with).
    void setConfig(std::shared_ptr<const Config> config);

    // Registers a new incarnation of this data dir's replica and reclaims the previous incarnation's slots at
    // once. `ready(error)` runs with an empty error on success.
    void start(std::function<void(const QString &error)> ready);
    ReplicaIdentity identity() const { return m_identity; }

    // Free slots of an account as this replica sees them (snapshot rows, expired leases count as free, own
    // claims in flight count as taken), counted up to `limit` (routing asks only whether there is one: it
    // need not walk every slot of every account for every turn).
    int freeSlots(const QString &accountId, int slotTotal, int limit = std::numeric_limits<int>::max()) const;
    int heldBy(const QString &accountId) const;

    struct ClaimRequest
    {
        QString requestId;
        QString accountId;
        int slotTotal = 1;
        QString route;
        qint64 startedAtMs = 0;
        QString previousResponseId;
        // The anchor of previousResponseId when this replica is still streaming that response: its row is not
        // written yet (the settlement writes it), so the claim writes it first, in its own transaction.
        std::optional<AnchorRecord> unwrittenAnchor;
    };
    // A claim for a turn will follow soon (its request's head arrived): warms the idle store thread up for it
    // (StoreWorker::warmUp) with the claim's own reads. Changes nothing.
    void expectClaim();
    // Picks a slot that looks free and claims it by compare-and-set. `done` runs on this thread; a Conflict
    // without rows means no slot looked free.
    void claim(const ClaimRequest &request, std::function<void(const ClaimOutcome &)> done);
    // The request moves to another account: its slot goes back, fenced, without a settlement. `released` runs
    // on this thread once the release is answered (and the snapshot shows the slot free, if it was released).
    // With `undo`, the same transaction puts the account's selection time back (a claim given up before it was
    // used: Turn::rerouteAfterEarlyClaim).
    void releaseForFailover(const QString &requestId, std::function<void()> released = {},
                            std::optional<SelectionUndo> undo = std::nullopt);
    // The settlement job (in the request-log transaction) reported how it went.
    void settled(const QString &requestId, const SettleOutcome &outcome);
    // The local view of the lease: false once it may have expired (a stalled process must not go on as owner).
    bool leaseCurrent(const QString &requestId) const;
    bool holds(const QString &requestId) const { return m_held.contains(requestId); }
    HeldSlot heldSlot(const QString &requestId) const { return m_held.value(requestId); }

    AdmissionGate &gate() { return m_gate; }

    // Draining (SIGTERM, Quit) and the end of the drain, recorded on the replica's row.
    void noteDraining();
    void noteStopped();

    qint64 casConflicts() const { return m_casConflicts; }
    qint64 leaseReclaims() const { return m_leaseReclaims; }
    const LedgerRetention &retention() const { return m_retention; }
    QJsonObject statusJson() const;

signals:
    // A lease renewal found the slot taken over: the turn must end without acting as owner.
    void ownerLost(const QString &requestId);
    // A slot may have become free (a release, a reclaim, a refreshed snapshot).
    void slotFreed();

private:
    void tick();
    void refreshSnapshot();
    void applyRows(const QString &accountId, const QList<SlotState> &rows);
    void saveBooks();
    // Fault build, benchmark only (`claim-in-memory`): answers a claim from memory, without the store.
    void claimInMemory(const ClaimRequest &request, std::function<void(const ClaimOutcome &)> done);

    std::shared_ptr<const Config> m_config;
    const Clock &m_clock;
    StoreWorker *m_store;
    ReplicaIdentity m_identity;
    AdmissionGate m_gate;
    QHash<QString, QHash<int, SlotState>> m_rows; // account -> slot -> row
    QHash<QString, QSet<int>> m_pending;          // claims in flight
    QHash<QString, HeldSlot> m_held;              // request -> slot
    QSet<QString> m_gaveUpClaim;                  // requests that gave up a claim, until settled
    QHash<QString, qint64> m_leaseUntilMs;        // request -> lease end this replica last wrote
    QTimer m_renewTimer;
    QTimer m_snapshotTimer;
    LedgerRetention m_retention; // old claims and anchors, once registered
    bool m_refreshing = false;
    bool m_renewing = false;
    qint64 m_casConflicts = 0;
    qint64 m_leaseReclaims = 0;
};

} // namespace sy
