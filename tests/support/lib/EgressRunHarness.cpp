#include "lib/EgressRunHarness.h"

#include "upstream/UpstreamClient.h"
#include "upstream/egress/EgressRequest.h"
#include "upstream/egress/EgressSelector.h"
#include "util/Ids.h"

#include <QDateTime>
#include <QElapsedTimer>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPointer>
#include <QTest>

namespace sy::test {

struct EgressRunHarness::Request
{
    QString id;
    int account = 0;
    qint64 startedAtMs = 0;
    QElapsedTimer clock;
    std::unique_ptr<EgressRequest> egress;
    QJsonArray attempts;
    QPointer<UpstreamCall> call;
    UpstreamClient *ownClient = nullptr;
    qint64 attemptStartMs = 0;
    bool sawCompleted = false;
    bool egressTimedOut = false;
};

EgressRunHarness::EgressRunHarness(const Config &config, const QList<HarnessAccount> &accounts)
    : m_config(config), m_accounts(accounts)
{
    m_selector = std::make_unique<EgressSelector>(m_config, SystemClock::instance(), nullptr);
    m_client = new UpstreamClient(this);
}

EgressRunHarness::~EgressRunHarness() = default;

bool EgressRunHarness::start()
{
    bool ready = false;
    m_selector->start([&ready] { ready = true; });
    return QTest::qWaitFor([&ready] { return ready; }, 10000);
}

bool EgressRunHarness::run(int count, int concurrency, bool freshConnections)
{
    m_count += count;
    m_concurrency = qMax(1, concurrency);
    m_fresh = freshConnections;
    for (int i = 0; i < m_concurrency; ++i)
        startNext();
    return QTest::qWaitFor([this] { return m_running == 0 && m_next >= m_count; }, 120000);
}

void EgressRunHarness::startNext()
{
    if (m_next >= m_count || m_running >= m_concurrency)
        return;
    auto *r = new Request;
    r->id = newRequestId();
    r->account = m_next % int(m_accounts.size());
    r->startedAtMs = QDateTime::currentMSecsSinceEpoch();
    r->clock.start();
    r->egress = m_selector->beginRequest();
    if (m_fresh)
        r->ownClient = new UpstreamClient(this);
    ++m_next;
    ++m_running;
    QObject::connect(r->egress.get(), &EgressRequest::budgetExhausted, this, [r] {
        if (!r->call)
            return;
        r->egressTimedOut = true;
        r->call->abort(QStringLiteral("the egress budget ran out"));
    });
    attempt(r);
}

void EgressRunHarness::attempt(Request *r)
{
    const HarnessAccount &a = m_accounts.at(r->account);
    const EgressDecision d =
        r->egress->nextAttempt(a.id, a.alias.isEmpty() ? std::nullopt : std::optional<QString>(a.alias));
    if (!d.allowed()) {
        // Fail closed: never direct instead. The request is over (one account per request here).
        r->egress->noteGaveUp(!r->attempts.isEmpty(), false);
        const bool budget = d.reason == blocked::budgetExhausted;
        finish(r, budget ? QStringLiteral("timed_out") : QStringLiteral("failed"),
               budget ? QStringLiteral("egress") : QString());
        return;
    }
    UpstreamRequest req;
    req.method = "POST";
    req.url = QUrl(m_config.upstreamUrl.toString() + QStringLiteral("/codex/responses"));
    req.headers = {{"content-type", "application/json"},
                   {"authorization", "Bearer " + a.token.toLatin1()},
                   {"chatgpt-account-id", a.chatgptAccountId.toLatin1()},
                   {"x-request-id", r->id.toLatin1()}};
    req.body =
        R"({"model":"gpt-5-codex","stream":true,"store":false,"instructions":"x","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"hi"}]}]})";
    req.egress = d.upstreamEgress();
    r->sawCompleted = false;
    r->egressTimedOut = false;
    r->attemptStartMs = r->clock.elapsed();
    UpstreamCall *call = (r->ownClient ? r->ownClient : m_client)->start(req);
    r->call = call;
    const QString carrier = call->egressName(); // what the request log records: the call's own egress
    r->egress->watch(call);
    QObject::connect(call, &UpstreamCall::sseEvent, this, [r](const SseEvent &e) {
        if (e.event == "response.completed")
            r->sawCompleted = true;
    });
    QObject::connect(call, &UpstreamCall::finished, this, [this, r, carrier, a](UpstreamCall::Outcome outcome) {
        r->call = nullptr;
        QString result;
        if (r->egressTimedOut)
            result = QStringLiteral("egress_timeout");
        else if (outcome == UpstreamCall::Outcome::ConnectionFailed)
            result = QStringLiteral("connect_failed");
        else if (outcome == UpstreamCall::Outcome::Completed && r->sawCompleted)
            result = QStringLiteral("completed");
        else
            result = QStringLiteral("stream_lost");
        const auto record = [&](const QString &o) {
            r->attempts.append(
                QJsonObject{{QStringLiteral("account_id"), a.id},
                            {QStringLiteral("egress_proxy"), carrier.isEmpty() ? QJsonValue() : QJsonValue(carrier)},
                            {QStringLiteral("outcome"), o},
                            {QStringLiteral("elapsed_ms"), r->clock.elapsed() - r->attemptStartMs}});
        };
        if (result == QLatin1String("completed")) {
            record(result);
            finish(r, result, {});
            return;
        }
        const QString recorded = r->egress->attemptFailed(result);
        record(recorded);
        if (EgressRequest::isEgressFailure(recorded)) {
            attempt(r); // the same account, through the pool's next proxy
            return;
        }
        r->egress->noteGaveUp(true, false);
        finish(r, QStringLiteral("failed"), {});
    });
}

