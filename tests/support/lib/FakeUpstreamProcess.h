#pragma once

#include <QJsonArray>
#include <QJsonObject>
#include <QProcess>
#include <QString>
#include <QStringList>
#include <QUrl>

namespace sy::test {

// Runs the fake ChatGPT Codex backend (tests/support/fake_upstream, path from SWITCHYARD_FAKE_UPSTREAM) as a
// child process on a free port, and drives its control API. Killed on destruction (and it exits by itself
// if this process dies, because its stdin closes).
//
// Script actions (one per upstream request of that account or token; default "ok" when the queue is
// empty): ok, 429 (usage_limit_reached), 429_rate (rate_limit_exceeded, "try again in 1m30s"), quota
// (insufficient_quota), 401, 400, 500, 503, silent, silent_after_headers, stall_mid, drop_mid, failed,
// with modifiers slow:<ms> and delay_first:<ms> joined by '+', e.g. "stall_mid+slow:10".
class FakeUpstreamProcess
{
public:
    FakeUpstreamProcess();
    ~FakeUpstreamProcess();
    FakeUpstreamProcess(const FakeUpstreamProcess &) = delete;
    FakeUpstreamProcess &operator=(const FakeUpstreamProcess &) = delete;

    // Starts the process and waits for "LISTENING <port>". On failure errorString() says why.
    bool start(int timeoutMs = 10000);
    void stop();
    bool isRunning() const;
    QString errorString() const { return m_error; }

    quint16 port() const { return m_port; }
    QString baseUrl() const;             // http://127.0.0.1:PORT/backend-api
    QUrl url(const QString &path) const; // http://127.0.0.1:PORT + path

    // Queues behaviours for the next requests of an account (by chatgpt-account-id) or a bearer token.
    // endpoint: responses (default), compact, models, usage. sticky: the last action repeats forever.
    bool script(const QString &accountId, const QStringList &actions, bool sticky = false,
                const QString &endpoint = QStringLiteral("responses"));
    bool scriptToken(const QString &token, const QStringList &actions, bool sticky = false,
                     const QString &endpoint = QStringLiteral("responses"));
    // Sets an account's quota state: plan_type, primary_used_percent, secondary_used_percent,
    // primary/secondary_window_minutes, primary/secondary_reset_after_seconds, has_credits, unlimited, balance.
    bool setUsage(const QString &accountId, const QJsonObject &usage);

    // Every upstream request received (control requests excluded), oldest first: {seq, method, path,
    // query, authorization (bearer token), chatgpt_account_id, x_request_id, session_id, turn_state,
    // content_encoding, headers{}, body (parsed JSON), upstream_request_id, response_id, action,
    // status_sent, outcome, client_gone, received_at_ms}. Read in pages, so a soak's hundreds of thousands of
    // entries come through too; `brief` leaves out body and headers. Empty (with errorString()) on an error.
    QJsonArray log(bool brief = false);
    QJsonObject stats(); // {active_streams, max_concurrent_streams, total_requests}
    bool reset();        // clears scripts, log, usage, anchors; drops held connections
    bool dropHeld();     // closes connections held by silent / stalled turns

private:
    bool control(const QByteArray &method, const QString &what, const QJsonObject &body, QByteArray *reply);

    QProcess m_process;
    quint16 m_port = 0;
    QString m_error;
};

} // namespace sy::test
