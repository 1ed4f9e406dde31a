#include "api/Turn.h"

#include "api/TurnLog.h"
#include "http/HttpResponse.h"
#include "routing/Cooldown.h"
#include "store/StoreWorker.h"
#include "util/Ids.h"

#include <QJsonArray>
#include <QLoggingCategory>

Q_DECLARE_LOGGING_CATEGORY(lcTurn)

// How a turn ends: failed attempts, budget kills, client disconnects, and the one settlement that books it.
namespace sy {

void Turn::attemptFailed(const QString &outcome, const FailureInfo &failure, int upstreamStatus,
                         const QByteArray &upstreamBodyRef, const QString &killStage)
{
    // A copy: the reference may point into the call, which dropCall() clears.
    const QByteArray upstreamBody = upstreamBodyRef;
    dropCall();
    // Through an egress proxy a connection that never came up is the proxy's failure, not the account's.
    const QString recorded = m_egress->attemptFailed(outcome);
    const bool egressFailure = EgressRequest::isEgressFailure(recorded);
    noteAttempt(recorded);
    m_budget.endAttempt();
    const QString failedAccount = m_accountId;
    // A 401 may only mean the access token expired: refresh once before penalising the account.
    const bool refresh = failure.cls == FailureClass::AuthExpired && !m_refreshTried && !m_forwardedEvent &&
                         m_budget.expiredStage().isEmpty();
    if (penalisesAccount(failure.cls) && !refresh && !egressFailure)
        m_s.pool->recordFailure(failedAccount, failure);
    releaseSlot();

    if (failure.cls == FailureClass::RequestError) {
        // The request's own fault: pass the upstream's answer through, never penalise or fail over.
        m_errorCode = failure.code.isEmpty() ? QStringLiteral("upstream_rejected") : failure.code;
        if (m_response && !m_response->isCommitted()) {
            applyResponseHeaders();
            const QByteArray body = upstreamBody.isEmpty()
                                        ? HttpResponse::jsonErrorBody("invalid_request_error", "upstream_rejected",
                                                                      failure.message)
                                        : upstreamBody;
            settle(QStringLiteral("failed"), [this, upstreamStatus, body] {
                if (m_response)
                    m_response->sendFull(upstreamStatus > 0 ? upstreamStatus : 400, "application/json", body);
            });
        } else {
            fail(QStringLiteral("failed"), QString(), m_errorCode, failure.message);
        }
        return;
    }
    FailureInfo lastFailure = failure;
    if (egressFailure)
        lastFailure.code = recorded;
    m_lastFailure = {recorded, lastFailure, killStage, true};
    if (refresh) {
        refreshThenRetry(failedAccount, failure);
        return;
    }
    if (egressFailure && !m_forwardedEvent && m_budget.expiredStage().isEmpty()) {
        // The same account may go on through the pool's next proxy (the egress budget decides how long).
        m_retryAccountId = failedAccount;
        m_state = State::Routing;
        route();
        return;
    }
    failOver(failedAccount);
}

void Turn::egressRefused(const QString &accountId, const EgressDecision &decision)
{
    FailureInfo f;
    f.cls = FailureClass::None;
    f.code = decision.reason;
    f.message = decision.detail;
    m_lastFailure = {decision.reason, f,
                     decision.reason == blocked::budgetExhausted ? QString(stage::egress) : QString(), true};
    releaseSlot();
    failOver(accountId);
}

void Turn::onEgressBudgetExhausted()
{
    if (m_settled || !m_call || m_forwardedEvent)
        return;
    FailureInfo f;
    f.cls = FailureClass::Transient;
    f.code = egress_outcome::egressTimeout;
    f.message = QStringLiteral("setting up connections through the egress proxies used up the egress budget");
    attemptFailed(f.code, f, 0, {}, stage::egress);
}

void Turn::noteAttempt(const QString &outcome)
{
    m_attempts.append({m_accountId, outcome, m_s.clock->monotonicMs() - m_attemptStartMs, m_attemptEgress});
}

void Turn::failOver(const QString &failedAccount)
{
    // Fail over while nothing has reached the client; a continuation stays on its owner.
    if (!m_forwardedEvent && m_selection.continuationAccountId.isEmpty() && m_budget.expiredStage().isEmpty()) {
        m_selection.excluded.insert(failedAccount);
        m_state = State::Routing;
        route();
        return;
    }
    giveUp({});
}

void Turn::refreshThenRetry(const QString &failedAccount, const FailureInfo &failure)
{
    m_refreshTried = true;
    m_state = State::Routing;
    QPointer<Turn> self(this);
    m_s.pool->refreshTokens(
        failedAccount,
        [self, failedAccount, failure](bool ok) {
            if (!self || self->m_settled)
                return;
            if (ok && self->m_budget.expiredStage().isEmpty()) {
                self->m_retryAccountId = failedAccount;
                self->route();
                return;
            }
            // A refresh the account's egress pool could not carry: the request says so in its blocked_by.
            if (const QString egress = self->m_s.pool->refreshEgressReason(failedAccount); !ok && !egress.isEmpty())
                self->m_egress->noteReason(egress);
            self->m_s.pool->recordFailure(failedAccount, failure);
            self->failOver(failedAccount);
        },
        m_attemptAccessToken);
}

void Turn::giveUp(std::optional<qint64> earliestResetMs)
{
    m_egress->noteGaveUp(!m_attempts.isEmpty(), !m_budget.expiredStage().isEmpty());
    const FailureInfo &failure = m_lastFailure.info;
    m_errorCode = failure.code.isEmpty() ? m_lastFailure.outcome : failure.code;
    const bool limited = failure.cls == FailureClass::RateLimited || failure.cls == FailureClass::QuotaExceeded;
    if (limited) {
        // Never pass usage_limit_reached through: Codex treats it as fatal. Say when to come back instead.
        const std::optional<qint64> resetAt = earliestResetMs ? earliestResetMs : failure.retryAtMs;
        QString message = QStringLiteral("Every account that could serve this request is rate limited");
        if (resetAt && m_response && !m_response->isCommitted()) {
            const qint64 s = qMax<qint64>(1, (*resetAt - m_s.clock->nowMs() + 999) / 1000);
            m_response->setHeader("Retry-After", QByteArray::number(s));
            message += QStringLiteral("; the earliest is available again at %1 (in %2 s)").arg(isoUtc(*resetAt)).arg(s);
        }
        failBeforeCommit(429, "rate_limit_exceeded", "rate_limit_exceeded", message + QLatin1Char('.'),
                         QStringLiteral("failed"));
        return;
    }
    if (!m_lastFailure.killStage.isEmpty()) {
        fail(QStringLiteral("timed_out"), m_lastFailure.killStage, m_lastFailure.killStage + QStringLiteral("_timeout"),
             QStringLiteral("The %1 budget ran out on every account tried.").arg(m_lastFailure.killStage));
        return;
    }
    fail(QStringLiteral("failed"), QString(), QStringLiteral("upstream_unavailable"),
         QStringLiteral("The upstream failed (%1): %2").arg(m_lastFailure.outcome, failure.message));
}

void Turn::onDeadline()
{
    if (m_settled)
        return;
    const QString stage = m_budget.expiredStage();
    if (stage.isEmpty()) {
        armDeadline(); // the deadline moved (stream_idle reset by events): wait for the new one
        return;
    }
    if (m_state == State::GateWait) {
        m_killStage = stage;
        m_budget.leaveGateWait();
        if (m_response && !m_response->isCommitted())
            m_response->setHeader("Retry-After", QByteArray::number(qMax(1, m_s.config->budgets.keepaliveIntervalS / 2)));
        failBeforeCommit(stage == stage::gateWait ? 503 : 504, "server_error",
                         stage == stage::gateWait ? "proxy_overloaded" : "request_timeout",
                         stage == stage::gateWait
                             ? QStringLiteral("Every account's slots stayed busy for %1 s (gate_wait); retry shortly.")
                                   .arg(m_s.config->budgets.gateWaitS)
                             : QStringLiteral("The %1 budget ran out while waiting for a slot.").arg(stage),
                         QStringLiteral("timed_out"));
        return;
    }
    if (!m_forwardedEvent && (stage == stage::connect || stage == stage::preResponse)) {
        // This attempt's own budget: another account may still answer in time.
        FailureInfo f;
        f.cls = FailureClass::Transient;
        f.code = stage + QStringLiteral("_timeout");
        f.message = QStringLiteral("no answer within the %1 budget").arg(stage);
        attemptFailed(f.code, f, 0, {}, stage);
        return;
    }
    if (m_call)
        noteAttempt(stage + QStringLiteral("_timeout"));
    dropCall();
    fail(QStringLiteral("timed_out"), stage, stage + QStringLiteral("_timeout"),
         QStringLiteral("The %1 budget ran out.").arg(stage));
}

void Turn::onClientGone()
{
    if (m_settled)
        return;
    if (m_call)
        noteAttempt(QStringLiteral("cancelled"));
    dropCall();
    m_errorCode = QStringLiteral("client_disconnected");
    settle(QStringLiteral("cancelled"), {});
}

void Turn::cancelForShutdown()
{
    // The drain ran out of time: end the turn the way a client can understand (an error before commit, error
    // + terminal event after) and book it, rather than vanish when the proxy thread stops.
    if (m_settled)
        return;
    if (m_call)
        noteAttempt(QStringLiteral("cancelled"));
    dropCall();
    m_errorCode = QStringLiteral("shutdown");
    if (m_response && !m_response->isCommitted()) {
        failBeforeCommit(503, "server_error", "shutdown",
                         QStringLiteral("Switchyard shut down before this turn finished."), QStringLiteral("cancelled"));
        return;
    }
    fail(QStringLiteral("cancelled"), QString(), QStringLiteral("shutdown"),
         QStringLiteral("Switchyard shut down before this turn finished."));
}

void Turn::rejectBeforeDispatch(int status, const QByteArray &type, const QByteArray &code, const QString &message)
{
    m_errorCode = QString::fromLatin1(code);
    failBeforeCommit(status, type, code, message, QStringLiteral("rejected"));
}

void Turn::failBeforeCommit(int status, const QByteArray &type, const QByteArray &code, const QString &message,
                            const QString &logStatus)
{
    if (m_errorCode.isEmpty())
        m_errorCode = QString::fromLatin1(code);
    dropCall();
    if (m_response && m_response->isCommitted()) {
        fail(logStatus, m_killStage, QString::fromLatin1(code), message);
        return;
    }
    applyResponseHeaders();
    settle(logStatus, [this, status, type, code, message] {
        if (m_response)
            m_response->sendJsonError(status, type, code, message);
    });
}

void Turn::fail(const QString &logStatus, const QString &killStage, const QString &code, const QString &message)
{
    dropCall();
    m_killStage = killStage;
    if (m_errorCode.isEmpty() || m_errorCode == QLatin1String("upstream_unavailable"))
        m_errorCode = code;
    if (m_response && !m_response->isCommitted() && !m_sink->streaming()) {
        const int status = logStatus == QLatin1String("timed_out") ? 504 : 502;
        applyResponseHeaders();
        settle(logStatus, [this, status, code, message] {
            if (m_response)
                m_response->sendJsonError(status, "server_error", code.toLatin1(), message);
        });
        return;
    }
    if (m_response && !m_response->isCommitted()) {
        if (!m_forwardedEvent) {
            // Nothing streamed yet: an HTTP error is clearer than an empty stream.
            const int status = logStatus == QLatin1String("timed_out") ? 504 : 502;
            applyResponseHeaders();
            settle(logStatus, [this, status, code, message] {
                if (m_response)
                    m_response->sendJsonError(status, "server_error", code.toLatin1(), message);
            });
            return;
        }
        commitStream();
    }
    // After commit: an explicit error and a terminal event, never a silent close.
    const QByteArray frames = m_sink->failureFrames(code, message);
    settle(logStatus, [this, frames] {
        if (!m_response)
            return;
        m_response->write(frames);
        m_response->end();
    });
}

void Turn::settle(const QString &status, std::function<void()> deliver)
{
    if (m_settled)
        return;
    m_settled = true;
    m_state = State::Settling;
    watchForFreeSlots(false);
    m_deadlineTimer.stop();
    m_keepaliveTimer.stop();
    dropCall();
    dropEarlyCall(); // never dispatched now: its connection goes at once, not with the turn
    // The slot stays held until the settlement row is durable (the model's Inv5/Inv9 ordering): no other
    // turn takes it while this one is still settling.
    m_budget.finish();

    auto opt = [](const QString &v) { return v.isEmpty() ? std::nullopt : std::optional<QString>(v); };
    RequestLogRecord e;
    e.requestId = m_requestId;
    e.startedAtMs = m_startedAtMs;
    e.route = QString::fromLatin1(m_route.name);
    e.model = opt(m_model);
    e.sessionKey = opt(m_sessionKey);
    e.accountId = opt(m_accountId);
    e.status = status;
    e.killStage = opt(m_killStage);
    e.errorCode = status == QLatin1String("completed") ? std::nullopt : opt(m_errorCode);
    e.upstreamRequestId = opt(QString::fromLatin1(m_upstreamRequestId));
    for (const TurnAttempt &a : m_attempts)
        e.attempts.append({a.accountId, a.egressProxy, a.outcome, a.elapsedMs});
    if (status != QLatin1String("completed")) {
        if (status == QLatin1String("timed_out"))
            m_egress->noteReason(blocked::budgetExhausted);
        e.blockedBy = m_egress->blockedBy(); // distinct and sorted
    }
    e.latency = toLogLatency(m_budget.latencies());
    e.tokens = toLogTokens(m_sink ? m_sink->usage() : TokenUsage{});
    if (const AccountPool::Account *a = m_accountId.isEmpty() ? nullptr : m_s.pool->account(m_accountId)) {
        e.accountAlias = a->record.alias;
        e.chatgptAccountId = a->record.chatgptAccountId;
    }
    if (status != QLatin1String("completed") && status != QLatin1String("cancelled"))
        qCInfo(lcTurn).noquote() << m_requestId << e.route << status << m_errorCode << m_killStage;
    m_s.pool->ledger()->gate().finish(m_requestId);
    Settlement settlement;
    settlement.settleClaim = m_everClaimed;
    settlement.replica = m_s.pool->ledger()->identity();
    settlement.responseId = m_sink ? m_sink->responseId() : QString();
    settlement.nowMs = m_s.clock->nowMs();
    settlement.anchor = m_anchorToWrite;
    settlement.nextClaimSoon = m_requestBodyBytes <= kClaimSoonMaxBodyBytes;
    QPointer<Turn> self(this);
    m_marks.settleSubmitted();
    m_busyPoll.release();
    writeRequestLog(m_s.store, e, settlement, this, [self, deliver, status](bool ok, const SettleOutcome &outcome) {
        // Delivered even when the row could not be written: the turn is over either way, and the store's
        // writability already refuses new turns.
        if (!self)
            return;
        self->m_marks.settled();
        self->m_holdingSlot = false; // settled and released by the transaction (or taken over by a reclaim)
        self->m_s.pool->ledger()->settled(self->m_requestId, outcome);
        if (ok && outcome.ownerLost && status == QLatin1String("completed")) {
            // Another replica owns the slot now: this turn must not act as its owner, so the client gets an
            // error instead of a completion it could continue from.
            self->deliverOwnerLost();
        } else if (deliver) {
            deliver();
        }
        self->finishTurn();
    });
    handOverAnchor(); // queued: any later store job runs after it
}

void Turn::deliverOwnerLost()
{
    if (!m_response)
        return;
    const QString message = QStringLiteral("This turn's owner slot was taken over before it could settle; retry.");
    if (m_response->isCommitted()) {
        m_response->write(m_sink->failureFrames(QStringLiteral("owner_lost"), message));
        m_response->end();
    } else {
        m_response->sendJsonError(502, "server_error", "owner_lost", message);
    }
}

void Turn::finishTurn()
{
    m_state = State::Done;
    emit settled();
    deleteLater();
}

QJsonObject Turn::statusJson() const
{
    static const char *const names[] = {"preparing", "routing", "gate_wait", "claiming", "pre_response",
                                        "streaming", "settling", "done"};
    const RequestBudget::Snapshot snap = m_budget.snapshot();
    QJsonObject remaining;
    for (const auto &r : snap.remaining)
        remaining.insert(r.stage, r.ms);
    const AccountPool::Account *a = m_accountId.isEmpty() ? nullptr : m_s.pool->account(m_accountId);
    return QJsonObject{
        {QStringLiteral("request_id"), m_requestId},
        {QStringLiteral("route"), QString::fromLatin1(m_route.name)},
        {QStringLiteral("model"), m_model},
        {QStringLiteral("stage"), m_state == State::Attempting ? snap.phase : QString::fromLatin1(names[int(m_state)])},
        {QStringLiteral("account_id"), m_accountId.isEmpty() ? QJsonValue() : QJsonValue(m_accountId)},
        {QStringLiteral("account_alias"),
         a && a->record.alias ? QJsonValue(*a->record.alias) : QJsonValue(QJsonValue::Null)},
        {QStringLiteral("started_at"), isoUtc(m_startedAtMs)},
        {QStringLiteral("elapsed_ms"), snap.elapsedMs},
        {QStringLiteral("next_deadline"), snap.next.stage},
        {QStringLiteral("remaining_ms"), remaining},
        {QStringLiteral("attempts"), int(m_attempts.size()) + (m_call ? 1 : 0)},
    };
}

} // namespace sy
