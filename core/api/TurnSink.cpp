#include "api/TurnSink.h"

#include "api/translate/ChatCompletionFromResponse.h"
#include "api/translate/ResponseEventSummary.h"
#include "api/translate/ResponseEventType.h"
#include "upstream/SseParser.h"
#include "util/ByteAppend.h"
#include "util/Ids.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>

namespace sy {

bool isTerminalEventType(const QByteArray &type)
{
    return isTerminalResponseEvent(responseEventType(type));
}

QJsonObject TurnSink::eventData(const QByteArray &, const QByteArray &rawData) const
{
    return QJsonDocument::fromJson(rawData).object();
}

namespace {

bool hasLineBreak(const QByteArray &s)
{
    return s.contains('\n') || s.contains('\r');
}

// sseFormat() into a buffer the sink keeps: once the caller has sent the previous frame and dropped it, the
// next frame reuses its storage instead of allocating. Multi-line text keeps sseFormat()'s line splitting.
void formatSseInto(QByteArray &out, const QByteArray &type, const QByteArray &data)
{
    if (hasLineBreak(type) || hasLineBreak(data)) {
        out = sseFormat(type, data);
        return;
    }
    if (out.capacity() > 1024)
        out = QByteArray(); // a big event (a finished item) must not pin its size for the rest of the stream
    out.resize(0);          // keeps the capacity unless the previous frame is still shared
    if (type.isEmpty())
        appendPieces(out, {"data: ", data, "\n\n"});
    else
        appendPieces(out, {"event: ", type, "\n", "data: ", data, "\n\n"});
}

QByteArray compactJson(const QJsonObject &o)
{
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

QByteArray responsesFailureFrames(const QString &responseId, const QString &code, const QString &message)
{
    QJsonObject error{{QStringLiteral("code"), code}, {QStringLiteral("message"), message}};
    QJsonObject errorEvent{{QStringLiteral("type"), QStringLiteral("error")},
                           {QStringLiteral("code"), code},
                           {QStringLiteral("message"), message}};
    QJsonObject response{{QStringLiteral("id"), responseId.isEmpty() ? QStringLiteral("resp_failed") : responseId},
                         {QStringLiteral("object"), QStringLiteral("response")},
                         {QStringLiteral("status"), QStringLiteral("failed")},
                         {QStringLiteral("error"), error},
                         {QStringLiteral("output"), QJsonArray()}};
    QJsonObject failed{{QStringLiteral("type"), QStringLiteral("response.failed")},
                       {QStringLiteral("response"), response}};
    return sseFormat("error", compactJson(errorEvent)) + sseFormat("response.failed", compactJson(failed));
}

// Shared bookkeeping: every sink learns usage, status and response id from the same events.
class TrackingSink : public TurnSink
{
public:
    TokenUsage usage() const override { return m_acc.usage(); }
    QString terminalStatus() const override { return m_acc.status(); }
    QString responseId() const override { return m_acc.responseId(); }
    bool needsEventData(const QByteArray &type) const override { return m_acc.usesData(type); }
    QByteArray takeFullBody() override
    {
        QByteArray body = fullBody();
        m_acc.dropAllButSummary();
        return body;
    }

protected:
    void track(const QByteArray &type, const QJsonObject &data) { m_acc.onEvent(type, data); }
    ResponseAccumulator m_acc;
};

// Codex route: every upstream event, codex.* included, passes through unchanged.
class CodexStreamSink final : public TrackingSink
{
public:
    // The client gets the events themselves: the log needs only id, status and usage from them.
    CodexStreamSink() { m_acc.setSummaryOnly(true); }
    bool streaming() const override { return true; }
    QByteArray contentType() const override { return QByteArrayLiteral("text/event-stream"); }
    QByteArray keepaliveFrame() const override
    {
        return QByteArrayLiteral(": keepalive\n\n") +
               sseFormat("codex.keepalive", QByteArrayLiteral("{\"type\":\"codex.keepalive\"}"));
    }
    // The accumulator keeps a summary of the response (ResponseEventSummary.h); response.failed and error
    // stay whole, the turn classifies them.
    QJsonObject eventData(const QByteArray &type, const QByteArray &rawData) const override
    {
        const ResponseEventType kind = responseEventType(type);
        if (kind == ResponseEventType::Created || kind == ResponseEventType::InProgress ||
            kind == ResponseEventType::Completed || kind == ResponseEventType::Incomplete) {
            if (std::optional<QJsonObject> summary = responseEventSummary(rawData))
                return *std::move(summary);
        }
        return TurnSink::eventData(type, rawData);
    }
    QByteArray onEvent(const QByteArray &type, const QByteArray &rawData, const QJsonObject &data) override
    {
        track(type, data);
        formatSseInto(m_frame, type, rawData);
        return m_frame;
    }
    QByteArray failureFrames(const QString &code, const QString &message) override
    {
        return responsesFailureFrames(responseId(), code, message);
    }

private:
    QByteArray m_frame;
};

// /v1/responses streaming: codex.* events are dropped and the stream starts with response.created.
class ResponsesStreamSink final : public TrackingSink
{
public:
    bool streaming() const override { return true; }
    QByteArray contentType() const override { return QByteArrayLiteral("text/event-stream"); }
    QByteArray onEvent(const QByteArray &type, const QByteArray &rawData, const QJsonObject &data) override
    {
        track(type, data);
        if (type.startsWith("codex."))
            return {};
        QByteArray out;
        if (!m_started && type != "response.created") {
            QJsonObject created{{QStringLiteral("type"), QStringLiteral("response.created")},
                                {QStringLiteral("response"), m_acc.response()}};
            out = sseFormat("response.created", compactJson(created));
        }
        m_started = true;
        return out + sseFormat(type, rawData);
    }
    QByteArray failureFrames(const QString &code, const QString &message) override
    {
        // Even a stream that only ever carried keepalives starts with response.created on /v1.
        QByteArray out;
        if (!m_started) {
            QJsonObject response = m_acc.response();
            response.insert(QStringLiteral("status"), QStringLiteral("in_progress"));
            out = sseFormat("response.created", compactJson(QJsonObject{{QStringLiteral("type"), QStringLiteral("response.created")},
                                                                       {QStringLiteral("response"), response}}));
            m_started = true;
        }
        return out + responsesFailureFrames(responseId(), code, message);
    }

private:
    bool m_started = false;
};

// /v1/responses without streaming: the final response object, output rebuilt when the upstream left it empty.
class ResponsesJsonSink final : public TrackingSink
{
public:
    bool streaming() const override { return false; }
    QByteArray contentType() const override { return QByteArrayLiteral("application/json"); }
    QByteArray onEvent(const QByteArray &type, const QByteArray &, const QJsonObject &data) override
    {
        track(type, data);
        return {};
    }
    QByteArray failureFrames(const QString &, const QString &) override { return {}; }
    QByteArray fullBody() const override { return compactJson(m_acc.response()); }
};

class ChatStreamSink final : public TrackingSink
{
public:
    explicit ChatStreamSink(const ChatSinkOptions &o)
        : m_translator(o.model, QStringLiteral("chatcmpl-") + newOpaqueId(), QDateTime::currentSecsSinceEpoch(),
                       o.includeUsage)
    {
        m_acc.setSummaryOnly(true); // the translator keeps its own state
    }
    bool streaming() const override { return true; }
    QByteArray contentType() const override { return QByteArrayLiteral("text/event-stream"); }
    bool needsEventData(const QByteArray &) const override { return true; } // the translator reads every event
    QByteArray onEvent(const QByteArray &type, const QByteArray &, const QJsonObject &data) override
    {
        track(type, data);
        return m_translator.onEvent(type, data).join();
    }
    QByteArray failureFrames(const QString &code, const QString &message) override
    {
        Q_UNUSED(code);
        return m_translator.finishIncomplete(message).join();
    }

private:
    ChatStreamTranslator m_translator;
};

class ChatJsonSink final : public TrackingSink
{
public:
    explicit ChatJsonSink(const ChatSinkOptions &o) : m_model(o.model) {}
    bool streaming() const override { return false; }
    QByteArray contentType() const override { return QByteArrayLiteral("application/json"); }
    QByteArray onEvent(const QByteArray &type, const QByteArray &, const QJsonObject &data) override
    {
        track(type, data);
        return {};
    }
    QByteArray failureFrames(const QString &, const QString &) override { return {}; }
    QByteArray fullBody() const override
    {
        return compactJson(chatCompletionFromResponse(m_acc.response(), m_model,
                                                      QStringLiteral("chatcmpl-") + newOpaqueId(),
                                                      QDateTime::currentSecsSinceEpoch()));
    }

private:
    QString m_model;
};

} // namespace

std::unique_ptr<TurnSink> makeTurnSink(SinkKind kind, const ChatSinkOptions &chat)
{
    switch (kind) {
    case SinkKind::CodexStream:
        return std::make_unique<CodexStreamSink>();
    case SinkKind::ResponsesStream:
        return std::make_unique<ResponsesStreamSink>();
    case SinkKind::ResponsesJson:
        return std::make_unique<ResponsesJsonSink>();
    case SinkKind::ChatStream:
        return std::make_unique<ChatStreamSink>(chat);
    case SinkKind::ChatJson:
        return std::make_unique<ChatJsonSink>(chat);
    }
    return nullptr;
}

} // namespace sy
