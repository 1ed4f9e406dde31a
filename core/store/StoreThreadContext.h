#pragma once

#include "store/Database.h"
#include "store/StoreWorker.h"
#include "store/WalCheckpointer.h"
#include "util/BusyPoll.h"

#include <QMutex>
#include <QObject>
#include <QPointer>
#include <atomic>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

class QTimer;

namespace sy {

// One job as submitted to StoreWorker.
struct StoreQueuedJob
{
    StoreWorker::Job job;
    bool write = true;
    // onDone's thread: the submitter's context (dropped once it is destroyed), or the store thread itself.
    QPointer<QObject> context;
    bool onStoreThread = true;
    StoreWorker::Done onDone;
    QString retainLabel; // non-empty: submitRetained() (kept through a store outage)
    bool urgent = false; // submitUrgent(): runs before the queued jobs that are not
    // StoreWorker::warmUp(): run only if no other unit started since it was queued (units before it).
    std::optional<quint64> warmUpAfter;
    // submitRetained() (a settled turn's row): its client's next turn, and that turn's claim, often follow at
    // once, so the store thread waits awake after the unit that ran it.
    bool followUpLikely = false;
};

// Internal to StoreWorker. Lives on the store thread and owns everything that must stay there: the
// connection, its timers and the job queue (filled from any thread, drained here in submission order).
class StoreThreadContext : public QObject
{
public:
    explicit StoreThreadContext(StoreWorker *owner) : m_owner(owner) {}

    // Store thread.
    bool open(const QString &path, QString *error);
    // Runs every queued job, then closes the database.
    void shutdown();
    void setReprobeInterval(int ms);
    void setPollInterval(int ms);

    // Any thread.
    void setGroupLimits(int maxJobs, int maxMs);
    void setJobSpinUs(int us) { m_jobSpinUs.store(qMax(0, us)); }
    // SWITCHYARD_STORE_SPIN_US, read once (default 1000 us; 0: the thread sleeps at once after a unit).
    static int defaultJobSpinUs();
    // SWITCHYARD_STORE_SPIN_AFTER, read once: "likely" (default; see awaitNextJob()) or "every" unit.
    static bool spinAfterEveryUnit();
    void push(StoreQueuedJob job);
    // Queues a warm-up read (StoreWorker::warmUp) if the thread is idle on SQLite; false when it was dropped.
    // Announces a claim either way.
    bool pushWarmUp(StoreWorker::Job job);
    // A claim will follow shortly (StoreWorker::announceClaim).
    void announceClaim();

private:
    struct JobResult
    {
        bool ok = false;
        QString error;
    };

    void postDrain();
    void drain();
    bool runNextUnit();
    // After a unit, with the lock held and nothing queued: waits without sleeping for the next job, up to
    // SWITCHYARD_STORE_WARM_SPIN_US (default 300 us) after a warm-up (for the claim it announced), up to
    // m_jobSpinUs after any other unit from which a job is likely to follow (nextJobLikely()). True when a job
    // arrived (the lock is held again either way).
    bool awaitNextJob(QMutexLocker<QMutex> &lock, bool afterWarmUp);
    // After a unit that was not a warm-up: whether a job is likely to arrive within m_jobSpinUs, that is, the unit
    // ran a settlement (StoreQueuedJob::followUpLikely), or a claim was announced (StoreWorker::warmUp, whether it
    // ran or not, or announceClaim) within the last m_jobSpinUs and no unit with a claim (an urgent job) has
    // begun since. Always true with SWITCHYARD_STORE_SPIN_AFTER=every.
    bool nextJobLikely(qint64 nowUs) const;
    bool runJob(const StoreQueuedJob &job, QString *error);
    void runAlone(const StoreQueuedJob &job);
    void runGroup(std::vector<StoreQueuedJob> &group);
    bool transactionStillOpen();
    void requeueFront(std::vector<StoreQueuedJob> &group, size_t from);
    void deliver(const StoreQueuedJob &job, const JobResult &result) const;
    // After deliver(): a retained job that failed while the store is down goes back to the worker to wait.
    void afterRetained(const StoreQueuedJob &job, const JobResult &result);
    void syncWritable();
    void pollChangeCounter();
    // SQLite: checkpoints move to a WalCheckpointer unless SWITCHYARD_WAL_CHECKPOINT=store.
    void startCheckpointer();
    void noteCommitted();
    // After a checkpoint pass copied the whole WAL: an idle store starts the WAL over now, so that the next
    // job's COMMIT does not wait for the new WAL header's sync (WalCheckpointer.h).
    void restartWalAhead();

    StoreWorker *m_owner;
    Database m_db;
    std::unique_ptr<WalCheckpointer> m_checkpointer;
    QTimer *m_reprobe = nullptr;
    QTimer *m_poll = nullptr;
    int m_reprobeMs = 1000;
    std::optional<qint64> m_lastCounter;
    std::atomic<int> m_maxGroupJobs{64};
    std::atomic<int> m_maxGroupMs{5};
    QMutex m_queueMutex;
    std::deque<StoreQueuedJob> m_queue;
    std::deque<StoreQueuedJob> m_urgent; // write jobs that go before m_queue (StoreWorker::submitUrgent)
    std::atomic<int> m_urgentWaiting{0}; // how many are in m_urgent (read without the mutex by runGroup)
    bool m_drainPosted = false;
    quint64 m_unitsStarted = 0;          // under m_queueMutex
    // The jobs the store thread has taken off its queues (or dropped, as an overtaken warm-up), whether a unit
    // runs (`working`: begun under m_queueMutex; ended before its callbacks) and the units begun and ended: a
    // thread that pushed a job and busy-polls for its answer stops polling while none of them moves
    // (BusyPollHold::noteHandOff()).
    const std::shared_ptr<BusyPollHelper> m_helper = std::make_shared<BusyPollHelper>();
    bool m_lastUnitWarmedUp = false;     // store thread: the unit runNextUnit() ran last was a warm-up
    bool m_lastUnitFollowUpLikely = false; // store thread: ... had a job with followUpLikely
    // SystemClock::monotonicUs of the latest announced claim (StoreWorker::warmUp, announceClaim; any thread),
    // and (store thread) when the latest unit with an urgent job (a claim) began: it used up the earlier ones.
    std::atomic<qint64> m_announcedUs{std::numeric_limits<qint64>::min() / 2};
    qint64 m_announcementsUsedUs = std::numeric_limits<qint64>::min() / 2;
    bool m_awaitingAfterUnit = false;    // under m_queueMutex: awaitNextJob() waits (warm-ups refused)
    std::atomic<int> m_jobSpinUs{defaultJobSpinUs()};
    std::atomic<bool> m_warmable{false}; // SQLite: StoreWorker::warmUp() has something to gain
};

} // namespace sy
