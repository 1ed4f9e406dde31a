#include "api/TurnStages.h"

#include "util/Clock.h"

namespace sy {

const char *TurnStageStats::name(Stage stage)
{
    switch (stage) {
    case RequestRead:
        return "request_read";
    case RequestToClaim:
        return "request_to_claim";
    case Claim:
        return "claim";
    case ClaimWait:
        return "claim_wait";
    case ClaimStatements:
        return "claim_statements";
    case ClaimCommitAndBack:
        return "claim_commit_and_back";
    case ClaimToSent:
        return "claim_to_sent";
    case UpstreamHead:
        return "upstream_head";
    case HeadHandling:
        return "head_handling";
    case EventToFirstByte:
        return "event_to_first_byte";
    case AddedBeforeFirstByte:
        return "added_before_first_byte";
    case Settle:
        return "settle";
    case BodyScan:
        return "body_scan";
    case BodyPrepare:
        return "body_prepare";
    case TerminalToSettle:
        return "terminal_to_settle";
    case SettledToAnswer:
        return "settled_to_answer";
    case AddedBeforeAnswer:
        return "added_before_answer";
    case StageCount:
        break;
    }
    return "?";
}

QJsonObject TurnStageStats::toJson() const
{
    QJsonObject stages;
    for (int s = 0; s < StageCount; ++s)
        stages.insert(QLatin1String(name(Stage(s))), m_stages[size_t(s)].toJson());
    return {{QStringLiteral("unit"), QStringLiteral("us")},
            {QStringLiteral("stages"), stages},
            {QStringLiteral("dispatches"), m_dispatches},
            {QStringLiteral("dispatches_prepared"), m_dispatchesPrepared},
            {QStringLiteral("dispatches_sent_early"), m_dispatchesSentEarly},
            {QStringLiteral("early_sends"), m_earlySends},
            {QStringLiteral("scans_elsewhere"), m_scansElsewhere},
            {QStringLiteral("prepared_while_claiming"), m_preparedWhileClaiming}};
}

void TurnStageMarks::begin(const Clock *clock, TurnStageStats *stats, qint64 requestReceivedUs,
                           qint64 requestCompletedUs)
{
    m_clock = clock;
    m_stats = stats;
    m_start = now();
    m_completed = requestCompletedUs > 0 && requestCompletedUs <= m_start ? requestCompletedUs : m_start;
    m_received = requestReceivedUs > 0 && requestReceivedUs <= m_completed ? requestReceivedUs : m_completed;
}

qint64 TurnStageMarks::now() const
{
    return m_clock ? m_clock->monotonicUs() : 0;
}

void TurnStageMarks::claimSubmitted()
{
    m_claimSubmitted = now();
    if (++m_claims == 1)
        m_firstClaimSubmitted = m_claimSubmitted;
}

void TurnStageMarks::claimAnswered(bool won, qint64 storeStartUs, qint64 storeEndUs)
{
    if (!m_stats || !m_claimSubmitted)
        return;
    const qint64 t = now();
    // A claim the snapshot refused at once (no free slot in it) never reached the store: not a round trip.
    if (storeStartUs > 0)
        m_stats->record(TurnStageStats::Claim, t - m_claimSubmitted);
    if (storeStartUs >= m_claimSubmitted && storeEndUs >= storeStartUs && t >= storeEndUs) {
        m_stats->record(TurnStageStats::ClaimWait, storeStartUs - m_claimSubmitted);
        m_stats->record(TurnStageStats::ClaimStatements, storeEndUs - storeStartUs);
        m_stats->record(TurnStageStats::ClaimCommitAndBack, t - storeEndUs);
    }
    m_claimSubmitted = 0;
    if (won)
        m_claimWon = t;
}

void TurnStageMarks::dispatched(bool prepared, bool sentEarly)
{
    if (m_stats)
        m_stats->countDispatch(prepared, sentEarly);
    ++m_dispatches;
    m_sent = m_head = 0;
    m_headHandling = -1;
}

void TurnStageMarks::scanSubmitted()
{
    m_scanSubmitted = now();
    if (m_stats)
        m_stats->countScanElsewhere();
}

void TurnStageMarks::scanAnswered()
{
    if (m_stats && m_scanSubmitted)
        m_stats->record(TurnStageStats::BodyScan, now() - m_scanSubmitted);
}

void TurnStageMarks::bodyPrepared(qint64 startedUs, bool whileClaiming)
{
    if (!m_stats)
        return;
    m_stats->record(TurnStageStats::BodyPrepare, now() - startedUs);
    if (whileClaiming)
        m_stats->countPreparedWhileClaiming();
}

void TurnStageMarks::requestSent()
{
    if (!m_sent)
        m_sent = now();
}

void TurnStageMarks::upstreamHead()
{
    if (!m_stats || !m_sent || m_head)
        return;
    m_head = now();
    m_stats->record(TurnStageStats::UpstreamHead, m_head - m_sent);
}

void TurnStageMarks::upstreamHeadHandled()
{
    if (m_head && m_headHandling < 0)
        m_headHandling = now() - m_head;
}

void TurnStageMarks::eventArrived()
{
    m_event = now();
}

void TurnStageMarks::firstByteToStreamingClient()
{
    if (!m_stats || m_firstByte)
        return;
    m_firstByte = true;
    if (!m_clean || m_claims != 1 || m_dispatches != 1 || !m_claimWon || !m_sent || !m_head || !m_event ||
        m_headHandling < 0)
        return;
    const qint64 toFirstByte = now() - m_event;
    const qint64 beforeSend = recordStagesToTheSend();
    m_stats->record(TurnStageStats::HeadHandling, m_headHandling);
    m_stats->record(TurnStageStats::EventToFirstByte, toFirstByte);
    m_stats->record(TurnStageStats::AddedBeforeFirstByte, beforeSend + m_headHandling + toFirstByte);
}

qint64 TurnStageMarks::recordStagesToTheSend()
{
    const qint64 read = m_completed - m_received;
    const qint64 toClaim = m_firstClaimSubmitted - m_completed;
    const qint64 toSent = m_sent - m_claimWon;
    m_stats->record(TurnStageStats::RequestRead, read);
    m_stats->record(TurnStageStats::RequestToClaim, toClaim);
    m_stats->record(TurnStageStats::ClaimToSent, toSent);
    return read + toClaim + (m_claimWon - m_firstClaimSubmitted) + toSent; // with the claim (recorded when answered)
}

void TurnStageMarks::answerToNonStreamingClient()
{
    if (!m_stats || m_firstByte)
        return;
    m_firstByte = true;
    if (!m_clean || m_claims != 1 || m_dispatches != 1 || !m_claimWon || !m_sent || !m_event || !m_settleBegan ||
        m_settledAt < m_settleBegan || m_settleBegan < m_event)
        return;
    const qint64 toAnswer = now() - m_settledAt;
    const qint64 toSettle = m_settleBegan - m_event;
    const qint64 beforeSend = recordStagesToTheSend();
    m_stats->record(TurnStageStats::TerminalToSettle, toSettle);
    m_stats->record(TurnStageStats::SettledToAnswer, toAnswer);
    m_stats->record(TurnStageStats::AddedBeforeAnswer,
                    beforeSend + toSettle + (m_settledAt - m_settleBegan) + toAnswer);
}

void TurnStageMarks::settleSubmitted()
{
    m_settleSubmitted = m_settleBegan = now();
}

void TurnStageMarks::settled()
{
    const qint64 t = now();
    if (m_stats && m_settleSubmitted)
        m_stats->record(TurnStageStats::Settle, t - m_settleSubmitted);
    if (m_settleSubmitted)
        m_settledAt = t;
    m_settleSubmitted = 0;
}

} // namespace sy
