/*
 * CoreOwnership.pml -- Switchyard's ownership protocol (issue 5), checked by SPIN 6.5.2.
 *
 * Scope: two replicas {1,2}, ONE owner slot row of one account (DESIGN "Accounts, slots and replicas":
 * "The formal model's single account is one slot row"), two client turns {0,1}. The durable slot row
 * (owner, ownerEpoch) and the durable account-snapshot version are the only truth; each replica routes
 * from a versioned local snapshot. Turns run
 *     new -> queued (gate wait) -> active (connect, pre_response) -> streaming
 *         -> settling (terminal event seen, request-log row being committed) -> completed
 * or end failed / cancelled / owner_lost, each wait bounded by its own budget (DESIGN "Per-stage budgets").
 * Before anything reached the client an active turn may fail over once: it leaves the slot, its release
 * (fenced by the claim's epoch, no settlement) is queued on the store, and it either routes again
 * (queued; an early claim given up) or goes on with another slot row (FOREIGN; an attempt refused
 * upstream).
 * Transport is HTTP streaming (no WebSocket bridge): every turn writes only to its own HTTP response.
 *
 * Structure (see spec/README.md):
 *   - each action is an `inline` (effect) plus a `#define` guard; an action fires as one d_step;
 *   - every action that TLA+-style weak fairness covers has its own `active proctype` (SPIN's -f is
 *     process-level weak fairness); every other action is an alternative of the unfair `env` process;
 *   - `monitor` holds the 12 named invariants plus Deadlock as `assert(!<Name>)` so pan prints the name;
 *   - four named `ltl` properties (run with ./pan -a -f -N <Name>);
 *   - 21 weakenings, each `#ifdef WEAK_<NAME>` feeding a 0/1 `W_<NAME>` macro (negative controls);
 *   - the dead-variable reset (RESET_* macros) is a state-space quotient, switched off by -DFAITHFUL.
 *
 * Stable marker comments `GUARD <name>` / `FAIR <name>` / `INV <name>` are checked by
 * tests/unit/tst_spec_static.cpp: do not rename them without updating that test and the README.
 */

/* ------------------------------------------------------------------------------------------------
 * Weakenings (negative controls). Each spec/weak-<name>.cfg sets exactly one of these.
 * ------------------------------------------------------------------------------------------------ */
#ifdef WEAK_IGNORE_OWNER_EPOCH
#define W_IGNORE_OWNER_EPOCH 1
#else
#define W_IGNORE_OWNER_EPOCH 0
#endif
#ifdef WEAK_IGNORE_ANCHOR_LINEAGE
#define W_IGNORE_ANCHOR_LINEAGE 1
#else
#define W_IGNORE_ANCHOR_LINEAGE 0
#endif
#ifdef WEAK_SINGLE_SHARED_TIMEOUT
#define W_SINGLE_SHARED_TIMEOUT 1
#else
#define W_SINGLE_SHARED_TIMEOUT 0
#endif
#ifdef WEAK_SKIP_RELEASE_ON_CANCEL
#define W_SKIP_RELEASE_ON_CANCEL 1
#else
#define W_SKIP_RELEASE_ON_CANCEL 0
#endif
#ifdef WEAK_DOUBLE_SETTLE
#define W_DOUBLE_SETTLE 1
#else
#define W_DOUBLE_SETTLE 0
#endif
#ifdef WEAK_POPPED_NOT_FINALIZED
#define W_POPPED_NOT_FINALIZED 1
#else
#define W_POPPED_NOT_FINALIZED 0
#endif
#ifdef WEAK_STALE_CACHE
#define W_STALE_CACHE 1
#else
#define W_STALE_CACHE 0
#endif
#ifdef WEAK_STALE_ROUTE_ACQUIRE
#define W_STALE_ROUTE_ACQUIRE 1
#else
#define W_STALE_ROUTE_ACQUIRE 0
#endif
#ifdef WEAK_NON_ATOMIC_CLAIM
#define W_NON_ATOMIC_CLAIM 1
#else
#define W_NON_ATOMIC_CLAIM 0
#endif
#ifdef WEAK_MISROUTE_PRODUCER
#define W_MISROUTE_PRODUCER 1
#else
#define W_MISROUTE_PRODUCER 0
#endif
#ifdef WEAK_MISROUTE_CANCELLED_PRODUCER
#define W_MISROUTE_CANCELLED_PRODUCER 1
#else
#define W_MISROUTE_CANCELLED_PRODUCER 0
#endif
#ifdef WEAK_MISROUTE_FAILED_PRODUCER
#define W_MISROUTE_FAILED_PRODUCER 1
#else
#define W_MISROUTE_FAILED_PRODUCER 0
#endif
#ifdef WEAK_LOST_WAITER
#define W_LOST_WAITER 1
#else
#define W_LOST_WAITER 0
#endif
#ifdef WEAK_SHUTDOWN_ADMIT
#define W_SHUTDOWN_ADMIT 1
#else
#define W_SHUTDOWN_ADMIT 0
#endif
#ifdef WEAK_LEAK_OWNER_ON_TERMINAL
#define W_LEAK_OWNER_ON_TERMINAL 1
#else
#define W_LEAK_OWNER_ON_TERMINAL 0
#endif
#ifdef WEAK_CROSS_ACCOUNT_ANCHOR
#define W_CROSS_ACCOUNT_ANCHOR 1
#else
#define W_CROSS_ACCOUNT_ANCHOR 0
#endif
#ifdef WEAK_CONFLATED_TIMERS
#define W_CONFLATED_TIMERS 1
#else
#define W_CONFLATED_TIMERS 0
#endif
#ifdef WEAK_UNBOUNDED_BACKOFF
#define W_UNBOUNDED_BACKOFF 1
#else
#define W_UNBOUNDED_BACKOFF 0
#endif
#ifdef WEAK_UNFENCED_FAILOVER_RELEASE
#define W_UNFENCED_FAILOVER_RELEASE 1
#else
#define W_UNFENCED_FAILOVER_RELEASE 0
#endif
#ifdef WEAK_SETTLE_ON_FAILOVER
#define W_SETTLE_ON_FAILOVER 1
#else
#define W_SETTLE_ON_FAILOVER 0
#endif
#ifdef WEAK_FAILOVER_CONTINUATION
#define W_FAILOVER_CONTINUATION 1
#else
#define W_FAILOVER_CONTINUATION 0
#endif

#if defined(WEAK_MISROUTE_PRODUCER) || defined(WEAK_MISROUTE_CANCELLED_PRODUCER) || defined(WEAK_MISROUTE_FAILED_PRODUCER)
#define ANY_MISROUTE 1
#endif

/* ------------------------------------------------------------------------------------------------
 * Budgets in model ticks (DESIGN "Per-stage budgets"; defaults scaled down, relations kept).
 * ------------------------------------------------------------------------------------------------ */
#define KEEPALIVE_INTERVAL 1
#define KEEPALIVE_MAX      2
#define CADENCE            (KEEPALIVE_INTERVAL * KEEPALIVE_MAX) /* keepalive cadence = client-safe cap */
#define GATE_WAIT          2   /* gate_wait_s                                        */
#define GATE_RETIRE        1   /* gate_retire_s (below the cadence: exercises the floor) */
#define CONNECT_BUDGET     1   /* connect_s                                          */
#define STREAM_IDLE        3   /* stream_idle_s                                      */
#define REQUEST_TOTAL      3   /* request_total_s: gate + connect + pre_response, never reset */
#define SHARED_TIMEOUT     4   /* the one timer of the single-shared-timeout weakening */
#define MAX_BACKOFF        1   /* longest retry backoff the protocol lets a client reach */
#define BACKOFF_CAP        2   /* domain cap of the backoff counter                  */
#define FAILOVER_MAX       1   /* failover releases per turn; only turn 0 fails over (env): one per run */
#define EPOCH_MAX          6   /* <= 3 claims of the slot + 1 reclaim after the failover + 2 owner losses */

