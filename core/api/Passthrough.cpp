#include "api/Passthrough.h"

#include "api/TurnLog.h"
#include "api/UpstreamHeaders.h"
#include "http/HttpResponse.h"
#include "upstream/UpstreamClient.h"
#include "upstream/egress/EgressRequest.h"
#include "upstream/egress/EgressSelector.h"
#include "util/Ids.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QPointer>

namespace sy {

namespace {

// /backend-api/codex/models answers {"models":[{"slug":...}]}; OpenAI clients want {"object":"list","data":[...]}.
QByteArray toOpenAiModelList(const QByteArray &codexModels)
{
    const QJsonArray models = QJsonDocument::fromJson(codexModels).object().value(QLatin1String("models")).toArray();
    QJsonArray data;
    for (const QJsonValue &m : models) {
        const QString id = m.toObject().value(QLatin1String("slug")).toString();
        if (id.isEmpty())
            continue;
        data.append(QJsonObject{{QStringLiteral("id"), id},
                                {QStringLiteral("object"), QStringLiteral("model")},
                                {QStringLiteral("created"), 0},
                                {QStringLiteral("owned_by"), QStringLiteral("openai")}});
    }
    return QJsonDocument(QJsonObject{{QStringLiteral("object"), QStringLiteral("list")}, {QStringLiteral("data"), data}})
        .toJson(QJsonDocument::Compact);
}

class PassthroughCall : public QObject
{
public:
    PassthroughCall(const ProxyServices &s, Route route, HttpRequestPtr request, HttpResponse *response,
                    QObject *parent)
        : QObject(parent), m_s(s), m_route(route), m_request(std::move(request)), m_response(response),
          m_startedMono(s.clock->monotonicMs())
    {
        m_record.startedAtMs = s.clock->nowMs();
        m_requestId = newRequestId(m_record.startedAtMs);
        m_record.requestId = m_requestId;
        m_record.route = QString::fromLatin1(matchRoute(m_request->method, m_request->path.toUtf8(), {}).name);
        for (const char *name : {"session-id", "session_id", "x-session-affinity"}) {
            m_sessionKey = QString::fromUtf8(m_request->header(name));
            if (!m_sessionKey.isEmpty())
                break;
        }
        if (!m_sessionKey.isEmpty())
            m_record.sessionKey = m_sessionKey;
        m_egress = s.egress ? s.egress->beginRequest() : std::make_unique<EgressRequest>(nullptr, *s.clock);
        connect(m_egress.get(), &EgressRequest::budgetExhausted, this, [this] {
            if (!m_call)
                return;
            m_egressTimedOut = true;
            m_call->abort(QStringLiteral("the egress budget ran out"));
        });
    }

