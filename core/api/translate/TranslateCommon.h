#pragma once

// Helpers shared by the translation units of core/api/translate; not meant for callers elsewhere.

#include <QByteArray>
#include <QJsonObject>
#include <QString>

namespace sy::translate {

// One SSE frame carrying already serialised JSON: "data: {...}\n\n".
QByteArray sseFrame(const QByteArray &json);
// Same, serialising `payload` compactly.
QByteArray sseDataFrame(const QJsonObject &payload);
// The frame that ends every Chat Completions stream.
QByteArray sseDoneFrame();

// finish_reason for a finished Responses `response` object: "tool_calls" when the turn completed with at
// least one function call, "stop" otherwise; an incomplete response maps its incomplete_details.reason
// (max_output_tokens -> "length", content_filter -> "content_filter", anything else -> "length", since an
// incomplete answer was cut short).
QString chatFinishReason(const QString &status, const QString &incompleteReason, bool hadToolCalls);

// OpenAI-style error object {message, type, code, param} built from whatever the upstream sent: an `error`
// event's data (flat or nested under "error") or a failed response's `error`.
QJsonObject chatErrorObject(const QJsonObject &upstreamError, const QString &fallbackMessage);

} // namespace sy::translate
