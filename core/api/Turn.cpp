#include "api/Turn.h"

#include "api/RequestScanThread.h"
#include "api/TurnLog.h"
#include "api/UpstreamHeaders.h"
#include "api/translate/ResponseEventType.h"
#include "http/HttpResponse.h"
#include "routing/Cooldown.h"
#include "store/StoreWorker.h"
#include "upstream/UpstreamClient.h"
#include "upstream/egress/EgressSelector.h"
#include "util/Faults.h"
#include "util/Ids.h"
#include "util/LargeBufferPool.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QLoggingCategory>
#include <utility>

Q_LOGGING_CATEGORY(lcTurn, "switchyard.turn")

namespace sy {

namespace {

QString attemptOutcome(const FailureInfo &f)
{
    switch (f.cls) {
    case FailureClass::RateLimited:
        return QStringLiteral("rate_limited");
    case FailureClass::QuotaExceeded:
        return QStringLiteral("quota_exceeded");
    case FailureClass::Transient:
        return QStringLiteral("server_error");
    case FailureClass::AuthExpired:
        return QStringLiteral("auth_failed");
    case FailureClass::RequestError:
        return QStringLiteral("request_error");
    case FailureClass::None:
        break;
    }
    return QStringLiteral("failed");
}

} // namespace

Turn::Turn(const ProxyServices &services, HttpRequestPtr request, HttpResponse *response, const RouteMatch &route,
           QObject *parent)
    : QObject(parent), m_s(services), m_request(std::move(request)), m_response(response), m_route(route),
      m_startedAtMs(services.clock->nowMs()), m_requestId(newRequestId(m_startedAtMs)),
      m_budget(*services.clock, services.config->budgets)
{
    m_deadlineTimer.setSingleShot(true);
    m_deadlineTimer.setTimerType(Qt::PreciseTimer);
    connect(&m_deadlineTimer, &QTimer::timeout, this, &Turn::onDeadline);
    m_keepaliveTimer.setInterval(services.config->budgets.keepaliveIntervalS * 1000);
    connect(&m_keepaliveTimer, &QTimer::timeout, this, &Turn::onKeepalive);
    connect(response, &HttpResponse::clientDisconnected, this, &Turn::onClientGone);
    connect(response, &HttpResponse::drained, this, [this] {
        if (m_call)
            m_call->resume();
    });
    connect(m_s.pool->ledger(), &SlotLedger::ownerLost, this, &Turn::onOwnerLost);
    m_egress = m_s.egress ? m_s.egress->beginRequest() : std::make_unique<EgressRequest>(nullptr, *m_s.clock);
    connect(m_egress.get(), &EgressRequest::budgetExhausted, this, &Turn::onEgressBudgetExhausted);
}

Turn::~Turn()
{
    dropCall();
    dropEarlyCall();
    // A turn that ends before its first event still has its body.
    LargeBufferPool::local().giveBack(std::exchange(m_upstreamBody, QByteArray()));
    releaseSlot();
    if (!m_settled)
        handOverAnchor(); // never settled (a shutdown that did not drain): nothing will write it
}

void Turn::start()
{
    m_marks.begin(m_s.clock, m_s.stages, m_request->receivedAtUs, m_request->completedAtUs);
    m_requestBodyBytes = m_request->wireBodyBytes;
    const bool claiming = claimBeforeScan();
    if (claiming && m_route.route == Route::CodexResponses && m_request->body.size() > kClaimSoonMaxBodyBytes) {
        // A large body goes out while it is scanned (1-2 ms for 10 MiB), as a Codex body that passes the scan is
        // sent: byte for byte. Its last byte waits for the claim, and for the scan, which gives it up if the
        // body is refused or would be changed.
        m_upstreamBody = m_request->body;
        sendEarly();
        m_upstreamBody = QByteArray();
        if (m_s.scanner) {
            // Scanned on the scan thread, while the proxy thread pushes the body upstream as the upstream takes
            // it. Until the result is back the turn has the sink every Codex body gets (a failure meanwhile
            // answers through it), and a claim answered meanwhile waits (onClaimAnswered()).
            m_sink = makeTurnSink(SinkKind::CodexStream, ChatSinkOptions{});
            m_scanPending = true;
            m_marks.scanSubmitted();
            m_busyPoll.release(); // the proxy thread would poll for a millisecond on a CPU the scan needs
            // Answered through the scan thread's own object, not this turn's: a turn settled and deleted
            // meanwhile still gets its booked row's model.
            m_s.scanner->scan(m_request->body, m_s.scanner,
                              [self = QPointer<Turn>(this), store = m_s.store,
                               requestId = m_requestId](std::optional<ResponsesScan> scan) {
                                  if (self)
                                      self->onScanned(std::move(scan));
                                  else
                                      fillBookedModel(store, requestId, scan);
                              });
            return;
        }
    }
    continueStart(prepare(), claiming);
}

void Turn::onScanned(std::optional<ResponsesScan> scan)
{
    m_scanPending = false;
    m_marks.scanAnswered();
    if (m_settled) {
        m_answerWhileScanning.reset(); // settled meanwhile (client gone, shutdown): the settlement releases it
        fillBookedModel(m_s.store, m_requestId, scan);
        return;
    }
    continueStart(prepare(&scan), true);
}

void Turn::continueStart(bool prepared, bool claiming)
{
    // What goes upstream is m_upstreamBody now (for Codex the same bytes, shared); the original is not needed.
    m_request->releaseBody();
    if (m_early && (!prepared || !m_early->sends(m_upstreamBody) || !m_previousResponseId.isEmpty()))
        dropEarlyCall();
    if (!prepared)
        return; // answered; a claim on its way is settled (released) with the turn
    if (!claiming || m_state != State::Claiming) {
        resolveContinuation();
        return;
    }
    if (!m_previousResponseId.isEmpty())
        m_rerouteAfterClaim = true; // its owner decides, not the session's account
    else if (!m_answerWhileScanning)
        sendEarly();      // a small body: now that it is scanned (not once answered: the dispatch or a new claim sends)
    m_busyPoll.acquire(); // the window starts again after a long scan (2-3 ms for 10 MiB)
    if (m_answerWhileScanning) {
        const ClaimAnswer answer = std::exchange(m_answerWhileScanning, std::nullopt).value();
        onClaimAnswered(answer.accountId, answer.outcome, answer.wasWaiting);
    }
}

void Turn::resolveContinuation()
{
    m_state = State::Routing;
    if (!m_turnState.isEmpty())
        m_selection.continuationAccountId = m_s.pool->turnStateAccount(m_turnState);
    if (m_previousResponseId.isEmpty()) {
        route();
        return;
    }
    QPointer<Turn> self(this);
    m_s.pool->lookupAnchor(m_previousResponseId, [self](std::optional<AnchorRecord> anchor) {
        if (!self || self->m_settled)
            return;
        if (!anchor) {
            self->m_selection.continuationOwnerUnknown = true; // a foreign anchor: refused, never forwarded
        } else if (!anchor->sessionKey.isEmpty() && !self->m_sessionKey.isEmpty() &&
                   anchor->sessionKey != self->m_sessionKey) {
            // The anchor belongs to another conversation: continuing it here would splice two histories.
            self->rejectBeforeDispatch(400, "invalid_request_error", "previous_response_not_found",
                                       QStringLiteral("Previous response '%1' belongs to another session; resend the "
                                                      "full conversation without previous_response_id.")
                                           .arg(self->m_previousResponseId));
            return;
        } else {
            self->m_selection.continuationAccountId = anchor->accountId;
            self->m_lineage = anchor->lineage.isEmpty() ? anchor->responseId : anchor->lineage;
        }
        self->route();
    });
}

void Turn::route()
{
    if (m_settled)
        return;
    if (m_routingBeforeScan && (m_s.pool->proxyPaused() || !m_s.store->writable()))
        return; // answered after the scan, with the whole request
    if (m_s.pool->proxyPaused() && m_attempts.isEmpty() && m_state == State::Routing) {
        m_response->setHeader("Retry-After", "30");
        rejectBeforeDispatch(503, "server_error", "proxy_paused",
                             QStringLiteral("Switchyard is paused (resume it from the tray menu); no new turns start "
                                            "until then."));
        return;
    }
    if (!m_s.store->writable()) {
        rejectBeforeDispatch(503, "server_error", "store_unavailable",
                             QStringLiteral("The request log cannot be written (%1); new turns are refused until it "
                                            "can.")
                                 .arg(m_s.store->unwritableReason()));
        return;
    }
    m_selection.affinityAccountId = m_sessionKey.isEmpty() ? QString() : m_s.pool->sessionAccount(m_sessionKey);
    m_selection.pinnedAccountId = m_s.pool->pinnedAccountId();
    m_selection.pinStrict = m_s.pool->pinStrict();
    if (!m_retryAccountId.isEmpty())
        m_selection.affinityAccountId = std::exchange(m_retryAccountId, QString()); // same account, new token

    const AccountPool::Acquisition a = m_s.pool->select(m_selection);
    m_skipped = a.selection.skipped;
    if (a.selection.ok()) {
        m_routeReason = a.selection.reason;
        claimSlot(a.selection.accountId);
        return;
    }
    if (m_routingBeforeScan)
        return;
    if (a.shouldWait) {
        waitAtGate();
        return;
    }
    // Nothing can serve this request.
    if (m_lastFailure.set) {
        giveUp(a.selection.earliestResetMs);
        return;
    }
    const QString code = a.selection.errorCode;
    if (code == QLatin1String("previous_response_owner_unavailable") ||
        m_selection.continuationOwnerUnknown) {
        failBeforeCommit(400, "invalid_request_error", "previous_response_not_found",
                         QStringLiteral("Previous response '%1' belongs to an account that cannot serve now (or is "
                                        "unknown); resend the full conversation without previous_response_id.")
                             .arg(m_previousResponseId),
                         QStringLiteral("rejected"));
        return;
    }
    if (m_s.pool->accountCount() == 0) {
        failBeforeCommit(503, "server_error", "no_accounts",
                         QStringLiteral("No accounts are configured: run 'switchyard accounts import' or "
                                        "'switchyard accounts login'."),
                         QStringLiteral("rejected"));
        return;
    }
    QString message = QStringLiteral("No account can serve this request now");
    if (code == QLatin1String("pinned_account_unavailable"))
        message = QStringLiteral("The strictly pinned account cannot serve now");
    if (a.selection.earliestResetMs) {
        const qint64 seconds = qMax<qint64>(1, (*a.selection.earliestResetMs - m_s.clock->nowMs() + 999) / 1000);
        m_response->setHeader("Retry-After", QByteArray::number(seconds));
        message += QStringLiteral("; the earliest account is available again at %1 (in %2 s)")
                       .arg(isoUtc(*a.selection.earliestResetMs))
                       .arg(seconds);
    }
    m_errorCode = QStringLiteral("rate_limit_exceeded");
    failBeforeCommit(429, "rate_limit_exceeded", "rate_limit_exceeded", message + QLatin1Char('.'),
                     QStringLiteral("rejected"));
}

void Turn::watchForFreeSlots(bool on)
{
    // Only a turn that has waited at the gate listens: a freed slot (one per settled turn) used to call every
    // turn in flight, 256 calls per settlement with 256 streams open, for the few that wait. A turn listens from
    // its first wait until it settles, so one that waits again (after a failover) keeps its place ahead of the
    // turns that began to wait after it.
    if (on && !m_slotWatch)
        m_slotWatch = connect(m_s.pool, &AccountPool::slotFreed, this, &Turn::onSlotFreed);
    else if (!on && m_slotWatch)
        disconnect(std::exchange(m_slotWatch, {}));
}

void Turn::onSlotFreed()
{
    if (m_state == State::GateWait && !m_settled)
        route();
}

void Turn::dispatch(const QString &accountId)
{
    m_state = State::Attempting;
    m_accountId = accountId;
    if (!m_s.pool->ledger()->leaseCurrent(m_requestId) && !SY_FAULT("ignore-owner-epoch")) {
        // This process stalled between the claim and now: the slot may be another replica's already.
        dropEarlyCall();
        onOwnerLost(m_requestId);
        return;
    }
    const AccountPool::Account *account = m_s.pool->account(accountId);
    Q_ASSERT(account);
    const EgressDecision egress = m_egress->nextAttempt(accountId, account->record.alias);
    if (!egress.allowed()) {
        dropEarlyCall();
        egressRefused(accountId, egress);
        return;
    }
    if (!m_sessionKey.isEmpty())
        m_s.pool->bindSession(m_sessionKey, accountId);

    // The account's id names its ChatGPT account (AccountRepository): what was prepared for it still holds.
    m_attemptAccessToken = account->tokens.accessToken;
    // Sent while the claim was on its way, all but its last byte: that byte is all there is left to send.
    UpstreamCall *early = takeEarlyCall(accountId, *account, egress);
    const bool prepared = early || (m_prepared && m_prepared->accountId == accountId);
    UpstreamRequest req;
    if (!early) {
        req = prepared ? std::move(m_prepared->request) : upstreamRequestFor(*account);
        if (prepared)
            req.headers = {upstreamAuthorization(*account)}; // after the prepared head
        else
            req.headers.prepend(upstreamAuthorization(*account));
        req.body = m_upstreamBody;
        req.egress = egress.upstreamEgress();
    }
    m_prepared.reset();
    m_attemptStartMs = m_s.clock->monotonicMs();
    m_budget.beginAttempt();
    m_marks.dispatched(prepared, early != nullptr);
    if (early) {
        m_call = early;
        m_call->releaseTail();
    } else {
        m_call = m_s.upstream->start(req);
    }
    if (m_call->requestWrittenAll())
        m_marks.requestSent(); // at once, not when requestSent() arrives from the loop
    // Recorded from the call, whose pooled connection is keyed by this egress proxy: the one that carries it.
    m_attemptEgress = m_call->egressName().isEmpty() ? std::nullopt : std::optional<QString>(m_call->egressName());
    m_egress->watch(m_call);
    connect(m_call, &UpstreamCall::requestSent, this, &Turn::onRequestSent);
    connect(m_call, &UpstreamCall::headersReceived, this, &Turn::onHeaders);
    // Every event passes here: a direct call rather than a connection, unset where the turn disconnects
    // (letCallFinish(), dropCall(); ~Turn() drops its call). A call let finish outlives the turn; had the unset
    // been forgotten, the listener would still leave it when the turn is destroyed (~UpstreamEventListener).
    m_call->setEventListener(this);
    connect(m_call, &UpstreamCall::bodyReceived, this, &Turn::onBody);
    connect(m_call, &UpstreamCall::finished, this, &Turn::onFinished);
    armDeadline();
}

void Turn::onRequestSent()
{
    m_marks.requestSent();
    m_budget.connected();
    armDeadline();
}

void Turn::onHeaders(int status, const HttpHeaders &headers)
{
    // The head proves the request went out (connected() is a no-op when requestSent already moved us on).
    m_budget.connected();
    m_marks.upstreamHead();
    m_upstreamHeaders = headers;
    for (const auto &h : headers) {
        if (headerNameEquals(h.first, "x-request-id"))
            m_upstreamRequestId = h.second;
    }
    const AccountUsage usage = usageFromHeaders(headers, m_s.clock->nowMs());
    m_s.pool->recordUsage(m_accountId, usage);
    if (status >= 200 && status < 300) {
        for (const auto &h : headers) {
            if (headerNameEquals(h.first, "x-codex-turn-state"))
                m_s.pool->bindTurnState(h.second, m_accountId);
        }
    }
    m_marks.upstreamHeadHandled();
    if (!m_sink->streaming())
        m_busyPoll.release(); // its client's first byte comes with the whole response
}

void Turn::onBody(const QByteArray &body)
{
    // A non-stream answer to a turn is a failure (or an upstream that ignored stream: true).
    if (!m_call)
        return;
    const int status = m_call->statusCode();
    const FailureInfo f = classifyUpstreamFailure(status >= 200 && status < 300 ? 502 : status, body,
                                                  m_upstreamHeaders, m_s.clock->nowMs());
    attemptFailed(attemptOutcome(f), f, status, body);
}

void Turn::onEvent(const SseEvent &event)
{
    if (m_settled || m_sawTerminal)
        return;
    if (!m_marks.firstByteRecorded())
        m_marks.eventArrived();
    const QByteArray &type = event.event;
    const ResponseEventType kind = responseEventType(type);
    QJsonObject data;
    // Only what the sink or the turn reads is parsed: deltas and the done events of a pass-through stream
    // go by as bytes. The turn itself reads errors (failover before the first event, the logged error code)
    // and codex.rate_limits (quota usage).
    const bool needsParse = m_sink->needsEventData(type) || kind == ResponseEventType::Error ||
                            kind == ResponseEventType::Failed || kind == ResponseEventType::RateLimits;
    if (needsParse)
        data = m_sink->eventData(type, event.data);

    if (!m_s.pool->ledger()->leaseCurrent(m_requestId) && !SY_FAULT("ignore-owner-epoch")) {
        // Our lease may have expired (this process stalled): another replica may own the slot by now.
        onOwnerLost(m_requestId);
        return;
    }
    if (!m_forwardedEvent) {
        // The first real event: the response has started on this account; no failover from here on.
        if (kind == ResponseEventType::Error || kind == ResponseEventType::Failed) {
            const FailureInfo f = classifyStreamError(data, m_s.clock->nowMs());
            if (f.cls == FailureClass::RateLimited || f.cls == FailureClass::QuotaExceeded ||
                f.cls == FailureClass::Transient) {
                attemptFailed(attemptOutcome(f), f, 200, event.data);
                return;
            }
        }
        m_forwardedEvent = true;
        // No attempt can follow (no failover, retry or refresh once the client has an event): the body that
        // every attempt sends is no longer needed, and with 256 open streams of 40 KiB bodies it adds up. A large
        // one's memory, written already, takes the next large body (kept only if no one else holds it).
        LargeBufferPool::local().giveBack(std::exchange(m_upstreamBody, QByteArray()));
        m_state = State::Streaming;
        m_budget.firstEvent();
        armDeadline(); // from now on stream_idle and stream_max apply
        m_keepaliveTimer.stop();
        m_s.pool->recordSuccess(m_accountId);
        if (m_sink->streaming())
            commitStream();
    } else {
        m_budget.onEvent();
    }

    if (kind == ResponseEventType::RateLimits) {
        if (auto u = usageFromRateLimitsEvent(data, m_s.clock->nowMs()))
            m_s.pool->recordUsage(m_accountId, *u);
    }
    const QByteArray bytes = m_sink->onEvent(type, event.data, data);
    if (kind == ResponseEventType::Created)
        rememberAnchor();

    if (isTerminalResponseEvent(kind)) {
        m_sawTerminal = true;
        const QString status =
            kind == ResponseEventType::Failed ? QStringLiteral("failed") : QStringLiteral("completed");
        if (status == QLatin1String("failed"))
            m_errorCode = data.value(QLatin1String("response")).toObject().value(QLatin1String("error")).toObject()
                              .value(QLatin1String("code")).toString(QStringLiteral("response_failed"));
        rememberAnchor();
        noteAttempt(status);
        letCallFinish();
        settle(status, [this, bytes] {
            if (!m_response)
                return;
            if (m_sink->streaming()) {
                m_response->write(bytes);
                m_response->end();
            } else if (m_sink->terminalStatus() == QLatin1String("failed")) {
                // A non-streaming client gets the upstream's failure as an HTTP error, not a 200.
                applyResponseHeaders();
                m_response->sendJsonError(502, "server_error", m_errorCode.toLatin1(),
                                          QStringLiteral("The upstream failed the response (%1).").arg(m_errorCode));
            } else {
                applyResponseHeaders();
                const QByteArray answer =
                    m_answer.isNull() ? m_sink->takeFullBody() : std::exchange(m_answer, QByteArray());
                m_response->sendFull(200, m_sink->contentType(), answer);
                m_marks.answerToNonStreamingClient();
            }
        });
        // A non-streaming client's answer is built while the store thread commits the settlement it waits for.
        if (m_state == State::Settling && !m_sink->streaming() && m_response && !m_response->isCommitted() &&
            m_sink->terminalStatus() != QLatin1String("failed"))
            m_answer = m_sink->takeFullBody();
        return;
    }
    if (!bytes.isEmpty()) {
        writeClient(bytes);
        if (m_sink->streaming())
            m_marks.firstByteToStreamingClient(); // only the first time counts
        m_busyPoll.release();
    }
}

void Turn::onFinished(UpstreamCall::Outcome outcome, const QString &detail)
{
    if (m_settled || m_sawTerminal)
        return;
    m_call = nullptr;
    switch (outcome) {
    case UpstreamCall::Outcome::Aborted:
        return;
    case UpstreamCall::Outcome::ConnectionFailed: {
        FailureInfo f;
        f.cls = FailureClass::Transient;
        f.code = QStringLiteral("connect_failed");
        f.message = detail;
        attemptFailed(QStringLiteral("connect_failed"), f, 0, {});
        return;
    }
    case UpstreamCall::Outcome::Completed:
    case UpstreamCall::Outcome::ConnectionLost:
        break;
    }
    // The upstream ended without a terminal event.
    if (!m_forwardedEvent) {
        FailureInfo f;
        f.cls = FailureClass::Transient;
        f.code = QStringLiteral("stream_lost");
        f.message = detail;
        attemptFailed(QStringLiteral("stream_lost"), f, 0, {});
        return;
    }
    noteAttempt(QStringLiteral("stream_lost"));
    fail(QStringLiteral("failed"), QString(), QStringLiteral("upstream_stream_lost"),
         QStringLiteral("The upstream connection ended before the response completed."));
}

void Turn::onKeepalive()
{
    if (m_settled || m_forwardedEvent || !m_sink->streaming())
        return;
    if (!m_response->isCommitted())
        commitStream();
    writeClient(m_sink->keepaliveFrame());
}

void Turn::letCallFinish()
{
    // After the terminal event the rest of the upstream body is a few bytes: read it to the end so the
    // keep-alive connection can serve the next turn, but never wait for it for long.
    if (!m_call)
        return;
    UpstreamCall *call = m_call;
    m_call = nullptr;
    disconnect(call, nullptr, this, nullptr);
    call->setEventListener(nullptr);
    call->resume();
    QTimer::singleShot(5000, call, [call] { call->abort(QStringLiteral("upstream did not close after the terminal event")); });
}

void Turn::dropCall()
{
    if (!m_call)
        return;
    UpstreamCall *call = m_call;
    m_call = nullptr;
    disconnect(call, nullptr, this, nullptr);
    call->setEventListener(nullptr);
    call->abort();
}

void Turn::releaseSlot()
{
    if (!m_holdingSlot)
        return;
    m_holdingSlot = false;
    m_s.pool->ledger()->releaseForFailover(m_requestId);
}

void Turn::armDeadline()
{
    const RequestBudget::Deadline d = m_budget.nextDeadline();
    if (d.isNone()) {
        m_deadlineTimer.stop();
        return;
    }
    m_deadlineTimer.start(int(qBound<qint64>(0, d.atMonotonicMs - m_s.clock->monotonicMs(), 24LL * 3600 * 1000)));
}

void Turn::applyResponseHeaders()
{
    if (!m_response || m_response->isCommitted())
        return;
    m_response->setHeader("x-request-id", m_requestId.toLatin1());
    if (!m_accountId.isEmpty()) {
        if (const AccountPool::Account *a = m_s.pool->account(m_accountId))
            m_response->setHeader("x-switchyard-account", a->record.displayName().toUtf8());
    }
    for (const auto &h : m_upstreamHeaders) {
        // Compared in place: three toLower() copies of every upstream header name were most of the 16,000
        // instructions this took in front of a stream's first byte.
        if (headerNameEquals(h.first, "x-codex-turn-state") || headerNameStartsWith(h.first, "x-codex-primary") ||
            headerNameStartsWith(h.first, "x-codex-secondary") || headerNameStartsWith(h.first, "x-codex-credits"))
            m_response->setHeader(h.first, h.second);
    }
}

void Turn::commitStream()
{
    if (!m_response || m_response->isCommitted())
        return;
    applyResponseHeaders();
    m_response->beginStream(200, m_sink->contentType());
}

void Turn::writeClient(const QByteArray &bytes)
{
    if (!m_response || bytes.isEmpty())
        return;
    m_response->write(bytes);
    if (m_response && m_response->congested() && m_call)
        m_call->pause();
}

} // namespace sy
