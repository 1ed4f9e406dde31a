#pragma once

// Test-only fault switches. Each one disables exactly one production guard of the ownership protocol, so a
// test can show that the durable-state checker (tests/stress) notices when that guard is missing. They exist
// only in binaries compiled with SWITCHYARD_FAULT_INJECTION (the `switchyard-faults` test build); in every
// shipped build SY_FAULT(name) is the constant false and the guarded code is the only code.
//
// Names (SWITCHYARD_FAULTS=name[,name...] in the environment of a fault build):
//   non-atomic-claim       the slot claim writes without comparing the owner epoch and owner (Inv5)
//   stale-route-acquire    the claim skips the durable account re-check (Inv4)
//   cross-account-anchor   a continuation is not held to its anchor's account (Inv10)
//   ignore-owner-epoch     a turn whose lease was lost keeps running and retries without re-checking (Inv1)
//   double-settle          the settlement does not check that the request is still unsettled (Inv3)
//   leak-owner-on-terminal the settlement does not release the owner slot (Inv9)
//   lost-waiter            a gate waiter that ends early stays on the gate's books (Inv7)
//   shutdown-admit         turns are admitted while draining (Inv8)
//   conflated-timers       a pre_response kill is labelled stream_idle (Inv11)
//   single-shared-timeout  one timer (request_total) bounds every stage (Inv2)
//   misroute-producer      an upstream connection is reused before its response was read to the end (Inv6)
//   crash-after-failover-release  not a missing guard but a test condition: the process exits (code 86)
//                          when a failover's release committed while the request holds no next claim yet
//                          (the crash the model leaves out; OwnerSlotRepository::settleAbandonedFailovers)
//
// The egress pool and health check (issue 7; docs/EGRESS.md), each caught by tests/probe or `health`:
//   egress-record-wrong-proxy     an attempt is carried by one proxy of the pool and recorded as another
//   egress-shared-budget          one egress budget (time and attempts) per pool for every request
//   egress-first-reason-only      blocked_by keeps only the first reason a request met
//   egress-health-from-candidates a pool counts as healthy when it has members (gateway and `health`)
//   health-empty-criteria         `health` evaluates no criterion and calls that healthy
//   health-exit-zero              `health` exits 0 whatever its criteria say
//   egress-config-defaults        a broken egress section of the config file silently means "direct"
//
// The store (issue 10; docs/DURABILITY.md):
//   store-full             not a missing guard but a test condition: while the file named by
//                          SWITCHYARD_FAULT_STORE_FULL_FLAG exists, every INSERT/UPDATE/DELETE fails like a full
//                          disk (SQLITE_FULL / SQLSTATE 53100), so the store's outage handling can be tested
//
// The benchmark (issue 8; bench/README.md):
//   claim-in-memory        not a test of a guard but a counterfactual: a slot claim is answered from memory
//                          without the store (no row, no lease), to measure what the durable claim costs a
//                          client (bench/run.sh with BENCH_SY_BIN=switchyard-faults)
//   claim-ahead-cost       with claim-in-memory: the proxy thread also pays what a take of a claim made ahead
//                          would (docs/CLAIM-AHEAD.md): the account's row read on a connection of its own and a
//                          write() to a journal file beside the database (DB.takes)
//   claim-ahead-store-cost with claim-in-memory: the store thread still makes the durable claim (not urgent, its
//                          answer only keeps the ledger's books) and the settlement releases it as today: an
//                          upper bound on the store thread's share of the writes of claims made ahead (not their
//                          release when untaken; docs/CLAIM-AHEAD.md)
//   scan-hold              a test condition: while the file named by SWITCHYARD_FAULT_SCAN_HOLD_FLAG exists (a
//                          minute at most), a large body's scan on the scan thread (RequestScanThread) does not
//                          report back, so that its claim is surely answered first and a test can act before
//                          its dispatch (tests/integration)

#ifdef SWITCHYARD_FAULT_INJECTION
namespace sy {
bool faultActive(const char *name);
}
#define SY_FAULT(name) (::sy::faultActive(name))
#else
#define SY_FAULT(name) false
#endif
