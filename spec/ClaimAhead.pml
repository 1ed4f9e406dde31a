/*
 * ClaimAhead.pml -- a DESIGN, not the code: claims made ahead of their requests (docs/CLAIM-AHEAD.md).
 * Nothing of it is built; this model checks the design before any code is written. When it is built, the
 * code's functions go into spec/README.md's conformance table as for CoreOwnership.pml.
 *
 * Scope: one replica on SQLite (its process may die and start again, at most MAX_CRASHES times), one slot of
 * one account, three client turns (requests 1 to 3) that may run at once and come in either incarnation, and
 * another process on the same database file that may pause the account at any time (and die at any point of
 * it) and may sweep the slot once as if this replica's lease on it had run out, and the repair of the counters. Request ids 4 to 6 are the standing claims that settlements
 * make. What lives in
 * the process (the turns, the snapshot, the standing claim in memory) dies with it; the slot row, the claim
 * rows, settlements, request-log rows, the account's pause and the take journal are durable. Each durable
 * step is one transaction, one atomic step here. The design's steps:
 *
 *   claim     today's claim: one transaction re-reads the account (a paused account is refused) and takes
 *             the free slot with a claim row of the turn's own request.
 *   hand-on   the settlement's transaction settles the turn's claim and books it, then, unless the replica
 *             drains or the account (re-read there) is paused, keeps the slot with a new claim row, standing
 *             (made ahead, not yet used); else it frees the slot.
 *   fence     two counters in a small file beside the database that every process maps (`begun`, `ended`):
 *             a process that changes an account takes a shared lock on the file, adds one to `begun`, commits
 *             its change, adds one to `ended` and lets the lock go (the kernel lets it go if the process dies).
 *             The hand-on reads `ended` (e0), then `begun` (b0), before its transaction, and makes a standing
 *             claim only if b0 == e0 (no change under way); the claim keeps b0. A process that gets the file's
 *             lock exclusively (no change under way, or its writer died) may set `ended` to `begun`: the repair.
 *   take      on the proxy thread: the standing claim in memory moves AVAILABLE -> TAKEN (compare-and-set
 *             against the store thread's release), `begun` is compared with the claim's b0 (a load from the
 *             mapped file, no system call; changed: the claim is given back for release and the turn refused),
 *             the take is written to the take journal (kept when the process dies), then the dispatch.
 *             Session 53's design re-read the account's row on the proxy thread's own connection here instead:
 *             21-34 us of that one thread per take, which took the gain back at c=256 (docs/CLAIM-AHEAD.md).
 *   release   the store thread releases a standing claim that is AVAILABLE (its age ran out) or given back:
 *             AVAILABLE/GIVEN_BACK -> RELEASING, then one transaction closes its row, unsettled, and frees
 *             the slot. The drain's stop releases it the same way before the process ends.
 *   start     a new incarnation reclaims the slot its predecessor held: a turn's claim, or a standing claim
 *             found in the take journal, is settled and booked `owner_lost` once; a standing claim not in the
 *             journal was never dispatched and is closed unsettled, unbooked.
 *   sweep     another process reclaims the slot of an expired lease by the same rule (the journal lies beside
 *             the database file). The holding turn has stopped acting as owner by its own view of the lease
 *             (it does not dispatch, and counts as holding no more) but may still try to settle; the
 *             settlement and the release are fenced by the claim they name (here: the slot row still names
 *             that open claim; in the code: the epoch).
 * The hand-on's commit and its arrival in the proxy thread's memory are one step here: in the code the
 * settlement's answer reaches the proxy thread before its turn ends, and the stop waits for every turn.
 *
 * Invariants (monitor, `assert(!<Name>)` so pan prints the name):
 *   AheadFresh         no turn dispatches on a decision made while the account was durably paused;
 *   AheadSingleOwner   at most one live turn holds the slot;
 *   AheadAtMostOnce    no request is settled twice (bookings are ON CONFLICT DO NOTHING, so only settlements can);
 *   AheadNoPhantom     only a request a client made (a turn's claim, or a standing claim a turn took) is booked;
 *   AheadExactlyOnce   once every turn has ended, each dispatched request has one settlement and one row;
 *   AheadDrained       a replica that stopped after its drain holds no standing claim;
 *   AheadStuck         (deadlock) every turn ends.
 * Negative controls (check.sh, "claim-ahead design model"), each must violate the invariant named:
 *   AHEAD_WEAK_NO_RECHECK        the take trusts the snapshot         -> AheadFresh
 *   AHEAD_WEAK_HAND_ON_UNQUIET   the hand-on ignores b0 != e0          -> AheadFresh
 *   AHEAD_WEAK_BUMP_LATE         a change adds to `begun` after commit -> AheadFresh
 *   AHEAD_WEAK_REPAIR_LIVE       the repair runs while a change is under way (no lock) -> AheadFresh
 *   AHEAD_WEAK_TAKE_RACE         the release ignores a take            -> AheadSingleOwner
 *   AHEAD_WEAK_NO_JOURNAL        the take is not journalled            -> AheadExactlyOnce
 *   AHEAD_WEAK_BOOK_ALL          the start books every standing claim  -> AheadNoPhantom
 *   AHEAD_WEAK_UNFENCED_SETTLE   the settlement ignores a reclaim      -> AheadAtMostOnce
 *   AHEAD_WEAK_UNFENCED_RELEASE  the release ignores a reclaim         -> AheadSingleOwner
 *   AHEAD_WEAK_NO_DRAIN_RELEASE  the stop leaves the standing claim    -> AheadDrained
 * Not here: PostgreSQL replicas (the design keeps standing claims to SQLite), lease renewal (the sweep stands
 * for its failure), continuations (they claim as today), failover, the gate's queue (a turn that finds the
 * slot held and no standing claim available is refused; a take that gives its claim back is refused too, where
 * the design claims as today), an account version that changes without a pause, more than one slot.
 */

