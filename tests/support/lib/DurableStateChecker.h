#pragma once

#include <QHash>
#include <QJsonArray>
#include <QList>
#include <QString>
#include <QStringList>

namespace sy::test {

// One broken invariant: its name as the spec and the tests spell it (Inv1AnchorCurrent ...
// Inv11PreResponseBudget) and what in the durable state shows it.
struct Violation
{
    QString invariant;
    QString detail;
};

// What a test client saw of one turn (optional input): the proxy's x-request-id and the wall-clock times at
// which upstream output (text deltas, the completed event) reached the client.
struct ClientObservation
{
    QString requestId;
    QList<qint64> outputAtMs;
};

// The budgets the replicas ran with (config keys), for the deadline checks; 0 leaves a check out.
struct CheckerBudgets
{
    int gateWaitS = 0;
    int connectS = 0;
    int requestTotalS = 0;
    int slackMs = 1500; // scheduling slack on a loaded 2-core machine
};

struct CheckerStats
{
    int turns = 0;            // request_log rows
    int requestsWithClaims = 0;
    int claims = 0;           // slot_claims rows (compare-and-set wins)
    int settlements = 0;      // sum of slot_claims.settlements
    int failoverReleases = 0; // claims given back before a failover
    int reclaimedExpired = 0; // claims settled by another replica's lease-expiry reclaim
    int reclaimedRestart = 0; // claims settled by the restart of their replica
    qint64 casConflicts = 0;  // summed over the replicas rows (current incarnations)
    qint64 leaseReclaims = 0; // idem
    int kills = 0;            // incarnations whose slots their replica's next start had to reclaim
    int upstreamTurns = 0;    // /codex/responses requests in the fake upstream's log
    int replicas = 0;
    int stoppedReplicas = 0;
    QString summary() const;
};

// Reads the durable state the ownership protocol leaves behind (owner_slots, slot_claims, replicas,
// request_log, response_anchors, accounts) straight from the database, with its own SQL (nothing shared with
// core/ownership), and names every invariant the state breaks. Optionally cross-checks the fake upstream's
// log (which request id reached the upstream when, with which account and previous_response_id, and which
// response id the upstream produced for it) and what clients observed.
//
// `database` is a SQLite file path (opened read-only) or a postgresql://user@host:port/db URL (QPSQL).
class DurableStateChecker
{
public:
    explicit DurableStateChecker(const QString &database);

    void setUpstreamLog(const QJsonArray &log) { m_upstream = log; }
    void setClientObservations(const QList<ClientObservation> &observations) { m_clients = observations; }
    void setBudgets(const CheckerBudgets &budgets) { m_budgets = budgets; }
    // The lease TTL the replicas ran with: an expired-lease reclaim earlier than this after the claim is a
    // takeover of a live owner.
    void setLeaseTtlMs(qint64 ms) { m_leaseTtlMs = ms; }
    // Every replica has exited (stopped or killed and not restarted): open claims and held slots are then
    // violations. Default: derived from the replicas rows (all have stopped_at_ms).
    void setQuiescent(bool quiescent) { m_quiescent = quiescent ? 1 : 0; }
    // How far (ms) an upstream arrival or a client's output may trail a reclaim (bytes already in flight).
    void setInFlightSlackMs(qint64 ms) { m_inFlightSlackMs = ms; }

    // Reads everything and runs every check. False only when the database cannot be read (*error).
    bool run(QString *error);

    const QList<Violation> &violations() const { return m_violations; }
    QList<Violation> violationsOf(const QString &invariant) const;
    bool hasViolation(const QString &invariant) const { return !violationsOf(invariant).isEmpty(); }
    QStringList violatedInvariants() const;
    const CheckerStats &stats() const { return m_stats; }
    // Every violation (at most `perInvariant` details per invariant) and the stats, for failure messages.
    QString report(int perInvariant = 5) const;

    struct Claim
    {
        QString requestId, accountId, replicaId, route, durableStatus, previousResponseId, anchorAccountId,
            releaseKind, responseId;
        int slot = 0;
        qint64 epoch = 0, incarnation = 0, startedAtMs = 0, claimedAtMs = 0, accountVersion = 0;
        qint64 cooldownUntilMs = -1, releasedAtMs = -1; // -1: NULL
        int settlements = 0;
        bool released() const { return releasedAtMs >= 0; }
        bool reclaimed() const { return releaseKind.startsWith(QLatin1String("reclaimed_")); }
    };
    struct SlotRow
    {
        QString accountId, ownerReplica, ownerRequestId;
        int slot = 0;
        qint64 epoch = 0, ownerIncarnation = 0, leaseExpiresMs = -1;
    };
    struct ReplicaRow
    {
        QString replicaId;
        qint64 incarnation = 0, startedAtMs = 0, drainingSinceMs = -1, stoppedAtMs = -1;
        qint64 gateAdmitted = 0, gateLeft = 0, gateQueued = 0, gateOverloaded = 0, casConflicts = 0,
               leaseReclaims = 0;
    };
    struct LogRow
    {
        QString requestId, status, killStage, errorCode, accountId, upstreamRequestId;
        qint64 startedAtMs = 0, queueMs = -1, connectMs = -1, firstEventMs = -1, totalMs = -1;
        int attempts = 0;
    };
    const QList<Claim> &claims() const { return m_claims; }
    const QList<ReplicaRow> &replicas() const { return m_replicas; }

private:
    bool load(QString *error);
    void add(const QString &invariant, const QString &detail);
    void checkSingleOwner();
    void checkSettledOnce();
    void checkOwnerReleased();
    void checkFreshSnapshots();
    void checkAnchorOwnership();
    void checkAnchorCurrent();
    void checkTerminalIsolation();
    void checkGateAccounting();
    void checkShutdownDrain();
    void checkBudgets();
    void computeStats();
    bool quiescent() const;
    // The claim of `requestId` that covered time `t` (the latest claimed at or before t), or nullptr.
    const Claim *claimAt(const QString &requestId, qint64 t) const;

    QString m_database;
    QJsonArray m_upstream;
    QList<ClientObservation> m_clients;
    CheckerBudgets m_budgets;
    qint64 m_leaseTtlMs = 0;
    qint64 m_inFlightSlackMs = 1000;
    int m_quiescent = -1;

    QList<Claim> m_claims;
    QHash<QString, QList<int>> m_claimsByRequest; // indexes into m_claims
    QList<SlotRow> m_slots;
    QList<ReplicaRow> m_replicas;
    QHash<QString, LogRow> m_log;
    QHash<QString, QString> m_anchors;          // response id -> account id
    QHash<QString, QString> m_accountByChatgpt; // chatgpt_account_id -> account id

    QList<Violation> m_violations;
    CheckerStats m_stats;
};

} // namespace sy::test