#define MIN2(x, y)  ((x) <= (y) -> (x) : (y))
#define MAX2(x, y)  ((x) >= (y) -> (x) : (y))
#define SUBF(x, y)  ((x) > (y) -> (x) - (y) : 0)          /* subtract-floor */
#define INC(n)      ((n) < 2 -> (n) + 1 : (n))             /* saturating counter increment */

/* pre_response = min(gate_retire, cadence, stream_idle, remaining request_total),
 * never below min(cadence, remaining request_total)  (StageBudget.cpp RequestBudget::connected) */
#define PRE_RESPONSE_FOR(rem) \
    MAX2(MIN2(MIN2(GATE_RETIRE, CADENCE), MIN2(STREAM_IDLE, rem)), MIN2(CADENCE, rem))

#define PHASE_BUDGET_CAP   (W_SINGLE_SHARED_TIMEOUT -> SHARED_TIMEOUT : STREAM_IDLE)
#define STREAM_IDLE_BOUND  (W_SINGLE_SHARED_TIMEOUT -> SHARED_TIMEOUT : STREAM_IDLE)

/* ------------------------------------------------------------------------------------------------
 * Enumerations
 * ------------------------------------------------------------------------------------------------ */
#define NO_REPLICA   0          /* replicas are 1 and 2 */
#define NO_ACCOUNT   0
#define A1           1          /* the one modelled account (= one owner slot row) */
#define FOREIGN      2          /* "some other account" (any other slot row): an anchor owner, or the row
                                 * a failed-over turn goes on with */

/* turn states: non-terminal < S_COMPLETED <= terminal */
#define S_NEW        0
#define S_QUEUED     1          /* waiting at the admission gate */
#define S_ACTIVE     2          /* slot claimed, attempt before the first upstream event */
#define S_STREAMING  3          /* first event forwarded */
#define S_SETTLING   4          /* completed delivery claimed: terminal event seen, log row committing */
#define S_COMPLETED  5
#define S_CANCELLED  6
#define S_FAILED     7
#define S_OWNER_LOST 8          /* retryable owner loss */

/* attempt phases */
#define P_NONE         0
#define P_CONNECT      1
#define P_PRE_RESPONSE 2
#define P_STREAMING    3

/* reservation (the slot booking of a turn) */
#define R_NONE      0
#define R_HELD      1
#define R_RELEASED  2
#define R_FINALIZED 3

/* admission-gate accounting */
#define G_NONE     0
#define G_QUEUED   1
#define G_HOLDING  2
#define G_TERMINAL 3

/* anchor kinds: client = previous_response_id sent by the client; full_resend = the client resent
 * the whole conversation; delta = a proxy-synthesised delta continuation (never a safe kind). */
#define K_NONE        0
#define K_CLIENT      1
#define K_FULL_RESEND 2
#define K_DELTA       3

/* anchor injected at dispatch */
#define INJ_NONE     0
#define INJ_SAME     1   /* a continuation whose anchor belongs to this account */
#define INJ_FOREIGN  2   /* an anchor owned by another account (cross_account_anchor only) */
#define INJ_MISMATCH 3   /* right account, wrong lineage (ignore_anchor_lineage only) */

/* where a failover goes (FailOver) */
#define FO_REROUTE 1   /* an early claim given up: route again, as a continuation, once the release ran */
#define FO_FOREIGN 2   /* an attempt refused upstream: go on with another slot row, outside the model */

/* terminal reasons */
#define RS_NONE       0
#define RS_COMPLETED  1
#define RS_CANCELLED  2
#define RS_TIMEOUT    3
#define RS_OWNER_LOSS 4

/* kill labels (the budget names of DESIGN "Per-stage budgets") */
#define L_GATE_WAIT     1
#define L_CONNECT       2
#define L_PRE_RESPONSE  3
#define L_STREAM_IDLE   4
#define L_REQUEST_TOTAL 5
#define L_STREAM_MAX    6

#define SD_RUNNING  0
#define SD_DRAINING 1
#define SD_COMPLETE 2

#define CR_ATTACHED  0
#define CR_TORN      1
#define CR_RECOVERED 2

/* ------------------------------------------------------------------------------------------------
 * State
 * ------------------------------------------------------------------------------------------------ */
byte owner;                        /* durable slot row: owner replica or NO_REPLICA */
byte ownerEpoch;                   /* durable slot row: fencing epoch (0 = never claimed) */
byte durableVersion;               /* durable account-snapshot version (0..1) */
byte snapshotVersion[3];           /* per replica (index 1, 2): local cached snapshot version */
byte shutdownPhase;
byte clientRetry;
byte retryBackoff;

/* sticky history flags (only ever set) */
bit badAnchorUse;
bit crossAccountDispatch;
bit mislabeledKill;
bit admittedDuringDrain;

/* per turn */
byte tstate[2];
byte treplica[2];
byte taccount[2];
byte tepoch[2];
byte acquisitions[2];
byte settlements[2];
byte reservation[2];
byte gate[2];
byte gateDl[2];                    /* budgets remaining at the start of the current phase */
byte reqDl[2];                     /* request_total remaining (carried, clamped at each phase start) */
byte connDl[2];
byte preDl[2];
byte elapsed[2];                   /* ticks spent in the current phase (streaming: since last event) */
byte phase[2];
byte anchorKind[2];
byte anchorOwner[2];
byte anchorEpoch[2];
bit  anchorLineageOk[2] = 1;       /* initially: no anchor, lineage OK */
bit  anchorUsed[2];
bit  routeAttempted[2];
byte routeReplica[2];
byte routeVersion[2];
bit  routedStale[2];
bit  misrouted[2];                 /* producerTarget != self */
bit  delivered[2];
byte finalizer[2];
byte reason[2];
bit  registered[2];                /* in the shutdown registry (ProxyService::m_turns) */
bit  ownerReleased[2];
byte failovers[2];                 /* failover releases of the turn (<= FAILOVER_MAX) */
bit  releasePending[2];            /* its failover release is queued on the store, not yet committed */
byte killLabel;                    /* scratch inside one d_step (reset before it ends) */

#ifdef SCENARIO_STREAM_IDLE
byte lastKillLabel;                /* only the scripted regression records kill labels */
#define RECORD_KILL(l) lastKillLabel = (l)
#else
#define RECORD_KILL(l) skip
#endif

/* Property names: never assigned, so `assert(!Name)` fails exactly when the monitor reaches it and pan
 * prints "assertion violated  !(Name)". */
bit TypeInvariant = 1;
bit Inv1AnchorCurrent = 1;
bit Inv2DeadlineOrdering = 1;
bit Inv3ReservationSettledExactlyOnce = 1;
bit Inv4FreshSnapshots = 1;
bit Inv5SingleOwnerCAS = 1;
bit Inv6TerminalIsolation = 1;
bit Inv7GateAccounting = 1;
bit Inv8ShutdownDrain = 1;
bit Inv9TerminalOwnerReleased = 1;
bit Inv10AnchorAccountOwnership = 1;
bit Inv11PreResponseBudget = 1;
bit Deadlock = 1;

/* ------------------------------------------------------------------------------------------------
 * Helper predicates
 * ------------------------------------------------------------------------------------------------ */
#define TERMINAL(t)   (tstate[t] >= S_COMPLETED)
#define LIVE(t)       (tstate[t] == S_ACTIVE || tstate[t] == S_STREAMING || tstate[t] == S_SETTLING)
#define LIVE_PHASE(t) (tstate[t] == S_QUEUED || tstate[t] == S_ACTIVE || tstate[t] == S_STREAMING)
#define LIVE_ON_SLOT(t) (LIVE(t) && taccount[t] == A1)    /* live and holding the modelled slot */
#define LIVE_ON_ACCOUNT (LIVE_ON_SLOT(0) || LIVE_ON_SLOT(1)) /* a failed-over turn lives on FOREIGN */
#define SETTLED(t)    (reservation[t] == R_RELEASED || reservation[t] == R_FINALIZED)
#define CAN_ADMIT     (shutdownPhase == SD_RUNNING || W_SHUTDOWN_ADMIT)

/* Upstream answers a turn only if the turn carries no anchor or an anchor of its own account. */
#define UPSTREAM_RESPONDS(t) (anchorKind[t] == K_NONE || anchorOwner[t] == taccount[t])

