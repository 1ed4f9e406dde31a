#include "api/AccountPool.h"
#include "api/ProxyService.h"
#include "api/RequestScanThread.h"
#include "api/Turn.h"
#include "config/ConfigWatcher.h"
#include "store/StoreWorker.h"
#include "upstream/egress/EgressSelector.h"
#include "util/BusyPoll.h"
#include "util/EpollEventDispatcher.h"
#include "util/Ids.h"
#include "util/LargeBufferPool.h"

#include <QAbstractEventDispatcher>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

// What /api/status says about the proxy (ProxyService::statusJson()): its settings, the store, the turns in
// flight and the proxy thread's own counters.
namespace sy {

QJsonObject ProxyService::configStatusJson() const
{
    const QString path = m_configWatcher ? m_configWatcher->path() : m_config->configFile;
    const QString error = m_configWatcher ? m_configWatcher->error() : QString();
    const qint64 loadedAt = m_configWatcher ? m_configWatcher->loadedAtMs() : m_startedAtMs;
    return {
        {QStringLiteral("path"), path.isEmpty() ? QJsonValue() : QJsonValue(path)},
        {QStringLiteral("exists"), !path.isEmpty() && QFileInfo::exists(path)},
        {QStringLiteral("watched"), m_configWatcher != nullptr},
        {QStringLiteral("loaded_at"), isoUtc(loadedAt)},
        {QStringLiteral("error"), error.isEmpty() ? QJsonValue() : QJsonValue(error)},
        {QStringLiteral("restart_required"), QJsonArray::fromStringList(m_restartRequired)},
    };
}

namespace {

// What the SQLite WAL checkpointer has done (store/WalCheckpointer.h); all zero when the store connection
// checkpoints itself (PostgreSQL, SWITCHYARD_WAL_CHECKPOINT=store).
QJsonObject walStatusJson(const WalCheckpointStats &wal)
{
    return {
        {QStringLiteral("checkpoint_passes"), wal.passes.load()},
        {QStringLiteral("checkpoint_failures"), wal.failures.load()},
        {QStringLiteral("frames"), wal.walFrames.load()},
        {QStringLiteral("backlog_frames"), wal.backlogFrames.load()},
        {QStringLiteral("restarts_ahead"), wal.restartsAhead.load()},
    };
}

// This thread's pool (the one its turns and connections use) and the scan thread's, which keeps the parser of
// the large bodies scanned there (null when there is no scan thread).
QJsonObject largeBuffersJson(const RequestScanThread *scanner)
{
    const LargeBufferPool &pool = LargeBufferPool::local();
    QJsonValue scanThread;
    if (scanner) {
        const RequestScanThread::PoolFigures f = scanner->poolFigures();
        scanThread = QJsonObject{{QStringLiteral("objects"), f.objects},
                                 {QStringLiteral("kept_bytes"), f.keptBytes},
                                 {QStringLiteral("reuses"), qint64(f.reuses)}};
    }
    return {{QStringLiteral("buffers"), pool.buffersKept()},
            {QStringLiteral("objects"), pool.objectsKept()},
            {QStringLiteral("kept_bytes"), qint64(pool.bytesKept())},
            {QStringLiteral("reuses"), qint64(pool.reuses())},
            {QStringLiteral("scan_thread"), scanThread}};
}

// This thread's busy polling (util/BusyPoll.h): waits that polled instead of sleeping, those that found their
// event in time, and those stopped because the store thread had not run (helper_stalls; each such wait counts).
// Zero counts where the thread's dispatcher is not the epoll one.
QJsonObject busyPollJson(const StoreWorker &store)
{
    EpollEventDispatcher::BusyPollCounts counts;
#ifdef Q_OS_LINUX // the only platform with the epoll dispatcher
    if (const auto *epoll = dynamic_cast<const EpollEventDispatcher *>(QAbstractEventDispatcher::instance()))
        counts = epoll->busyPollCounts();
#endif
    return {{QStringLiteral("window_us"), BusyPollHold::windowUs()},
            {QStringLiteral("holds"), BusyPollHold::heldOnThisThread()},
            {QStringLiteral("holds_taken"), BusyPollHold::takenOnThisThread()},
            {QStringLiteral("polls"), qint64(counts.polls)},
            {QStringLiteral("hits"), qint64(counts.hits)},
            {QStringLiteral("helper_stalls"), qint64(counts.helperStalls)},
            {QStringLiteral("helper_grace_us"), BusyPollHold::helperGraceUs()},
            {QStringLiteral("store_claims_announced"), qint64(store.claimsAnnounced())},
            {QStringLiteral("store_waits_after_warm_up"), qint64(store.warmSpins())},
            {QStringLiteral("store_jobs_found_awake"), qint64(store.warmSpinHits())},
            {QStringLiteral("store_waits_after_job"), qint64(store.jobSpins())},
            {QStringLiteral("store_jobs_found_awake_after_job"), qint64(store.jobSpinHits())},
            {QStringLiteral("store_no_wait_after_job"), qint64(store.jobSpinsSkipped())},
            {QStringLiteral("store_awake_wait_us"), qint64(store.awakeWaitUs())}};
}

// This thread's socket order (EpollEventDispatcher::setSocketPriority): the marked sockets it watches now (and
// of them those a long pass rechecks, the ones watched for reading), how often a long pass looked for marked
// sockets that became readable during it, and how many it handled ahead of its rest.
QJsonObject socketOrderJson()
{
    EpollEventDispatcher::PriorityCounts counts;
#ifdef Q_OS_LINUX
    if (const auto *epoll = dynamic_cast<const EpollEventDispatcher *>(QAbstractEventDispatcher::instance()))
        counts = epoll->priorityCounts();
#endif
    return {{QStringLiteral("marked"), qint64(counts.marked)},
            {QStringLiteral("rechecked"), qint64(counts.rechecked)},
            {QStringLiteral("rechecks"), qint64(counts.rechecks)},
            {QStringLiteral("handled_early"), qint64(counts.handledEarly)}};
}

} // namespace

QByteArray ProxyService::statusJson() const
{
    QJsonArray turns;
    for (const Turn *t : m_turns)
        turns.append(t->statusJson());
    QJsonObject stages = m_stages.toJson();
    // Scans the scan thread finished, whether or not their turn was still there for the result.
    stages.insert(QStringLiteral("scans_done"), m_scanner ? qint64(m_scanner->scansDone()) : qint64(0));
    const QJsonObject o{
        {QStringLiteral("version"), QStringLiteral(SWITCHYARD_VERSION)},
        {QStringLiteral("started_at"), isoUtc(m_startedAtMs)},
        {QStringLiteral("listen"), QStringLiteral("%1:%2").arg(m_config->listenAddress.toString()).arg(port())},
        // Whether proxy routes need an API key (non-loopback listen or require_api_key): the dashboard says so.
        {QStringLiteral("api_keys_required"), m_apiKeysRequired},
        {QStringLiteral("strategy"), strategyName(m_pool->strategy())},
        {QStringLiteral("pinned_account_id"),
         m_pool->pinnedAccountId().isEmpty() ? QJsonValue() : QJsonValue(m_pool->pinnedAccountId())},
        {QStringLiteral("pin_strict"), m_pool->pinStrict()},
        {QStringLiteral("store_writable"), m_store->writable()},
        {QStringLiteral("store_problem"), m_store->writable() ? QJsonValue() : QJsonValue(m_store->unwritableReason())},
        // Request-log writes of finished turns waiting in memory for the store, and those given up on.
        {QStringLiteral("store_pending_writes"), m_store->pendingWrites()},
        {QStringLiteral("store_lost_writes"), m_store->lostWrites()},
        // Warm-ups of the idle store thread ahead of a claim that ran (StoreWorker::warmUp).
        {QStringLiteral("store_warm_ups"), qint64(m_store->warmUps())},
        {QStringLiteral("store_wal"), walStatusJson(m_store->walCheckpointStats())},
        // Memory of large bodies and their parser kept for the next large request (LargeBufferPool).
        {QStringLiteral("large_buffers"), largeBuffersJson(m_scanner)},
        {QStringLiteral("busy_poll"), busyPollJson(*m_store)},
        {QStringLiteral("socket_order"), socketOrderJson()},
        // Where turns spend their time before the client's first byte and at their settlement (TurnStages.h).
        {QStringLiteral("turn_stages"), stages},
        {QStringLiteral("accounts"), m_pool->statusJson()},
        {QStringLiteral("in_flight"), turns},
        {QStringLiteral("draining"), m_draining},
        {QStringLiteral("paused"), m_pool->proxyPaused()},
        {QStringLiteral("egress"), m_egress ? m_egress->statusJson() : QJsonObject()},
        {QStringLiteral("config"), configStatusJson()},
    };
    QJsonObject out = o;
    const QJsonObject ownership = m_pool->ledger()->statusJson();
    for (auto it = ownership.begin(); it != ownership.end(); ++it)
        out.insert(it.key(), it.value());
    QJsonObject gate = out.value(QLatin1String("gate")).toObject();
    gate.insert(QStringLiteral("slot_watchers"), m_pool->slotWatchers());
    out.insert(QStringLiteral("gate"), gate);
    return QJsonDocument(out).toJson(QJsonDocument::Compact);
}

} // namespace sy