#define MAX_CRASHES 1

#ifdef AHEAD_WEAK_NO_RECHECK
#define W_NO_RECHECK 1
#else
#define W_NO_RECHECK 0
#endif
#ifdef AHEAD_WEAK_HAND_ON_UNQUIET
#define W_HAND_ON_UNQUIET 1
#else
#define W_HAND_ON_UNQUIET 0
#endif
#ifdef AHEAD_WEAK_BUMP_LATE
#define W_BUMP_LATE 1
#else
#define W_BUMP_LATE 0
#endif
#ifdef AHEAD_WEAK_REPAIR_LIVE
#define W_REPAIR_LIVE 1
#else
#define W_REPAIR_LIVE 0
#endif
#ifdef AHEAD_WEAK_TAKE_RACE
#define W_TAKE_RACE 1
#else
#define W_TAKE_RACE 0
#endif
#ifdef AHEAD_WEAK_NO_JOURNAL
#define W_NO_JOURNAL 1
#else
#define W_NO_JOURNAL 0
#endif
#ifdef AHEAD_WEAK_BOOK_ALL
#define W_BOOK_ALL 1
#else
#define W_BOOK_ALL 0
#endif
#ifdef AHEAD_WEAK_UNFENCED_SETTLE
#define W_UNFENCED_SETTLE 1
#else
#define W_UNFENCED_SETTLE 0
#endif
#ifdef AHEAD_WEAK_UNFENCED_RELEASE
#define W_UNFENCED_RELEASE 1
#else
#define W_UNFENCED_RELEASE 0
#endif
#ifdef AHEAD_WEAK_NO_DRAIN_RELEASE
#define W_NO_DRAIN_RELEASE 1
#else
#define W_NO_DRAIN_RELEASE 0
#endif

#define NREQ 7          /* request ids 1..6; 0 is none */

#define S_NONE       0  /* the standing claim in memory: none                       */
#define S_AVAILABLE  1  /*   made, free to take                                     */
#define S_TAKEN      2  /*   taken by a turn                                        */
#define S_GIVEN_BACK 3  /*   given back by a take that found the account paused     */
#define S_RELEASING  4  /*   the store thread is releasing it                       */

