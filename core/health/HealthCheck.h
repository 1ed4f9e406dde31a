#pragma once

#include "health/HealthReport.h"

namespace sy {

class Database;
class SecretStore;
struct Config;

// The `switchyard health` check, on a code path of its own (it never asks the gateway's selection): reads
// the store through its own connection (accounts, usage, recent request rows, every row and the store's
// aggregates), reads egress credentials from the secret store, probes every egress proxy with its own
// handshake, and evaluates the criteria. `db` null: the store could not be opened (`storeProblem` says why),
// and every criterion that needs it fails as unavailable. `secrets` may be null when no proxy needs
// credentials. `liveStoreProblem`: why the running instance's store takes no writes (HealthInputs). Blocks
// (local event loops) for at most about connect_s.
HealthReport runHealthCheck(const Config &config, Database *db, const QString &storeProblem, SecretStore *secrets,
                            const QString &liveStoreProblem = {});

} // namespace sy
