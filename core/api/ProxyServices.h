#pragma once

namespace sy {

class AccountPool;
class Clock;
class EgressSelector;
class StoreWorker;
class UpstreamClient;
struct Config;

// What every request handler on the proxy thread works with.
struct ProxyServices
{
    const Config *config = nullptr;
    const Clock *clock = nullptr;
    AccountPool *pool = nullptr;
    UpstreamClient *upstream = nullptr;
    StoreWorker *store = nullptr;
    EgressSelector *egress = nullptr; // null: every attempt direct
};

} // namespace sy
