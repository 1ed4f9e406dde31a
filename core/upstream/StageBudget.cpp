#include "upstream/StageBudget.h"

#include "util/Faults.h"

#include <QStringList>
#include <algorithm>

namespace sy {

QString BudgetSettings::validate() const
{
    QStringList problems;
    const auto checkRange = [&problems](const char *key, int value, int max) {
        if (value <= 0)
            problems << QStringLiteral("%1 must be positive (is %2)").arg(QLatin1String(key)).arg(value);
        else if (value > max)
            problems << QStringLiteral("%1 must be at most %2 (is %3)").arg(QLatin1String(key)).arg(max).arg(value);
    };
    checkRange("gate_wait_s", gateWaitS, maxSeconds);
    checkRange("connect_s", connectS, maxSeconds);
    checkRange("gate_retire_s", gateRetireS, maxSeconds);
    checkRange("keepalive_interval_s", keepaliveIntervalS, maxSeconds);
    checkRange("keepalive_max", keepaliveMax, maxKeepalives);
    checkRange("stream_idle_s", streamIdleS, maxSeconds);
    checkRange("request_total_s", requestTotalS, maxSeconds);
    checkRange("stream_max_s", streamMaxS, maxSeconds);

    const auto checkNotAbove = [&problems](const char *key, int value, const char *boundKey, int bound) {
        // Only meaningful when both are in range; a non-positive value has been reported already.
        if (value > 0 && bound > 0 && value > bound)
            problems << QStringLiteral("%1 (%2) exceeds %3 (%4)")
                            .arg(QLatin1String(key))
                            .arg(value)
                            .arg(QLatin1String(boundKey))
                            .arg(bound);
    };
    // A stage budget longer than the whole request budget could never fire under its own name.
    checkNotAbove("gate_wait_s", gateWaitS, "request_total_s", requestTotalS);
    checkNotAbove("connect_s", connectS, "request_total_s", requestTotalS);
    // An idle bound longer than the stream's whole duration could never fire either.
    checkNotAbove("stream_idle_s", streamIdleS, "stream_max_s", streamMaxS);
    return problems.join(QStringLiteral("; "));
}

namespace {

// The earlier of two deadlines; on a tie the broader budget (the second argument) is named.
RequestBudget::Deadline earliest(RequestBudget::Deadline narrow, RequestBudget::Deadline broad)
{
    return narrow.atMonotonicMs < broad.atMonotonicMs ? narrow : broad;
}

} // namespace

RequestBudget::RequestBudget(const Clock &clock, BudgetSettings settings)
    : m_clock(&clock), m_settings(settings), m_startMs(clock.monotonicMs())
{
}

void RequestBudget::enterGateWait()
{
    if (m_phase != Phase::Routing)
        return;
    m_phase = Phase::GateWait;
    m_sawGate = true;
    m_gateEnteredMs = now();
}

void RequestBudget::leaveGateWait()
{
    if (m_phase != Phase::GateWait)
        return;
    closeGateWait();
    m_phase = Phase::Routing;
}

void RequestBudget::closeGateWait()
{
    if (m_phase == Phase::GateWait)
        m_queueMs += now() - m_gateEnteredMs;
}

void RequestBudget::beginAttempt()
{
    if (m_phase == Phase::Streaming || m_phase == Phase::Finished)
        return;
    closeGateWait();
    m_phase = Phase::Connect;
    ++m_attempts;
    m_attemptStartMs = now();
}

void RequestBudget::connected()
{
    if (m_phase != Phase::Connect)
        return;
    const qint64 t = now();
    m_connectMs = t - m_attemptStartMs;
    const qint64 remainingTotal = std::max<qint64>(0, requestTotalDeadline() - t);
    const qint64 cadence = m_settings.keepaliveCadenceMs();
    const qint64 derived = std::min(
        {qint64(m_settings.gateRetireS) * 1000, cadence, qint64(m_settings.streamIdleS) * 1000, remainingTotal});
    const qint64 floor = std::min(cadence, remainingTotal);
    m_preResponseBudgetMs = std::max(derived, floor);
    m_preResponseIsTotal = m_preResponseBudgetMs == remainingTotal;
    m_preResponseDeadline = t + m_preResponseBudgetMs;
    m_phase = Phase::PreResponse;
}

void RequestBudget::endAttempt()
{
    if (m_phase == Phase::Connect || m_phase == Phase::PreResponse)
        m_phase = Phase::Routing;
}

void RequestBudget::firstEvent()
{
    if (m_phase == Phase::Streaming) {
        onEvent();
        return;
    }
    if (m_phase == Phase::Finished)
        return;
    closeGateWait();
    m_firstEventMs = m_lastEventMs = now();
    m_phase = Phase::Streaming;
}

void RequestBudget::onEvent()
{
    if (m_phase == Phase::Streaming)
        m_lastEventMs = now();
    else
        firstEvent();
}

void RequestBudget::finish()
{
    if (m_phase == Phase::Finished)
        return;
    closeGateWait();
    m_finishedMs = now();
    m_phase = Phase::Finished;
}

QString RequestBudget::phaseName(Phase phase)
{
    switch (phase) {
    case Phase::Routing:
        return QStringLiteral("routing");
    case Phase::GateWait:
        return stage::gateWait;
    case Phase::Connect:
        return stage::connect;
    case Phase::PreResponse:
        return stage::preResponse;
    case Phase::Streaming:
        return QStringLiteral("streaming");
    case Phase::Finished:
        return QStringLiteral("finished");
    }
    return {};
}

RequestBudget::Deadline RequestBudget::nextDeadline() const
{
    const Deadline total{stage::requestTotal, requestTotalDeadline()};
    // (Fault build only: one shared timer for every stage before the stream.)
    if (SY_FAULT("single-shared-timeout") && m_phase != Phase::Streaming && m_phase != Phase::Finished)
        return total;
    switch (m_phase) {
    case Phase::Routing:
        return total;
    case Phase::GateWait:
        return earliest({stage::gateWait, m_gateEnteredMs + qint64(m_settings.gateWaitS) * 1000}, total);
    case Phase::Connect:
        return earliest({stage::connect, m_attemptStartMs + qint64(m_settings.connectS) * 1000}, total);
    case Phase::PreResponse:
        if (m_preResponseIsTotal)
            return total;
        // (Fault build only: the pre-response kill mislabelled as the streaming stage's.)
        return earliest({SY_FAULT("conflated-timers") ? stage::streamIdle : stage::preResponse, m_preResponseDeadline},
                        total);
    case Phase::Streaming:
        return earliest({stage::streamIdle, m_lastEventMs + qint64(m_settings.streamIdleS) * 1000},
                        {stage::streamMax, m_firstEventMs + qint64(m_settings.streamMaxS) * 1000});
    case Phase::Finished:
        break;
    }
    return {};
}

QString RequestBudget::expiredStage() const
{
    const Deadline next = nextDeadline();
    if (!next.isNone() && now() >= next.atMonotonicMs)
        return next.stage;
    return {};
}

qint64 RequestBudget::remainingMs(const QString &stageName) const
{
    qint64 deadline = -1;
    const bool beforeStream = m_phase != Phase::Streaming && m_phase != Phase::Finished;
    if (stageName == stage::requestTotal && beforeStream)
        deadline = requestTotalDeadline();
    else if (stageName == stage::gateWait && m_phase == Phase::GateWait)
        deadline = m_gateEnteredMs + qint64(m_settings.gateWaitS) * 1000;
    else if (stageName == stage::connect && m_phase == Phase::Connect)
        deadline = m_attemptStartMs + qint64(m_settings.connectS) * 1000;
    else if (stageName == stage::preResponse && m_phase == Phase::PreResponse)
        deadline = m_preResponseDeadline;
    else if (stageName == stage::streamIdle && m_phase == Phase::Streaming)
        deadline = m_lastEventMs + qint64(m_settings.streamIdleS) * 1000;
    else if (stageName == stage::streamMax && m_phase == Phase::Streaming)
        deadline = m_firstEventMs + qint64(m_settings.streamMaxS) * 1000;
    if (deadline < 0)
        return -1;
    return std::max<qint64>(0, deadline - now());
}

RequestBudget::Snapshot RequestBudget::snapshot() const
{
    Snapshot snap;
    snap.phase = phaseName(m_phase);
    snap.elapsedMs = elapsedMs();
    snap.next = nextDeadline();
    for (QLatin1String name : {stage::gateWait, stage::connect, stage::preResponse, stage::streamIdle,
                               stage::requestTotal, stage::streamMax}) {
        const qint64 left = remainingMs(name);
        if (left >= 0)
            snap.remaining.append({QString(name), left});
    }
    std::stable_sort(snap.remaining.begin(), snap.remaining.end(),
                     [](const Remaining &a, const Remaining &b) { return a.ms < b.ms; });
    return snap;
}

StageLatencies RequestBudget::latencies() const
{
    StageLatencies out;
    if (m_sawGate)
        out.queueMs = m_queueMs + (m_phase == Phase::GateWait ? now() - m_gateEnteredMs : 0);
    else if (m_attempts > 0)
        out.queueMs = 0;
    out.connectMs = m_connectMs;
    if (m_firstEventMs >= 0)
        out.firstEventMs = m_firstEventMs - m_startMs;
    if (m_finishedMs >= 0)
        out.totalMs = m_finishedMs - m_startMs;
    return out;
}

qint64 RequestBudget::attemptElapsedMs() const
{
    if (m_attemptStartMs < 0)
        return -1;
    const qint64 end = m_finishedMs >= 0 ? m_finishedMs : now();
    return end - m_attemptStartMs;
}

} // namespace sy
