#pragma once

#include "util/Clock.h"

#include <QLatin1String>
#include <QList>
#include <QString>

namespace sy {

// Budget names exactly as they appear in logs, JSON and kill labels (DESIGN.md "Per-stage budgets").
namespace stage {
inline constexpr QLatin1String gateWait{"gate_wait"};
inline constexpr QLatin1String connect{"connect"};
inline constexpr QLatin1String preResponse{"pre_response"};
inline constexpr QLatin1String streamIdle{"stream_idle"};
inline constexpr QLatin1String requestTotal{"request_total"};
inline constexpr QLatin1String streamMax{"stream_max"};
// Reserved for the egress proxy pool, which owns its own accounting; RequestBudget never fires it.
inline constexpr QLatin1String egress{"egress"};
} // namespace stage

struct BudgetSettings
{
    int gateWaitS = 10;
    int connectS = 8;
    int gateRetireS = 300;
    int keepaliveIntervalS = 10;
    int keepaliveMax = 6;
    int streamIdleS = 300;
    int requestTotalS = 600;
    int streamMaxS = 7200;

    // Empty when usable; otherwise every problem, "; "-separated, naming the settings by their config keys
    // (gate_wait_s, ...). Start-up must refuse settings for which this is not empty.
    QString validate() const;
    // keepalive_interval_s x keepalive_max, the longest a client is kept waiting on keepalives alone.
    qint64 keepaliveCadenceMs() const { return qint64(keepaliveIntervalS) * keepaliveMax * 1000; }

    // Upper bound accepted for any *_s setting (7 days); larger values are typos, not intentions.
    static constexpr int maxSeconds = 7 * 24 * 3600;
    static constexpr int maxKeepalives = 10000;
};

// Stage timings for the request log ("latency_ms"); -1 means unknown (logged as null, never 0).
struct StageLatencies
{
    qint64 queueMs = -1;      // time at the admission gate, summed over all waits; 0 when admitted at once
    qint64 connectMs = -1;    // beginAttempt() -> connected() of the last attempt that connected
    qint64 firstEventMs = -1; // request start -> first upstream event
    qint64 totalMs = -1;      // request start -> finish()
};

// The deadlines of ONE request. Create a new object for every request (it starts request_total at
// construction) and never share it between requests; it is not thread-safe and lives with its request.
//
// Phases: routing (before the gate and between attempts) -> gate_wait -> connect -> pre_response ->
// streaming -> finished. Until the first event request_total runs across every phase and attempt, never
// reset; once streaming, only stream_idle (reset by each event) and stream_max (from the first event) apply.
// On equal deadlines the broader budget is named: request_total over a stage's own budget, stream_max over
// stream_idle.
class RequestBudget
{
public:
    enum class Phase
    {
        Routing,
        GateWait,
        Connect,
        PreResponse,
        Streaming,
        Finished
    };

    struct Deadline
    {
        QString stage;             // the budget that would fire; empty when none applies (finished)
        qint64 atMonotonicMs = -1; // Clock::monotonicMs() value at which it fires
        bool isNone() const { return stage.isEmpty(); }
    };

    struct Remaining
    {
        QString stage;
        qint64 ms = 0; // >= 0
    };

    struct Snapshot
    {
        QString phase; // phaseName(): routing, gate_wait, connect, pre_response, streaming, finished
        qint64 elapsedMs = 0;
        Deadline next;
        QList<Remaining> remaining; // every budget running in this phase, earliest-firing first
    };

    RequestBudget(const Clock &clock, BudgetSettings settings);
    RequestBudget(const RequestBudget &) = delete;
    RequestBudget &operator=(const RequestBudget &) = delete;
    RequestBudget(RequestBudget &&) = default;

    // Each gate wait gets a full gate_wait_s (a failover may queue at another account's gate).
    void enterGateWait();
    void leaveGateWait();
    // Starts the connect stage of a new attempt (closing a gate wait still open).
    void beginAttempt();
    // The request has been sent: starts pre_response with the derived budget.
    void connected();
    // The attempt failed before its first event; back to routing, request_total keeps running.
    void endAttempt();
    // The response started (first upstream event; keepalives do not count).
    void firstEvent();
    // Any later event: resets stream_idle. Before firstEvent() it counts as the first event.
    void onEvent();
    void finish();

    Phase phase() const { return m_phase; }
    static QString phaseName(Phase phase);

    Deadline nextDeadline() const;
    // The name of the budget whose deadline has passed, or empty.
    QString expiredStage() const;
    // Milliseconds left (>= 0) of the named budget, or -1 when that budget does not run in this phase.
    qint64 remainingMs(const QString &stageName) const;
    Snapshot snapshot() const;
    StageLatencies latencies() const;

    qint64 elapsedMs() const { return now() - m_startMs; }
    int attempts() const { return m_attempts; }
    // Time since the current (or last) attempt began; -1 before the first attempt.
    qint64 attemptElapsedMs() const;
    // The pre_response budget computed at the last connected(); -1 before that.
    qint64 preResponseBudgetMs() const { return m_preResponseBudgetMs; }
    const BudgetSettings &settings() const { return m_settings; }

private:
    qint64 now() const { return m_clock->monotonicMs(); }
    qint64 requestTotalDeadline() const { return m_startMs + qint64(m_settings.requestTotalS) * 1000; }
    void closeGateWait();

    const Clock *m_clock;
    BudgetSettings m_settings;
    Phase m_phase = Phase::Routing;
    qint64 m_startMs = 0;

    bool m_sawGate = false;
    qint64 m_gateEnteredMs = 0;
    qint64 m_queueMs = 0;

    int m_attempts = 0;
    qint64 m_attemptStartMs = -1;
    qint64 m_connectMs = -1;
    qint64 m_preResponseDeadline = 0;
    qint64 m_preResponseBudgetMs = -1;
    bool m_preResponseIsTotal = false;

    qint64 m_firstEventMs = -1;
    qint64 m_lastEventMs = -1;
    qint64 m_finishedMs = -1;
};

} // namespace sy