/* GUARD anchor-safe: safe kind, lineage, real owner account, current epoch, slot currently owned */
#define ANCHOR_SAFE_BUT_LINEAGE(t) \
    ((anchorKind[t] == K_CLIENT || anchorKind[t] == K_FULL_RESEND) && anchorOwner[t] == A1 && \
     anchorEpoch[t] == ownerEpoch && owner != NO_REPLICA)
#define ANCHOR_SAFE(t) (ANCHOR_SAFE_BUT_LINEAGE(t) && anchorLineageOk[t])
#define ANCHOR_USABLE(t) \
    (ANCHOR_SAFE(t) || W_IGNORE_OWNER_EPOCH || (W_IGNORE_ANCHOR_LINEAGE && ANCHOR_SAFE_BUT_LINEAGE(t)))

/* GUARD expire-bound: each wait is bounded by the budget of its own phase */
#define EXPIRE_BOUND(t) \
    (tstate[t] == S_QUEUED -> gateDl[t] : \
    (tstate[t] == S_ACTIVE && phase[t] == P_CONNECT -> connDl[t] : \
    (tstate[t] == S_ACTIVE -> preDl[t] : STREAM_IDLE_BOUND)))

/* The kill label: the budget that fired; on a tie the broader one (request_total) is named
 * (StageBudget.cpp earliest()). conflated_timers labels the pre_response kill stream_idle. */
#define KILL_LABEL(t) \
    (tstate[t] == S_QUEUED -> (gateDl[t] < reqDl[t] -> L_GATE_WAIT : L_REQUEST_TOTAL) : \
    (tstate[t] == S_ACTIVE && phase[t] == P_CONNECT -> (connDl[t] < reqDl[t] -> L_CONNECT : L_REQUEST_TOTAL) : \
    (tstate[t] == S_ACTIVE -> (preDl[t] < reqDl[t] -> (W_CONFLATED_TIMERS -> L_STREAM_IDLE : L_PRE_RESPONSE) \
                                                  : L_REQUEST_TOTAL) : \
     L_STREAM_IDLE)))

/* A kill names a budget that runs in the killed turn's phase (streams are never killed by
 * request_total; nothing but a stream is killed by stream_idle / stream_max). */
#define KILL_LABEL_OK(t, l) \
    (tstate[t] == S_STREAMING -> ((l) == L_STREAM_IDLE || (l) == L_STREAM_MAX) : \
    (tstate[t] == S_QUEUED -> ((l) == L_GATE_WAIT || (l) == L_REQUEST_TOTAL) : \
    (phase[t] == P_CONNECT -> ((l) == L_CONNECT || (l) == L_REQUEST_TOTAL) : \
                              ((l) == L_PRE_RESPONSE || (l) == L_REQUEST_TOTAL))))

#define BELOW_BOUND(t) (LIVE_PHASE(t) && elapsed[t] < EXPIRE_BOUND(t))

/* GUARD complete-needs-response: only a streaming turn whose upstream answers can complete */
#define CAN_COMPLETE(t) (tstate[t] == S_STREAMING && UPSTREAM_RESPONDS(t))

#define QUIESCED (shutdownPhase == SD_COMPLETE && \
                  (TERMINAL(0) || tstate[0] == S_NEW) && (TERMINAL(1) || tstate[1] == S_NEW))

/* ------------------------------------------------------------------------------------------------
 * Dead-variable reset (state-space quotient, see README "Reduction"). After these points nothing
 * reads the reset variables; -DFAITHFUL keeps them instead.
 * ------------------------------------------------------------------------------------------------ */
#ifdef FAITHFUL
#define RESET_TIMERS(t)   skip
#define RESET_ANCHOR(t)   skip
#define RESET_ROUTE(t)    skip
#define RESET_REPLICA(t)  skip
#else
#define RESET_TIMERS(t)   gateDl[t] = 0; reqDl[t] = 0; connDl[t] = 0; preDl[t] = 0; elapsed[t] = 0
#define RESET_ANCHOR(t)   anchorKind[t] = K_NONE; anchorOwner[t] = NO_ACCOUNT; anchorEpoch[t] = 0; \
                          anchorLineageOk[t] = 1; anchorUsed[t] = 0
#define RESET_ROUTE(t)    routeAttempted[t] = 0; routeReplica[t] = NO_REPLICA; routeVersion[t] = 0
#define RESET_REPLICA(t)  treplica[t] = NO_REPLICA
#endif

/* Clamp at every attempt-phase start: request_total keeps running, every other deadline is capped by
 * what is left of it. */
inline Clamp(t) {
    reqDl[t] = SUBF(reqDl[t], elapsed[t]);
    gateDl[t] = MIN2(gateDl[t], reqDl[t]);
    connDl[t] = MIN2(connDl[t], reqDl[t]);
    preDl[t] = MIN2(preDl[t], reqDl[t])
}

/* GUARD fenced-release: the owner row is cleared only while its epoch is still the turn's epoch (for a turn
 * that failed over to FOREIGN, tepoch is the given-up claim's, whose release has just run: a no-op) */
inline FencedRelease(t) {
    if
    :: (taccount[t] != NO_ACCOUNT && ownerEpoch == tepoch[t]) -> owner = NO_REPLICA
    :: else -> skip
    fi
}

/* FailoverRelease: the failover release's transaction (OwnerSlotRepository::releaseForFailover). It names
 * the one claim it gives up; the claim ends as 'failover', which is no settlement. */
/* GUARD failover-fenced-release: the owner row is cleared only while it still carries that claim's epoch */
inline FailoverRelease(t) {
    if
    :: (ownerEpoch == tepoch[t] || W_UNFENCED_FAILOVER_RELEASE) -> owner = NO_REPLICA
    :: else -> skip
    fi;
    if
    :: W_SETTLE_ON_FAILOVER -> settlements[t] = INC(settlements[t])
    :: else -> skip
    fi;
    releasePending[t] = 0
}

/* CommitFailoverRelease: the store thread runs the queued failover release (SlotLedger::releaseForFailover). */
#define CAN_COMMIT_FAILOVER_RELEASE(t) (releasePending[t])
inline CommitFailoverRelease(t) {
    printf("ACT CommitFailoverRelease(%d)\n", t);
    FailoverRelease(t)
}

/* Common tail of every terminal transition except completion. A failover release still queued commits
 * first: the settlement is queued behind it on the same store thread. */
inline EndTurn(t, newState, why) {
    if
    :: releasePending[t] -> FailoverRelease(t)
    :: else -> skip
    fi;
    tstate[t] = newState;
    gate[t] = G_TERMINAL;
    reason[t] = why;
    registered[t] = 0;
    phase[t] = P_NONE;
    finalizer[t] = NO_REPLICA;
    if
    :: W_LEAK_OWNER_ON_TERMINAL -> ownerReleased[t] = (taccount[t] == NO_ACCOUNT)
    :: else -> ownerReleased[t] = 1; FencedRelease(t)
    fi;
    RESET_TIMERS(t); RESET_ANCHOR(t); RESET_ROUTE(t); RESET_REPLICA(t)
}

/* ------------------------------------------------------------------------------------------------
 * Actions: guard macro + effect inline
 * ------------------------------------------------------------------------------------------------ */

/* Tick: time passes for every live-phase turn below its bound. */
#define TICK_ENABLED (BELOW_BOUND(0) || BELOW_BOUND(1))
inline Tick() {
    printf("ACT Tick\n");
    if
    :: BELOW_BOUND(0) -> elapsed[0] = elapsed[0] + 1
    :: else -> skip
    fi;
    if
    :: BELOW_BOUND(1) -> elapsed[1] = elapsed[1] + 1
    :: else -> skip
    fi
}

