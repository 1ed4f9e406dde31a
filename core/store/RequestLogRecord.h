#pragma once

#include <QList>
#include <QString>
#include <QStringList>
#include <optional>

namespace sy {

// One upstream attempt of a request (DESIGN.md "Local API and ids": attempts[]).
struct RequestAttempt
{
    QString accountId;
    std::optional<QString> egressProxy; // name of the egress proxy used; nullopt = direct
    QString outcome;                    // e.g. "completed", "rate_limited", "connect_timeout"
    std::optional<qint64> elapsedMs;

    bool operator==(const RequestAttempt &o) const
    {
        return accountId == o.accountId && egressProxy == o.egressProxy && outcome == o.outcome &&
               elapsedMs == o.elapsedMs;
    }
};

// One row of the request log, the durable truth about a proxied request. Field for field the JSON object
// `switchyard requests --json` prints; nullopt is JSON null (an unknown number is never 0).
struct RequestLogRecord
{
    QString requestId; // "req_..." (util/Ids.h newRequestId)
    qint64 startedAtMs = 0;
    QString route; // "/v1/responses", "/backend-api/codex/responses", ...
    std::optional<QString> model;
    std::optional<QString> sessionKey;
    std::optional<QString> accountId; // nullopt when no account was chosen
    std::optional<QString> accountAlias;
    std::optional<QString> chatgptAccountId;
    QString status;                   // one of statusNames()
    std::optional<QString> killStage; // one of killStageNames() when a budget killed the request
    std::optional<QString> errorCode;
    std::optional<QString> upstreamRequestId;
    QList<RequestAttempt> attempts;
    QStringList blockedBy;

    struct Latency
    {
        std::optional<qint64> queueMs;
        std::optional<qint64> connectMs;
        std::optional<qint64> firstEventMs;
        std::optional<qint64> totalMs;
        bool operator==(const Latency &o) const
        {
            return queueMs == o.queueMs && connectMs == o.connectMs && firstEventMs == o.firstEventMs &&
                   totalMs == o.totalMs;
        }
    } latency;

    struct Tokens
    {
        std::optional<qint64> input;
        std::optional<qint64> cached;
        std::optional<qint64> output;
        std::optional<qint64> reasoning;
        std::optional<qint64> total;
        bool operator==(const Tokens &o) const
        {
            return input == o.input && cached == o.cached && output == o.output && reasoning == o.reasoning &&
                   total == o.total;
        }
    } tokens;

    bool operator==(const RequestLogRecord &o) const;

    // "completed", "failed", "cancelled", "timed_out", "rejected".
    static QStringList statusNames();
    // "gate_wait", "connect", "pre_response", "stream_idle", "request_total", "stream_max", "egress".
    static QStringList killStageNames();
};

} // namespace sy
