#pragma once

#include "ProbeInputs.h"

#include <QStringList>

namespace probe {

// What the probe recomputed and every place the records disagree with it.
struct Verdict
{
    QStringList mismatches; // each "<request id or ->: <what>: expected ..., found ..."
    int rowsChecked = 0;
    int attemptsChecked = 0;
    int carriedChecked = 0;
    bool sequenceChecked = false; // round_robin walks compared in order (requests did not overlap)
};

// The probe's reason for a failed attempt's outcome (its own table, not Switchyard's).
QString reasonFor(const QString &outcome);

// Per request: recorded proxy == carrying proxy (fake proxies' records), carrying account (fake upstream),
// pool membership and fail-closed bindings, outcomes against proxy modes, round_robin / ordered walks,
// per-request egress budget and attempts, verdict and blocked_by. An egress run has one replica, so an attempt
// that ended owner_lost is a mismatch of its own.
void checkRequests(const Inputs &in, Verdict *v);
// The health command's output against the probe's own view: a non-empty criteria table covering the
// configuration, every pool, every account, the recent requests and the aggregates; each pool's health
// recomputed from the fake proxies; the exit code consistent with the criteria (3 for an invalid config).
void checkHealth(const Inputs &in, Verdict *v);

// True when at time `ms` some member of the pool is not down (the fake proxies' own modes).
bool poolHealthyAt(const Inputs &in, const PoolConf &pool, qint64 ms);
// The pool an account's attempts must use: binding by id, then alias, then the default pool; empty: direct.
QString poolOf(const Inputs &in, const QString &accountId);

} // namespace probe
