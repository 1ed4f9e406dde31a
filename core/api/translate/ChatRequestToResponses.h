#pragma once

#include <QJsonObject>
#include <QString>

namespace sy {

// Turns a Chat Completions request body into the Responses body the ChatGPT backend accepts.
//
// - system/developer messages -> `instructions` (every text piece, in order, joined by a blank line;
//   `instructions` is always present, "" when there were none);
// - user messages -> message items with input_text / input_image / input_file parts;
// - assistant messages -> a message item with output_text / refusal parts (skipped when it has no text),
//   then one function_call item per tool call;
// - tool messages -> function_call_output items;
// - tools, tool_choice, response_format (-> text.format), verbosity (-> text.verbosity),
//   reasoning_effort (-> reasoning.effort), parallel_tool_calls, prompt_cache_key are mapped;
// - everything else (n, store, max_tokens, max_completion_tokens, stream_options, temperature, top_p, user,
//   metadata, ...) is dropped; `stream` is always true and `store` always false.
//
// Chat function tools default to non-strict, Responses ones to strict, so a tool without `strict` is sent
// with strict:false to keep its meaning.
//
// On invalid input returns an empty object and sets *error (if given) to a message fit for a 400 answer.
QJsonObject chatRequestToResponses(const QJsonObject &chatBody, QString *error);

} // namespace sy
