#include "api/UpstreamHeaders.h"

namespace sy {

namespace {

// Client headers the backend reads. Everything else, credentials first of all, stays on our side.
const char *const kForwarded[] = {
    "originator",          "version",          "session_id",          "session-id",
    "thread-id",           "conversation_id",  "user-agent",          "openai-beta",
    "x-codex-turn-state",  "x-codex-turn-metadata", "x-codex-window-id", "x-codex-beta-features",
    "x-openai-subagent",
};

} // namespace

QUrl upstreamEndpoint(const QUrl &base, const QString &path, const QByteArray &rawQuery)
{
    QUrl url = base;
    QString p = url.path();
    while (p.endsWith(QLatin1Char('/')))
        p.chop(1);
    url.setPath(p + path);
    if (!rawQuery.isEmpty())
        url.setQuery(QString::fromLatin1(rawQuery), QUrl::TolerantMode);
    return url;
}

HttpHeader upstreamAuthorization(const AccountPool::Account &account)
{
    return {QByteArrayLiteral("authorization"), QByteArrayLiteral("Bearer ") + account.tokens.accessToken.toUtf8()};
}

HttpHeaders upstreamHeadersButAuthorization(const HttpRequest &client, const AccountPool::Account &account,
                                            const QByteArray &requestId, bool eventStream)
{
    HttpHeaders h;
    h.reserve(16);
    h.append({QByteArrayLiteral("chatgpt-account-id"), account.record.chatgptAccountId.toUtf8()});
    h.append({QByteArrayLiteral("accept"),
              eventStream ? QByteArrayLiteral("text/event-stream") : QByteArrayLiteral("application/json")});
    if (client.method == "POST")
        h.append({QByteArrayLiteral("content-type"), QByteArrayLiteral("application/json")});
    h.append({QByteArrayLiteral("x-request-id"), requestId});
    for (const auto &header : client.headers) {
        for (const char *name : kForwarded) {
            if (header.first == name) {
                h.append(header);
                break;
            }
        }
    }
    if (client.header("originator").isEmpty())
        h.append({QByteArrayLiteral("originator"), QByteArrayLiteral("switchyard")});
    return h;
}

HttpHeaders upstreamHeaders(const HttpRequest &client, const AccountPool::Account &account, const QByteArray &requestId,
                            bool eventStream)
{
    HttpHeaders h = upstreamHeadersButAuthorization(client, account, requestId, eventStream);
    h.prepend(upstreamAuthorization(account));
    return h;
}

} // namespace sy
