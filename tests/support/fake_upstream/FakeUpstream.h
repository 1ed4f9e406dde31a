#pragma once

#include "FakeContent.h"
#include "FakeScript.h"
#include "http/HttpServer.h"

#include <QHash>
#include <QJsonArray>
#include <QJsonObject>
#include <QObject>
#include <QPointer>

namespace sy::fake {

class FakeTurn;

// A stand-in for the ChatGPT Codex backend (see docs/PROTOCOL.md) plus a test control API.
//
// Upstream routes (with or without the /backend-api prefix; all need "Authorization: Bearer <token>" and
// "chatgpt-account-id", else 401):
//   POST /codex/responses          SSE turn; 400 for store:true, stream not true, max_output_tokens,
//                                  metadata, temperature, top_p, user, truncation, safety_identifier;
//                                  a foreign previous_response_id is accepted and never answered
//   POST /codex/responses/compact  {"output":[...]}
//   GET  /codex/models             {"models":[...]}
//   GET  /wham/usage               plan, primary/secondary windows, credits
// Control routes:
//   POST /__control/script     {"account_id"|"token", "actions":[...], "sticky":bool, "endpoint":
//                              "responses"|"compact"|"models"|"usage"}
//   POST /__control/usage      {"account_id", "plan_type", "primary_used_percent", ...}
//   POST /__control/reset      scripts, log, usage and anchors cleared; held connections dropped
//   POST /__control/drop_held  held (silent / stalled) connections closed
//   GET  /__control/log        every upstream request, oldest first; ?from=N&limit=M for a page of them,
//                              &brief=1 without each request's body and headers
//   GET  /__control/stats      {active_streams, max_concurrent_streams, total_requests}
class FakeUpstream : public QObject
{
    Q_OBJECT

public:
    explicit FakeUpstream(QObject *parent = nullptr);

    bool listen(const QHostAddress &address, quint16 port);
    quint16 port() const { return m_server.serverPort(); }
    QString errorString() const { return m_server.errorString(); }

    // Bookkeeping called by FakeTurn.
    void recordOutcome(int logIndex, int status, const QString &outcome);
    void markClientGone(int logIndex, bool interrupted);
    void streamStarted();
    void streamEnded();

private:
    struct Caller
    {
        QString token;
        QString accountId;
    };

    void handle(const HttpRequestPtr &request, HttpResponse *response);
    void handleControl(const HttpRequest &request, HttpResponse *response);
    void handleResponses(const HttpRequest &request, HttpResponse *response, int logIndex, const Caller &caller);
    void handleSimple(const QString &endpoint, const HttpRequest &request, HttpResponse *response, int logIndex,
                      const Caller &caller);
    void sendJson(HttpResponse *response, int logIndex, int status, const QJsonObject &body, const QString &outcome,
                  const HttpHeaderList &headers = {});
    void reject(HttpResponse *response, int logIndex, int status, const QString &type, const QString &code,
                const QString &message, const QString &outcome);
    int appendLog(const HttpRequest &request, const Caller &caller, const QString &upstreamRequestId);
    void startTurn(FakeTurn *turn);
    HttpHeaderList commonHeaders(const QString &accountId, const QString &upstreamRequestId) const;
    UsageState usageFor(const QString &accountId) const { return m_usage.value(accountId); }
    QString newId(const char *prefix);
    qint64 nowSeconds() const;

    HttpServer m_server;
    ScriptBook m_scripts;
    QHash<QString, UsageState> m_usage;       // by chatgpt-account-id
    QHash<QString, QString> m_responseOwners; // response id -> chatgpt-account-id
    QHash<QString, qint64> m_promptCache;     // account + prompt_cache_key -> input tokens last seen
    QList<QJsonObject> m_log;
    QList<QPointer<FakeTurn>> m_turns;
    int m_activeStreams = 0;
    int m_maxConcurrentStreams = 0;
    quint64 m_idCounter = 0;
};

} // namespace sy::fake
