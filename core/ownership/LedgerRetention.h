#pragma once

#include <QObject>
#include <QString>
#include <QTimer>

namespace sy {

class Clock;
class Database;
class StoreWorker;

// What the ownership tables keep of past turns. Every turn leaves a claim in slot_claims (about 300 bytes with
// its indexes) and, for a Responses turn, a continuity anchor in response_anchors; neither is read again once
// the turn has settled, except an anchor by a continuation of its response. Both go after kRetentionMs: the
// claims of requests whose claims are all closed (released, and not a failover's release still waiting for its
// sweep), the anchors of responses created before then (a continuation of such a response is answered
// previous_response_not_found, as any response the proxy cannot place; docs/OWNERSHIP.md).
// The request log (the user's history) and session_affinity (one row per session) are not touched.
//
// Runs on the store thread in batches of the claims of at most kBatchRows requests (twice: by time-first ids and
// in a walk over the rest of the request-id index, kLegacyScanRows entries a batch) and kBatchRows anchors, so
// that no claim waits behind a long delete: once a minute, and again a second later while a batch came back full.
class LedgerRetention : public QObject
{
    Q_OBJECT

public:
    static constexpr qint64 kRetentionMs = 30LL * 24 * 3600 * 1000;
    static constexpr int kBatchRows = 200;
    static constexpr int kIdleIntervalMs = 60 * 1000;
    static constexpr int kBusyIntervalMs = 1000;

    // Index entries the walk over random (pre-b015fa5) request ids looks at in one batch, at most.
    static constexpr int kLegacyScanRows = 1000;

    // The time-first ids the first pass looks at: those of this span before the cutoff. Random ids sort anywhere,
    // and about 1 in 160 of them below any cutoff's floor; those of them not old enough yet would stay in the
    // first pass's range and be read again by every batch. About 1 in 9,000 random ids sorts into one year's range.
    static constexpr qint64 kFirstPassSpanMs = 365LL * 24 * 3600 * 1000;

    struct Batch
    {
        int claims = 0;       // slot_claims rows deleted by the first pass (time-first ids)
        int anchors = 0;      // response_anchors rows deleted
        int legacyClaims = 0; // slot_claims rows deleted by the walk (random ids, time-first ones past the span)
        // In: where the walk goes on: above legacyAfter (empty: at the start of its part) in the part of the index
        // above every time-first id of the next day or, with legacyBelow, in the part below the first pass's
        // range. Out: where the next batch's goes on. The walk takes the part above, then the part below, then
        // starts again.
        QString legacyAfter;
        bool legacyBelow = false;
    };

    // One batch, inside the caller's transaction: the claims of at most `limit` requests (a request's claims go
    // together) and at most `limit` anchors older than cutoffMs. The first pass finds claims by their time-first
    // request id (util/Ids.h) through the request-id index, among the ids of kFirstPassSpanMs before the cutoff.
    // The walk looks at kLegacyScanRows index entries outside that range and the next day's ids: claims with
    // random ids, made by builds before b015fa5 (all of 0.1.0), and time-first ones the first pass no longer
    // reaches (a store the retention did not run on for a year). It too takes the claims of at most `limit`
    // requests; the next batch goes on after the last of them if the window held more. On PostgreSQL nothing is deleted
    // while another replica's batch runs. False on a database error.
    static bool pruneBatch(Database &db, qint64 cutoffMs, int limit, Batch *out, QString *error);

    // idleMs and busyMs: the pause after a batch that came back short and after a full one (tests shorten them).
    LedgerRetention(StoreWorker *store, const Clock &clock, QObject *parent = nullptr, int idleMs = kIdleIntervalMs,
                    int busyMs = kBusyIntervalMs);

    // The first batch idleMs from now.
    void start();
    void stop();
    // Submits one batch now (tests; start() runs them on its timer).
    void runOnce();

    bool isStarted() const { return m_started; }
    qint64 claimsPruned() const { return m_claimsPruned; }
    qint64 anchorsPruned() const { return m_anchorsPruned; }

signals:
    void batchDone(int claims, int anchors);

private:
    StoreWorker *m_store;
    const Clock &m_clock;
    const int m_idleMs;
    const int m_busyMs;
    QTimer m_timer;
    bool m_started = false;
    bool m_running = false;
    bool m_warned = false;
    QString m_legacyAfter; // Batch::legacyAfter and legacyBelow between batches
    bool m_legacyBelow = false;
    qint64 m_claimsPruned = 0;
    qint64 m_anchorsPruned = 0;
};

} // namespace sy
