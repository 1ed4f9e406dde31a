#include "api/translate/TokenUsage.h"

using namespace Qt::StringLiterals;

namespace sy {

namespace {

std::optional<qint64> count(const QJsonValue &v)
{
    // A negative, fractional or absurd count is garbage, and garbage is reported as unknown, not guessed.
    constexpr double maxExactInteger = 9007199254740992.0; // 2^53
    if (!v.isDouble())
        return std::nullopt;
    const double d = v.toDouble();
    if (!(d >= 0 && d <= maxExactInteger) || d != static_cast<double>(static_cast<qint64>(d)))
        return std::nullopt;
    return static_cast<qint64>(d);
}

} // namespace

TokenUsage usageFromResponsesUsage(const QJsonObject &usage)
{
    TokenUsage u;
    u.input = count(usage.value("input_tokens"_L1));
    u.cached = count(usage.value("input_tokens_details"_L1).toObject().value("cached_tokens"_L1));
    u.output = count(usage.value("output_tokens"_L1));
    u.reasoning = count(usage.value("output_tokens_details"_L1).toObject().value("reasoning_tokens"_L1));
    u.total = count(usage.value("total_tokens"_L1));
    if (!u.total && u.input && u.output)
        u.total = *u.input + *u.output;
    return u;
}

TokenUsage usageFromResponse(const QJsonObject &response)
{
    return usageFromResponsesUsage(response.value("usage"_L1).toObject());
}

QJsonObject chatUsageJson(const TokenUsage &usage)
{
    QJsonObject o;
    if (usage.input)
        o.insert("prompt_tokens"_L1, *usage.input);
    if (usage.output)
        o.insert("completion_tokens"_L1, *usage.output);
    if (usage.total)
        o.insert("total_tokens"_L1, *usage.total);
    if (usage.cached)
        o.insert("prompt_tokens_details"_L1, QJsonObject{{"cached_tokens"_L1, *usage.cached}});
    if (usage.reasoning)
        o.insert("completion_tokens_details"_L1, QJsonObject{{"reasoning_tokens"_L1, *usage.reasoning}});
    return o;
}

} // namespace sy
