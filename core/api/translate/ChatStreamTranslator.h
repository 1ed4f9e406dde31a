#pragma once

#include "api/translate/TokenUsage.h"

#include <QByteArray>
#include <QJsonObject>
#include <QList>
#include <QSet>
#include <QString>

namespace sy {

// Converts one upstream Responses SSE stream into a Chat Completions stream, one upstream event at a time.
// Every returned QByteArray is a complete SSE frame ("data: ...\n\n") ready to be written to the client.
//
// Output: a first chunk with delta {role:"assistant", content:""}; text deltas as delta.content; refusal
// deltas as delta.refusal; each function_call item as delta.tool_calls[{index, id, type, function:{name,
// arguments:""}}] followed by argument fragments (index = order of the function calls in the turn); on
// response.completed / response.incomplete a chunk with an empty delta and finish_reason ("stop",
// "tool_calls", "length", "content_filter"), then, if includeUsage, a chunk with `choices: []` and `usage`,
// then "data: [DONE]".
//
// Failures (response.failed, an `error` event, or finishIncomplete() when the upstream stream broke) end the
// stream with `data: {"error":{message,type,code,param}}` and then "data: [DONE]": the openai SDK raises the
// error, OpenCode's AI SDK reports it, and neither hangs waiting for a finish_reason.
//
// Text or tool calls that arrive only in *.done events or in the final response's `output` (no deltas) are
// still delivered, once. `codex.*` and other unknown events produce nothing. After the stream has finished
// every further call returns nothing.
class ChatStreamTranslator
{
public:
    ChatStreamTranslator(const QString &model, const QString &completionId, qint64 createdEpochS, bool includeUsage);

    // `type` is the SSE event name; when empty, data["type"] is used.
    QList<QByteArray> onEvent(const QByteArray &type, const QJsonObject &data);
    // The upstream stream ended or broke without a terminal event: error frame + [DONE].
    QList<QByteArray> finishIncomplete(const QString &message);

    bool finished() const { return m_finished; }
    // True when the stream ended with an error frame rather than a finish_reason.
    bool failed() const { return m_failed; }
    // finish_reason sent to the client; empty until a normal finish.
    QString finishReason() const { return m_finishReason; }
    // Usage reported by the terminal event (all unknown before it, or when the upstream sent none).
    TokenUsage usage() const { return m_usage; }
    // Number of function calls announced to the client so far.
    int toolCallCount() const { return int(m_calls.size()); }

private:
    struct Call
    {
        int index = 0; // tool_calls[].index seen by the client
        QString itemId;
        int outputIndex = -1;
        QString callId;
        qsizetype argumentsSent = 0;
    };

    QByteArray chunk(const QByteArray &deltaJson, const char *finishReason = nullptr) const;
    QByteArray deltaChunk(const QJsonObject &delta) const;
    void start(QList<QByteArray> *out);
    void emitText(int outputIndex, const QString &text, const char *field, QList<QByteArray> *out);
    Call *findCall(const QJsonObject &data);
    void announceCall(int outputIndex, const QJsonObject &item, QList<QByteArray> *out);
    QByteArray argumentsChunk(const Call &call, const QString &fragment) const;
    void catchUpArguments(Call *call, const QString &arguments, QList<QByteArray> *out);
    void onItemDone(int outputIndex, const QJsonObject &item, QList<QByteArray> *out);
    void finishNormally(const QString &status, const QJsonObject &response, QList<QByteArray> *out);
    void finishWithError(const QJsonObject &error, QList<QByteArray> *out);

    QByteArray m_head;       // {"id":..,"object":"chat.completion.chunk","created":..,"model":..,
    QByteArray m_choiceHead; // m_head + "choices":[{"index":0,"delta":
    bool m_includeUsage;
    bool m_started = false;
    bool m_finished = false;
    bool m_failed = false;
    QString m_finishReason;
    TokenUsage m_usage;
    QList<Call> m_calls;
    QSet<int> m_outputsWithText; // output indexes whose text already reached the client
    // Text arrived without an output_index, so the done events cannot tell whether it was already sent;
    // they are then trusted to repeat it and are not replayed.
    bool m_textWithoutIndex = false;
};

} // namespace sy
