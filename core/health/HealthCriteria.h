#pragma once

#include "accounts/AccountRecord.h"
#include "health/HealthReport.h"
#include "store/RequestLogRecord.h"
#include "store/UsageTotals.h"

#include <QHash>
#include <QList>
#include <QString>

namespace sy {

struct Config;

// A live handshake through one egress proxy to the upstream, made by the health check itself.
struct ProxyProbeResult
{
    bool reached = false;
    QString detail;
    qint64 elapsedMs = -1;
};

// Everything the criteria are computed from, gathered by HealthCheck (or a test). Each fact comes from a
// component other than the one whose record it checks: live probes vs. the configuration, the accounts
// table vs. the usage record, the request log's rows vs. the configuration and vs. the store's aggregates.
struct HealthInputs
{
    const Config *config = nullptr; // loaded and valid (an invalid one never gets here: exit 3)
    bool storeOk = false;
    QString storeProblem;
    // The running instance (if one answered) reports that its store takes no writes, and why: a "store"
    // criterion then fails with it. Empty: no instance answered, or its store is writable.
    QString liveStoreProblem;
    QList<AccountRecord> accounts;
    QHash<QString, UsageRecord> usage;      // by account id
    QList<RequestLogRecord> recentRows;     // the last N, newest first
    QList<RequestLogRecord> allRows;        // every row (the aggregates' own recomputation)
    QHash<QString, TokenTotals> aggregates; // the store's GROUP BY
    QString aggregatesError;
    qint64 configSinceMs = 0;                   // rows older than the configuration file are not judged by it
    QHash<QString, ProxyProbeResult> probes;    // by egress proxy name
    QHash<QString, QString> credentialProblems; // egress proxy name -> why its credentials are unavailable
    qint64 nowMs = 0;
};

// How many recent requests the "requests" criterion checks.
inline constexpr int kHealthRecentRows = 200;

// The criteria table: config, one per egress pool, accounts, one per account, requests, aggregates.
HealthReport evaluateHealth(const HealthInputs &in);

} // namespace sy
