#include "api/Turn.h"
#include "api/UpstreamHeaders.h"
#include "upstream/UpstreamClient.h"

// What a turn does for its upstream request while its slot claim is on its way: the request built for the
// claimed account (prepareDispatch()) and sent with its last byte held back (sendEarly()), for dispatch() to
// take over once the claim is won, or to abort.
namespace sy {

namespace {

// SWITCHYARD_PREPARE_DISPATCH=0: the upstream request is built only at the dispatch, as before session 32;
// SWITCHYARD_EARLY_SEND=0: it is sent only at the dispatch, as before session 33 (for A/B runs, bench/README.md).
bool prepareDispatchWanted()
{
    static const bool wanted = qEnvironmentVariable("SWITCHYARD_PREPARE_DISPATCH") != QLatin1String("0");
    return wanted;
}

bool earlySendWanted()
{
    static const bool wanted = qEnvironmentVariable("SWITCHYARD_EARLY_SEND") != QLatin1String("0");
    return wanted;
}

// Bodies from this size on are sent early: any body by default. Until session 39 only those of 256 KiB or more
// were (a same-binary A/B at c=1 with 42 KiB bodies had shown no gain then, bench/results/ab-run33-early-send.txt);
// since session 38's store-thread changes the send of a 42 KiB body beside its claim takes about 55 us off the
// time to the first byte at c=1 and costs nothing measurable under load (bench/results/ab-run39-early-send.txt).
// A large body is read by the upstream while the proxy thread scans it and the claim runs.
// SWITCHYARD_EARLY_SEND_MIN_BYTES=N: from N bytes on only, for A/B runs (262144: as before session 39).
qsizetype earlySendMinBytes()
{
    static const qsizetype bytes = [] {
        bool ok = false;
        const qlonglong v = qEnvironmentVariableIntValue("SWITCHYARD_EARLY_SEND_MIN_BYTES", &ok);
        return ok && v >= 0 ? qsizetype(v) : qsizetype(0);
    }();
    return bytes;
}

} // namespace

UpstreamRequest Turn::upstreamRequestFor(const AccountPool::Account &account) const
{
    UpstreamRequest req;
    req.method = "POST";
    req.url = upstreamEndpoint(m_s.config->upstreamUrl, QStringLiteral("/codex/responses"));
    // Everything but the access token, which a refresh may replace before the dispatch: dispatch() adds it.
    req.headers = upstreamHeadersButAuthorization(*m_request, account, m_requestId.toLatin1(), true);
    return req;
}

void Turn::prepareDispatch(const QString &accountId)
{
    dropEarlyCall(); // one of an earlier claim
    const AccountPool::Account *account = m_s.pool->account(accountId);
    if (!account || !prepareDispatchWanted())
        return;
    UpstreamRequest req = upstreamRequestFor(*account);
    req.preparedHead = upstreamRequestHeadStart(req);
    req.headers.clear(); // in the head now
    m_prepared = PreparedDispatch{accountId, std::move(req)};
}

void Turn::sendEarly()
{
    if (!m_prepared || m_early || m_upstreamBody.isEmpty() || m_upstreamBody.size() < earlySendMinBytes() ||
        m_state != State::Claiming || !earlySendWanted())
        return;
    const AccountPool::Account *account = m_s.pool->account(m_prepared->accountId);
    // Through an egress proxy the route is decided at the dispatch, which counts the attempt: not early.
    if (!account || !m_egress->goesDirect(m_prepared->accountId, account->record.alias))
        return;
    UpstreamRequest req = m_prepared->request; // kept: dispatch() builds from it if this call is given up
    req.headers = {upstreamAuthorization(*account)};
    req.body = m_upstreamBody;
    req.holdLastByte = true;
    UpstreamCall *call = m_s.upstream->start(req);
    // It failed before the claim was answered (its connection broke, the upstream answered too soon): the
    // dispatch sends the request anew, and that call's failure is the one recorded.
    connect(call, &UpstreamCall::finished, this, [this] { m_early.reset(); });
    m_early = EarlyCall{call, m_prepared->accountId, account->tokens.accessToken, m_upstreamBody.constData(),
                        m_upstreamBody.size()};
    m_marks.sentEarly();
}

UpstreamCall *Turn::takeEarlyCall(const QString &accountId, const AccountPool::Account &account,
                                  const EgressDecision &egress)
{
    if (!m_early)
        return nullptr;
    const EarlyCall early = std::exchange(m_early, std::nullopt).value();
    UpstreamCall *call = early.call;
    if (!call || call->isFinished())
        return nullptr;
    disconnect(call, nullptr, this, nullptr);
    // What went out is what would go now: the account won, its current token, these very body bytes, direct.
    if (early.accountId != accountId || early.accessToken != account.tokens.accessToken ||
        !early.sends(m_upstreamBody) || egress.upstreamEgress()) {
        call->abort();
        return nullptr;
    }
    return call;
}

void Turn::dropEarlyCall()
{
    if (!m_early)
        return;
    const QPointer<UpstreamCall> call = std::exchange(m_early, std::nullopt)->call;
    if (!call)
        return;
    disconnect(call, nullptr, this, nullptr);
    call->abort(QStringLiteral("the slot claim it was sent ahead of was not won")); // closes its connection
}

} // namespace sy
