#pragma once

#include "lib/FakeUpstreamProcess.h"
#include "lib/ProxyProcess.h"
#include "lib/TestFiles.h" // readSqliteColumn, used with the scenario

#include <QString>
#include <functional>

namespace sy::test {

// Issue 10 point 5, shared by the store-outage tests (fault build, real filesystems, PostgreSQL).
struct StoreOutage
{
    // Make the store refuse writes, and accept them again (each may fail the test with QVERIFY).
    std::function<void()> takeAway;
    std::function<void()> giveBack;
    // The words the proxy must start its reason with ("disk full", "connection lost").
    QString cause;
    // Where the proxy's database is: a SQLite path (then PRAGMA integrity_check must say ok at the end) or a
    // PostgreSQL URL.
    QString database;
    // Complete turns streamed (and logged) before the outage, so the store holds rows when it goes away.
    int warmupTurns = 0;
};

// The proxy (configured, not started) gets two accounts on `fake`, starts, and has four long streams going
// when outage.takeAway() runs. Then: a new turn gets 503 store_unavailable; /api/status, `switchyard status`
// and `switchyard health` (exit 2) name the cause; the streams finish at their clients with their usage; their
// rows wait in memory, none lost. After outage.giveBack() the proxy notices by itself, writes the kept rows
// (with the clients' usage; the refused turns as rejected store_unavailable) and serves new turns; after
// stop() the durable state satisfies the ownership invariants. Check QTest::currentTestFailed() afterwards.
void runStoreOutageScenario(ProxyProcess &proxy, FakeUpstreamProcess &fake, const StoreOutage &outage);



} // namespace sy::test