/* durable */
bit  paused;            /* the account, paused by another process */
bit  slotHeld;          /* the slot row has an owner (this replica) */
byte slotReq;           /* the request whose claim holds it */
byte slotInc;           /* the incarnation that made that claim */
bit  standing[NREQ];    /* the claim row was made ahead (by a hand-on) */
bit  open[NREQ];        /* the claim row holds its slot */
byte sett[NREQ];        /* settlements */
byte booked[NREQ];      /* request-log rows */
bit  journal[NREQ];     /* the take journal names the request */
byte nextId = 4;        /* the next standing claim's request id */
/* the counters file, mapped by every process (it outlives them) */
byte begun;             /* account changes begun */
byte ended;             /* account changes ended (committed, or repaired) */
bit  writerLocked;      /* the changing process holds its shared lock on the file */
/* the process */
byte inc = 1;
bit  alive = 1;
bit  draining;
bit  stopped;
bit  snapPaused;        /* the snapshot's copy of `paused` */
byte memReq;            /* the standing claim in memory */
byte memState;
byte memB0;             /* `begun` as the hand-on of the standing claim in memory saw it */
byte crashes;
/* ghosts */
bit  dispatched[NREQ];
bit  byClient[NREQ];
bit  staleDecision;
bit  lost[NREQ];        /* the claim's lease ran out and another process swept it: its turn stops acting as owner */
byte holders;           /* live turns that hold the slot (dispatched, not settled, not lost) */
bit  swept;             /* the other process's sweep has run (once) */
byte turnsEnded;

bit AheadFresh = 1;
bit AheadSingleOwner = 1;
bit AheadAtMostOnce = 1;
bit AheadNoPhantom = 1;
bit AheadExactlyOnce = 1;
bit AheadDrained = 1;
bit AheadStuck = 1;

#define LIVE(me) (alive && inc == (me) && !stopped)

inline bookOnce(r) {
    if
    :: booked[r] == 0 -> booked[r] = 1
    :: else -> skip    /* ON CONFLICT (request_id) DO NOTHING */
    fi
}

inline freeSlot() {
    slotHeld = 0; slotReq = 0
}

/* A reclaim of the slot's claim: the start's (a predecessor's claim) or another process's sweep (an expired
 * lease). A turn's claim, or a standing claim the take journal names, is settled and booked `owner_lost`; a
 * standing claim the journal does not name was never dispatched and is closed unsettled, unbooked. */
inline reclaimSlot() {
    if
    :: standing[slotReq] && !journal[slotReq] && !W_BOOK_ALL -> open[slotReq] = 0
    :: else -> sett[slotReq]++; bookOnce(slotReq); open[slotReq] = 0
    fi;
    freeSlot()
}

/* The store thread's release of the standing claim in memory (after AVAILABLE/GIVEN_BACK -> RELEASING). */
inline releaseStanding() {
    if
    :: W_UNFENCED_RELEASE || (slotHeld && slotReq == memReq && open[memReq]) -> open[memReq] = 0; freeSlot()
    :: else -> skip
    fi;
    memReq = 0; memState = S_NONE; memB0 = 0
}

/* The settlement of request r with the hand-on: fenced by the claim it holds; e0 and b0 are the counters as
 * read before the transaction. */
inline settleAndHandOn(r, e0, b0) {
    if
    :: W_UNFENCED_SETTLE || (slotHeld && slotReq == r && open[r]) ->
        sett[r]++; bookOnce(r); open[r] = 0;
        if
        :: !draining && !paused && nextId < NREQ && (W_HAND_ON_UNQUIET || b0 == e0) ->
            slotReq = nextId; slotInc = inc; standing[nextId] = 1; open[nextId] = 1;
            memReq = nextId; memState = S_AVAILABLE; memB0 = b0; nextId++
        :: else -> freeSlot()
        fi
    :: else -> skip    /* its claim was reclaimed (or released, with AHEAD_WEAK_TAKE_RACE): owner_lost */
    fi
}

