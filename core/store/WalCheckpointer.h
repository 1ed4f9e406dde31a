#pragma once

#include <QString>
#include <atomic>
#include <functional>
#include <memory>

class QThread;

namespace sy {

class WalCheckpointAgent;

// Counters of one WalCheckpointer, readable from any thread.
struct WalCheckpointStats
{
    std::atomic<qint64> passes{0};   // checkpoint passes that ran (copying frames or not)
    std::atomic<qint64> failures{0}; // passes that failed (the error is logged once per distinct text)
    // After the last pass: frames in the WAL, and how many of them were still not copied into the database
    // (a reader may still need them, or they were committed during the pass).
    std::atomic<qint64> walFrames{0};
    std::atomic<qint64> backlogFrames{0};
    // Times the store thread, idle after a pass had copied the whole WAL, started the WAL over with a write of
    // its own (StoreThreadContext::restartWalAhead).
    std::atomic<qint64> restartsAhead{0};
};

// Takes SQLite's WAL checkpoints off the store thread.
//
// Left to itself, SQLite checkpoints inside the COMMIT that takes the WAL past 1000 pages. That COMMIT copies
// the pages back into the database file and waits for two fdatasync() calls: 3-5 ms on the benchmark machine,
// once a second under load. Every store job queued behind it waits too, and the first is usually a slot claim
// that a client is waiting on before its first byte (bench/HISTORY.md).
//
// The store connection therefore raises its own threshold to kStoreFallbackPages, a safety net for when this
// object falls behind. The checkpoints are done here instead, on a thread and connection of their own: a
// PASSIVE checkpoint a short while after writes were committed. A PASSIVE checkpoint never waits for the writer
// or the readers; it copies what no reader still needs. Once everything is copied, the next write starts the
// WAL from its beginning again, so the file stays about as small as before.
//
// A WAL that a pass copied entirely is started over by the next write, and with synchronous=NORMAL SQLite syncs
// the new WAL header to disk inside that write's COMMIT (0.5-1 ms on the benchmark machine, on the store
// thread). At a steady low load that next write is the one a client waits for: the settlement before a
// stream's last event, or a slot claim. So when a pass leaves nothing to copy it tells the store (the
// fully-copied handler), which starts the WAL over while it is idle (StoreThreadContext::restartWalAhead).
//
// SQLite only; nothing here touches a PostgreSQL store.
class WalCheckpointer
{
public:
    // Store-connection threshold while a checkpointer runs: 10x SQLite's default.
    static constexpr int kStoreFallbackPages = 10000;
    static constexpr int kDefaultDelayMs = 200;

    explicit WalCheckpointer(WalCheckpointStats *stats);
    ~WalCheckpointer();
    WalCheckpointer(const WalCheckpointer &) = delete;
    WalCheckpointer &operator=(const WalCheckpointer &) = delete;

    // Opens a connection to the SQLite file `path` on the checkpointer's own thread. Returns false, with
    // *error set, when the file cannot be opened or is not in WAL mode; the store then keeps SQLite's own
    // checkpoints.
    bool start(const QString &path, QString *error);
    // Called on the checkpointer's thread after a pass that copied every frame of a non-empty WAL. Set it
    // before start().
    void setFullyCopiedHandler(std::function<void()> handler) { m_fullyCopied = std::move(handler); }
    // Ends the thread and closes its connection. A pass that is running finishes first.
    void stop();

    // Writes were committed (called on the thread that calls stop(): the store thread). Schedules a pass
    // kDefaultDelayMs from now unless one is already scheduled: a burst of commits costs one pass, and an
    // idle store costs no wake-ups.
    void noteCommit();

private:
    WalCheckpointStats *m_stats;
    QThread *m_thread = nullptr;
    WalCheckpointAgent *m_agent = nullptr;
    std::atomic<bool> m_scheduled{false};
    std::function<void()> m_fullyCopied;
};

} // namespace sy