    void attempt()
    {
        SelectionRequest sel;
        sel.excluded = m_excluded;
        sel.affinityAccountId = m_sessionKey.isEmpty() ? QString() : m_s.pool->sessionAccount(m_sessionKey);
        if (!m_retryAccountId.isEmpty())
            sel.affinityAccountId = std::exchange(m_retryAccountId, QString());
        sel.pinnedAccountId = m_s.pool->pinnedAccountId();
        sel.pinStrict = m_s.pool->pinStrict();
        // Model lists and compaction are short side calls, not turns: they take no owner slot.
        const AccountPool::Acquisition a = m_s.pool->select(sel, true);
        if (!a.selection.ok() && !m_egressRefusal.isEmpty()) {
            // Accounts were refused by their egress pools (fail closed): say so rather than "rate limited".
            m_egress->noteGaveUp(!m_record.attempts.isEmpty(), false);
            m_record.errorCode = m_egressRefusal;
            finish(502,
                   HttpResponse::jsonErrorBody("server_error", m_egressRefusal.toLatin1(),
                                               QStringLiteral("No egress proxy could carry this request.")),
                   QStringLiteral("failed"));
            return;
        }
        if (!a.selection.ok()) {
            finish(a.shouldWait ? 503 : 429,
                   HttpResponse::jsonErrorBody(a.shouldWait ? "server_error" : "rate_limit_exceeded",
                                               a.shouldWait ? "proxy_overloaded" : "rate_limit_exceeded",
                                               m_s.pool->accountCount() == 0
                                                   ? QStringLiteral("No accounts are configured.")
                                                   : QStringLiteral("No account can serve this request now.")),
                   QStringLiteral("rejected"));
            return;
        }
        m_accountId = a.selection.accountId;
        const AccountPool::Account *account = m_s.pool->account(m_accountId);
        const EgressDecision egress = m_egress->nextAttempt(m_accountId, account->record.alias);
        if (!egress.allowed()) {
            // Fail closed: this account's pool cannot carry the request and it never goes direct instead.
            m_excluded.insert(m_accountId);
            m_egressRefusal = egress.reason;
            attempt();
            return;
        }
        UpstreamRequest req;
        req.method = m_request->method;
        QString path = QStringLiteral("/codex/models");
        if (m_route == Route::CodexResponsesCompact)
            path = QStringLiteral("/codex/responses/compact");
        QByteArray query = m_request->rawQuery;
        if (m_route == Route::V1Models && query.isEmpty())
            query = "client_version=" SWITCHYARD_VERSION;
        req.url = upstreamEndpoint(m_s.config->upstreamUrl, path, query);
        req.headers = upstreamHeaders(*m_request, *account, m_requestId.toLatin1(), false);
        req.body = m_request->body;
        req.egress = egress.upstreamEgress();
        m_attemptStart = m_s.clock->monotonicMs();
        m_call = m_s.upstream->start(req);
        m_attemptEgress = m_call->egressName().isEmpty() ? std::nullopt : std::optional<QString>(m_call->egressName());
        m_egress->watch(m_call);
        connect(m_call, &UpstreamCall::headersReceived, this,
                [this](int, const HttpHeaders &headers) { m_headers = headers; });
        connect(m_call, &UpstreamCall::bodyReceived, this, [this](const QByteArray &body) { m_body = body; });
        connect(m_call, &UpstreamCall::finished, this, &PassthroughCall::onFinished);
        if (m_response)
            connect(m_response, &HttpResponse::clientDisconnected, m_call, [call = m_call] { call->abort(); });
    }

private:
    void onFinished(UpstreamCall::Outcome outcome, const QString &detail)
    {
        const int status = m_call ? m_call->statusCode() : -1;
        m_call = nullptr;
        const qint64 elapsed = m_s.clock->monotonicMs() - m_attemptStart;
        if (outcome == UpstreamCall::Outcome::Aborted && std::exchange(m_egressTimedOut, false)) {
            const QString recorded = m_egress->attemptFailed(egress_outcome::egressTimeout);
            m_record.attempts.append({m_accountId, m_attemptEgress, recorded, elapsed});
            m_retryAccountId = m_accountId; // the next attempt is refused: the budget is spent
            attempt();
            return;
        }
        if (outcome == UpstreamCall::Outcome::Aborted) {
            m_record.attempts.append({m_accountId, m_attemptEgress, QStringLiteral("cancelled"), elapsed});
            finish(0, {}, QStringLiteral("cancelled"));
            return;
        }
        if (outcome == UpstreamCall::Outcome::ConnectionFailed && m_attemptEgress) {
            // No tunnel through the egress proxy: the proxy's failure, not the account's; try the next proxy.
            const QString recorded = m_egress->attemptFailed(QStringLiteral("connect_failed"));
            m_record.attempts.append({m_accountId, m_attemptEgress, recorded, elapsed});
            m_retryAccountId = m_accountId;
            attempt();
            return;
        }
        FailureInfo f;
        if (outcome != UpstreamCall::Outcome::Completed) {
            f.cls = FailureClass::Transient;
            f.code = QStringLiteral("connect_failed");
            f.message = detail;
        } else if (status < 200 || status >= 300) {
            f = classifyUpstreamFailure(status, m_body, m_headers, m_s.clock->nowMs());
        }
        if (f.cls == FailureClass::None) {
            m_record.attempts.append({m_accountId, m_attemptEgress, QStringLiteral("completed"), elapsed});
            m_s.pool->recordSuccess(m_accountId);
            finish(200, m_route == Route::V1Models ? toOpenAiModelList(m_body) : m_body, QStringLiteral("completed"));
            return;
        }
        m_record.attempts.append({m_accountId, m_attemptEgress, failureClassName(f.cls), elapsed});
        m_egress->attemptFailed(failureClassName(f.cls));
        if (penalisesAccount(f.cls)) {
            m_s.pool->recordFailure(m_accountId, f);
            m_excluded.insert(m_accountId);
            attempt();
            return;
        }
        m_record.errorCode = f.code;
        finish(status, m_body, QStringLiteral("failed"));
    }

    void finish(int status, const QByteArray &body, const QString &logStatus)
    {
        m_record.status = logStatus;
        if (!m_accountId.isEmpty()) {
            m_record.accountId = m_accountId;
            if (const AccountPool::Account *a = m_s.pool->account(m_accountId)) {
                m_record.accountAlias = a->record.alias;
                m_record.chatgptAccountId = a->record.chatgptAccountId;
            }
        }
        for (const auto &h : m_headers) {
            if (headerNameEquals(h.first, "x-request-id"))
                m_record.upstreamRequestId = QString::fromLatin1(h.second);
        }
        m_record.latency.totalMs = m_s.clock->monotonicMs() - m_startedMono;
        if (logStatus != QLatin1String("completed"))
            m_record.blockedBy = m_egress->blockedBy(); // distinct and sorted
        auto deliver = [this, status, body] {
            if (m_response && status > 0) {
                m_response->setHeader("x-request-id", m_requestId.toLatin1());
                if (const AccountPool::Account *a = m_s.pool->account(m_accountId))
                    m_response->setHeader("x-switchyard-account", a->record.displayName().toUtf8());
                m_response->sendFull(status, "application/json", body);
            }
            deleteLater();
        };
        // Model lists are booked too: their attempts move a round_robin pool's cursor like a turn's, and the
        // log must account for every attempt through a pool (docs/EGRESS.md).
        writeRequestLog(m_s.store, m_record, Settlement{}, this, [deliver](bool, const SettleOutcome &) { deliver(); });
    }

    ProxyServices m_s;
    Route m_route;
    HttpRequestPtr m_request;
    QPointer<HttpResponse> m_response;
    QString m_requestId;
    qint64 m_startedMono;
    qint64 m_attemptStart = 0;
    QString m_sessionKey;
    QString m_accountId;
    QSet<QString> m_excluded;
    QString m_retryAccountId;  // after a proxy failure: the same account, through the pool's next proxy
    QString m_egressRefusal;   // the last reason an egress pool refused an account
    std::unique_ptr<EgressRequest> m_egress;
    std::optional<QString> m_attemptEgress;
    bool m_egressTimedOut = false;
    QPointer<UpstreamCall> m_call;
    HttpHeaders m_headers;
    QByteArray m_body;
    RequestLogRecord m_record;
};

} // namespace

void runPassthrough(const ProxyServices &services, Route route, HttpRequestPtr request, HttpResponse *response,
                    QObject *parent)
{
    auto *call = new PassthroughCall(services, route, std::move(request), response, parent);
    call->attempt();
}

} // namespace sy
