#pragma once

#include <memory>

namespace sy {

class AccountPool;
class Clock;
class EgressSelector;
class StoreWorker;
class TurnStageStats;
class UpstreamClient;
struct Config;

// What every request handler on the proxy thread works with. `config` is the snapshot in force when the
// handler started: a configuration reloaded meanwhile applies to the next request, never to this one.
struct ProxyServices
{
    std::shared_ptr<const Config> config;
    const Clock *clock = nullptr;
    AccountPool *pool = nullptr;
    UpstreamClient *upstream = nullptr;
    StoreWorker *store = nullptr;
    EgressSelector *egress = nullptr; // null: every attempt direct
    TurnStageStats *stages = nullptr; // null: stage latencies not recorded
};

} // namespace sy