proctype Turn(byte t) {
    byte me;
    byte r;
    bit  seen;
    byte e0;
    byte b0;
    atomic { alive -> me = inc };   /* a turn may come in either incarnation */
    if
    :: atomic { LIVE(me) && !draining && !snapPaused && !slotHeld ->        /* today's claim */
           if
           :: paused -> goto refused
           :: else -> slotHeld = 1; slotReq = t; slotInc = me; open[t] = 1; byClient[t] = 1; r = t;
                      printf("ACT turn %d claims\n", t)
           fi }
    :: atomic { LIVE(me) && !draining && !snapPaused && memState == S_AVAILABLE ->  /* take */
           r = memReq; memState = S_TAKEN;
           seen = (W_NO_RECHECK -> snapPaused : begun != memB0);   /* the fence: a load from the mapped file */
           if
           :: seen -> memState = S_GIVEN_BACK; printf("ACT turn %d gives standing claim %d back\n", t, r); goto refused
           :: else -> byClient[r] = 1; staleDecision = staleDecision || paused;
                      printf("ACT turn %d takes standing claim %d (paused %d)\n", t, r, paused)
           fi };
       if
       :: atomic { LIVE(me) -> journal[r] = !W_NO_JOURNAL; printf("ACT journal %d (written: %d)\n", r, journal[r]) }
       :: atomic { inc != me -> goto dead }
       fi
    :: atomic { LIVE(me) && (draining || snapPaused || (slotHeld && memState != S_AVAILABLE)) -> goto refused }
    :: atomic { !LIVE(me) -> goto dead }
    fi;
    if
    :: atomic { LIVE(me) && !lost[r] -> dispatched[r] = 1; holders++; printf("ACT turn %d dispatches request %d\n", t, r) }
    :: atomic { LIVE(me) && lost[r] -> goto dead }   /* its own view of the lease ran out: owner_lost */
    :: atomic { inc != me -> goto dead }
    fi;
    /* the counters, read before the settlement's transaction: `ended` first, then `begun` */
    if
    :: atomic { LIVE(me) -> e0 = ended }
    :: atomic { inc != me -> goto dead }
    fi;
    if
    :: atomic { LIVE(me) -> b0 = begun }
    :: atomic { inc != me -> e0 = 0; goto dead }
    fi;
    if
    :: atomic { LIVE(me) -> if :: !lost[r] -> holders-- :: else -> skip fi;
                settleAndHandOn(r, e0, b0); e0 = 0; b0 = 0; printf("ACT turn %d settles request %d\n", t, r);
                if :: memState == S_TAKEN && memReq == r -> memReq = 0; memState = S_NONE; memB0 = 0 :: else -> skip fi }
    :: atomic { inc != me -> e0 = 0; b0 = 0; goto dead }
    fi;
refused:
dead:
    turnsEnded++
}

/* The store thread: releases a standing claim whose age ran out or that a take gave back. */
active proctype store() {
end_store:
    do
    :: atomic { alive && !stopped && (memState == S_AVAILABLE || memState == S_GIVEN_BACK ||
                                      (W_TAKE_RACE && memState == S_TAKEN)) ->
           memState = S_RELEASING; releaseStanding(); printf("ACT store releases the standing claim\n") }
    od
}

/* The other process: pauses the account once, at any time; and sweeps the slot once, as if this replica's lease
 * on it had run out (a stall longer than the lease: the holding turn, by its own view of the lease, stops acting
 * as owner, but may still try to settle). The snapshot refresh of this replica. */
