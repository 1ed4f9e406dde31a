#pragma once

#include <QJsonObject>
#include <optional>

namespace sy {

// Token counts of one turn. A number the upstream did not report stays unknown (nullopt), never 0:
// the request log and the usage charts must be able to tell "none" from "not reported".
struct TokenUsage
{
    std::optional<qint64> input;     // includes cached
    std::optional<qint64> cached;    // part of input
    std::optional<qint64> output;    // includes reasoning
    std::optional<qint64> reasoning; // part of output
    std::optional<qint64> total;

    bool anyKnown() const { return input || cached || output || reasoning || total; }
    bool operator==(const TokenUsage &o) const
    {
        return input == o.input && cached == o.cached && output == o.output && reasoning == o.reasoning &&
               total == o.total;
    }
    bool operator!=(const TokenUsage &o) const { return !(*this == o); }
};

// Reads `usage` of a Responses API response object (the `response` of response.completed & co).
// If total_tokens is missing but input and output are known, total = input + output.
TokenUsage usageFromResponse(const QJsonObject &response);
// Same, from the `usage` object itself.
TokenUsage usageFromResponsesUsage(const QJsonObject &usage);

// Chat Completions `usage`: prompt_tokens, completion_tokens, total_tokens,
// prompt_tokens_details.cached_tokens, completion_tokens_details.reasoning_tokens. Unknown numbers are
// left out rather than written as 0.
QJsonObject chatUsageJson(const TokenUsage &usage);

} // namespace sy