/* QueueTurn: a request arrives at the proxy and waits at the gate (request_total starts here). */
#define CAN_QUEUE(t) (tstate[t] == S_NEW && /* GUARD queue-admit */ CAN_ADMIT)
inline QueueTurn(t) {
    printf("ACT QueueTurn(%d)\n", t);
    admittedDuringDrain = admittedDuringDrain || (shutdownPhase != SD_RUNNING);
    tstate[t] = S_QUEUED;
    gate[t] = G_QUEUED;
    registered[t] = 1;
    phase[t] = P_NONE;
    elapsed[t] = 0;
    if
    :: W_SINGLE_SHARED_TIMEOUT ->
        reqDl[t] = SHARED_TIMEOUT; gateDl[t] = SHARED_TIMEOUT; connDl[t] = SHARED_TIMEOUT; preDl[t] = SHARED_TIMEOUT
    :: else ->
        reqDl[t] = REQUEST_TOTAL; gateDl[t] = MIN2(GATE_WAIT, REQUEST_TOTAL); connDl[t] = 0; preDl[t] = 0
    fi
}

/* RouteFromSnapshot: replica r selects the account from its local snapshot. A waiter routes once per
 * snapshot version (it re-selects only when its route has gone stale), always on the replica it
 * arrived at (the first route picks it; a failed-over turn keeps it in treplica). */
#define CAN_ROUTE(t, r) \
    (tstate[t] == S_QUEUED && \
     /* GUARD route-once-per-version */ \
     (!routeAttempted[t] || (routeReplica[t] == r && routeVersion[t] < durableVersion)) && \
     /* GUARD route-fresh-snapshot */ \
     (snapshotVersion[r] >= durableVersion || W_STALE_CACHE) && \
     /* GUARD route-after-release: a turn that gave up its claim routes again once the release is answered */ \
     !releasePending[t] && \
     /* GUARD route-own-replica: after a failover the turn routes again on its own replica */ \
     (treplica[t] == NO_REPLICA || treplica[t] == r))
inline RouteFromSnapshot(t, r) {
    printf("ACT RouteFromSnapshot(%d,%d)\n", t, r);
    routedStale[t] = routedStale[t] || (snapshotVersion[r] < durableVersion);
    routeAttempted[t] = 1;
    routeReplica[t] = r;
    routeVersion[t] = snapshotVersion[r]
}

/* AcquireTurn: claim the slot row by compare-and-set (owner empty, epoch + 1) with the route's
 * snapshot version re-checked against the durable row. */
#define CAN_ACQUIRE(t, r, inj) \
    (tstate[t] == S_QUEUED && \
     /* GUARD acquire-owner-empty */ \
     ((owner == NO_REPLICA && !LIVE_ON_ACCOUNT) || W_NON_ATOMIC_CLAIM) && \
     /* GUARD acquire-route-replica */ \
     (routeAttempted[t] && routeReplica[t] == r) && \
     /* GUARD acquire-version-recheck */ \
     (routeVersion[t] == durableVersion || W_STALE_ROUTE_ACQUIRE) && \
     /* GUARD acquire-anchor-injection */ \
     ((inj) == INJ_NONE || (inj) == INJ_SAME || \
      ((inj) == INJ_MISMATCH && W_IGNORE_ANCHOR_LINEAGE) || ((inj) == INJ_FOREIGN && W_CROSS_ACCOUNT_ANCHOR)) && \
     /* GUARD reclaim-as-continuation: a turn that gave up its early claim claims again as a continuation */ \
     (failovers[t] == 0 || (inj) != INJ_NONE))
inline AcquireTurn(t, r, inj) {
    printf("ACT AcquireTurn(%d,%d,%d)\n", t, r, inj);
    crossAccountDispatch = crossAccountDispatch || ((inj) == INJ_FOREIGN);
    routedStale[t] = routedStale[t] || (routeVersion[t] < durableVersion);
    if
    :: (inj) == INJ_SAME ->
        anchorKind[t] = K_CLIENT; anchorOwner[t] = A1; anchorEpoch[t] = ownerEpoch + 1; anchorLineageOk[t] = 1
    :: (inj) == INJ_FOREIGN ->
        anchorKind[t] = K_CLIENT; anchorOwner[t] = FOREIGN; anchorEpoch[t] = 0; anchorLineageOk[t] = 1
    :: (inj) == INJ_MISMATCH ->
        anchorKind[t] = K_CLIENT; anchorOwner[t] = A1; anchorEpoch[t] = ownerEpoch + 1; anchorLineageOk[t] = 0
    :: else -> skip
    fi;
    anchorUsed[t] = 0;
    tepoch[t] = ownerEpoch + 1;          /* from the OLD epoch */
    ownerEpoch = ownerEpoch + 1;
    owner = r;
    tstate[t] = S_ACTIVE;
    treplica[t] = r;
    taccount[t] = A1;
    acquisitions[t] = INC(acquisitions[t]);
    reservation[t] = R_HELD;
    gate[t] = G_HOLDING;
    if
    :: clientRetry == CR_TORN -> skip
    :: else -> clientRetry = CR_ATTACHED
    fi;
    if
    :: W_SINGLE_SHARED_TIMEOUT ->
        reqDl[t] = SHARED_TIMEOUT; gateDl[t] = SHARED_TIMEOUT; connDl[t] = SHARED_TIMEOUT; preDl[t] = SHARED_TIMEOUT
    :: else ->
        Clamp(t);
        connDl[t] = MIN2(CONNECT_BUDGET, reqDl[t])
    fi;
    phase[t] = P_CONNECT;
    elapsed[t] = 0;
    RESET_ROUTE(t);
#ifndef FAITHFUL
    if
    :: W_SINGLE_SHARED_TIMEOUT -> skip
    :: else -> gateDl[t] = 0            /* the gate phase is over */
    fi
#else
    skip
#endif
}

/* UpstreamConnected: the attempt's connection is up and the request sent (RequestBudget::connected):
 * pre_response starts with the derived budget. */
#define CAN_CONNECT(t) (tstate[t] == S_ACTIVE && phase[t] == P_CONNECT)
inline UpstreamConnected(t) {
    printf("ACT UpstreamConnected(%d)\n", t);
    if
    :: W_SINGLE_SHARED_TIMEOUT ->
        reqDl[t] = SHARED_TIMEOUT; connDl[t] = SHARED_TIMEOUT; preDl[t] = SHARED_TIMEOUT
    :: else ->
        Clamp(t);
        preDl[t] = PRE_RESPONSE_FOR(reqDl[t])
    fi;
    phase[t] = P_PRE_RESPONSE;
    elapsed[t] = 0
#ifndef FAITHFUL
    ; if
    :: W_SINGLE_SHARED_TIMEOUT -> skip
    :: else -> connDl[t] = 0             /* the connect phase is over */
    fi
#endif
}

/* StartStream: the first upstream event (response.created) is forwarded: the response is committed,
 * no failover from here, and the response id becomes an anchor of kind k on this account and epoch. */
#define CAN_START_STREAM(t) (tstate[t] == S_ACTIVE && phase[t] == P_PRE_RESPONSE && UPSTREAM_RESPONDS(t))
inline StartStream(t, k) {
    printf("ACT StartStream(%d,%d)\n", t, k);
    if
    :: W_SINGLE_SHARED_TIMEOUT -> skip
    :: else -> Clamp(t)
    fi;
    tstate[t] = S_STREAMING;
    phase[t] = P_STREAMING;
    anchorKind[t] = k;
    anchorOwner[t] = taccount[t];
    anchorEpoch[t] = tepoch[t];
    anchorLineageOk[t] = 1;
    anchorUsed[t] = 0;
    elapsed[t] = 0
#ifndef FAITHFUL
    ; if
    :: W_SINGLE_SHARED_TIMEOUT -> skip
    :: else -> reqDl[t] = 0; preDl[t] = 0 /* request_total and pre_response no longer apply */
    fi
#endif
}

/* StreamProgress: an upstream event resets stream_idle (RequestBudget::onEvent). */
#define CAN_PROGRESS(t) (tstate[t] == S_STREAMING && elapsed[t] > 0)
inline StreamProgress(t) {
    printf("ACT StreamProgress(%d)\n", t);
    elapsed[t] = 0
}

