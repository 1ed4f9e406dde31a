#pragma once

#include "util/LatencyHistogram.h"

#include <QJsonObject>
#include <array>

namespace sy {

class Clock;

// How long turns spend in each stage on their way to the client's first byte and to their settlement, in
// microseconds, as /api/status reports them under "turn_stages". The added-latency stages are recorded for
// clean turns only (one claim, one upstream attempt, no wait at the gate), so that they add up to what the proxy
// itself puts in front of the client's first byte. A streaming client's first bytes come with an early event:
//   added_before_first_byte = request_read + request_to_claim + claim + claim_to_sent + head_handling
//                             + event_to_first_byte
//     = (first byte out - first byte in) - (request sent -> the upstream event that gave the first byte).
// A non-streaming client's come with the whole answer, once the turn is settled (the answer carries the
// completion, which waits for its durable row):
//   added_before_answer = request_read + request_to_claim + claim + claim_to_sent + terminal_to_settle + settle
//                         + settled_to_answer
//     = (answer out - first byte in) - (request sent -> the upstream's terminal event).
// request_read, request_to_claim and claim_to_sent take both kinds of clean turns.
// claim and its parts count every claim answered by the store; upstream_head every attempt's head; settle every
// settlement. Clock::monotonicUs; one per proxy thread, not thread-safe.
class TurnStageStats
{
public:
    enum Stage
    {
        RequestRead,          // the request's first byte parsed -> the request complete (the rest of its body)
        RequestToClaim,       // request complete -> claim submitted (front door, API key, parse, translate, route;
                              // a turn keyed by its headers claims before its scan or parse: not in it then)
        Claim,                // claim submitted -> its outcome back on the proxy thread (store round trip), in parts:
        ClaimWait,            //   submitted -> its statements begin (waking the store thread, jobs ahead of it)
        ClaimStatements,      //   its statements on the store thread
        ClaimCommitAndBack,   //   statements done -> outcome on the proxy thread (rest of its group, COMMIT, wake-up;
                              //   a claim sent before its body_prepare also waits here for that to end)
        ClaimToSent,          // claim won -> request handed to the upstream socket
        UpstreamHead,         // request sent -> upstream response head: the upstream's own time, not ours
        HeadHandling,         // the head's handling on the proxy thread (usage headers, bindings)
        EventToFirstByte,     // the upstream event that gives the client its first bytes: its handling (sink,
                              // stream commit) until they are handed to the client connection, which sends a
                              // stream's first bytes at once (HttpResponse::write): the send is inside
        AddedBeforeFirstByte, // the six of ours above (not upstream_head), per streaming turn
        Settle,               // settlement submitted -> committed and back (store round trip)
        BodyScan,             // a large body's scan on the scan thread: submitted -> its result on the proxy
                              // thread (it overlaps claim; what it adds is in claim_to_sent)
        BodyPrepare,          // a body parsed whole on the proxy thread (chat completions, /v1/responses, a Codex
                              // body the sanitizer changes), refused or not: parse, translation, sanitising,
                              // serialising. In request_to_claim, or inside claim when the claim went out first
        TerminalToSettle,     // non-streaming: the upstream's terminal event -> its settlement submitted
        SettledToAnswer,      // non-streaming: settled -> the whole answer handed to the connection (built while the
                              // settlement committed, since session 36)
        AddedBeforeAnswer,    // non-streaming: the seven of ours in front of the answer (above), per turn
        StageCount
    };

    void record(Stage stage, qint64 us) { m_stages[size_t(stage)].record(us); }
    // Upstream attempts, those whose request was built while their claim was on its way (Turn::prepareDispatch),
    // and those whose request was sent then, all but its last byte (Turn::sendEarly): the dispatch only sent
    // that byte.
    void countDispatch(bool prepared, bool sentEarly)
    {
        ++m_dispatches;
        m_dispatchesPrepared += prepared ? 1 : 0;
        m_dispatchesSentEarly += sentEarly ? 1 : 0;
    }
    // A request sent ahead of its claim's answer (Turn::sendEarly), taken over by a dispatch or not.
    void countEarlySend() { ++m_earlySends; }
    // A body scanned on the scan thread (RequestScanThread).
    void countScanElsewhere() { ++m_scansElsewhere; }
    // A body parsed whole while its turn's claim was on its way (Turn::claimBeforeScan()).
    void countPreparedWhileClaiming() { ++m_preparedWhileClaiming; }
    const LatencyHistogram &stage(Stage stage) const { return m_stages[size_t(stage)]; }
    static const char *name(Stage stage);

    QJsonObject toJson() const;

private:
    std::array<LatencyHistogram, StageCount> m_stages;
    qint64 m_dispatches = 0;
    qint64 m_dispatchesPrepared = 0;
    qint64 m_dispatchesSentEarly = 0;
    qint64 m_earlySends = 0;
    qint64 m_scansElsewhere = 0;
    qint64 m_preparedWhileClaiming = 0;
};

// One turn's marks (Clock::monotonicUs, 0 = not reached), recorded into TurnStageStats as stages complete.
class TurnStageMarks
{
public:
    // When the request's first and last bytes were parsed (HttpRequest::receivedAtUs, completedAtUs).
    void begin(const Clock *clock, TurnStageStats *stats, qint64 requestReceivedUs, qint64 requestCompletedUs);
    void claimSubmitted();
    // storeStartUs/storeEndUs: ClaimOutcome's (0 when the claim never reached the store).
    void claimAnswered(bool won, qint64 storeStartUs, qint64 storeEndUs);
    void waitedAtGate() { m_clean = false; }
    // An upstream attempt begins; `prepared`: its request was built ahead, `sentEarly`: and sent
    // (TurnStageStats::countDispatch).
    void dispatched(bool prepared = false, bool sentEarly = false);
    void sentEarly()
    {
        if (m_stats)
            m_stats->countEarlySend();
    }
    // A body's scan went to the scan thread, and its result came back.
    void scanSubmitted();
    void scanAnswered();
    // A body parsed whole on the proxy thread since `startedUs` (now()); `whileClaiming`: its claim was out.
    void bodyPrepared(qint64 startedUs, bool whileClaiming);
    qint64 now() const;
    void requestSent();
    void upstreamHead();
    void upstreamHeadHandled();
    // An upstream event is about to be handled (only needed until the first byte went out).
    void eventArrived();
    bool firstByteRecorded() const { return m_firstByte; }
    // The first bytes of a streamed answer went to the client: records the clean turn's stages.
    void firstByteToStreamingClient();
    // A non-streaming client's whole answer went to the client connection (after the settlement): the same.
    void answerToNonStreamingClient();
    void settleSubmitted();
    void settled();

private:
    // Records request_read, request_to_claim and claim_to_sent of a clean turn; returns their sum with its claim.
    qint64 recordStagesToTheSend();

    const Clock *m_clock = nullptr;
    TurnStageStats *m_stats = nullptr;
    qint64 m_received = 0;
    qint64 m_completed = 0;
    qint64 m_start = 0;
    qint64 m_event = 0;
    qint64 m_claimSubmitted = 0;
    qint64 m_firstClaimSubmitted = 0;
    qint64 m_claimWon = 0;
    qint64 m_sent = 0;
    qint64 m_head = 0;
    qint64 m_headHandling = -1; // -1: not handled yet
    qint64 m_settleSubmitted = 0; // reset once settled
    qint64 m_settleBegan = 0;
    qint64 m_settledAt = 0;
    qint64 m_scanSubmitted = 0;
    int m_claims = 0;
    int m_dispatches = 0;
    bool m_clean = true;
    bool m_firstByte = false;
};

} // namespace sy
