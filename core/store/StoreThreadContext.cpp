#include "store/StoreThreadContext.h"

#include "util/BusyPoll.h"
#include "util/Clock.h"

#include <QLoggingCategory>
#include <QMutexLocker>
#include <QThread>
#include <QTimer>

Q_DECLARE_LOGGING_CATEGORY(lcStore)

namespace sy {

bool StoreThreadContext::open(const QString &path, QString *error)
{
    if (!m_db.open(path, error))
        return false;
    // Every job of a group commit runs in a savepoint, whose journal SQLite spills to a temporary file past 64 KiB:
    // under load that was a file created, written, truncated and unlinked in /var/tmp several times a second. In
    // memory it is a copy of the pages a job changes, freed by the end of the transaction at the latest. Only this
    // connection: its statements build no large temporary table or index, and the dashboard's may. Not fatal:
    // without it the journal goes to files, as it did before.
    QString why;
    if (m_db.dialect() == SqlDialect::Sqlite && !m_db.exec(QStringLiteral("PRAGMA temp_store = MEMORY"), &why))
        qCWarning(lcStore).noquote() << "savepoint journals stay in temporary files:" << why;
    m_reprobe = new QTimer(this);
    QObject::connect(m_reprobe, &QTimer::timeout, this, [this] {
        m_db.probeWrite(SystemClock::instance().nowMs(), nullptr);
        syncWritable();
    });
    m_poll = new QTimer(this);
    QObject::connect(m_poll, &QTimer::timeout, this, [this] { pollChangeCounter(); });
    m_lastCounter = m_db.changeCounter();
    syncWritable();
    startCheckpointer();
    m_warmable.store(m_db.dialect() == SqlDialect::Sqlite);
    return true;
}

void StoreThreadContext::startCheckpointer()
{
    if (m_db.dialect() != SqlDialect::Sqlite ||
        qEnvironmentVariable("SWITCHYARD_WAL_CHECKPOINT") == QLatin1String("store"))
        return;
    auto checkpointer = std::make_unique<WalCheckpointer>(&m_owner->m_walStats);
    // SWITCHYARD_WAL_RESTART=write leaves the WAL's restart to the next write, as before (A/B runs in bench/).
    if (qEnvironmentVariable("SWITCHYARD_WAL_RESTART") != QLatin1String("write")) {
        checkpointer->setFullyCopiedHandler([this] {
            QMetaObject::invokeMethod(
                this, [this] { restartWalAhead(); }, Qt::QueuedConnection);
        });
    }
    QString why;
    if (!checkpointer->start(m_db.location(), &why) ||
        !m_db.setWalAutoCheckpoint(WalCheckpointer::kStoreFallbackPages, &why)) {
        qCInfo(lcStore).noquote() << "WAL checkpoints stay in the store's commits:" << why;
        return;
    }
    m_checkpointer = std::move(checkpointer);
}

void StoreThreadContext::noteCommitted()
{
    if (m_checkpointer)
        m_checkpointer->noteCommit();
}

void StoreThreadContext::restartWalAhead()
{
    if (!m_checkpointer || !m_db.writable())
        return;
    {
        QMutexLocker lock(&m_queueMutex);
        // A job on its way writes soon and starts the WAL over itself: going first would only delay it.
        if (!m_queue.empty() || !m_urgent.empty())
            return;
        ++m_unitsStarted; // a warm-up queued after this finds the thread awake anyway
        m_helper->beginUnit();
    }
    // The smallest write there is (one row of meta): the WAL starts over inside it, header sync included.
    // Nothing is scheduled for the checkpointer: its frame waits for the pass after the next real write, so
    // an idle store does not wake up again.
    QString error;
    bool ok = false;
    {
        // In a scope, the probe's statement is compiled once per connection, not on every restart (which
        // callgrind counted as 5 % of the store thread's instructions at c=1).
        Database::StatementScope statements(m_db);
        Transaction tx(m_db, Transaction::Kind::Write);
        ok = tx.begin(&error) && m_db.probeWrite(SystemClock::instance().nowMs(), &error) && tx.commit(&error);
    }
    m_helper->endUnit();
    if (ok)
        m_owner->m_walStats.restartsAhead.fetch_add(1);
    else
        qCDebug(lcStore).noquote() << "WAL restart ahead of the next write failed:" << error;
    syncWritable();
}

void StoreThreadContext::shutdown()
{
    while (runNextUnit()) {
    }
    // Before the store connection closes, which (as the last one) checkpoints everything itself.
    m_checkpointer.reset();
    delete m_reprobe;
    delete m_poll;
    m_reprobe = m_poll = nullptr;
    m_db.close();
}

void StoreThreadContext::setReprobeInterval(int ms)
{
    m_reprobeMs = ms;
    if (m_reprobe && m_reprobe->isActive())
        m_reprobe->start(m_reprobeMs);
}

void StoreThreadContext::setPollInterval(int ms)
{
    if (!m_poll)
        return;
    if (ms > 0)
        m_poll->start(ms);
    else
        m_poll->stop();
}

void StoreThreadContext::setGroupLimits(int maxJobs, int maxMs)
{
    m_maxGroupJobs.store(qMax(1, maxJobs));
    m_maxGroupMs.store(qMax(0, maxMs));
}

void StoreThreadContext::push(StoreQueuedJob job)
{
    QMutexLocker lock(&m_queueMutex);
    BusyPollHold::noteHandOff(m_helper); // under the mutex: no take can fall between this and the job's queueing
    if (job.urgent)
        ++m_urgentWaiting;
    (job.urgent ? m_urgent : m_queue).push_back(std::move(job));
    if (m_drainPosted)
        return;
    m_drainPosted = true;
    lock.unlock();
    postDrain();
}

void StoreThreadContext::announceClaim()
{
    m_announcedUs.store(SystemClock::instance().monotonicUs());
    m_owner->m_claimsAnnounced.fetch_add(1);
}

bool StoreThreadContext::pushWarmUp(StoreWorker::Job job)
{
    announceClaim(); // a claim follows, warm-up or not
    if (!m_warmable.load())
        return false;
    QMutexLocker lock(&m_queueMutex);
    // Work queued or running: the thread is awake and warm already. A unit that has ended but whose thread
    // has not yet gone back to sleep (it posted its callbacks, which may have taken its CPU) counts as idle:
    // if the claim is submitted before that thread runs again, the claim goes first and the warm-up is dropped.
    // Waiting awake after a unit counts as warm too: a warm-up would only make the next claim wait behind it.
    if (!m_queue.empty() || !m_urgent.empty() || m_helper->working.load() || m_awaitingAfterUnit)
        return false;
    BusyPollHold::noteHandOff(m_helper); // the claim's thread may poll from now on
    StoreQueuedJob queued{std::move(job), false, nullptr, true, {}};
    queued.warmUpAfter = m_unitsStarted;
    m_queue.push_back(std::move(queued));
    if (m_drainPosted)
        return true; // the drain that is still running sees it
    m_drainPosted = true;
    lock.unlock();
    postDrain();
    return true;
}

void StoreThreadContext::postDrain()
{
    QMetaObject::invokeMethod(this, [this] { drain(); }, Qt::QueuedConnection);
}

// One unit per event, and the one after it when the thread waited awake for it (at most two units per event;
// a job found by the wait after the second goes through a posted drain): timers and the change poll still get
// their turn under a steady load.
void StoreThreadContext::drain()
{
    bool ran = runNextUnit();
    QMutexLocker lock(&m_queueMutex);
    // A job found while waiting awake (the claim the wait was for) runs at once: going back to the event loop
    // first would cost a post to this thread, a poll and a read on the way of that claim (bench/HISTORY.md).
    for (int units = 1; m_queue.empty() && m_urgent.empty(); ++units) {
        if (!(ran && awaitNextJob(lock, m_lastUnitWarmedUp))) {
            m_drainPosted = false;
            return;
        }
        if (units == 2)
            break; // found after the second unit: a posted drain runs it
        lock.unlock();
        ran = runNextUnit();
        lock.relock();
    }
    lock.unlock();
    postDrain();
}

namespace {

int warmSpinUs()
{
    static const int us = busyWaitUsFromEnvironment("SWITCHYARD_STORE_WARM_SPIN_US", 300);
    return us;
}

} // namespace

int StoreThreadContext::defaultJobSpinUs()
{
    static const int us = busyWaitUsFromEnvironment("SWITCHYARD_STORE_SPIN_US", 1000);
    return us;
}

bool StoreThreadContext::spinAfterEveryUnit()
{
    static const bool every = qEnvironmentVariable("SWITCHYARD_STORE_SPIN_AFTER") == QLatin1String("every");
    return every;
}

bool StoreThreadContext::nextJobLikely(qint64 nowUs) const
{
    const qint64 announced = m_announcedUs.load();
    return spinAfterEveryUnit() || m_lastUnitFollowUpLikely ||
           (announced > m_announcementsUsedUs && nowUs - announced < m_jobSpinUs.load());
}

// A thread that went back to sleep would need waking for the next job: 60-100 us on an idle machine of this
// class, 200-400 us when its two vCPUs are busy (bench/HISTORY.md, "busy polling", "the store thread stays
// awake"). So after a unit it waits awake, yielding its CPU to anything else that wants it, for the next one:
// after a warm-up for the claim it announced (submitted 50-100 us after the turn's head); after a settlement
// for the claim of its client's next turn; after any other unit only while a claim announced lately may still
// come. A wait that ends empty costs its whole length in CPU time: after every unit, as in session 25, that was
// 10-20 % more CPU per request (bench/HISTORY.md). m_drainPosted stays set meanwhile, so push() posts no drain
// event: the job is found here.
bool StoreThreadContext::awaitNextJob(QMutexLocker<QMutex> &lock, bool afterWarmUp)
{
    const int spinUs = afterWarmUp ? warmSpinUs() : m_jobSpinUs.load();
    if (spinUs <= 0)
        return false;
    const qint64 startUs = SystemClock::instance().monotonicUs();
    if (!afterWarmUp && !nextJobLikely(startUs)) {
        m_owner->m_jobSpinsSkipped.fetch_add(1);
        return false;
    }
    const qint64 untilUs = startUs + spinUs;
    (afterWarmUp ? m_owner->m_warmSpins : m_owner->m_jobSpins).fetch_add(1);
    m_awaitingAfterUnit = true;
    for (;;) {
        lock.unlock();
        QThread::yieldCurrentThread();
        lock.relock();
        const qint64 nowUs = SystemClock::instance().monotonicUs();
        const bool found = !m_queue.empty() || !m_urgent.empty();
        if (found || nowUs >= untilUs) {
            if (found)
                (afterWarmUp ? m_owner->m_warmSpinHits : m_owner->m_jobSpinHits).fetch_add(1);
            m_owner->m_awakeWaitUs.fetch_add(quint64(nowUs - startUs));
            m_awaitingAfterUnit = false;
            return found;
        }
    }
}

// A read alone, or the write jobs queued back to back (up to the group limit) in one transaction.
bool StoreThreadContext::runNextUnit()
{
    std::vector<StoreQueuedJob> unit;
    {
        QMutexLocker lock(&m_queueMutex);
        // Urgent jobs (all writes) first, grouped among themselves; then the queue in submission order.
        std::deque<StoreQueuedJob> &queue = m_urgent.empty() ? m_queue : m_urgent;
        if (queue.empty())
            return false;
        m_helper->jobsTaken.fetch_add(1, std::memory_order_relaxed);
        m_lastUnitWarmedUp = false;
        m_lastUnitFollowUpLikely = false;
        if (queue.front().warmUpAfter && *queue.front().warmUpAfter != m_unitsStarted) {
            queue.pop_front(); // a warm-up that another unit overtook has nothing left to warm
            return true;
        }
        m_lastUnitWarmedUp = queue.front().warmUpAfter.has_value();
        ++m_unitsStarted;
        m_helper->beginUnit();
        const bool write = queue.front().write;
        const size_t limit = write ? size_t(m_maxGroupJobs.load()) : 1;
        while (!queue.empty() && queue.front().write == write && unit.size() < limit) {
            if (queue.front().urgent) {
                --m_urgentWaiting;
                // The claim that earlier announcements promised is here (or another one: either way the
                // thread has no reason left to wait for them).
                m_announcementsUsedUs = SystemClock::instance().monotonicUs();
            }
            m_lastUnitFollowUpLikely = m_lastUnitFollowUpLikely || queue.front().followUpLikely;
            unit.push_back(std::move(queue.front()));
            queue.pop_front();
        }
    }
    if (unit.size() == 1) {
        runAlone(unit.front()); // a warm-up is a read, so always alone
        if (unit.front().warmUpAfter)
            m_owner->m_warmUps.fetch_add(1);
    } else
        runGroup(unit);
    return true;
}

bool StoreThreadContext::runJob(const StoreQueuedJob &job, QString *error)
{
    // The job's own scope: the next job of a group reuses the same statements.
    Database::StatementScope statements(m_db);
    return job.job(m_db, error);
}

void StoreThreadContext::runAlone(const StoreQueuedJob &job)
{
    JobResult result;
    {
        // Statements are compiled once per connection; each job's are reset before the COMMIT (Database.h).
        Database::StatementScope statements(m_db);
        Transaction tx(m_db, job.write ? Transaction::Kind::Write : Transaction::Kind::Read);
        // A job returning false leaves tx uncommitted; its destructor rolls back.
        result.ok = tx.begin(&result.error) && runJob(job, &result.error) && tx.commit(&result.error);
    }
    if (!result.ok && result.error.isEmpty())
        result.error = QStringLiteral("store job failed");
    if (result.ok && job.write)
        noteCommitted();
    syncWritable();
    m_helper->endUnit();
    deliver(job, result);
    afterRetained(job, result);
}

// Group commit: one BEGIN IMMEDIATE ... COMMIT for many jobs, each inside its own savepoint so that a
// job's failure undoes only that job. Every onDone waits for the shared COMMIT.
void StoreThreadContext::runGroup(std::vector<StoreQueuedJob> &group)
{
    const qint64 startedMs = SystemClock::instance().monotonicMs();
    const int maxMs = m_maxGroupMs.load();
    std::vector<JobResult> results(group.size());
    size_t ran = 0;
    Database::StatementScope statements(m_db);
    Transaction tx(m_db, Transaction::Kind::Write);
    QString groupError;
    if (!tx.begin(&groupError)) {
        ran = group.size();
        for (JobResult &r : results)
            r = {false, groupError};
    } else {
        bool broken = false;
        for (size_t i = 0; i < group.size(); ++i) {
            // Bounded work per transaction keeps the latency of every onDone in the group bounded; an urgent
            // job (a claim a client waits for) that arrived meanwhile ends the group here too.
            if (i > 0 && (SystemClock::instance().monotonicMs() - startedMs >= maxMs ||
                          (!group[i].urgent && m_urgentWaiting.load() > 0)))
                break;
            JobResult &r = results[i];
            {
                // The savepoint's own statements get a scope per job too: in the group's scope, SAVEPOINT and
                // RELEASE would stay in use after the first job, and every later job would compile them afresh.
                Database::StatementScope savepointStatements(m_db);
                Transaction savepoint(m_db);
                r.ok = savepoint.begin(&r.error) && runJob(group[i], &r.error) && savepoint.commit(&r.error);
            }
            ran = i + 1;
            if (r.ok)
                continue;
            if (r.error.isEmpty())
                r.error = QStringLiteral("store job failed");
            // A storage failure ends the group: SQLite may have rolled the whole transaction back already.
            if (!m_db.writable() || !transactionStillOpen()) {
                broken = true;
                groupError = r.error;
                break;
            }
        }
        if (broken)
            tx.rollback();
        else if (!tx.commit(&groupError))
            broken = true;
        else
            noteCommitted();
        if (broken) {
            for (size_t i = 0; i < ran; ++i) {
                if (results[i].ok)
                    results[i] = {false, QStringLiteral("store write failed: %1").arg(groupError)};
            }
        }
    }
    requeueFront(group, ran);
    syncWritable();
    m_helper->endUnit();
    for (size_t i = 0; i < ran; ++i) {
        deliver(group[i], results[i]);
        afterRetained(group[i], results[i]);
    }
}

void StoreThreadContext::afterRetained(const StoreQueuedJob &job, const JobResult &result)
{
    if (job.retainLabel.isEmpty())
        return;
    if (!result.ok && !m_db.writable()) {
        m_owner->retain(job);
        return;
    }
    if (!result.ok)
        m_owner->dropRetained(job.retainLabel, result.error);
}

// After SQLITE_FULL, SQLITE_IOERR and the like SQLite may roll back the whole transaction, and a later
// SAVEPOINT would open (and RELEASE commit) a transaction of its own. BEGIN fails exactly when one is open.
bool StoreThreadContext::transactionStillOpen()
{
    // PostgreSQL never ends a transaction behind the client's back (a failed statement only aborts it until
    // the savepoint rolls back, and a nested BEGIN merely warns): only a lost connection ends it.
    if (m_db.dialect() == SqlDialect::Postgres)
        return !m_db.connectionLost();
    QString ignored;
    if (!m_db.exec(QStringLiteral("BEGIN"), &ignored))
        return true;
    m_db.exec(QStringLiteral("ROLLBACK"), &ignored);
    return false;
}

void StoreThreadContext::requeueFront(std::vector<StoreQueuedJob> &group, size_t from)
{
    if (from >= group.size())
        return;
    QMutexLocker lock(&m_queueMutex);
    for (size_t i = group.size(); i-- > from;) {
        if (group[i].urgent)
            ++m_urgentWaiting;
        (group[i].urgent ? m_urgent : m_queue).push_front(std::move(group[i]));
    }
}

void StoreThreadContext::deliver(const StoreQueuedJob &job, const JobResult &result) const
{
    if (!job.onDone)
        return;
    if (job.onStoreThread) {
        job.onDone(result.ok, result.error);
        return;
    }
    m_owner->m_contexts.post(job.context,
                             [onDone = job.onDone, ok = result.ok, error = result.error] { onDone(ok, error); });
}

void StoreThreadContext::syncWritable()
{
    const bool writable = m_db.writable();
    m_owner->setWritableState(writable, m_db.unwritableReason());
    if (!m_reprobe)
        return;
    if (writable)
        m_reprobe->stop();
    else if (!m_reprobe->isActive())
        m_reprobe->start(m_reprobeMs);
}

void StoreThreadContext::pollChangeCounter()
{
    const std::optional<qint64> counter = m_db.changeCounter();
    if (!counter || counter == m_lastCounter)
        return;
    m_lastCounter = counter;
    emit m_owner->changeCounterChanged(*counter);
}

} // namespace sy