/* UseAnchor: the turn replays its continuity anchor upstream, once per anchor value. */
#define CAN_USE_ANCHOR(t) \
    ((tstate[t] == S_ACTIVE || tstate[t] == S_STREAMING) && anchorKind[t] != K_NONE && \
     /* GUARD use-anchor-once */ !anchorUsed[t] && \
     /* GUARD use-anchor-usable */ ANCHOR_USABLE(t))
inline UseAnchor(t) {
    printf("ACT UseAnchor(%d)\n", t);
    badAnchorUse = badAnchorUse || !ANCHOR_SAFE(t);
    anchorUsed[t] = 1
}

/* OwnerLoss: the slot's lease is lost (expired and reclaimed by another replica, or reclaimed by a
 * restarted incarnation): the row is cleared and its epoch bumped; the turn ends retryable. Only a turn
 * live on the slot: one that failed over is no longer its owner (ReclaimAfterFailover). */
#define CAN_LOSE_OWNER(t) LIVE_ON_SLOT(t)
inline OwnerLoss(t) {
    printf("ACT OwnerLoss(%d)\n", t);
    owner = NO_REPLICA;
    ownerEpoch = ownerEpoch + 1;
    if
    :: W_IGNORE_OWNER_EPOCH -> skip      /* the turn carries on under a stale epoch */
    :: else ->
        settlements[t] = INC(settlements[t]);
        reservation[t] = R_RELEASED;
        EndTurn(t, S_OWNER_LOST, RS_OWNER_LOSS)
    fi
}

/* FailOver: the turn gives its claim up before anything reached the client (Turn::failOver after an
 * attempt the upstream refused; Turn::rerouteAfterEarlyClaim when the body scan finds a continuation
 * after an early claim). It stops acting on the slot at once; the release (fenced by the claim's epoch,
 * no settlement) is queued on the store and commits later (CommitFailoverRelease). request_total keeps
 * running. FO_REROUTE: the turn routes again once the release is answered, and may claim this very slot
 * again. FO_FOREIGN: it goes on with another slot row, outside the model, where it ends like any turn with
 * the request's one settlement. */
#define CAN_FAIL_OVER(t, dest) \
    (tstate[t] == S_ACTIVE && taccount[t] == A1 && \
     /* GUARD failover-bounded */ failovers[t] < FAILOVER_MAX && \
     /* GUARD failover-before-deadline: no budget has fired */ elapsed[t] < EXPIRE_BOUND(t) && \
     /* GUARD failover-not-continuation: a continuation stays on its owner */ \
     (anchorKind[t] == K_NONE || ((dest) == FO_FOREIGN && W_FAILOVER_CONTINUATION)) && \
     /* GUARD failover-early-claim: an early claim is given up as soon as it is answered, before dispatch */ \
     ((dest) == FO_FOREIGN || (phase[t] == P_CONNECT && elapsed[t] == 0)))
inline FailOver(t, dest) {
    printf("ACT FailOver(%d,%d)\n", t, dest);
    failovers[t] = failovers[t] + 1;
    releasePending[t] = 1;               /* SlotLedger::releaseForFailover: submitted, not yet committed */
    if
    :: (dest) == FO_REROUTE ->
        tstate[t] = S_QUEUED;            /* routes again, on its own replica (treplica kept) */
        gate[t] = G_QUEUED;
        phase[t] = P_NONE;
        routeAttempted[t] = 0; routeReplica[t] = NO_REPLICA; routeVersion[t] = 0;
        if
        :: W_SINGLE_SHARED_TIMEOUT ->
            reqDl[t] = SHARED_TIMEOUT; gateDl[t] = SHARED_TIMEOUT;
            connDl[t] = SHARED_TIMEOUT; preDl[t] = SHARED_TIMEOUT
        :: else ->
            Clamp(t);
            gateDl[t] = MIN2(GATE_WAIT, reqDl[t]); connDl[t] = 0; preDl[t] = 0
        fi;
        elapsed[t] = 0
    :: else ->
        /* The attempt on the other slot row (its claim, connect, stream, terminal event) is outside the
         * model: the turn is next seen settling there, the request's settlement being committed. */
        taccount[t] = FOREIGN;
        acquisitions[t] = INC(acquisitions[t]);
        tstate[t] = S_SETTLING;
        phase[t] = P_NONE;
        finalizer[t] = treplica[t];
        RESET_TIMERS(t)
    fi
}

/* ReclaimAfterFailover: the failover release is still queued when the given-up claim's lease runs out
 * (the replica renews only the claims it still holds) and another replica reclaims the row: cleared,
 * epoch + 1. The turn has left the slot, so nothing happens to it; the given-up claim is not settled
 * (the request settles once, on its last claim). */
#define CAN_RECLAIM_AFTER_FAILOVER(t) (releasePending[t] && owner != NO_REPLICA && ownerEpoch == tepoch[t])
inline ReclaimAfterFailover(t) {
    printf("ACT ReclaimAfterFailover(%d)\n", t);
    owner = NO_REPLICA;
    ownerEpoch = ownerEpoch + 1
}

/* ClaimCompletedDelivery: the upstream's terminal event is taken off the stream; settle() starts and
 * the request-log row + settlement are submitted to the store BEFORE anything is delivered. */
#define CAN_CLAIM(t) (CAN_COMPLETE(t) && treplica[t] != NO_REPLICA)
inline ClaimCompletedDelivery(t) {
    printf("ACT ClaimCompletedDelivery(%d)\n", t);
    tstate[t] = S_SETTLING;
    phase[t] = P_NONE;
    finalizer[t] = treplica[t];
    RESET_TIMERS(t); RESET_ANCHOR(t)
}

/* FinalizeCompletedDelivery: the store has committed the row: settlement finalized, slot released. */
#define CAN_FINALIZE(t) (tstate[t] == S_SETTLING && /* GUARD finalize-own-replica */ finalizer[t] == treplica[t])
inline FinalizeCompletedDelivery(t) {
    printf("ACT FinalizeCompletedDelivery(%d)\n", t);
    settlements[t] = INC(settlements[t]);
    reservation[t] = R_FINALIZED;
    EndTurn(t, S_COMPLETED, RS_COMPLETED)
}

/* AbortCompletedDelivery (popped_not_finalized only): the terminal event was consumed but the turn
 * ends completed without its settlement being committed and without releasing the slot. */
#define CAN_ABORT(t) (W_POPPED_NOT_FINALIZED && tstate[t] == S_SETTLING)
inline AbortCompletedDelivery(t) {
    printf("ACT AbortCompletedDelivery(%d)\n", t);
    tstate[t] = S_COMPLETED;
    gate[t] = G_TERMINAL;
    reason[t] = RS_COMPLETED;
    registered[t] = 0;
    phase[t] = P_NONE;
    finalizer[t] = NO_REPLICA;
    RESET_TIMERS(t); RESET_ANCHOR(t); RESET_ROUTE(t); RESET_REPLICA(t)
}

/* CancelTurn: the client went away (Turn::onClientGone). A settling turn has already settled and
 * ignores the disconnect. */
#define CAN_CANCEL(t) (tstate[t] == S_QUEUED || tstate[t] == S_ACTIVE || tstate[t] == S_STREAMING)
inline CancelTurn(t) {
    printf("ACT CancelTurn(%d)\n", t);
    if
    :: (reservation[t] == R_HELD && !W_SKIP_RELEASE_ON_CANCEL) ->
        settlements[t] = INC(settlements[t]);
        reservation[t] = R_RELEASED
    :: else -> skip
    fi;
    if
    :: (W_LOST_WAITER && tstate[t] == S_QUEUED) ->
        EndTurn(t, S_CANCELLED, RS_CANCELLED);
        gate[t] = G_NONE                 /* the waiter vanishes from the gate's books */
    :: else ->
        EndTurn(t, S_CANCELLED, RS_CANCELLED)
    fi
}

/* KillTurn: a budget fired (Turn::onDeadline). A pre-commit kill (gate or pre-response) answers the
 * client with an HTTP error + Retry-After: the client's session is torn until a retry succeeds. */
