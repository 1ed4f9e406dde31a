/*
 * StreamIdleRegression.pml -- scripted regression for the stream_idle budget (issue 5, point 4).
 *
 * One fixed behaviour of turn 0 on replica 1 (turn 1 stays new): queue, route, acquire (no injected
 * anchor), connected, first event (client anchor), then four rounds of Tick + StreamProgress -- more
 * ticks than both request_total and stream_idle, so a stream with steady progress outlives both -- then
 * silence: three Ticks and the stream is killed under the stream_idle name, settled exactly once and its
 * slot released. It ends with a clean drain so the monitor's Deadlock check accepts the end state.
 *
 * Every step asserts its guard first: a step that cannot run fails the search with an assertion, and the
 * monitor of CoreOwnership.pml checks all invariants along the way. check.sh requires an exhaustive search
 * with errors: 0 and, with ./pan -a -N ScriptFinishes, that the script always reaches its end.
 */
#define SCENARIO_STREAM_IDLE
#include "CoreOwnership.pml"

bit scriptDone;

active proctype streamIdleScript() {
    byte round;

    d_step { assert(CAN_QUEUE(0)); QueueTurn(0) };
    d_step { assert(CAN_ROUTE(0, 1)); RouteFromSnapshot(0, 1) };
    d_step { assert(CAN_ACQUIRE(0, 1, INJ_NONE)); AcquireTurn(0, 1, INJ_NONE) };
    d_step { assert(CAN_CONNECT(0)); UpstreamConnected(0) };
    d_step { assert(CAN_START_STREAM(0)); StartStream(0, K_CLIENT) };
    assert(tstate[0] == S_STREAMING && elapsed[0] == 0 && EXPIRE_BOUND(0) == STREAM_IDLE);

    /* steady progress: one event per tick */
    round = 0;
    do
    :: round < 4 ->
        d_step { assert(TICK_ENABLED); Tick() };
        assert(tstate[0] == S_STREAMING && EXPIRE_BOUND(0) == STREAM_IDLE && elapsed[0] == 1 && !CAN_EXPIRE(0));
        d_step { assert(CAN_PROGRESS(0)); StreamProgress(0) };
        assert(tstate[0] == S_STREAMING && elapsed[0] == 0);
        round++
    :: else -> break
    od;
    /* four ticks of streaming: past request_total (3) and past stream_idle (3), still alive */
    assert(round > REQUEST_TOTAL && round > STREAM_IDLE && tstate[0] == S_STREAMING);

    /* silence */
    round = 0;
    do
    :: round < STREAM_IDLE ->
        assert(tstate[0] == S_STREAMING && !CAN_EXPIRE(0));
        d_step { assert(TICK_ENABLED); Tick() };
        round++;
        assert(elapsed[0] == round && EXPIRE_BOUND(0) == STREAM_IDLE)
    :: else -> break
    od;
    assert(tstate[0] == S_STREAMING && elapsed[0] == STREAM_IDLE && !TICK_ENABLED && CAN_EXPIRE(0));
    assert(KILL_LABEL(0) == L_STREAM_IDLE);
    d_step { ExpireDeadline(0) };
    assert(tstate[0] == S_FAILED && reason[0] == RS_TIMEOUT && lastKillLabel == L_STREAM_IDLE && !mislabeledKill);
    assert(settlements[0] == 1 && reservation[0] == R_RELEASED && owner == NO_REPLICA && ownerReleased[0]);
    assert(clientRetry == CR_ATTACHED);      /* a committed stream is not a pre-commit tear */

    d_step { assert(CAN_START_DRAIN); StartDrain() };
    d_step { assert(CAN_DELIVER_SELF(0)); DeliverProducer(0) };
    d_step { assert(CAN_COMPLETE_SHUTDOWN); CompleteShutdown() };
    assert(QUIESCED);
    scriptDone = 1
}

ltl ScriptFinishes { <> scriptDone }
