#pragma once

#include "api/AccountPool.h"
#include "api/ProxyServices.h"
#include "api/RouteTable.h"
#include "api/TurnSink.h"
#include "api/TurnStages.h"
#include "api/translate/RequestScan.h"
#include "http/HttpRequest.h"
#include "upstream/StageBudget.h"
#include "upstream/UpstreamCall.h"
#include "upstream/egress/EgressRequest.h"
#include "util/BusyPoll.h"

#include <QJsonObject>
#include <QObject>
#include <QPointer>
#include <QTimer>
#include <memory>

namespace sy {

class HttpResponse;
class StoreWorker;
class UpstreamClient;


// One attempt of a turn on one account, as the request log shows it.
struct TurnAttempt
{
    QString accountId;
    QString outcome;
    qint64 elapsedMs = 0;
    std::optional<QString> egressProxy; // the egress proxy that carried it; nullopt = direct
};

// One model turn from a downstream request to its settlement: parse, route (continuation > affinity > pin >
// strategy), wait at the gate for a slot, call the upstream with the chosen account's credentials, fail over
// while nothing has been forwarded, stream through the route's sink, and settle exactly once: the request-log
// row is committed before the terminal event is flushed to the client. Lives on the proxy thread and deletes
// itself after it has settled.
class Turn : public QObject, private UpstreamEventListener
{
    Q_OBJECT

public:
    Turn(const ProxyServices &services, HttpRequestPtr request, HttpResponse *response, const RouteMatch &route,
         QObject *parent = nullptr);
    ~Turn() override;

    void start();
    // Ends a turn that outlived the shutdown drain: the client gets an explicit error, the log a row.
    void cancelForShutdown();

    QString requestId() const { return m_requestId; }
    // Live view for /api/status: stage, account, remaining budgets.
    QJsonObject statusJson() const;

signals:
    void settled();

private:
    enum class State { Preparing, Routing, GateWait, Claiming, Attempting, Streaming, Settling, Done };

    // What the body says: `scanned`, the scan thread's result for a Codex body (null: scanned here).
    bool prepare(const std::optional<ResponsesScan> *scanned = nullptr);
    bool prepareWholeBody(); // prepare() of a body parsed whole (QJsonDocument): translated, sanitized
    // start() after prepare(), or after the scan thread's result came back (onScanned()).
    void continueStart(bool prepared, bool claiming);
    void onScanned(std::optional<ResponsesScan> scan);
    void readSessionKey(const QString &promptCacheKey);
    // A Codex, chat-completions or /v1/responses turn whose session key comes in its headers is routed before its
    // body is scanned (Codex) or parsed whole (prepareWholeBody()), and its slot claimed: the claim's round trip to
    // the store thread overlaps that work. Only a claim that can start at once starts; a refusal or a wait at
    // the gate is decided after it, with the whole request. True when a claim is on its way.
    bool claimBeforeScan();
    // The scan found what the early route did not know (a continuation under an escaped key): its claim, once
    // answered, is given up and the turn routed again.
    void rerouteAfterEarlyClaim(const QString &accountId, const ClaimOutcome &outcome);
    void resolveContinuation();
    void route();
    void claimSlot(const QString &accountId);
    // The claim's answer, as it comes (or, for one that came while the body was scanned on the scan thread,
    // once the scan's result is in).
    void onClaimAnswered(const QString &accountId, const ClaimOutcome &outcome, bool wasWaiting);
    void onClaimed(const QString &accountId, const ClaimOutcome &outcome);
    bool waitAtGate();
    void onOwnerLost(const QString &requestId);
    void dispatch(const QString &accountId);
    // While a claim is on its way the proxy thread has nothing else to do for this turn: what dispatch() would
    // build for that account (URL, headers, the head, all but the access token) is built then, and used if the
    // claim is won on that account.
    void prepareDispatch(const QString &accountId);
    // The prepared request is also sent then, but for its body's last byte (UpstreamRequest::holdLastByte):
    // the upstream cannot act on it, and the dispatch sends only that byte. A claim that is not won aborts it
    // (dropEarlyCall()). Only for a body already known and a direct route (an egress decision counts an attempt).
    void sendEarly();
    // The early call, if it still runs and is what dispatch() would send now (the account won, its token, these
    // body bytes, no egress proxy); otherwise aborted. Null: send anew.
    UpstreamCall *takeEarlyCall(const QString &accountId, const AccountPool::Account &account,
                                const EgressDecision &egress);
    void dropEarlyCall();
    UpstreamRequest upstreamRequestFor(const AccountPool::Account &account) const;
    void onRequestSent();
    void onHeaders(int status, const HttpHeaders &headers);
    void onEvent(const SseEvent &event);
    void upstreamEvent(const SseEvent &event) override { onEvent(event); }
    void onBody(const QByteArray &body);
    void onFinished(UpstreamCall::Outcome outcome, const QString &detail);
    void onDeadline();
    void onKeepalive();
    void onClientGone();
    // Listens to AccountPool::slotFreed from the turn's first wait at the gate until it settles.
    void watchForFreeSlots(bool on);
    void onSlotFreed();
    void onEgressBudgetExhausted();

