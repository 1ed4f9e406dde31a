#pragma once

#include <memory>

namespace sy {

class AccountPool;
class Clock;
class EgressSelector;
class RequestScanThread;
class StoreWorker;
class TurnStageStats;
class UpstreamClient;
struct Config;

// What every request handler on the proxy thread works with. `config` is the snapshot in force when the
// handler started: a configuration reloaded meanwhile applies to the next request, never to this one.
// A request body above this size takes long enough to arrive (about 0.4 ms per MiB over loopback, more from a
// real client) that its claim comes too late for the store thread to wait awake for it: its head is not
// announced to the store, and nor is its settlement taken as a sign that its client's next claim follows soon
// (Codex resends the whole conversation, so a large body is followed by a larger one).
constexpr long long kClaimSoonMaxBodyBytes = 1 << 20;

struct ProxyServices
{
    std::shared_ptr<const Config> config;
    const Clock *clock = nullptr;
    AccountPool *pool = nullptr;
    UpstreamClient *upstream = nullptr;
    StoreWorker *store = nullptr;
    EgressSelector *egress = nullptr; // null: every attempt direct
    TurnStageStats *stages = nullptr; // null: stage latencies not recorded
    RequestScanThread *scanner = nullptr; // null: large bodies are scanned on the proxy thread
};

} // namespace sy
