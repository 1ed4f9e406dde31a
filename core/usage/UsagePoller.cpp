#include "usage/UsagePoller.h"

#include "upstream/UpstreamClient.h"
#include "util/Clock.h"

#include <QCryptographicHash>
#include <QJsonDocument>
#include <QJsonObject>
#include <QLoggingCategory>
#include <QPointer>
#include <QSet>
#include <memory>

namespace sy {

Q_LOGGING_CATEGORY(lcUsagePoll, "sy.usage.poll", QtInfoMsg)

UsagePoller::UsagePoller(const Clock &clock, const QUrl &upstreamBase, Fetch fetch, TargetProvider targets,
                         QObject *parent)
    : QObject(parent), m_clock(clock), m_base(upstreamBase), m_fetch(std::move(fetch)), m_targets(std::move(targets))
{
    m_timer.setInterval(kDefaultTickMs);
    connect(&m_timer, &QTimer::timeout, this, &UsagePoller::tick);
}

UsagePoller::UsagePoller(const Clock &clock, const QUrl &upstreamBase, UpstreamClient *client, TargetProvider targets,
                         QObject *parent)
    : UsagePoller(clock, upstreamBase, fetchWith(client), std::move(targets), parent)
{
}

UsagePoller::~UsagePoller()
{
    stop();
}

UsagePoller::Fetch UsagePoller::fetchWith(UpstreamClient *client)
{
    const QPointer<UpstreamClient> guardedClient(client);
    return [guardedClient](const UpstreamRequest &request, FetchDone done) -> Cancel {
        if (!guardedClient) {
            QTimer::singleShot(0, [done] { done({0, {}, QStringLiteral("the upstream client is gone")}); });
            return {};
        }
        struct Progress
        {
            int status = 0;
            QByteArray body;
            bool cancelled = false;
        };
        auto progress = std::make_shared<Progress>();
        UpstreamCall *call = guardedClient->start(request);
        QObject::connect(call, &UpstreamCall::headersReceived, call,
                         [progress](int status, const HttpHeaders &) { progress->status = status; });
        QObject::connect(call, &UpstreamCall::bodyReceived, call,
                         [progress](const QByteArray &body) { progress->body = body; });
        QObject::connect(call, &UpstreamCall::finished, call,
                         [progress, done](UpstreamCall::Outcome outcome, const QString &detail) {
                             if (progress->cancelled)
                                 return;
                             UsageFetchReply reply;
                             if (outcome == UpstreamCall::Outcome::Completed) {
                                 reply.status = progress->status;
                                 reply.body = progress->body;
                             } else {
                                 reply.error = UpstreamCall::outcomeName(outcome) + QStringLiteral(": ") + detail;
                             }
                             done(reply);
                         });
        const QPointer<UpstreamCall> guardedCall(call);
        return [progress, guardedCall] {
            // abort() reports synchronously; the flag keeps that report from reaching a poller that moved on.
            progress->cancelled = true;
            if (guardedCall)
                guardedCall->abort(QStringLiteral("usage poll cancelled"));
        };
    };
}

UpstreamRequest UsagePoller::usageRequest(const QUrl &upstreamBase, const PollTarget &target)
{
    UpstreamRequest request;
    request.method = QByteArrayLiteral("GET");
    QUrl url = upstreamBase;
    QString path = url.path();
    while (path.endsWith(QLatin1Char('/')))
        path.chop(1);
    url.setPath(path + QStringLiteral("/wham/usage"));
    request.url = url;
    request.headers = {
        {QByteArrayLiteral("authorization"), QByteArrayLiteral("Bearer ") + target.accessToken.toUtf8()},
        {QByteArrayLiteral("chatgpt-account-id"), target.chatgptAccountId.toUtf8()},
        {QByteArrayLiteral("accept"), QByteArrayLiteral("application/json")},
        {QByteArrayLiteral("originator"), QByteArrayLiteral("switchyard")},
        {QByteArrayLiteral("user-agent"), QByteArrayLiteral("switchyard/" SWITCHYARD_VERSION)},
    };
    request.maxBodyBytes = kMaxBodyBytes;
    return request;
}

bool UsagePoller::isSkippedStatus(const QString &status)
{
    return status == QLatin1String("paused") || status == QLatin1String("reauth_required") ||
           status == QLatin1String("deactivated");
}

void UsagePoller::setIntervalMs(qint64 ms)
{
    m_intervalMs = qMax<qint64>(1, ms);
}

void UsagePoller::setBackoff(qint64 initialMs, qint64 maxMs)
{
    m_initialBackoffMs = qMax<qint64>(1, initialMs);
    m_maxBackoffMs = qMax(m_initialBackoffMs, maxMs);
}

void UsagePoller::setRequestTimeoutMs(qint64 ms)
{
    m_requestTimeoutMs = qMax<qint64>(1, ms);
}

void UsagePoller::setTickMs(int ms)
{
    m_timer.setInterval(qMax(1, ms));
}

void UsagePoller::start()
{
    m_timer.start();
    tick();
}

void UsagePoller::stop()
{
    m_timer.stop();
    if (!m_inFlight.active)
        return;
    const Cancel cancel = std::move(m_inFlight.cancel);
    m_inFlight = InFlight{};
    if (cancel)
        cancel();
}

qint64 UsagePoller::backoffFor(int failures) const
{
    if (failures <= 0)
        return 0;
    qint64 delay = m_initialBackoffMs;
    for (int i = 1; i < failures && delay < m_maxBackoffMs; ++i)
        delay *= 2;
    return qMin(delay, m_maxBackoffMs);
}

int UsagePoller::consecutiveFailures(const QString &accountId) const
{
    return m_states.value(accountId).failures;
}

qint64 UsagePoller::nextDueMs(const QString &accountId) const
{
    const auto it = m_states.constFind(accountId);
    return it == m_states.constEnd() ? -1 : it->nextDueMs;
}

void UsagePoller::pollSoon(const QString &accountId)
{
    State &state = m_states[accountId];
    state.nextDueMs = m_clock.monotonicMs();
    state.failures = 0;
    state.refusedTokenHash.clear();
    state.urgent = true;
}

QByteArray UsagePoller::tokenHash(const QString &token)
{
    return QCryptographicHash::hash(token.toUtf8(), QCryptographicHash::Sha256);
}

void UsagePoller::tick()
{
    const qint64 now = m_clock.monotonicMs();
    if (m_inFlight.active) {
        if (now - m_inFlight.startedMs < m_requestTimeoutMs)
            return;
        const QString accountId = m_inFlight.accountId;
        const Cancel cancel = std::move(m_inFlight.cancel);
        m_inFlight = InFlight{};
        if (cancel)
            cancel();
        fail(accountId, 0, QStringLiteral("no answer within %1 s").arg(m_requestTimeoutMs / 1000.0));
        return;
    }

    const QList<PollTarget> targets = m_targets ? m_targets() : QList<PollTarget>();
    QSet<QString> present;
    QList<const PollTarget *> eligible;
    for (const PollTarget &target : targets) {
        present.insert(target.accountId);
        if (isSkippedStatus(target.status) || target.accessToken.isEmpty() || target.chatgptAccountId.isEmpty())
            continue;
        auto it = m_states.find(target.accountId);
        if (it == m_states.end()) {
            it = m_states.insert(target.accountId, State{});
            it->nextDueMs = now;
        }
        // A token that replaced the one the upstream refused deserves a poll now, not after the backoff.
        if (!it->refusedTokenHash.isEmpty() && it->refusedTokenHash != tokenHash(target.accessToken)) {
            it->refusedTokenHash.clear();
            it->failures = 0;
            it->nextDueMs = now;
            it->urgent = true;
        }
        eligible.append(&target);
    }
    for (auto it = m_states.begin(); it != m_states.end();) {
        if (present.contains(it.key()))
            ++it;
        else
            it = m_states.erase(it);
    }
    if (eligible.isEmpty())
        return;

    const PollTarget *next = nullptr;
    for (const PollTarget *target : std::as_const(eligible)) {
        const State &state = m_states[target->accountId];
        if (state.urgent) {
            next = target;
            break;
        }
    }
    if (!next) {
        // Spacing the starts by interval / N spreads N accounts over the interval even when they all became
        // due at once (start-up), and keeps a burst of accounts coming out of backoff from bunching up.
        const qint64 gap = m_intervalMs / eligible.size();
        if (m_anyStarted && now - m_lastStartMs < gap)
            return;
        for (const PollTarget *target : std::as_const(eligible)) {
            const State &state = m_states[target->accountId];
            if (state.nextDueMs <= now && (!next || state.nextDueMs < m_states[next->accountId].nextDueMs))
                next = target;
        }
    }
    if (next)
        startPoll(*next);
}

void UsagePoller::startPoll(const PollTarget &target)
{
    const qint64 now = m_clock.monotonicMs();
    State &state = m_states[target.accountId];
    state.urgent = false;
    // Keeps the account's phase: the next poll is one interval after this one started.
    state.nextDueMs = now + m_intervalMs;
    m_lastStartMs = now;
    m_anyStarted = true;

    const quint64 serial = ++m_serial;
    m_inFlight = InFlight{true, serial, target.accountId, tokenHash(target.accessToken), now, {}};
    const QPointer<UsagePoller> self(this);
    Cancel cancel = m_fetch(usageRequest(m_base, target), [self, serial](const UsageFetchReply &reply) {
        if (self)
            self->finishPoll(serial, reply);
    });
    if (m_inFlight.active && m_inFlight.serial == serial)
        m_inFlight.cancel = std::move(cancel);
}

void UsagePoller::finishPoll(quint64 serial, const UsageFetchReply &reply)
{
    if (!m_inFlight.active || m_inFlight.serial != serial)
        return;
    const QString accountId = m_inFlight.accountId;
    const QByteArray usedToken = m_inFlight.tokenHash;
    m_inFlight = InFlight{};

    if (reply.status == 0) {
        fail(accountId, 0, reply.error.isEmpty() ? QStringLiteral("no response") : reply.error);
        return;
    }
    if (reply.status == 401) {
        const auto it = m_states.find(accountId);
        if (it != m_states.end())
            it->refusedTokenHash = usedToken;
        fail(accountId, 401, QStringLiteral("the upstream refused the access token (HTTP 401)"), true);
        return;
    }
    if (reply.status < 200 || reply.status >= 300) {
        fail(accountId, reply.status, QStringLiteral("HTTP %1").arg(reply.status));
        return;
    }
    QJsonParseError parseError{};
    const QJsonDocument doc = QJsonDocument::fromJson(reply.body, &parseError);
    if (parseError.error != QJsonParseError::NoError || !doc.isObject()) {
        fail(accountId, reply.status, QStringLiteral("the usage answer is not a JSON object"));
        return;
    }
    const std::optional<WhamUsage> usage = usageFromWhamUsage(doc.object(), m_clock.nowMs());
    if (!usage) {
        fail(accountId, reply.status, QStringLiteral("the usage answer carries no usage facts"));
        return;
    }
    const auto it = m_states.find(accountId);
    if (it != m_states.end()) {
        it->failures = 0;
        it->refusedTokenHash.clear();
    }
    qCDebug(lcUsagePoll).noquote() << "usage polled for" << accountId << "plan" << usage->planType;
    emit usagePolled(accountId, usage->usage, usage->planType);
}

void UsagePoller::fail(const QString &accountId, int httpStatus, const QString &reason, bool unauthorizedToken)
{
    qint64 retryInMs = 0;
    const auto it = m_states.find(accountId);
    if (it != m_states.end()) {
        ++it->failures;
        retryInMs = backoffFor(it->failures);
        it->nextDueMs = m_clock.monotonicMs() + retryInMs;
    }
    qCDebug(lcUsagePoll).noquote() << "usage poll failed for" << accountId << "status" << httpStatus << reason
                                   << "retry in" << retryInMs << "ms";
    const QPointer<UsagePoller> self(this);
    // The state above is settled first, so an owner reacting with pollSoon() is not overridden.
    if (unauthorizedToken)
        emit unauthorized(accountId);
    if (self)
        emit pollFailed(accountId, httpStatus, reason, retryInMs);
}

} // namespace sy
