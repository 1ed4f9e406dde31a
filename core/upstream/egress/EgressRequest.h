#pragma once

#include "upstream/UpstreamCall.h"
#include "upstream/egress/EgressBudget.h"

#include <QHash>
#include <QNetworkProxy>
#include <QObject>
#include <QPointer>
#include <QTimer>
#include <memory>
#include <optional>

namespace sy {

class EgressSelector;

// How the next attempt of a request may go upstream.
struct EgressDecision
{
    enum class Kind
    {
        Direct, // the account has no pool
        Proxy,  // through `proxyName`
        Refused // the account's pool cannot carry it; it must not go direct instead (fail closed)
    };
    Kind kind = Kind::Direct;
    QString pool;
    QString proxyName;
    QNetworkProxy proxy;
    QString reason; // Refused: one of the blocked:: names
    QString detail; // Refused: for people

    bool allowed() const { return kind != Kind::Refused; }
    // What to put in UpstreamRequest::egress.
    std::optional<UpstreamEgress> upstreamEgress() const;
};

// One request's egress state: a budget per pool it uses (created for this request, never shared), the
// running attempt's connection set-up clock, and every distinct reason it was blocked by. Create one per
// request (EgressSelector::beginRequest(), or directly with no selector: every attempt direct) and keep
// it for the request's life. Lives on the proxy thread.
class EgressRequest : public QObject
{
    Q_OBJECT

public:
    // `selector` may be null: no egress configuration, every attempt direct.
    EgressRequest(EgressSelector *selector, const Clock &clock, QObject *parent = nullptr);
    ~EgressRequest() override;

    // The route of the next attempt on this account. Proxy: counts the attempt against the pool's budget and
    // starts its set-up clock; call watch() with the call started for it. Refused: the reason is noted.
    EgressDecision nextAttempt(const QString &accountId, const std::optional<QString> &alias);
    // The account's attempts go direct (no egress pool): nextAttempt() would count nothing.
    bool goesDirect(const QString &accountId, const std::optional<QString> &alias) const;
    // Ties the call just started for the last Proxy decision to its budget: set-up time counts until the
    // request has been sent (or the call ends), and budgetExhausted() fires if set-up outlives what is
    // left. Direct calls are not watched.
    void watch(UpstreamCall *call);

    // A failed attempt of this request: returns the outcome to record (a connection that failed through an
    // egress proxy is proxy_unreachable) and notes its blocked_by reason.
    QString attemptFailed(const QString &outcome);
    // Whether a failure recorded with this outcome is the egress proxy's, not the account's: the same account
    // may try again through the next proxy, and the account is not penalised.
    static bool isEgressFailure(const QString &recordedOutcome);
    // The request gives up. An attempt was made and no budget ran out: attempts_exhausted.
    void noteGaveUp(bool attemptMade, bool budgetRanOut);
    void noteReason(const QString &reason) { m_reasons.add(reason); }
    // Distinct, sorted.
    QStringList blockedBy() const { return m_reasons.sorted(); }

    // The pool and proxy of the current (last) attempt; empty when direct.
    const QString &currentPool() const { return m_currentPool; }
    bool currentViaProxy() const { return m_viaProxy; }
    const EgressBudget *budget(const QString &pool) const;

signals:
    // The current attempt's connection set-up used up the request's egress budget for its pool.
    void budgetExhausted();

private:
    void endSetUp();
    void onTimer();

    EgressSelector *m_selector;
    const Clock &m_clock;
    QHash<QString, std::shared_ptr<EgressBudget>> m_budgets;
    BlockedReasons m_reasons;
    QString m_currentPool;
    bool m_viaProxy = false;
    QPointer<UpstreamCall> m_call;
    QTimer m_timer;
};

} // namespace sy
