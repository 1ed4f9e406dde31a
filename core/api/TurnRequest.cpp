#include "api/Turn.h"
#include "api/translate/ChatRequestToResponses.h"
#include "api/translate/RequestScan.h"
#include "api/translate/ResponsesRequestSanitizer.h"

#include <QJsonDocument>

// The request side of a turn: what the client's body says (a Codex body scanned in place, anything else parsed,
// translated from chat completions and sanitized), the sink its answer goes through, and the session key.
namespace sy {

bool Turn::prepare(const std::optional<ResponsesScan> *scanned)
{
    // Codex bodies (often MiB of history) go upstream byte for byte: read the few keys routing needs without
    // building a document, and fall back to the full parser for anything the sanitizer would change.
    if (m_route.route == Route::CodexResponses) {
        const std::optional<ResponsesScan> scan = scanned ? *scanned : scanResponsesRequest(m_request->body);
        if (scan && scan->forwardableAsIs()) {
            m_model = scan->model;
            m_previousResponseId = scan->previousResponseId;
            m_clientWantsStream = true;
            m_upstreamBody = m_request->body;
            m_sink = makeTurnSink(SinkKind::CodexStream, ChatSinkOptions{});
            readSessionKey(scan->promptCacheKey);
            return true;
        }
    }
    const qint64 startedUs = m_marks.now();
    const bool whileClaiming = m_state == State::Claiming;
    const bool prepared = prepareWholeBody();
    m_marks.bodyPrepared(startedUs, whileClaiming);
    return prepared;
}

bool Turn::prepareWholeBody()
{
    QJsonParseError pe;
    const QJsonDocument doc = QJsonDocument::fromJson(m_request->body, &pe);
    if (pe.error != QJsonParseError::NoError || !doc.isObject()) {
        rejectBeforeDispatch(400, "invalid_request_error", "invalid_json",
                             QStringLiteral("The request body is not a JSON object: %1").arg(pe.errorString()));
        return false;
    }
    QJsonObject body = doc.object();
    QString error;
    ChatSinkOptions chat;
    if (m_route.route == Route::V1ChatCompletions) {
        m_clientWantsStream = body.value(QLatin1String("stream")).toBool(false);
        chat.model = body.value(QLatin1String("model")).toString();
        chat.includeUsage =
            body.value(QLatin1String("stream_options")).toObject().value(QLatin1String("include_usage")).toBool();
        body = chatRequestToResponses(body, &error);
        if (!error.isEmpty()) {
            rejectBeforeDispatch(400, "invalid_request_error", "invalid_request", error);
            return false;
        }
    }
    SanitizedResponsesRequest sanitized;
    ResponsesSanitizeOptions options;
    // Codex sends its instructions as developer messages: keep its bodies byte-identical.
    options.ensureInstructions = m_route.route != Route::CodexResponses;
    if (!sanitizeResponsesRequest(body, &sanitized, &error, options)) {
        rejectBeforeDispatch(400, "invalid_request_error", "invalid_request", error);
        return false;
    }
    m_model = sanitized.model;
    m_previousResponseId = sanitized.previousResponseId;
    if (m_route.route != Route::V1ChatCompletions)
        m_clientWantsStream = m_route.route == Route::CodexResponses || sanitized.clientWantsStream;
    m_upstreamBody = sanitized.changed || m_route.route == Route::V1ChatCompletions
                         ? QJsonDocument(sanitized.body).toJson(QJsonDocument::Compact)
                         : m_request->body;

    SinkKind kind = SinkKind::CodexStream;
    if (m_route.route == Route::V1Responses)
        kind = m_clientWantsStream ? SinkKind::ResponsesStream : SinkKind::ResponsesJson;
    else if (m_route.route == Route::V1ChatCompletions)
        kind = m_clientWantsStream ? SinkKind::ChatStream : SinkKind::ChatJson;
    chat.model = chat.model.isEmpty() ? m_model : chat.model;
    m_sink = makeTurnSink(kind, chat);

    readSessionKey(sanitized.promptCacheKey);
    return true;
}

void Turn::readSessionKey(const QString &promptCacheKey)
{
    // Session key: Codex session-id (also its prompt_cache_key), OpenCode x-session-affinity.
    for (const char *name : {"session-id", "session_id", "x-session-affinity", "x-session-id"}) {
        m_sessionKey = QString::fromUtf8(m_request->header(name));
        if (!m_sessionKey.isEmpty())
            break;
    }
    if (m_sessionKey.isEmpty())
        m_sessionKey = promptCacheKey;
    m_turnState = m_request->header("x-codex-turn-state");
}

} // namespace sy
