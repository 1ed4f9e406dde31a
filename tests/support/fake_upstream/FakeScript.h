#pragma once

#include "http/HttpRequest.h"

#include <QHash>
#include <QList>
#include <QString>
#include <optional>

// Scripted upstream behaviours (test control API): what the fake does with the next requests of one
// account or token.
namespace sy::fake {

struct Behaviour
{
    enum Kind
    {
        Ok,
        UsageLimit429,      // "429": usage_limit_reached, resets_in_seconds 3600
        RateLimit429,       // "429_rate": rate_limit_exceeded, "try again in 1m30s"
        Quota429,           // "quota": insufficient_quota
        Unauthorized401,    // "401"
        BadRequest400,      // "400"
        ServerError500,     // "500"
        Overloaded503,      // "503"
        Silent,             // accept the request, send nothing, hold the connection open
        SilentAfterHeaders, // send the 200 head, then nothing
        StallMid,           // created + two deltas, then silence forever
        DropMid,            // created + two deltas, then close the connection (no terminal event)
        Failed,             // created, in_progress, response.failed
    };
    Kind kind = Ok;
    int slowMs = 0;       // "slow:<ms>": pause between events
    int delayFirstMs = 0; // "delay_first:<ms>": pause before the first byte (or error reply)
    QString action = QStringLiteral("ok");

    bool isHttpError() const { return kind >= UsageLimit429 && kind <= Overloaded503; }
};

// Parses one action; modifiers combine with '+', e.g. "delay_first:500+slow:20" or "stall_mid+slow:5".
std::optional<Behaviour> parseBehaviour(const QString &action);

struct ErrorReply
{
    int status = 500;
    QByteArray body;
    HttpHeaderList headers;
};
ErrorReply errorReplyFor(Behaviour::Kind kind, qint64 nowSeconds);

class ScriptBook
{
public:
    // endpoint: responses | compact | models | usage. Key: "account:<id>" or "token:<bearer>".
    void add(const QString &endpoint, const QString &key, const QList<Behaviour> &actions, bool sticky);
    // The next behaviour for a request; the account's queue wins over the token's. Default Ok.
    Behaviour take(const QString &endpoint, const QString &accountId, const QString &token);
    void clear() { m_queues.clear(); }

private:
    struct Queue
    {
        QList<Behaviour> actions;
        bool sticky = false; // the last action is never consumed
    };
    bool takeFrom(const QString &queueKey, Behaviour &out);
    QHash<QString, Queue> m_queues;
};

} // namespace sy::fake
