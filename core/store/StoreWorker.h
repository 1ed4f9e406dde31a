#pragma once

#include "store/WalCheckpointer.h"
#include "util/GuardedContexts.h"

#include <QMutex>
#include <QObject>
#include <QReadWriteLock>
#include <QString>
#include <atomic>
#include <functional>
#include <vector>

class QThread;

namespace sy {

class Database;
class StoreThreadContext;
struct StoreQueuedJob;

// The store thread: every database write of the running proxy happens here, on one connection, in
// submission order (submitUrgent() jobs go first). The proxy thread never blocks on disk: it submits a job and gets a callback on its own
// thread after the job's transaction committed. That is how "the request-log row is committed before the
// terminal event is flushed to the client" is built: flush the terminal event from onDone. With ok false
// the row is not durable; writable() then tells whether the database itself stopped taking writes (new
// turns are refused, in-flight ones still finish: DESIGN.md "Durability").
//
// A StoreWorker object belongs to the thread that created it (start/stop there); submit(), runBlocking(),
// writable() and unwritableReason() may be called from any thread. The Database lives on the store thread.
class StoreWorker : public QObject
{
    Q_OBJECT
public:
    // Runs on the store thread inside a transaction; returns false (setting *error) to roll it back.
    using Job = std::function<bool(Database &db, QString *error)>;
    // ok: the job succeeded and its transaction committed. error: why not (for people and logs).
    using Done = std::function<void(bool ok, const QString &error)>;

    explicit StoreWorker(QObject *parent = nullptr);
    ~StoreWorker() override;

    // Starts the thread and opens (creating and migrating) the database on it; blocks until that is done.
    // `databaseLocation` is what Database::open() takes (a SQLite path or a postgresql:// URL). Fails when the
    // database cannot be opened or upgraded. A database that opens but cannot take writes starts fine with
    // writable() == false.
    bool start(const QString &databaseLocation, QString *error);
    // Runs every job submitted so far, closes the database and ends the thread. Later jobs fail at once.
    void stop();
    bool isRunning() const;

    // Queues a job in a write transaction (BEGIN IMMEDIATE on SQLite, BEGIN on PostgreSQL). onDone runs on `context`'s thread (which needs
    // an event loop) after the commit or the failure; it is dropped if context is destroyed first. With a
    // null context onDone runs on the store thread.
    //
    // Group commit: write jobs found queued back to back share one transaction (see setWriteGroupLimits()),
    // each inside its own SAVEPOINT. A job that fails rolls back only its savepoint and gets ok == false; the
    // others commit. A storage failure (disk full, I/O error, read-only file) or a failed COMMIT fails every
    // job of the group that had run. Either way onDone runs only after the shared COMMIT (or the rollback).
    void submit(Job job, QObject *context, Done onDone);
    // submit() ahead of the jobs already queued (never of the unit running now); urgent jobs keep their order
    // among themselves and group-commit together. For slot claims, whose wait a client sees as time to first
    // byte: behind a burst of settlements it was milliseconds (bench/HISTORY.md). Only for a job that gives the
    // same result before or after what it overtakes: a claim compare-and-sets a slot that no queued job is
    // about to release (SlotLedger frees a slot in memory only once its release committed).
    void submitUrgent(Job job, QObject *context, Done onDone);
    // The same in a read transaction (one consistent snapshot; works on a read-only database).
    void submitRead(Job job, QObject *context, Done onDone);
    // A hint that a job a client waits for (a slot claim) follows shortly. On this machine class a thread that
    // slept for a while needs 60-100 us to wake and runs the claim's statements 3-4x slower with cold caches
    // (bench/HISTORY.md). So when the store thread is idle, `job` (reads of what that job will read) runs at
    // once in a read transaction, and the claim finds the thread awake and warm. Dropped when the thread has
    // work queued or running, when an urgent job (or any other unit) starts before it, on PostgreSQL (whose
    // claims wait on the network instead) and when the store is stopped. A job that arrives while it runs
    // waits for the rest of it. No callback; may be called from any thread.
    void warmUp(Job job);
    // Only the announcement of warmUp(): a claim follows shortly, so the unit running now (an API key's check)
    // should be followed by a wait awake (jobSpins()), not by sleep. Any thread.
    void announceClaim();
    // Warm-up jobs that ran (tests).
    quint64 warmUps() const { return m_warmUps.load(); }
    // Claims announced while the store ran (warmUp() and announceClaim() calls alike).
    quint64 claimsAnnounced() const { return m_claimsAnnounced.load(); }
    // Warm-ups after which the store thread waited awake for the next job (SWITCHYARD_STORE_WARM_SPIN_US), and
    // of those the waits that the job ended before the limit (the claim found the thread awake).
    quint64 warmSpins() const { return m_warmSpins.load(); }
    quint64 warmSpinHits() const { return m_warmSpinHits.load(); }
    // After a unit of work from which another job is likely to follow (one with a submitRetained() job, whose
    // client's next claim often comes at once, or any unit while a warmUp() of the last SWITCHYARD_STORE_SPIN_US
    // may still bring its claim) the store thread likewise waits awake for the next job, up to
    // SWITCHYARD_STORE_SPIN_US (default 1000 us; 0: it sleeps at once), so that the next claim does not wait for
    // the thread to be woken and scheduled. These waits, and of those the ones a job ended; the units after
    // which it slept at once because no job was likely; the time spent waiting awake after units (all kinds,
    // warm-ups too), in us. SWITCHYARD_STORE_SPIN_AFTER=every waits after every unit (A/B runs).
    // setJobSpinUs() overrides the environment (tests; before or after start()).
    quint64 jobSpins() const { return m_jobSpins.load(); }
    quint64 jobSpinHits() const { return m_jobSpinHits.load(); }
    quint64 jobSpinsSkipped() const { return m_jobSpinsSkipped.load(); }
    quint64 awakeWaitUs() const { return m_awakeWaitUs.load(); }
    void setJobSpinUs(int us);
    // submit() for a write that must outlive a store outage (a settled turn's request-log row and settlement).
    // When its transaction fails because the store stopped taking writes, onDone still runs at once (ok
    // false: the turn ends for its client), and the job itself is kept in memory and submitted again, in
    // order, as soon as the store is writable; so it must be idempotent. A retried job that fails again
    // while the store is down waits again; one that fails with the store writable, one beyond
    // kMaxRetainedWrites waiting, and those still waiting at stop() are dropped, each with a warning naming
    // `label`, and counted in lostWrites(). Waiting jobs die with the process (kill -9, power loss).
    // followUpLikely: the store thread waits awake after it for the next job (above); false for a settlement whose
    // client's next turn is not expected at once.
    void submitRetained(Job job, const QString &label, QObject *context, Done onDone, bool followUpLikely = true);
    // A write given up outside the retained queue (api/TurnLog's late models): logged and counted in lostWrites()
    // as one of its own.
    void reportLostWrite(const QString &label, const QString &why) { dropRetained(label, why); }
    static constexpr int kMaxRetainedWrites = 20000; // about 1 KiB each
    // Retained writes waiting for the store, and writes lost so far (both for /api/status).
    int pendingWrites() const;
    qint64 lostWrites() const { return m_lostWrites.load(); }
    // SQLite: what the WAL checkpointer (WalCheckpointer.h) has done; all zero when the store connection
    // checkpoints itself (PostgreSQL, SWITCHYARD_WAL_CHECKPOINT=store, or a checkpointer that did not start).
    const WalCheckpointStats &walCheckpointStats() const { return m_walStats; }
    // Runs a job on the store thread, after every job submitted before it, and waits for it. Never call it
    // from the store thread.
    bool runBlocking(Job job, QString *error, bool write = true);