active proctype other() {
    /* lock, begun++, commit, ended++, unlock; the process may die after any step (the kernel drops the lock) */
    atomic { writerLocked = 1; begun = begun + (1 - W_BUMP_LATE); printf("ACT another process begins a pause\n") };
    if
    :: skip
    :: atomic { writerLocked = 0; printf("ACT it dies before its commit\n"); goto end_other }
    fi;
    atomic { paused = 1; printf("ACT another process pauses the account\n") };
    if
    :: W_BUMP_LATE -> atomic { begun++; printf("ACT begun, late\n") }
    :: else -> skip
    fi;
    if
    :: skip
    :: atomic { writerLocked = 0; printf("ACT it dies after its commit\n"); goto end_other }
    fi;
    atomic { ended++; writerLocked = 0; printf("ACT it ends the pause\n") };
end_other:
    skip
}

/* The repair: a process that gets the counters file's lock exclusively (no change under way) sets `ended` to
 * `begun`, so that a change whose process died does not stop hand-ons for good. */
active proctype repair() {
end_repair:
    atomic { (W_REPAIR_LIVE || !writerLocked) && begun != ended -> ended = begun; printf("ACT repair\n") }
}

active proctype sweeper() {
end_sweeper:
    atomic { slotHeld && !swept -> swept = 1; lost[slotReq] = 1;
             if :: dispatched[slotReq] && holders > 0 -> holders-- :: else -> skip fi;
             printf("ACT another process sweeps the expired claim %d\n", slotReq); reclaimSlot() }
}

active proctype refresh() {
end_refresh:
    do
    :: atomic { alive && snapPaused != paused -> snapPaused = paused; printf("ACT snapshot refreshed\n") }
    od
}

/* The process's death and the next start (with its reclaim), the drain and the stop after it. */
active proctype process() {
    do
    :: atomic { alive && !stopped && crashes < MAX_CRASHES -> alive = 0; crashes++; holders = 0;
                memReq = 0; memState = S_NONE; memB0 = 0; draining = 0; printf("ACT crash\n") };
       atomic { inc++; alive = 1; snapPaused = paused; printf("ACT start of incarnation %d\n", inc);
                if
                :: slotHeld && slotInc < inc -> reclaimSlot()
                :: else -> skip
                fi }
    :: atomic { alive && !draining && !stopped -> draining = 1; printf("ACT drain\n") }
    :: atomic { alive && draining && !stopped && holders == 0 && turnsEnded == 3 ->
           if
           :: !W_NO_DRAIN_RELEASE && (memState == S_AVAILABLE || memState == S_GIVEN_BACK) ->
               memState = S_RELEASING; releaseStanding()
           :: else -> skip
           fi;
           stopped = 1; printf("ACT stop\n") }
    :: break
    od
}

init {
    atomic { run Turn(1); run Turn(2); run Turn(3) }
}

#define ONCE(r)       (sett[r] <= 1 && booked[r] <= 1)
#define AT_MOST_ONCE  (ONCE(1) && ONCE(2) && ONCE(3) && ONCE(4) && ONCE(5) && ONCE(6))
#define REAL(r)       (booked[r] == 0 || byClient[r])
#define NO_PHANTOM    (REAL(1) && REAL(2) && REAL(3) && REAL(4) && REAL(5) && REAL(6))
#define DONE(r)       (!dispatched[r] || (sett[r] == 1 && booked[r] == 1))
#define EXACTLY_ONCE  (DONE(1) && DONE(2) && DONE(3) && DONE(4) && DONE(5) && DONE(6))
#define DRAINED       (!stopped || !slotHeld || !standing[slotReq])

active proctype monitor() {
end_monitor:
    do
    :: atomic { staleDecision -> assert(!AheadFresh) }
    :: atomic { holders > 1 -> assert(!AheadSingleOwner) }
    :: atomic { !(AT_MOST_ONCE) -> assert(!AheadAtMostOnce) }
    :: atomic { !(NO_PHANTOM) -> assert(!AheadNoPhantom) }
    :: atomic { timeout && turnsEnded == 3 && !(EXACTLY_ONCE) -> assert(!AheadExactlyOnce) }
    :: atomic { !(DRAINED) -> assert(!AheadDrained) }
    :: atomic { timeout && turnsEnded != 3 -> assert(!AheadStuck) }
    od
}