inline KillTurn(t) {
    printf("ACT KillTurn(%d,%d)\n", t, killLabel);
    RECORD_KILL(killLabel);
    mislabeledKill = mislabeledKill || !KILL_LABEL_OK(t, killLabel);
    if
    :: (tstate[t] == S_QUEUED || tstate[t] == S_ACTIVE) -> clientRetry = CR_TORN
    :: else -> skip
    fi;
    if
    :: reservation[t] == R_HELD ->
        settlements[t] = INC(settlements[t]);
        reservation[t] = R_RELEASED
    :: else -> skip
    fi;
    EndTurn(t, S_FAILED, RS_TIMEOUT);
    killLabel = 0                        /* scratch: always 0 in a stored state */
}

/* ExpireDeadline: the current phase's own bound is reached. */
#define CAN_EXPIRE(t) (LIVE_PHASE(t) && elapsed[t] >= EXPIRE_BOUND(t))
inline ExpireDeadline(t) {
    killLabel = KILL_LABEL(t);
    KillTurn(t)
}

/* StreamMaxKill: stream_max bounds a healthy stream's whole duration. Its exact value is abstracted:
 * the kill may fire at any point of a stream, and weak fairness says it fires eventually. */
#define CAN_STREAM_MAX(t) (tstate[t] == S_STREAMING)
inline StreamMaxKill(t) {
    killLabel = L_STREAM_MAX;
    KillTurn(t)
}

/* Client retry with bounded backoff after a torn (pre-commit failed) turn. */
/* GUARD backoff-bounded */
#define CAN_GROW_BACKOFF (clientRetry == CR_TORN && retryBackoff < BACKOFF_CAP && \
                          (retryBackoff < MAX_BACKOFF || W_UNBOUNDED_BACKOFF))
inline GrowRetryBackoff() {
    printf("ACT GrowRetryBackoff\n");
    retryBackoff = retryBackoff + 1
}
#define CAN_RETRY (clientRetry == CR_TORN && retryBackoff <= MAX_BACKOFF)
inline ClientRetryFails() {
    printf("ACT ClientRetryFails\n");
    retryBackoff = 0
}
inline ClientRetrySucceeds() {
    printf("ACT ClientRetrySucceeds\n");
    clientRetry = CR_RECOVERED;
    retryBackoff = 0
}

/* DuplicateSettlement (double_settle only): a second settlement of a settled turn. */
#define CAN_DUPLICATE_SETTLE(t) (W_DOUBLE_SETTLE && acquisitions[t] > 0 && TERMINAL(t) && settlements[t] == 1)
inline DuplicateSettlement(t) {
    printf("ACT DuplicateSettlement(%d)\n", t);
    settlements[t] = INC(settlements[t])
}

/* InvalidateQuota: another process changes the durable account row (status, usage, slots): one-shot. */
#define CAN_INVALIDATE (durableVersion == 0)
inline InvalidateQuota() {
    printf("ACT InvalidateQuota\n");
    durableVersion = 1
}

/* RefreshSnapshot: replica r reloads its cache from the durable row (AccountPool::pollChanges). */
#define CAN_REFRESH(r) (snapshotVersion[r] != durableVersion)
inline RefreshSnapshot(r) {
    printf("ACT RefreshSnapshot(%d)\n", r);
    snapshotVersion[r] = durableVersion
}

/* DeliverProducer: a terminal turn's outcome (its upstream producer's result) is delivered to the
 * client. In the full model only to the turn's own response. */
/* GUARD deliver-once-acquired */
#define CAN_DELIVER_SELF(t) (TERMINAL(t) && acquisitions[t] > 0 && !delivered[t])
inline DeliverProducer(t) {
    printf("ACT DeliverProducer(%d,%d)\n", t, t);
    delivered[t] = 1
}
#define MISROUTE_ORIGIN(t) \
    ((W_MISROUTE_PRODUCER && reason[t] == RS_COMPLETED) || \
     (W_MISROUTE_CANCELLED_PRODUCER && reason[t] == RS_CANCELLED) || \
     (W_MISROUTE_FAILED_PRODUCER && tstate[t] == S_FAILED))
#define CAN_MISROUTE(t, u) \
    (CAN_DELIVER_SELF(t) && MISROUTE_ORIGIN(t) && \
     (tstate[u] == S_QUEUED || tstate[u] == S_ACTIVE || tstate[u] == S_STREAMING))
inline MisrouteProducer(t, u) {
    printf("ACT DeliverProducer(%d,%d)\n", t, u);
    misrouted[t] = 1;
    delivered[t] = 1
}

/* Shutdown drain (ProxyHost::shutdown). */
#define CAN_START_DRAIN (shutdownPhase == SD_RUNNING)
inline StartDrain() {
    printf("ACT StartDrain\n");
    shutdownPhase = SD_DRAINING
}
/* GUARD shutdown-complete */
#define COMPLETED_DELIVERED(t) (reason[t] != RS_COMPLETED || delivered[t])
#define CAN_COMPLETE_SHUTDOWN (shutdownPhase == SD_DRAINING && !registered[0] && !registered[1] && \
                               COMPLETED_DELIVERED(0) && COMPLETED_DELIVERED(1))
inline CompleteShutdown() {
    printf("ACT CompleteShutdown\n");
    shutdownPhase = SD_COMPLETE
}

/* ------------------------------------------------------------------------------------------------
 * Invariants (predicates that must hold in every reachable state)
 * ------------------------------------------------------------------------------------------------ */
#define TYPE_TURN_OK(t) \
    (tstate[t] <= S_OWNER_LOST && treplica[t] <= 2 && taccount[t] <= FOREIGN && tepoch[t] <= EPOCH_MAX && \
     acquisitions[t] <= 2 && settlements[t] <= 2 && failovers[t] <= FAILOVER_MAX && \
     reservation[t] <= R_FINALIZED && gate[t] <= G_TERMINAL && \
     gateDl[t] <= SHARED_TIMEOUT && reqDl[t] <= SHARED_TIMEOUT && connDl[t] <= SHARED_TIMEOUT && \
     preDl[t] <= SHARED_TIMEOUT && elapsed[t] <= PHASE_BUDGET_CAP && phase[t] <= P_STREAMING && \
     anchorKind[t] <= K_DELTA && anchorOwner[t] <= FOREIGN && anchorEpoch[t] <= EPOCH_MAX && \
     routeReplica[t] <= 2 && routeVersion[t] <= 1 && finalizer[t] <= 2 && reason[t] <= RS_OWNER_LOSS && \
     (tstate[t] == S_ACTIVE -> (phase[t] == P_CONNECT || phase[t] == P_PRE_RESPONSE) : \
     (tstate[t] == S_STREAMING -> phase[t] == P_STREAMING : phase[t] == P_NONE)))
#define TYPE_OK \
    (TYPE_TURN_OK(0) && TYPE_TURN_OK(1) && owner <= 2 && ownerEpoch <= EPOCH_MAX && durableVersion <= 1 && \
     snapshotVersion[1] <= 1 && snapshotVersion[2] <= 1 && shutdownPhase <= SD_COMPLETE && \
     clientRetry <= CR_RECOVERED && retryBackoff <= BACKOFF_CAP)

/* INV Inv1AnchorCurrent */
#define INV1 (!badAnchorUse)

/* INV Inv2DeadlineOrdering */
#define INV2_TURN(t) \
    (tstate[t] == S_NEW || \
     (gateDl[t] <= reqDl[t] && connDl[t] <= reqDl[t] && preDl[t] <= reqDl[t] && \
      (tstate[t] == S_QUEUED -> gateDl[t] <= GATE_WAIT : 1) && \
      (tstate[t] == S_ACTIVE && phase[t] == P_CONNECT -> connDl[t] <= CONNECT_BUDGET : 1) && \
      (tstate[t] == S_ACTIVE && phase[t] == P_PRE_RESPONSE -> preDl[t] <= CADENCE : 1)))
#define INV2 (INV2_TURN(0) && INV2_TURN(1))

/* INV Inv3ReservationSettledExactlyOnce */
/* acquisitions count every claim of the request (the slot's and a FOREIGN one); a failover release is the
 * only way to a further claim, and it is no settlement: nothing is settled before the turn ends. */