    // False once a write failed because the database became read-only, full or unreadable, or (PostgreSQL) its
    // connection was lost (or it was so at start). Only a successful probe write (retried every reprobe interval) makes it true again.
    bool writable() const { return m_writable.load(); }
    QString unwritableReason() const;

    // While unwritable, how often to retry a small write (default 1000 ms).
    void setReprobeIntervalMs(int ms);
    // How often to read meta.change_counter to notice other processes' account and settings changes
    // (default 1000 ms; 0 turns polling off).
    void setChangePollIntervalMs(int ms);

    // At most maxJobs write jobs (default 64) share one transaction, and no further job joins a group once it
    // has run for maxMs (default 5 ms), so that a group's onDone callbacks wait a bounded time.
    void setWriteGroupLimits(int maxJobs, int maxMs);

    QThread *storeThread() const { return m_thread; }

signals:
    void writableChanged(bool writable, const QString &reason);
    // meta.change_counter moved (a change by this or another process); reload accounts and settings.
    void changeCounterChanged(qint64 counter);

private:
    friend class StoreThreadContext;
    void enqueue(Job job, bool write, QObject *context, Done onDone, const QString &retainLabel = {},
                 bool urgent = false, bool followUpLikely = true);
    void setWritableState(bool writable, const QString &reason);
    // Store thread: keeps a retained job that failed while the store is down (or resubmits it when it is up).
    void retain(StoreQueuedJob job);
    void dropRetained(const QString &label, const QString &why);

    QThread *m_thread = nullptr;
    StoreThreadContext *m_context = nullptr;
    // Read-locked while posting to the store thread, write-locked by stop(): a job is either posted before
    // the shutdown or refused, and the context is never deleted under a poster.
    mutable QReadWriteLock m_lifecycle;
    bool m_running = false;
    mutable QMutex m_reasonMutex;
    QString m_reason;
    std::atomic<bool> m_writable{false};
    mutable QMutex m_retainedMutex;
    std::vector<StoreQueuedJob> m_retained;
    std::atomic<qint64> m_lostWrites{0};
    std::atomic<quint64> m_warmUps{0};
    std::atomic<quint64> m_claimsAnnounced{0};
    std::atomic<quint64> m_warmSpins{0};
    std::atomic<quint64> m_warmSpinHits{0};
    std::atomic<quint64> m_jobSpins{0};
    std::atomic<quint64> m_jobSpinHits{0};
    std::atomic<quint64> m_jobSpinsSkipped{0};
    std::atomic<quint64> m_awakeWaitUs{0};
    WalCheckpointStats m_walStats;
    // Where onDone callbacks go: to their context's thread unless it is destroyed (also during a shutdown).
    GuardedContexts m_contexts;
    int m_reprobeIntervalMs = 1000;
    int m_changePollIntervalMs = 1000;
    int m_groupMaxJobs = 64;
    int m_groupMaxMs = 5;
    int m_jobSpinUs = -1; // setJobSpinUs(); -1: SWITCHYARD_STORE_SPIN_US
};

} // namespace sy
