#include "api/Turn.h"
#include "http/HttpResponse.h"
#include "util/Faults.h"

#include <cstring>
#include <utility>

// The ownership side of a turn (docs/OWNERSHIP.md): waiting at the admission gate, claiming an owner slot by
// compare-and-set, losing it, and the continuity anchor a served response leaves behind.
namespace sy {

namespace {

// SWITCHYARD_CLAIM_BEFORE_PARSE=0: chat completions and /v1/responses claim only once their body is parsed, as
// before session 36 (for A/B runs, bench/README.md).
bool claimBeforeParseWanted()
{
    static const bool wanted = qEnvironmentVariable("SWITCHYARD_CLAIM_BEFORE_PARSE") != QLatin1String("0");
    return wanted;
}

} // namespace

bool Turn::waitAtGate()
{
    if (m_state == State::GateWait)
        return true;
    // A continuation waits for its owner's slots; anything else for any account's.
    if (!m_s.pool->ledger()->gate().enqueue(m_requestId, m_selection.continuationAccountId)) {
        m_response->setHeader("Retry-After", QByteArray::number(qMax(1, m_s.config->budgets.keepaliveIntervalS)));
        m_errorCode = QStringLiteral("proxy_overloaded");
        failBeforeCommit(503, "server_error", "proxy_overloaded",
                         QStringLiteral("Too many turns are waiting for a slot; retry shortly."),
                         QStringLiteral("rejected"));
        return false;
    }
    m_state = State::GateWait;
    m_marks.waitedAtGate();
    m_busyPoll.release(); // a wait for a free slot may take seconds
    watchForFreeSlots(true);
    m_budget.enterGateWait();
    armDeadline();
    if (m_sink->streaming())
        m_keepaliveTimer.start();
    return true;
}

void Turn::claimSlot(const QString &accountId)
{
    const bool wasWaiting = m_state == State::GateWait;
    m_state = State::Claiming;
    SlotLedger::ClaimRequest req;
    req.requestId = m_requestId;
    req.accountId = accountId;
    req.slotTotal = m_s.pool->slotTotal(accountId);
    req.route = QString::fromLatin1(m_route.name);
    req.startedAtMs = m_startedAtMs;
    req.previousResponseId = m_previousResponseId;
    m_everClaimed = true;
    m_marks.claimSubmitted();
    m_busyPoll.acquire();
    QPointer<Turn> self(this);
    const quint64 claimNo = ++m_claimsSubmitted;
    m_s.pool->claim(req, [self, accountId, wasWaiting](const ClaimOutcome &outcome) {
        if (!self)
            return;
        self->m_marks.claimAnswered(outcome.kind == ClaimOutcome::Kind::Claimed, outcome.storeStartUs,
                                    outcome.storeEndUs);
        if (outcome.kind != ClaimOutcome::Kind::Claimed || self->m_settled || self->m_rerouteAfterClaim)
            self->dropEarlyCall(); // never takes its last byte
        if (self->m_settled)
            return; // the settlement (queued after this claim on the store thread) settles and releases it
        if (self->m_scanPending) {
            // The scan decides first whether the body goes at all, and where (Turn::continueStart()).
            self->m_answerWhileScanning = ClaimAnswer{accountId, outcome, wasWaiting};
            return;
        }
        self->onClaimAnswered(accountId, outcome, wasWaiting);
    });
    // Unless the claim was refused at once (and another one may be on its way now).
    if (m_claimsSubmitted == claimNo && m_state == State::Claiming) {
        prepareDispatch(accountId);
        sendEarly(); // once the body is known (a claim before the scan: start() sends it)
    }
}

void Turn::onClaimAnswered(const QString &accountId, const ClaimOutcome &outcome, bool wasWaiting)
{
    if (std::exchange(m_rerouteAfterClaim, false)) {
        rerouteAfterEarlyClaim(accountId, outcome);
        return;
    }
    if (wasWaiting && outcome.kind != ClaimOutcome::Kind::Claimed)
        m_state = State::GateWait;
    onClaimed(accountId, outcome);
}

bool Turn::claimBeforeScan()
{
    // Routing reads only the session key and the turn-state header, never the body's model: with a key in the
    // headers the claim goes out before the body is scanned (Codex) or parsed, translated and sanitized (chat
    // completions, /v1/responses: 0.2-0.6 ms on the proxy thread for a 40 KiB body), and the store thread
    // claims meanwhile. A body refused by that work settles (releases) the claim with the turn.
    const bool parsedWhole = m_route.route == Route::V1Responses || m_route.route == Route::V1ChatCompletions;
    if (m_route.route != Route::CodexResponses && !(parsedWhole && claimBeforeParseWanted()))
        return false;
    readSessionKey(QString());
    // The session key may be the body's prompt_cache_key. A body that names a previous response is routed to
    // its owner after the scan (an escaped key is found only by the scan: see rerouteAfterEarlyClaim()). The
    // search is about 2 us for a 40 KiB body, but 0.4 ms for 10 MiB, in front of every such turn's claim: a Codex
    // body above kClaimSoonMaxBodyBytes is not searched, its claim goes out at once, and a continuation that the
    // scan finds gives it up (Codex sends none over HTTP: docs/PROTOCOL.md). A /v1/responses body is searched
    // whatever its size: its clients do continue, and its parse on this thread costs far more than the search.
    // A chat completion continues nothing.
    const QByteArray &body = m_request->body;
    if (m_sessionKey.isEmpty())
        return false;
    const bool searched = m_route.route == Route::V1Responses ||
                          (m_route.route == Route::CodexResponses && body.size() <= kClaimSoonMaxBodyBytes);
    if (searched && memmem(body.constData(), size_t(body.size()), "previous_response_id", 20) != nullptr)
        return false;
    m_state = State::Routing;
    if (!m_turnState.isEmpty())
        m_selection.continuationAccountId = m_s.pool->turnStateAccount(m_turnState);
    m_routingBeforeScan = true;
    route();
    m_routingBeforeScan = false;
    return m_state == State::Claiming;
}

void Turn::rerouteAfterEarlyClaim(const QString &accountId, const ClaimOutcome &outcome)
{
    switch (outcome.kind) {
    case ClaimOutcome::Kind::Claimed: {
        // Routed again only once the release is answered: the owner may be this very account, whose slot the
        // snapshot shows held until then (the turn would wait at the gate for its own slot).
        QPointer<Turn> self(this);
        m_s.pool->giveUpClaim(m_requestId, accountId, outcome, [self] {
            if (self && !self->m_settled)
                self->resolveContinuation();
        });
        return;
    }
    case ClaimOutcome::Kind::Ineligible:
        m_skipped.append({accountId, QStringLiteral("durable_") + outcome.reason});
        m_selection.excluded.insert(accountId);
        break;
    case ClaimOutcome::Kind::Error:
        onClaimed(accountId, outcome);
        return;
    case ClaimOutcome::Kind::Conflict:
        break;
    }
    resolveContinuation();
}

void Turn::onClaimed(const QString &accountId, const ClaimOutcome &outcome)
{
    switch (outcome.kind) {
    case ClaimOutcome::Kind::Claimed:
        m_holdingSlot = true;
        if (m_s.pool->ledger()->gate().state(m_requestId) == AdmissionGate::State::Queued) {
            m_s.pool->ledger()->gate().hold(m_requestId);
            m_budget.leaveGateWait();
            if (!m_response->isCommitted())
                m_keepaliveTimer.stop(); // keepalives commit the stream only after a long gate wait
        }
        dispatch(accountId);
        return;
    case ClaimOutcome::Kind::Conflict:
        if (m_routingBeforeScan) {
            m_state = State::Routing; // refused by the snapshot at once: routed again after the scan
            return;
        }
        // The snapshot was stale (another replica took the slot): it is fresh now, so route again; after
        // many losses in a row, wait for a slot to free instead of spinning.
        if (++m_claimConflicts > 32) {
            waitAtGate();
            return;
        }
        if (m_state != State::GateWait)
            m_state = State::Routing;
        route();
        return;
    case ClaimOutcome::Kind::Ineligible:
        if (outcome.reason == QLatin1String("anchor_owner_mismatch")) {
            failBeforeCommit(400, "invalid_request_error", "previous_response_not_found",
                             QStringLiteral("Previous response '%1' belongs to another account; resend the full "
                                            "conversation without previous_response_id.")
                                 .arg(m_previousResponseId),
                             QStringLiteral("rejected"));
            return;
        }
        if (outcome.reason == QLatin1String("anchor_unknown")) {
            failBeforeCommit(400, "invalid_request_error", "previous_response_not_found",
                             QStringLiteral("Previous response '%1' is unknown here (not served through this proxy, "
                                            "or older than 30 days); resend the full conversation without "
                                            "previous_response_id.")
                                 .arg(m_previousResponseId),
                             QStringLiteral("rejected"));
            return;
        }
        // The durable row refuses the account (paused, removed, cooling down...) although the snapshot did not
        // know yet: never dispatch on it; the snapshot reloads, and this turn routes without it.
        m_skipped.append({accountId, QStringLiteral("durable_") + outcome.reason});
        m_selection.excluded.insert(accountId);
        if (m_state != State::GateWait)
            m_state = State::Routing;
        route();
        return;
    case ClaimOutcome::Kind::Error:
        failBeforeCommit(503, "server_error", "store_unavailable",
                         QStringLiteral("The slot could not be claimed: %1").arg(outcome.reason),
                         QStringLiteral("rejected"));
        return;
    }
}

void Turn::onOwnerLost(const QString &requestId)
{
    if (requestId != m_requestId || m_settled || SY_FAULT("ignore-owner-epoch"))
        return;
    noteAttempt(QStringLiteral("owner_lost"));
    dropCall();
    fail(QStringLiteral("failed"), QString(), QStringLiteral("owner_lost"),
         QStringLiteral("This turn's owner slot was taken over (its lease expired); retry."));
}

void Turn::rememberAnchor()
{
    // Nothing can continue a chat completion: its client sees a chatcmpl- id of the proxy's own, never the
    // upstream's response id, and its request went with store:false. No anchor, so its settlement writes none.
    if (!m_sink || m_sink->responseId().isEmpty() || m_route.route == Route::V1ChatCompletions)
        return;
    AnchorRecord a;
    a.responseId = m_sink->responseId();
    a.accountId = m_accountId;
    a.lineage = m_lineage.isEmpty() ? a.responseId : m_lineage;
    a.sessionKey = m_sessionKey;
    const HeldSlot held = m_s.pool->ledger()->heldSlot(m_requestId);
    if (held.isValid()) {
        a.slot = held.slot;
        a.epoch = held.epoch;
    }
    if (m_s.pool->rememberAnchor(a))
        m_anchorToWrite = a;
}

void Turn::handOverAnchor()
{
    if (m_anchorToWrite)
        m_s.pool->anchorHandedOver(m_anchorToWrite->responseId);
}

} // namespace sy
