#pragma once

#include <QJsonObject>
#include <QString>

namespace sy {

// Builds a non-streaming `chat.completion` object from a finished Responses `response` object (for example
// ResponseAccumulator::response()). choices[0].message holds role "assistant", `content` (the concatenated
// output_text, or null when the turn produced no text), `refusal` when there was one, and `tool_calls`
// ({id: call_id, type: function, function:{name, arguments}}) when the turn called functions.
// finish_reason follows ChatStreamTranslator ("stop", "tool_calls", "length", "content_filter"). `usage` is
// present when the response reported any, with unknown numbers left out.
//
// A failed response has no chat completion equivalent: callers answer it with an error instead.
QJsonObject chatCompletionFromResponse(const QJsonObject &response, const QString &model, const QString &id,
                                       qint64 createdEpochS);

} // namespace sy