#define INV3_TURN(t) \
    (acquisitions[t] <= 1 + failovers[t] && settlements[t] <= 1 && \
     (!TERMINAL(t) -> settlements[t] == 0 : 1) && \
     (acquisitions[t] > 0 && TERMINAL(t) -> (settlements[t] == 1 && SETTLED(t)) : 1) && \
     (settlements[t] == 0 -> (reservation[t] == R_NONE || reservation[t] == R_HELD) : 1) && \
     (settlements[t] == 1 -> SETTLED(t) : 1))
#define INV3 (INV3_TURN(0) && INV3_TURN(1))

/* INV Inv4FreshSnapshots */
#define INV4 (!routedStale[0] && !routedStale[1])

/* INV Inv5SingleOwnerCAS */
/* live on the slot = live and not failed over to FOREIGN; a turn whose failover release is still queued is
 * not live on the slot */
#define INV5_TURN(t) \
    ((LIVE_ON_SLOT(t) -> (treplica[t] == owner && tepoch[t] == ownerEpoch) : 1) && \
     (releasePending[t] -> !LIVE_ON_SLOT(t) : 1))
#define INV5 (!(LIVE_ON_SLOT(0) && LIVE_ON_SLOT(1)) && INV5_TURN(0) && INV5_TURN(1))

/* INV Inv6TerminalIsolation */
#define INV6_TURN(t) (TERMINAL(t) -> (!misrouted[t] && reason[t] != RS_NONE) : 1)
#define INV6 (INV6_TURN(0) && INV6_TURN(1))

/* INV Inv7GateAccounting */
#define INV7_TURN(t) \
    ((tstate[t] == S_NEW -> gate[t] == G_NONE : 1) && \
     (tstate[t] == S_QUEUED -> gate[t] == G_QUEUED : 1) && \
     (LIVE(t) -> gate[t] == G_HOLDING : 1) && \
     (TERMINAL(t) -> gate[t] == G_TERMINAL : 1) && \
     (gate[t] == G_QUEUED -> gateDl[t] <= reqDl[t] : 1))
#define INV7 (INV7_TURN(0) && INV7_TURN(1))

/* INV Inv8ShutdownDrain */
#define INV8 (!admittedDuringDrain && \
              (shutdownPhase == SD_COMPLETE -> \
                 (!registered[0] && !registered[1] && COMPLETED_DELIVERED(0) && COMPLETED_DELIVERED(1)) : 1))

/* INV Inv9TerminalOwnerReleased */
/* a terminal turn, and a failed-over turn whose release ran, hold no owner row; every owner row is a claim
 * still held */
#define INV9_TURN(t) \
    ((acquisitions[t] > 0 && TERMINAL(t) -> \
       (ownerReleased[t] && taccount[t] != NO_ACCOUNT && (ownerEpoch == tepoch[t] -> owner == NO_REPLICA : 1) && \
        finalizer[t] == NO_REPLICA && !releasePending[t]) : 1) && \
     (failovers[t] > 0 && !releasePending[t] && !LIVE_ON_SLOT(t) -> \
       (ownerEpoch == tepoch[t] -> owner == NO_REPLICA : 1) : 1))
/* the durable owner is a claim still held: a turn live on the slot, or a failover release not yet run */
#define HOLDS_ROW(t) ((LIVE_ON_SLOT(t) || releasePending[t]) && tepoch[t] == ownerEpoch)
#define INV9 (INV9_TURN(0) && INV9_TURN(1) && (owner != NO_REPLICA -> (HOLDS_ROW(0) || HOLDS_ROW(1)) : 1))

/* INV Inv10AnchorAccountOwnership */
#define INV10_TURN(t) ((tstate[t] != S_NEW && anchorKind[t] != K_NONE) -> anchorOwner[t] == taccount[t] : 1)
#define INV10 (!crossAccountDispatch && INV10_TURN(0) && INV10_TURN(1))

/* INV Inv11PreResponseBudget */
#define INV11_TURN(t) \
    (tstate[t] == S_ACTIVE && phase[t] == P_PRE_RESPONSE -> \
       (preDl[t] == PRE_RESPONSE_FOR(reqDl[t]) && preDl[t] >= MIN2(CADENCE, reqDl[t]) && preDl[t] <= reqDl[t]) : 1)
#define INV11 (!mislabeledKill && INV11_TURN(0) && INV11_TURN(1))

/* ------------------------------------------------------------------------------------------------
 * Processes
 * ------------------------------------------------------------------------------------------------ */
active proctype monitor() {
end_monitor:
    do
    :: atomic { !(TYPE_OK) -> assert(!TypeInvariant) }
    :: atomic { !(INV1) -> assert(!Inv1AnchorCurrent) }
    :: atomic { !(INV2) -> assert(!Inv2DeadlineOrdering) }
    :: atomic { !(INV3) -> assert(!Inv3ReservationSettledExactlyOnce) }
    :: atomic { !(INV4) -> assert(!Inv4FreshSnapshots) }
    :: atomic { !(INV5) -> assert(!Inv5SingleOwnerCAS) }
    :: atomic { !(INV6) -> assert(!Inv6TerminalIsolation) }
    :: atomic { !(INV7) -> assert(!Inv7GateAccounting) }
    :: atomic { !(INV8) -> assert(!Inv8ShutdownDrain) }
    :: atomic { !(INV9) -> assert(!Inv9TerminalOwnerReleased) }
    :: atomic { !(INV10) -> assert(!Inv10AnchorAccountOwnership) }
    :: atomic { !(INV11) -> assert(!Inv11PreResponseBudget) }
    :: atomic { timeout && !QUIESCED -> assert(!Deadlock) }   /* INV Deadlock */
    od
}

#ifndef SCENARIO_STREAM_IDLE

