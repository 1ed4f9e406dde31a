#include "FakeUpstream.h"

#include "FakeTurn.h"

#include <QDateTime>
#include <QJsonDocument>
#include <QRandomGenerator>

namespace sy::fake {

namespace {

const QStringList &forbiddenFields()
{
    static const QStringList fields{QStringLiteral("max_output_tokens"),
                                    QStringLiteral("metadata"),
                                    QStringLiteral("temperature"),
                                    QStringLiteral("top_p"),
                                    QStringLiteral("user"),
                                    QStringLiteral("truncation"),
                                    QStringLiteral("safety_identifier")};
    return fields;
}

QByteArray compact(const QJsonValue &v)
{
    if (v.isArray())
        return QJsonDocument(v.toArray()).toJson(QJsonDocument::Compact);
    return QJsonDocument(v.toObject()).toJson(QJsonDocument::Compact);
}

QString bearerToken(const HttpRequest &r)
{
    const QByteArray auth = r.header("authorization");
    if (!auth.left(7).toLower().startsWith("bearer "))
        return {};
    return QString::fromUtf8(auth.mid(7).trimmed());
}

} // namespace

FakeUpstream::FakeUpstream(QObject *parent) : QObject(parent)
{
    m_server.setHandler([this](HttpRequestPtr r, HttpResponse *s) { handle(r, s); });
}

bool FakeUpstream::listen(const QHostAddress &address, quint16 port)
{
    return m_server.listen(address, port);
}

qint64 FakeUpstream::nowSeconds() const
{
    return QDateTime::currentSecsSinceEpoch();
}

QString FakeUpstream::newId(const char *prefix)
{
    const quint64 random = QRandomGenerator::global()->generate64();
    return QString::fromLatin1(prefix) +
           QStringLiteral("%1%2").arg(random, 16, 16, QLatin1Char('0')).arg(++m_idCounter, 8, 16, QLatin1Char('0'));
}

void FakeUpstream::streamStarted()
{
    ++m_activeStreams;
    m_maxConcurrentStreams = qMax(m_maxConcurrentStreams, m_activeStreams);
}

void FakeUpstream::streamEnded()
{
    --m_activeStreams;
}

void FakeUpstream::recordOutcome(int logIndex, int status, const QString &outcome)
{
    if (logIndex < 0 || logIndex >= m_log.size())
        return;
    if (status > 0)
        m_log[logIndex].insert(QStringLiteral("status_sent"), status);
    m_log[logIndex].insert(QStringLiteral("outcome"), outcome);
}

void FakeUpstream::markClientGone(int logIndex, bool interrupted)
{
    if (logIndex < 0 || logIndex >= m_log.size())
        return;
    m_log[logIndex].insert(QStringLiteral("client_gone"), true);
    if (interrupted)
        m_log[logIndex].insert(QStringLiteral("outcome"), QStringLiteral("client_gone"));
}

int FakeUpstream::appendLog(const HttpRequest &r, const Caller &caller, const QString &upstreamRequestId)
{
    QJsonObject headers;
    for (const HttpHeader &h : r.headers) {
        const QString name = QString::fromLatin1(h.first);
        const QString value = QString::fromUtf8(h.second);
        headers.insert(name,
                       headers.contains(name) ? headers.value(name).toString() + QStringLiteral(", ") + value : value);
    }
    QByteArray sessionId = r.header("session_id");
    if (sessionId.isEmpty())
        sessionId = r.header("session-id");
    auto orNull = [](const QByteArray &v) { return v.isEmpty() ? QJsonValue() : QJsonValue(QString::fromUtf8(v)); };
    QJsonParseError error{};
    const QJsonDocument body = QJsonDocument::fromJson(r.body, &error);
    QJsonObject entry{
        {QStringLiteral("seq"), int(m_log.size())},
        {QStringLiteral("received_at_ms"), QDateTime::currentMSecsSinceEpoch()},
        {QStringLiteral("method"), QString::fromLatin1(r.method)},
        {QStringLiteral("path"), r.path},
        {QStringLiteral("query"), QString::fromUtf8(r.rawQuery)},
        {QStringLiteral("authorization"), caller.token.isEmpty() ? QJsonValue() : QJsonValue(caller.token)},
        {QStringLiteral("chatgpt_account_id"),
         caller.accountId.isEmpty() ? QJsonValue() : QJsonValue(caller.accountId)},
        {QStringLiteral("x_request_id"), orNull(r.header("x-request-id"))},
        {QStringLiteral("session_id"), orNull(sessionId)},
        {QStringLiteral("turn_state"), orNull(r.header("x-codex-turn-state"))},
        {QStringLiteral("content_encoding"), orNull(r.contentEncoding)},
        {QStringLiteral("headers"), headers},
        {QStringLiteral("body_size"), r.body.size()},
        {QStringLiteral("upstream_request_id"), upstreamRequestId},
        {QStringLiteral("response_id"), QJsonValue()},
        {QStringLiteral("action"), QStringLiteral("ok")},
        {QStringLiteral("status_sent"), 0},
        {QStringLiteral("outcome"), QStringLiteral("pending")},
        {QStringLiteral("client_gone"), false},
    };
    if (r.body.isEmpty())
        entry.insert(QStringLiteral("body"), QJsonValue());
    else if (error.error == QJsonParseError::NoError)
        entry.insert(QStringLiteral("body"), body.isArray() ? QJsonValue(body.array()) : QJsonValue(body.object()));
    else
        entry.insert(QStringLiteral("body_text"), QString::fromUtf8(r.body.left(4096)));
    m_log.append(entry);
    return int(m_log.size() - 1);
}

HttpHeaderList FakeUpstream::commonHeaders(const QString &accountId, const QString &upstreamRequestId) const
{
    HttpHeaderList headers = rateLimitHeaders(usageFor(accountId), nowSeconds());
    headers.append({"x-request-id", upstreamRequestId.toUtf8()});
    return headers;
}

void FakeUpstream::sendJson(HttpResponse *response, int logIndex, int status, const QJsonObject &body,
                            const QString &outcome, const HttpHeaderList &headers)
{
    for (const HttpHeader &h : headers)
        response->setHeader(h.first, h.second);
    response->sendFull(status, "application/json", QJsonDocument(body).toJson(QJsonDocument::Compact));
    recordOutcome(logIndex, status, outcome);
}

void FakeUpstream::reject(HttpResponse *response, int logIndex, int status, const QString &type, const QString &code,
                          const QString &message, const QString &outcome)
{
    response->sendJsonError(status, type.toUtf8(), code.toUtf8(), message);
    recordOutcome(logIndex, status, outcome);
}

void FakeUpstream::startTurn(FakeTurn *turn)
{
    m_turns.removeAll(QPointer<FakeTurn>());
    m_turns.append(turn);
    turn->start();
}

void FakeUpstream::handle(const HttpRequestPtr &request, HttpResponse *response)
{
    const HttpRequest &r = *request;
    if (r.path.startsWith(QLatin1String("/__control/"))) {
        handleControl(r, response);
        return;
    }
    QString path = r.path;
    if (path.startsWith(QLatin1String("/backend-api/")))
        path = path.mid(int(qstrlen("/backend-api")));
    while (path.size() > 1 && path.endsWith(QLatin1Char('/')))
        path.chop(1);

    const Caller caller{bearerToken(r), QString::fromUtf8(r.header("chatgpt-account-id"))};
    const QString upstreamId = newId("up_");
    const int logIndex = appendLog(r, caller, upstreamId);

    struct Route
    {
        const char *path;
        const char *method;
        const char *endpoint;
    };
    static const Route routes[] = {{"/codex/responses", "POST", "responses"},
                                   {"/codex/responses/compact", "POST", "compact"},
                                   {"/codex/models", "GET", "models"},
                                   {"/wham/usage", "GET", "usage"}};
    for (const Route &route : routes) {
        if (path != QLatin1String(route.path))
            continue;
        if (r.method != route.method) {
            reject(response, logIndex, 405, QStringLiteral("invalid_request_error"),
                   QStringLiteral("method_not_allowed"), QStringLiteral("method not allowed"),
                   QStringLiteral("rejected"));
            return;
        }
        if (caller.token.isEmpty() || caller.accountId.isEmpty()) {
            reject(response, logIndex, 401, QStringLiteral("invalid_request_error"),
                   QStringLiteral("missing_authorization"),
                   QStringLiteral("Authorization bearer token and chatgpt-account-id are required"),
                   QStringLiteral("unauthorized"));
            return;
        }
        if (qstrcmp(route.endpoint, "responses") == 0)
            handleResponses(r, response, logIndex, caller);
        else
            handleSimple(QString::fromLatin1(route.endpoint), r, response, logIndex, caller);
        return;
    }
    reject(response, logIndex, 404, QStringLiteral("invalid_request_error"), QStringLiteral("not_found"),
           QStringLiteral("no such route: %1").arg(r.path), QStringLiteral("not_found"));
}

void FakeUpstream::handleResponses(const HttpRequest &r, HttpResponse *response, int logIndex, const Caller &caller)
{
    const QJsonDocument doc = QJsonDocument::fromJson(r.body);
    if (!doc.isObject()) {
        reject(response, logIndex, 400, QStringLiteral("invalid_request_error"), QStringLiteral("invalid_json"),
               QStringLiteral("The request body is not a JSON object."), QStringLiteral("rejected"));
        return;
    }
    const QJsonObject body = doc.object();
    if (body.value(QStringLiteral("store")).toBool()) {
        reject(response, logIndex, 400, QStringLiteral("invalid_request_error"), QStringLiteral("unsupported_value"),
               QStringLiteral("Store must be set to false"), QStringLiteral("rejected"));
        return;
    }
    for (const QString &field : forbiddenFields()) {
        if (body.contains(field)) {
            reject(response, logIndex, 400, QStringLiteral("invalid_request_error"),
                   QStringLiteral("unsupported_parameter"), QStringLiteral("Unsupported parameter: %1").arg(field),
                   QStringLiteral("rejected"));
            return;
        }
    }
    if (body.value(QStringLiteral("stream")) != QJsonValue(true)) {
        reject(response, logIndex, 400, QStringLiteral("invalid_request_error"), QStringLiteral("unsupported_value"),
               QStringLiteral("Stream must be set to true"), QStringLiteral("rejected"));
        return;
    }

    const HttpHeaderList headers =
        commonHeaders(caller.accountId, m_log[logIndex].value(QStringLiteral("upstream_request_id")).toString());
    const QString previous = body.value(QStringLiteral("previous_response_id")).toString();
    if (!previous.isEmpty()) {
        const QString owner = m_responseOwners.value(previous);
        if (owner.isEmpty()) {
            reject(response, logIndex, 400, QStringLiteral("invalid_request_error"),
                   QStringLiteral("previous_response_not_found"),
                   QStringLiteral("Previous response with id '%1' not found.").arg(previous),
                   QStringLiteral("rejected"));
            return;
        }
        if (owner != caller.accountId) {
            // The real backend accepts a foreign anchor and then never emits anything.
            auto *turn = new FakeTurn(this, logIndex, response, Behaviour{}, {}, headers);
            turn->setCountsAsStream(true);
            turn->setHoldOutcome(QStringLiteral("foreign_anchor"));
            startTurn(turn);
            return;
        }
    }

    const Behaviour behaviour = m_scripts.take(QStringLiteral("responses"), caller.accountId, caller.token);
    m_log[logIndex].insert(QStringLiteral("action"), behaviour.action);
    HttpHeaderList streamHeaders = headers;
    QByteArray turnState = r.header("x-codex-turn-state");
    if (turnState.isEmpty())
        turnState = newId("ts_").toUtf8();
    streamHeaders.append({"x-codex-turn-state", turnState});

    if (behaviour.isHttpError()) {
        auto *turn = new FakeTurn(this, logIndex, response, behaviour, {}, headers);
        turn->setFullReply(errorReplyFor(behaviour.kind, nowSeconds()), QStringLiteral("scripted_") + behaviour.action);
        startTurn(turn);
        return;
    }

    TurnSpec spec;
    spec.responseId = newId("resp_");
    spec.accountId = caller.accountId;
    spec.body = body;
    spec.createdAtSeconds = nowSeconds();
    spec.usage = usageFor(caller.accountId);
    const QString cacheKey = body.value(QStringLiteral("prompt_cache_key")).toString();
    if (!cacheKey.isEmpty()) {
        const QString key = caller.accountId + QLatin1Char('\n') + cacheKey;
        spec.cachedTokens = m_promptCache.value(key, 0);
        m_promptCache.insert(key, inputTokensFor(body));
    }
    m_responseOwners.insert(spec.responseId, caller.accountId);
    m_log[logIndex].insert(QStringLiteral("response_id"), spec.responseId);

    QList<SseFrame> frames = behaviour.kind == Behaviour::Failed ? buildFailedTurnFrames(spec) : buildTurnFrames(spec);
    auto *turn = new FakeTurn(this, logIndex, response, behaviour, std::move(frames), streamHeaders);
    turn->setCountsAsStream(true);
    startTurn(turn);
}

void FakeUpstream::handleSimple(const QString &endpoint, const HttpRequest &r, HttpResponse *response, int logIndex,
                                const Caller &caller)
{
    QJsonObject body;
    if (endpoint == QLatin1String("compact")) {
        const QJsonDocument doc = QJsonDocument::fromJson(r.body);
        if (!doc.isObject()) {
            reject(response, logIndex, 400, QStringLiteral("invalid_request_error"), QStringLiteral("invalid_json"),
                   QStringLiteral("The request body is not a JSON object."), QStringLiteral("rejected"));
            return;
        }
        body = compactJson(doc.object(), caller.accountId);
    } else if (endpoint == QLatin1String("models")) {
        body = modelsJson();
    } else {
        body = whamUsageJson(usageFor(caller.accountId), nowSeconds());
    }
    Behaviour behaviour = m_scripts.take(endpoint, caller.accountId, caller.token);
    m_log[logIndex].insert(QStringLiteral("action"), behaviour.action);
    const HttpHeaderList headers =
        commonHeaders(caller.accountId, m_log[logIndex].value(QStringLiteral("upstream_request_id")).toString());
    auto *turn = new FakeTurn(this, logIndex, response, behaviour, {}, headers);
    if (behaviour.isHttpError() || behaviour.kind == Behaviour::Failed) {
        turn->setFullReply(errorReplyFor(behaviour.kind, nowSeconds()), QStringLiteral("scripted_") + behaviour.action);
    } else if (behaviour.kind == Behaviour::Ok) {
        ErrorReply ok;
        ok.status = 200;
        ok.body = compact(body);
        turn->setFullReply(ok, QStringLiteral("completed"));
    } else {
        turn->setHoldOutcome(QStringLiteral("silent"));
    }
    startTurn(turn);
}

} // namespace sy::fake
