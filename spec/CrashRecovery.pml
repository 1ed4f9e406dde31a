/*
 * CrashRecovery.pml -- what CoreOwnership.pml leaves out: the process dying (spec/README.md, F6).
 *
 * Scope: one replica, one turn (one request), two claims of it in a row on two accounts' slots: claim 0,
 * then, after a failover, claim 1. The replica's process may die between any two durable transactions, at
 * most MAX_CRASHES times; each death is followed by a start of the next incarnation. What lives in the
 * process (the turn, the store's queue) dies with it; the ledger (claim rows, settlements, request-log
 * rows) and the replica's incarnation counter are durable. Every durable step is one transaction, one
 * atomic step here. The code it stands for:
 *
 *   claim            OwnerSlotRepository::claim: a claim row, open; the slot row names the incarnation.
 *                    The claim after a failover also closes the request's given-up claim if that is still
 *                    open (closesGivenUpClaims: it may overtake the queued release, as an urgent job).
 *   queued release   SlotLedger::releaseForFailover: the given-up claim closed as `failover`, unsettled,
 *                    fenced by its epoch (a no-op on a claim closed already). Submitted to the store's queue.
 *   settle           writeRequestLog / settleTurn: the request's open claim settled once, its request-log
 *                    row; if another claim of the request is settled already, the open claim is released
 *                    unsettled (`settled_elsewhere`). A turn that found no next claim settles on its given-up
 *                    claim the same way. Both are queued behind the release (FIFO), so they come after it.
 *   start            SlotLedger::start, one store job: register the next incarnation, reclaim the previous
 *                    incarnations' open claims (reclaimPreviousIncarnations: each open claim settled, booked
 *                    `owner_lost`), then settleAbandonedFailovers.
 *   tick             SlotLedger::tick while the process runs: settleAbandonedFailovers.
 *   sweep            settleAbandonedFailovers: a failover-closed, unsettled claim of an incarnation that is
 *                    gone, whose request has no settled claim and no open or later claim, is settled and
 *                    booked `owner_lost` once. Never the running incarnation's own claims.
 *
 * Invariants (monitor, `assert(!<Name>)` so pan prints the name):
 *   CrashAtMostOnce     no request is settled or booked twice, at any time;
 *   CrashExactlyOnce    once every process has ended, a request with a claim has exactly one settlement and
 *                       one request-log row;
 *   CrashOwnOutcome     once every process has ended without a crash, the request was booked by its own turn
 *                       (not as lost by a sweep).
 * Negative controls (check.sh, "crash model"), each must violate the invariant named:
 *   CRASH_WEAK_NO_SWEEP       no settleAbandonedFailovers          -> CrashExactlyOnce
 *   CRASH_WEAK_SWEEP_OWN      the sweep judges its own incarnation -> CrashOwnOutcome
 *   CRASH_WEAK_NO_CLOSE       the next claim leaves the given-up claim open (spec finding F5, with a crash)
 *                                                                  -> CrashAtMostOnce
 * Not here: a second replica (other replicas' sweeps are judged by alive_until_ms, tested in
 * tst_ownership_store), lease expiry, more than one failover per turn.
 */

#define MAX_CRASHES 2
#define MAX_TICKS   2

#ifdef CRASH_WEAK_NO_SWEEP
#define W_NO_SWEEP 1
#else
#define W_NO_SWEEP 0
#endif
#ifdef CRASH_WEAK_SWEEP_OWN
#define W_SWEEP_OWN 1
#else
#define W_SWEEP_OWN 0
#endif
#ifdef CRASH_WEAK_NO_CLOSE
#define W_NO_CLOSE 1
#else
#define W_NO_CLOSE 0
#endif

#define OPEN     0   /* rel[k]: the claim holds its slot                            */
#define FAILOVER 1   /*          closed by a failover, unsettled (until a sweep)     */
#define DONE     2   /*          released by a settlement or a reclaim               */

#define O_NONE 0     /* outcome: nothing booked                                      */
#define O_OWN  1     /*          booked by the turn's own settlement                 */
#define O_LOST 2     /*          booked owner_lost by a reclaim or a sweep           */

/* durable */
byte inc = 1;          /* the running (or last) incarnation */
bit  made[2];          /* the claim row exists */
byte cinc[2];          /* the incarnation that made it */
byte rel[2];           /* OPEN / FAILOVER / DONE, meaningful when made */
byte sett[2];          /* settlements of the claim */
byte booked;           /* request-log rows of the request */
byte outcome;
/* the process */
bit  alive = 1;
bit  releaseQueued;    /* the failover release of claim 0, submitted, not committed */
byte crashes;
byte ticks;
bit  turnEnded;        /* the turn finished, or died with its process */
bit  releaseEnded = 1; /* no queued-release process is pending */

bit CrashAtMostOnce = 1;
bit CrashExactlyOnce = 1;
bit CrashOwnOutcome = 1;
bit CrashStuck = 1;

#define SETTLED_ANY (sett[0] > 0 || sett[1] > 0)
#define LIVE(me)    (alive && inc == (me))

