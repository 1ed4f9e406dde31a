#include "upstream/egress/EgressRequest.h"

#include "upstream/egress/EgressSelector.h"
#include "util/Faults.h"

namespace sy {

std::optional<UpstreamEgress> EgressDecision::upstreamEgress() const
{
    if (kind != Kind::Proxy)
        return std::nullopt;
    return UpstreamEgress{proxyName, proxy};
}

EgressRequest::EgressRequest(EgressSelector *selector, const Clock &clock, QObject *parent)
    : QObject(parent), m_selector(selector), m_clock(clock)
{
    m_timer.setSingleShot(true);
    m_timer.setTimerType(Qt::PreciseTimer);
    connect(&m_timer, &QTimer::timeout, this, &EgressRequest::onTimer);
}

EgressRequest::~EgressRequest() = default;

bool EgressRequest::goesDirect(const QString &accountId, const std::optional<QString> &alias) const
{
    return !m_selector || m_selector->poolFor(accountId, alias).isEmpty();
}

EgressDecision EgressRequest::nextAttempt(const QString &accountId, const std::optional<QString> &alias)
{
    endSetUp();
    m_call = nullptr;
    EgressDecision d;
    d.pool = m_selector ? m_selector->poolFor(accountId, alias) : QString();
    m_currentPool = d.pool;
    m_viaProxy = false;
    if (d.pool.isEmpty())
        return d;
    EgressPool *pool = m_selector->pool(d.pool);
    std::shared_ptr<EgressBudget> &budget = m_budgets[d.pool];
    if (!budget)
        budget = m_selector->budgetFor(d.pool);
    const auto refuse = [&](const QString &reason, const QString &detail) {
        d.kind = EgressDecision::Kind::Refused;
        d.reason = reason;
        d.detail = detail;
        m_reasons.add(reason);
        return d;
    };
    if (!pool)
        return refuse(blocked::poolUnusable, QStringLiteral("egress pool \"%1\" is not configured").arg(d.pool));
    if (!budget->hasAttemptsLeft())
        return refuse(
            blocked::attemptsExhausted,
            QStringLiteral("%1 attempt(s) through egress pool \"%2\" were made").arg(budget->attempts()).arg(d.pool));
    if (!budget->hasTimeLeft())
        return refuse(
            blocked::budgetExhausted,
            QStringLiteral("the egress budget of %1 ms for pool \"%2\" is spent").arg(budget->budgetMs()).arg(d.pool));
    const QString unusable = m_selector->poolUnusableReason(d.pool);
    if (!unusable.isEmpty())
        return refuse(blocked::poolUnusable, unusable);
    if (!m_selector->poolHealthy(d.pool))
        return refuse(blocked::noHealthyProxy,
                      QStringLiteral("no proxy of egress pool \"%1\" passed its last probe").arg(d.pool));

    const QStringList &members = pool->spec().proxies;
    const int index = pool->pick(budget->attempts());
    // The planted failure (fault build only): one proxy named, another used.
    const int carrier = SY_FAULT("egress-record-wrong-proxy") ? (index + 1) % int(members.size()) : index;
    const EgressProxyState *state = m_selector->proxy(members.at(carrier));
    d.kind = EgressDecision::Kind::Proxy;
    d.proxyName = members.at(index);
    d.proxy = state->proxy;
    budget->beginAttempt();
    m_viaProxy = true;
    return d;
}

void EgressRequest::watch(UpstreamCall *call)
{
    if (!m_viaProxy || !call)
        return;
    m_call = call;
    connect(call, &UpstreamCall::requestSent, this, [this] { endSetUp(); });
    connect(call, &UpstreamCall::finished, this, [this] { endSetUp(); });
    const EgressBudget *b = budget(m_currentPool);
    if (b && b->settingUp())
        m_timer.start(int(qBound<qint64>(0, b->deadlineMs() - m_clock.monotonicMs(), 24LL * 3600 * 1000)));
}

void EgressRequest::endSetUp()
{
    m_timer.stop();
    if (const auto it = m_budgets.find(m_currentPool); it != m_budgets.end() && *it)
        (*it)->endSetUp();
    if (m_call)
        disconnect(m_call, nullptr, this, nullptr);
    m_call = nullptr;
}

void EgressRequest::onTimer()
{
    const auto it = m_budgets.find(m_currentPool);
    if (it == m_budgets.end() || !*it || !(*it)->settingUp())
        return;
    if ((*it)->remainingMs() > 0) {
        m_timer.start(int((*it)->remainingMs()));
        return;
    }
    endSetUp();
    emit budgetExhausted();
}

QString EgressRequest::attemptFailed(const QString &outcome)
{
    endSetUp();
    QString recorded = outcome;
    if (m_viaProxy && (outcome == QLatin1String("connect_failed") || outcome == QLatin1String("connect_timeout")))
        recorded = egress_outcome::proxyUnreachable;
    m_reasons.add(blockedReasonForOutcome(recorded, m_viaProxy));
    return recorded;
}

bool EgressRequest::isEgressFailure(const QString &recordedOutcome)
{
    return recordedOutcome == egress_outcome::proxyUnreachable || recordedOutcome == egress_outcome::egressTimeout;
}

void EgressRequest::noteGaveUp(bool attemptMade, bool budgetRanOut)
{
    if (budgetRanOut)
        m_reasons.add(blocked::budgetExhausted);
    else if (attemptMade && !m_reasons.contains(blocked::budgetExhausted))
        m_reasons.add(blocked::attemptsExhausted);
}

const EgressBudget *EgressRequest::budget(const QString &pool) const
{
    const auto it = m_budgets.find(pool);
    return it == m_budgets.end() ? nullptr : it->get();
}

} // namespace sy
