#pragma once

#include "upstream/UpstreamCall.h"
#include "usage/UsageWindows.h"

#include <QByteArray>
#include <QHash>
#include <QList>
#include <QObject>
#include <QString>
#include <QTimer>
#include <QUrl>
#include <functional>

namespace sy {

class Clock;
class UpstreamClient;

// What the poller needs to know about one account, taken fresh from its owner before every poll (so a
// refreshed access token is used at once). The poller keeps no token beyond one poll.
struct PollTarget
{
    QString accountId;        // Switchyard's id, reported back with the result
    QString chatgptAccountId; // sent as chatgpt-account-id
    QString accessToken;      // empty: credentials not loaded yet, the account is skipped
    QString status;           // AccountRecord status: paused, reauth_required and deactivated are skipped
};

// The upstream's answer to one GET /wham/usage.
struct UsageFetchReply
{
    int status = 0; // HTTP status; 0 when no response arrived
    QByteArray body;
    QString error; // transport failure; empty when a response arrived (whatever its status)
};

// Polls GET {upstream}/wham/usage for each account (issue 3 point 6): every intervalMs per account, one
// request at a time, the accounts spread evenly over the interval (poll starts are at least
// interval / eligible-account-count apart, so N accounts settle into N evenly spaced polls per interval).
// Paused, reauth_required and deactivated accounts, and accounts without an access token, are skipped.
// A failed poll backs that account off (initial backoff doubling per consecutive failure, capped); a 401
// also emits unauthorized(), and once the account's access token changes (refreshed) it is polled again at
// once instead of waiting out its backoff.
//
// Time comes from the Clock (monotonic) and is checked by tick(), which a timer calls every tickMs (real
// time); tests with a ManualClock call tick() themselves. A fetch that has not answered within
// requestTimeoutMs is cancelled and counts as a failure. Lives on one thread (the proxy thread); the fetch
// function must report on it.
class UsagePoller : public QObject
{
    Q_OBJECT

public:
    using TargetProvider = std::function<QList<PollTarget>()>;
    using FetchDone = std::function<void(const UsageFetchReply &reply)>;
    using Cancel = std::function<void()>;
    // Starts one request; calls done exactly once, later (never inside the call), unless cancelled first.
    using Fetch = std::function<Cancel(const UpstreamRequest &request, FetchDone done)>;

    static constexpr qint64 kDefaultIntervalMs = 60 * 1000;
    static constexpr qint64 kDefaultInitialBackoffMs = 60 * 1000;
    static constexpr qint64 kDefaultMaxBackoffMs = 30 * 60 * 1000;
    static constexpr qint64 kDefaultRequestTimeoutMs = 30 * 1000;
    static constexpr int kDefaultTickMs = 1000;
    static constexpr qint64 kMaxBodyBytes = 1024 * 1024;

    UsagePoller(const Clock &clock, const QUrl &upstreamBase, Fetch fetch, TargetProvider targets,
                QObject *parent = nullptr);
    // Fetches through the proxy's own upstream client (which must live on this thread and outlive the poller).
    UsagePoller(const Clock &clock, const QUrl &upstreamBase, UpstreamClient *client, TargetProvider targets,
                QObject *parent = nullptr);
    ~UsagePoller() override;

    // A Fetch that runs the request on `client`.
    static Fetch fetchWith(UpstreamClient *client);
    // {upstreamBase}/wham/usage with the account's credentials.
    static UpstreamRequest usageRequest(const QUrl &upstreamBase, const PollTarget &target);
    static bool isSkippedStatus(const QString &status);

    void setIntervalMs(qint64 ms);
    void setBackoff(qint64 initialMs, qint64 maxMs);
    void setRequestTimeoutMs(qint64 ms);
    void setTickMs(int ms);
    qint64 intervalMs() const { return m_intervalMs; }

    // Starts the tick timer and polls the first due account right away.
    void start();
    // Stops the timer and cancels the poll in flight (no signal for it).
    void stop();
    bool isRunning() const { return m_timer.isActive(); }

    // One scheduling step: times out the poll in flight, or starts the next due account's poll.
    void tick();
    // Polls this account at the next tick (ahead of the spacing, still one poll at a time), forgetting its
    // backoff (e.g. after a token refresh the poller could not notice).
    void pollSoon(const QString &accountId);

    bool isPolling() const { return m_inFlight.active; }
    QString pollingAccountId() const { return m_inFlight.accountId; }
    int consecutiveFailures(const QString &accountId) const;
    // Monotonic ms at which the account is due next; -1 when the poller has not seen it.
    qint64 nextDueMs(const QString &accountId) const;
    // Backoff after `failures` consecutive failures: initial * 2^(failures-1), at most the cap.
    qint64 backoffFor(int failures) const;

signals:
    // A poll succeeded: the usage facts (observedAtMs = the wall-clock time of the answer) and the plan
    // ("plus", "pro", ...; empty when the upstream did not say).
    void usagePolled(const QString &accountId, const sy::AccountUsage &usage, const QString &planType);
    // A poll failed (transport, timeout, HTTP error, unusable body). httpStatus 0: no HTTP answer.
    // retryInMs: the backoff now in force for that account. reason never contains a token.
    void pollFailed(const QString &accountId, int httpStatus, const QString &reason, qint64 retryInMs);
    // The upstream refused the access token (HTTP 401); the owner may refresh it. pollFailed() follows.
    void unauthorized(const QString &accountId);

private:
    struct State
    {
        qint64 nextDueMs = 0;
        int failures = 0;
        QByteArray refusedTokenHash; // hash of the access token that got the last 401
        bool urgent = false;         // poll at the next tick, ahead of the spacing
    };
    struct InFlight
    {
        bool active = false;
        quint64 serial = 0;
        QString accountId;
        QByteArray tokenHash;
        qint64 startedMs = 0;
        Cancel cancel;
    };

    void startPoll(const PollTarget &target);
    void finishPoll(quint64 serial, const UsageFetchReply &reply);
    void fail(const QString &accountId, int httpStatus, const QString &reason, bool unauthorizedToken = false);
    static QByteArray tokenHash(const QString &token);

    const Clock &m_clock;
    QUrl m_base;
    Fetch m_fetch;
    TargetProvider m_targets;
    QTimer m_timer;
    QHash<QString, State> m_states;
    InFlight m_inFlight;
    quint64 m_serial = 0;
    qint64 m_lastStartMs = 0;
    bool m_anyStarted = false;
    qint64 m_intervalMs = kDefaultIntervalMs;
    qint64 m_initialBackoffMs = kDefaultInitialBackoffMs;
    qint64 m_maxBackoffMs = kDefaultMaxBackoffMs;
    qint64 m_requestTimeoutMs = kDefaultRequestTimeoutMs;
};

} // namespace sy
