#include "FakeScript.h"

#include <QJsonDocument>
#include <QJsonObject>

namespace sy::fake {

namespace {

const QHash<QString, Behaviour::Kind> &kindsByName()
{
    static const QHash<QString, Behaviour::Kind> kinds{
        {QStringLiteral("ok"), Behaviour::Ok},
        {QStringLiteral("429"), Behaviour::UsageLimit429},
        {QStringLiteral("429_rate"), Behaviour::RateLimit429},
        {QStringLiteral("quota"), Behaviour::Quota429},
        {QStringLiteral("401"), Behaviour::Unauthorized401},
        {QStringLiteral("400"), Behaviour::BadRequest400},
        {QStringLiteral("500"), Behaviour::ServerError500},
        {QStringLiteral("503"), Behaviour::Overloaded503},
        {QStringLiteral("silent"), Behaviour::Silent},
        {QStringLiteral("silent_after_headers"), Behaviour::SilentAfterHeaders},
        {QStringLiteral("stall_mid"), Behaviour::StallMid},
        {QStringLiteral("drop_mid"), Behaviour::DropMid},
        {QStringLiteral("failed"), Behaviour::Failed},
    };
    return kinds;
}

QByteArray errorBody(const QString &type, const QString &code, const QString &message, QJsonObject extra = {})
{
    QJsonObject error{
        {QStringLiteral("type"), type}, {QStringLiteral("code"), code}, {QStringLiteral("message"), message}};
    for (auto it = extra.begin(); it != extra.end(); ++it)
        error.insert(it.key(), it.value());
    return QJsonDocument(QJsonObject{{QStringLiteral("error"), error}}).toJson(QJsonDocument::Compact);
}

} // namespace

std::optional<Behaviour> parseBehaviour(const QString &action)
{
    Behaviour b;
    b.action = action;
    bool haveKind = false;
    for (const QString &token : action.split(QLatin1Char('+'), Qt::SkipEmptyParts)) {
        const QString t = token.trimmed();
        const qsizetype colon = t.indexOf(QLatin1Char(':'));
        if (colon > 0) {
            bool ok = false;
            const int ms = t.mid(colon + 1).toInt(&ok);
            if (!ok || ms < 0)
                return std::nullopt;
            const QString name = t.left(colon);
            if (name == QLatin1String("slow"))
                b.slowMs = ms;
            else if (name == QLatin1String("delay_first"))
                b.delayFirstMs = ms;
            else
                return std::nullopt;
            continue;
        }
        const auto it = kindsByName().constFind(t);
        if (it == kindsByName().constEnd() || haveKind)
            return std::nullopt;
        b.kind = it.value();
        haveKind = true;
    }
    return b;
}

ErrorReply errorReplyFor(Behaviour::Kind kind, qint64 now)
{
    ErrorReply r;
    switch (kind) {
    case Behaviour::UsageLimit429:
        r.status = 429;
        r.body = errorBody(QStringLiteral("usage_limit_reached"), QStringLiteral("usage_limit_reached"),
                           QStringLiteral("The usage limit has been reached"),
                           {{QStringLiteral("resets_in_seconds"), 3600}, {QStringLiteral("resets_at"), now + 3600}});
        break;
    case Behaviour::RateLimit429:
        r.status = 429;
        r.body = errorBody(QStringLiteral("rate_limit_exceeded"), QStringLiteral("rate_limit_exceeded"),
                           QStringLiteral("Rate limit reached for gpt-5-codex. Please try again in 1m30s."));
        r.headers.append(HttpHeader("retry-after", "90"));
        break;
    case Behaviour::Quota429:
        r.status = 429;
        r.body = errorBody(QStringLiteral("insufficient_quota"), QStringLiteral("insufficient_quota"),
                           QStringLiteral("You exceeded your current quota."));
        break;
    case Behaviour::Unauthorized401:
        r.status = 401;
        r.body = errorBody(QStringLiteral("invalid_request_error"), QStringLiteral("token_expired"),
                           QStringLiteral("Provided authentication token is expired. Please try signing in again."));
        break;
    case Behaviour::BadRequest400:
        r.status = 400;
        r.body = errorBody(QStringLiteral("invalid_request_error"), QStringLiteral("invalid_request"),
                           QStringLiteral("Scripted bad request."));
        break;
    case Behaviour::Overloaded503:
        r.status = 503;
        r.body = errorBody(QStringLiteral("server_error"), QStringLiteral("overloaded"),
                           QStringLiteral("The server is overloaded. Please try again later."));
        break;
    default:
        r.status = 500;
        r.body = errorBody(QStringLiteral("server_error"), QStringLiteral("server_error"),
                           QStringLiteral("An error occurred while processing your request."));
        break;
    }
    return r;
}

void ScriptBook::add(const QString &endpoint, const QString &key, const QList<Behaviour> &actions, bool sticky)
{
    Queue &q = m_queues[endpoint + QLatin1Char('\n') + key];
    q.actions.append(actions);
    q.sticky = sticky;
}

bool ScriptBook::takeFrom(const QString &queueKey, Behaviour &out)
{
    auto it = m_queues.find(queueKey);
    if (it == m_queues.end() || it->actions.isEmpty())
        return false;
    out = it->actions.first();
    if (!(it->sticky && it->actions.size() == 1))
        it->actions.removeFirst();
    return true;
}

Behaviour ScriptBook::take(const QString &endpoint, const QString &accountId, const QString &token)
{
    Behaviour b;
    if (!accountId.isEmpty() && takeFrom(endpoint + QStringLiteral("\naccount:") + accountId, b))
        return b;
    if (!token.isEmpty() && takeFrom(endpoint + QStringLiteral("\ntoken:") + token, b))
        return b;
    return Behaviour{};
}

} // namespace sy::fake