inline bookOnce(o) {
    if
    :: booked == 0 -> booked = 1; outcome = o
    :: else -> skip   /* ON CONFLICT (request_id) DO NOTHING */
    fi
}

/* The turn's settlement of claim k (or of its given-up claim 0), fenced per request. */
inline settle(k) {
    if
    :: SETTLED_ANY -> rel[k] = DONE            /* settled elsewhere: released unsettled */
    :: else -> sett[k]++; rel[k] = DONE; bookOnce(O_OWN)
    fi
}

/* reclaimPreviousIncarnations: every open claim of an earlier incarnation, settled on its own. */
inline reclaim(k) {
    if
    :: made[k] && rel[k] == OPEN && cinc[k] < inc && sett[k] == 0 -> sett[k]++; rel[k] = DONE; bookOnce(O_LOST)
    :: else -> skip
    fi
}

/* settleAbandonedFailovers, by the running incarnation. Only claim 0 is ever closed by a failover; a later
 * claim of its request (claim 1) is later, and open or settled or released after a settlement. */
inline sweep() {
    if
    :: !W_NO_SWEEP && made[0] && rel[0] == FAILOVER && sett[0] == 0 && (cinc[0] != inc || W_SWEEP_OWN) &&
       !SETTLED_ANY && !made[1] ->
        sett[0]++; bookOnce(O_LOST)
    :: else -> skip
    fi
}

proctype QueuedRelease(byte me) {
    if
    :: atomic { LIVE(me) && releaseQueued -> releaseQueued = 0; printf("ACT release of claim 0 commits\n");
                if :: rel[0] == OPEN -> rel[0] = FAILOVER :: else -> skip fi }
    :: atomic { inc != me -> skip }            /* lost with its process */
    fi;
    releaseEnded = 1
}

proctype Turn() {
    byte me = inc;
    if
    :: atomic { LIVE(me) -> made[0] = 1; cinc[0] = me; rel[0] = OPEN; printf("ACT claim 0 (incarnation %d)\n", me) }
    :: atomic { inc != me -> goto dead }
    fi;
    if
    :: atomic { LIVE(me) -> settle(0); printf("ACT settle on claim 0\n") };   /* served on its first claim */
       goto ended
    :: atomic { LIVE(me) -> releaseQueued = 1; releaseEnded = 0; run QueuedRelease(me);   /* fails over */
                printf("ACT failover: release of claim 0 queued\n") }
    :: atomic { inc != me -> goto dead }
    fi;
    if
    :: atomic { LIVE(me) ->                                 /* the next claim, may overtake the release */
           made[1] = 1; cinc[1] = me; rel[1] = OPEN; printf("ACT claim 1 (incarnation %d)\n", me);
           if
           :: !W_NO_CLOSE && rel[0] == OPEN -> rel[0] = FAILOVER
           :: else -> skip
           fi };
       if
       :: atomic { LIVE(me) && !releaseQueued -> settle(1); printf("ACT settle on claim 1\n") }
       :: atomic { inc != me -> goto dead }
       fi
    :: atomic { LIVE(me) && !releaseQueued ->               /* no next claim: settles on the given-up one */
           settle(0); printf("ACT settle on given-up claim 0\n") }
    :: atomic { inc != me -> goto dead }
    fi;
ended:
    turnEnded = 1;
    goto out;
dead:
    turnEnded = 1;
out:
    skip
}

/* The process's deaths and starts, and the lease ticks between them; it may stop at any point. */
active proctype crash() {
    do
    :: atomic { alive && crashes < MAX_CRASHES -> alive = 0; releaseQueued = 0; crashes++; printf("ACT crash\n") };
       atomic { inc++; alive = 1; reclaim(0); reclaim(1); sweep();
                printf("ACT start of incarnation %d: reclaim and sweep (settlements %d+%d, booked %d)\n", inc, sett[0],
                       sett[1], booked) }
    :: atomic { alive && ticks < MAX_TICKS -> ticks++; sweep();
                printf("ACT lease tick: sweep (settlements %d+%d, booked %d)\n", sett[0], sett[1], booked) }
    :: break
    od
}

init {
    run Turn()
}

#define AT_MOST_ONCE (sett[0] + sett[1] <= 1 && booked <= 1)
#define ENDED        (turnEnded && releaseEnded)
#define EXACTLY_ONCE (!made[0] || (sett[0] + sett[1] == 1 && booked == 1))
#define OWN_OUTCOME  (crashes > 0 || outcome == O_OWN)

active proctype monitor() {
end_monitor:
    do
    :: atomic { !(AT_MOST_ONCE) -> assert(!CrashAtMostOnce) }
    :: atomic { timeout && ENDED && !(EXACTLY_ONCE) -> assert(!CrashExactlyOnce) }
    :: atomic { timeout && ENDED && !(OWN_OUTCOME) -> assert(!CrashOwnOutcome) }
    :: atomic { timeout && !ENDED -> assert(!CrashStuck) }  /* the turn or the release can never end */
    od
}