/* Every action without a fairness assumption. */
active proctype env() {
end_env:
    do
    :: d_step { CAN_QUEUE(0) -> QueueTurn(0) }
    :: d_step { CAN_QUEUE(1) -> QueueTurn(1) }
    :: d_step { CAN_ROUTE(0, 1) -> RouteFromSnapshot(0, 1) }
    :: d_step { CAN_ROUTE(0, 2) -> RouteFromSnapshot(0, 2) }
    :: d_step { CAN_ROUTE(1, 1) -> RouteFromSnapshot(1, 1) }
    :: d_step { CAN_ROUTE(1, 2) -> RouteFromSnapshot(1, 2) }
    :: d_step { CAN_ACQUIRE(0, 1, INJ_NONE) -> AcquireTurn(0, 1, INJ_NONE) }
    :: d_step { CAN_ACQUIRE(0, 1, INJ_SAME) -> AcquireTurn(0, 1, INJ_SAME) }
    :: d_step { CAN_ACQUIRE(0, 2, INJ_NONE) -> AcquireTurn(0, 2, INJ_NONE) }
    :: d_step { CAN_ACQUIRE(0, 2, INJ_SAME) -> AcquireTurn(0, 2, INJ_SAME) }
    :: d_step { CAN_ACQUIRE(1, 1, INJ_NONE) -> AcquireTurn(1, 1, INJ_NONE) }
    :: d_step { CAN_ACQUIRE(1, 1, INJ_SAME) -> AcquireTurn(1, 1, INJ_SAME) }
    :: d_step { CAN_ACQUIRE(1, 2, INJ_NONE) -> AcquireTurn(1, 2, INJ_NONE) }
    :: d_step { CAN_ACQUIRE(1, 2, INJ_SAME) -> AcquireTurn(1, 2, INJ_SAME) }
#if defined(WEAK_CROSS_ACCOUNT_ANCHOR)
    :: d_step { CAN_ACQUIRE(0, 1, INJ_FOREIGN) -> AcquireTurn(0, 1, INJ_FOREIGN) }
    :: d_step { CAN_ACQUIRE(0, 2, INJ_FOREIGN) -> AcquireTurn(0, 2, INJ_FOREIGN) }
    :: d_step { CAN_ACQUIRE(1, 1, INJ_FOREIGN) -> AcquireTurn(1, 1, INJ_FOREIGN) }
    :: d_step { CAN_ACQUIRE(1, 2, INJ_FOREIGN) -> AcquireTurn(1, 2, INJ_FOREIGN) }
#endif
#if defined(WEAK_IGNORE_ANCHOR_LINEAGE)
    :: d_step { CAN_ACQUIRE(0, 1, INJ_MISMATCH) -> AcquireTurn(0, 1, INJ_MISMATCH) }
    :: d_step { CAN_ACQUIRE(0, 2, INJ_MISMATCH) -> AcquireTurn(0, 2, INJ_MISMATCH) }
    :: d_step { CAN_ACQUIRE(1, 1, INJ_MISMATCH) -> AcquireTurn(1, 1, INJ_MISMATCH) }
    :: d_step { CAN_ACQUIRE(1, 2, INJ_MISMATCH) -> AcquireTurn(1, 2, INJ_MISMATCH) }
#endif
    :: d_step { CAN_CONNECT(0) -> UpstreamConnected(0) }
    :: d_step { CAN_CONNECT(1) -> UpstreamConnected(1) }
    :: d_step { CAN_START_STREAM(0) -> StartStream(0, K_CLIENT) }
    :: d_step { CAN_START_STREAM(0) -> StartStream(0, K_FULL_RESEND) }
    :: d_step { CAN_START_STREAM(0) -> StartStream(0, K_DELTA) }
    :: d_step { CAN_START_STREAM(1) -> StartStream(1, K_CLIENT) }
    :: d_step { CAN_START_STREAM(1) -> StartStream(1, K_FULL_RESEND) }
    :: d_step { CAN_START_STREAM(1) -> StartStream(1, K_DELTA) }
    :: d_step { CAN_PROGRESS(0) -> StreamProgress(0) }
    :: d_step { CAN_PROGRESS(1) -> StreamProgress(1) }
    :: d_step { CAN_USE_ANCHOR(0) -> UseAnchor(0) }
    :: d_step { CAN_USE_ANCHOR(1) -> UseAnchor(1) }
    :: d_step { CAN_LOSE_OWNER(0) -> OwnerLoss(0) }
    :: d_step { CAN_LOSE_OWNER(1) -> OwnerLoss(1) }
    /* Failover by turn 0 only: the turns are symmetric, so this is at most one failover per run, by
     * either turn (see FAILOVER_MAX). */
    :: d_step { CAN_FAIL_OVER(0, FO_REROUTE) -> FailOver(0, FO_REROUTE) }
    :: d_step { CAN_FAIL_OVER(0, FO_FOREIGN) -> FailOver(0, FO_FOREIGN) }
    :: d_step { CAN_COMMIT_FAILOVER_RELEASE(0) -> CommitFailoverRelease(0) }
    :: d_step { CAN_RECLAIM_AFTER_FAILOVER(0) -> ReclaimAfterFailover(0) }
    :: d_step { CAN_CLAIM(0) -> ClaimCompletedDelivery(0) }
    :: d_step { CAN_CLAIM(1) -> ClaimCompletedDelivery(1) }
    :: d_step { CAN_CANCEL(0) -> CancelTurn(0) }
    :: d_step { CAN_CANCEL(1) -> CancelTurn(1) }
    :: d_step { CAN_GROW_BACKOFF -> GrowRetryBackoff() }
    :: d_step { CAN_RETRY -> ClientRetryFails() }
    :: d_step { CAN_START_DRAIN -> StartDrain() }
    :: d_step { CAN_INVALIDATE -> InvalidateQuota() }
    :: d_step { CAN_REFRESH(1) -> RefreshSnapshot(1) }
    :: d_step { CAN_REFRESH(2) -> RefreshSnapshot(2) }
#ifdef WEAK_DOUBLE_SETTLE
    :: d_step { CAN_DUPLICATE_SETTLE(0) -> DuplicateSettlement(0) }
    :: d_step { CAN_DUPLICATE_SETTLE(1) -> DuplicateSettlement(1) }
#endif
#ifdef WEAK_POPPED_NOT_FINALIZED
    :: d_step { CAN_ABORT(0) -> AbortCompletedDelivery(0) }
    :: d_step { CAN_ABORT(1) -> AbortCompletedDelivery(1) }
#endif
#ifdef ANY_MISROUTE
    :: d_step { CAN_MISROUTE(0, 1) -> MisrouteProducer(0, 1) }
    :: d_step { CAN_MISROUTE(1, 0) -> MisrouteProducer(1, 0) }
#endif
#ifdef ENV_STUTTER
    ::  (shutdownPhase == shutdownPhase) -> skip   /* idle: lets env satisfy -f by stuttering */
#endif
    od
}

/* One process per weakly fair action instance (SPIN's -f is process-level weak fairness). */
active proctype fairTick() {            /* FAIR Tick */
end_fair:
    do
    :: d_step { TICK_ENABLED -> Tick() }
    od
}
active proctype fairExpire0() {         /* FAIR ExpireDeadline(0) */
end_fair:
    do
    :: d_step { CAN_EXPIRE(0) -> ExpireDeadline(0) }
    od
}
active proctype fairExpire1() {         /* FAIR ExpireDeadline(1) */
end_fair:
    do
    :: d_step { CAN_EXPIRE(1) -> ExpireDeadline(1) }
    od
}
active proctype fairStreamMax0() {      /* FAIR StreamMaxKill(0) */
end_fair:
    do
    :: d_step { CAN_STREAM_MAX(0) -> StreamMaxKill(0) }
    od
}
active proctype fairStreamMax1() {      /* FAIR StreamMaxKill(1) */
end_fair:
    do
    :: d_step { CAN_STREAM_MAX(1) -> StreamMaxKill(1) }
    od
}
active proctype fairDeliver0() {        /* FAIR DeliverProducer(0,0) */
end_fair:
    do
    :: d_step { CAN_DELIVER_SELF(0) -> DeliverProducer(0) }
    od
}
active proctype fairDeliver1() {        /* FAIR DeliverProducer(1,1) */
end_fair:
    do
    :: d_step { CAN_DELIVER_SELF(1) -> DeliverProducer(1) }
    od
}
active proctype fairFinalize0() {       /* FAIR FinalizeCompletedDelivery(0) */
end_fair:
    do
    :: d_step { CAN_FINALIZE(0) -> FinalizeCompletedDelivery(0) }
    od
}
active proctype fairFinalize1() {       /* FAIR FinalizeCompletedDelivery(1) */
end_fair:
    do
    :: d_step { CAN_FINALIZE(1) -> FinalizeCompletedDelivery(1) }
    od
}
active proctype fairRetrySucceeds() {   /* FAIR ClientRetrySucceeds */
end_fair:
    do
    :: d_step { CAN_RETRY -> ClientRetrySucceeds() }
    od
}
active proctype fairCompleteShutdown() { /* FAIR CompleteShutdown */
end_fair:
    do
    :: d_step { CAN_COMPLETE_SHUTDOWN -> CompleteShutdown() }
    od
}

/* ------------------------------------------------------------------------------------------------
 * Liveness (run one at a time: ./pan -a -f -N <Name>; build with -DENV_STUTTER and -DNFAIR=4)
 * ------------------------------------------------------------------------------------------------ */
ltl TurnTermination {
    [] ((tstate[0] != S_NEW -> <> (tstate[0] >= S_COMPLETED)) &&
        (tstate[1] != S_NEW -> <> (tstate[1] >= S_COMPLETED)))
}
ltl ShutdownEventuallyComplete {
    [] (shutdownPhase == SD_DRAINING -> <> (shutdownPhase == SD_COMPLETE))
}
ltl CompletedProducerEventuallyDelivered {
    [] (((tstate[0] == S_COMPLETED && reason[0] == RS_COMPLETED) -> <> delivered[0]) &&
        ((tstate[1] == S_COMPLETED && reason[1] == RS_COMPLETED) -> <> delivered[1]))
}
ltl TearEventuallyRecovers {
    [] (clientRetry == CR_TORN -> <> (clientRetry == CR_RECOVERED))
}

#endif /* !SCENARIO_STREAM_IDLE */