void EgressRunHarness::finish(Request *r, const QString &status, const QString &killStage)
{
    const HarnessAccount &a = m_accounts.at(r->account);
    if (status == QLatin1String("timed_out"))
        r->egress->noteReason(blocked::budgetExhausted);
    const QStringList blocked = status == QLatin1String("completed") ? QStringList() : r->egress->blockedBy();
    const QJsonObject row{
        {QStringLiteral("request_id"), r->id},
        {QStringLiteral("started_at"),
         QDateTime::fromMSecsSinceEpoch(r->startedAtMs, Qt::UTC).toString(Qt::ISODateWithMs)},
        {QStringLiteral("route"), QStringLiteral("/backend-api/codex/responses")},
        {QStringLiteral("account_id"), a.id},
        {QStringLiteral("account_alias"), a.alias.isEmpty() ? QJsonValue() : QJsonValue(a.alias)},
        {QStringLiteral("chatgpt_account_id"), a.chatgptAccountId},
        {QStringLiteral("status"), status},
        {QStringLiteral("kill_stage"), killStage.isEmpty() ? QJsonValue() : QJsonValue(killStage)},
        {QStringLiteral("attempts"), r->attempts},
        {QStringLiteral("blocked_by"), QJsonArray::fromStringList(blocked)},
        {QStringLiteral("latency_ms"), QJsonObject{{QStringLiteral("total"), r->clock.elapsed()}}},
    };
    m_rows.prepend(row); // newest first, like the CLI
    if (r->ownClient)
        r->ownClient->deleteLater();
    // Possibly inside the EgressRequest's own budgetExhausted(): it goes once that has returned.
    r->egress.release()->deleteLater();
    delete r;
    --m_running;
    startNext();
}

QJsonArray EgressRunHarness::accountsJson() const
{
    QJsonArray out;
    for (const HarnessAccount &a : m_accounts)
        out.append(QJsonObject{{QStringLiteral("account_id"), a.id},
                               {QStringLiteral("account_alias"), a.alias},
                               {QStringLiteral("chatgpt_account_id"), a.chatgptAccountId},
                               {QStringLiteral("status"), QStringLiteral("active")}});
    return out;
}

} // namespace sy::test