    void attemptFailed(const QString &outcome, const FailureInfo &failure, int upstreamStatus,
                       const QByteArray &upstreamBody, const QString &killStage = {});
    // Another account, if the request may still move; else giveUp().
    void failOver(const QString &failedAccount);
    // After a 401: refresh the account's tokens once per request, then retry it (or fail over).
    void refreshThenRetry(const QString &failedAccount, const FailureInfo &failure);
    // No account is left to fail over to: answer with what the last attempt ran into.
    void giveUp(std::optional<qint64> earliestResetMs);
    // The account's egress pool cannot carry an attempt: it never goes direct instead; another account may.
    void egressRefused(const QString &accountId, const EgressDecision &decision);
    // Appends the current attempt, with the egress proxy that carried it, to the request log's attempts.
    void noteAttempt(const QString &outcome);
    void dropCall();
    void letCallFinish();
    void releaseSlot();
    void armDeadline();
    void commitStream();
    void writeClient(const QByteArray &bytes);
    void rejectBeforeDispatch(int status, const QByteArray &type, const QByteArray &code, const QString &message);
    void failBeforeCommit(int status, const QByteArray &type, const QByteArray &code, const QString &message,
                          const QString &logStatus);
    void fail(const QString &logStatus, const QString &killStage, const QString &code, const QString &message);
    void settle(const QString &status, std::function<void()> deliver);
    void deliverOwnerLost();
    void rememberAnchor();
    void handOverAnchor(); // m_anchorToWrite's write is queued (or will never be): no longer the pool's to write
    void applyResponseHeaders();
    void finishTurn();

    ProxyServices m_s;
    HttpRequestPtr m_request;
    QPointer<HttpResponse> m_response;
    RouteMatch m_route;
    qint64 m_startedAtMs = 0;
    QString m_requestId; // from m_startedAtMs
    State m_state = State::Preparing;
    RequestBudget m_budget;
    TurnStageMarks m_marks; // stage latencies for /api/status (TurnStages.h)
    // From the claim to the first byte the client gets: the proxy thread polls for the answers it waits on
    // (the claim, the upstream head and first event) instead of sleeping (util/BusyPoll.h).
    BusyPollHold m_busyPoll;

    // Parsed request
    QByteArray m_upstreamBody;
    qint64 m_requestBodyBytes = 0; // the client's body as sent (before decoding), as its Content-Length counts it
    QString m_model;
    QString m_sessionKey;
    QString m_previousResponseId;
    QString m_lineage; // the conversation this turn continues (first response id of the chain), if any
    QByteArray m_turnState;
    bool m_clientWantsStream = true;
    std::unique_ptr<TurnSink> m_sink;
    SelectionRequest m_selection;
    QString m_routeReason;
    QList<QPair<QString, QString>> m_skipped;

    // Current attempt
    QPointer<UpstreamCall> m_call;
    QString m_accountId;  // the account holding our slot (and the one booked)
    bool m_holdingSlot = false;   // the ledger holds a claim of ours (released fenced, or settled, exactly once)
    bool m_everClaimed = false;   // some claim was made: the settlement must settle it
    std::optional<AnchorRecord> m_anchorToWrite; // the served response's anchor, for the settlement to write
    QMetaObject::Connection m_slotWatch;         // to AccountPool::slotFreed, from the first gate wait on
    int m_claimConflicts = 0;     // compare-and-set losses of this turn (a stale snapshot)
    bool m_routingBeforeScan = false; // route() may only claim (claimBeforeScan())
    bool m_rerouteAfterClaim = false; // the claim on its way was made before the scan and must be given up
    QString m_attemptAccessToken; // the access token the current attempt was sent with (never logged)
    struct PreparedDispatch
    {
        QString accountId;
        UpstreamRequest request; // without its access token
    };
    std::optional<PreparedDispatch> m_prepared; // prepareDispatch()
    struct EarlyCall
    {
        QPointer<UpstreamCall> call;
        QString accountId;
        QString accessToken;
        const char *body = nullptr; // the bytes it sends (m_upstreamBody's then)
        qsizetype bodySize = 0;
        // Whether it sends these very bytes (the same buffer, not merely equal contents).
        bool sends(const QByteArray &bytes) const { return body == bytes.constData() && bodySize == bytes.size(); }
    };
    std::optional<EarlyCall> m_early; // sendEarly()
    quint64 m_claimsSubmitted = 0;
    // The body is being scanned on the scan thread (start()): a claim answered meanwhile waits for the result.
    bool m_scanPending = false;
    struct ClaimAnswer
    {
        QString accountId;
        ClaimOutcome outcome;
        bool wasWaiting = false;
    };
    std::optional<ClaimAnswer> m_answerWhileScanning;
    bool m_refreshTried = false;  // a 401 already led to a token refresh in this request
    QString m_retryAccountId;     // after a successful refresh: the account to try again first
    qint64 m_attemptStartMs = 0;
    HttpHeaders m_upstreamHeaders;
    QByteArray m_upstreamRequestId;
    bool m_forwardedEvent = false; // an upstream event reached the client: no more failover
    bool m_sawTerminal = false;
    QByteArray m_answer; // a non-streaming client's answer, built while its settlement commits
    QList<TurnAttempt> m_attempts;
    std::unique_ptr<EgressRequest> m_egress; // this request's egress budgets and blocked_by reasons
    std::optional<QString> m_attemptEgress;  // egress proxy of the current attempt (from its call)
    struct LastFailure
    {
        QString outcome;
        FailureInfo info;
        QString killStage;
        bool set = false;
    } m_lastFailure;

    QTimer m_deadlineTimer;
    QTimer m_keepaliveTimer;
    QString m_killStage;
    QString m_errorCode;
    bool m_settled = false;
};

} // namespace sy
