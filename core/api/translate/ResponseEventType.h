#pragma once

#include <QByteArrayView>

namespace sy {

// The Responses stream's event types that the proxy acts on (the upstream's SSE events, as the fake upstream in
// tests/support sends them); every other type (the deltas, the added and done events of items and parts) is Other
// and goes by as bytes.
enum class ResponseEventType
{
    Other,
    Created,        // response.created
    InProgress,     // response.in_progress
    Completed,      // response.completed
    Incomplete,     // response.incomplete
    Failed,         // response.failed
    Error,          // error
    OutputItemDone, // response.output_item.done
    RateLimits      // codex.rate_limits
};

// Which of them `type` names: at most one comparison, since no two of them have the same length. A streamed turn
// asks this of each event a few times; comparing the type with each name in turn was about 20 comparisons an
// event, most of the 6.5 % of the proxy thread's instructions that went to comparing bytes (bench/HISTORY.md,
// "Event types told by their length").
inline ResponseEventType responseEventType(QByteArrayView type) noexcept
{
    const auto is = [type](QByteArrayView name, ResponseEventType t) {
        return type == name ? t : ResponseEventType::Other;
    };
    switch (type.size()) {
    case 5:
        return is("error", ResponseEventType::Error);
    case 15:
        return is("response.failed", ResponseEventType::Failed);
    case 16:
        return is("response.created", ResponseEventType::Created);
    case 17:
        return is("codex.rate_limits", ResponseEventType::RateLimits);
    case 18:
        return is("response.completed", ResponseEventType::Completed);
    case 19:
        return is("response.incomplete", ResponseEventType::Incomplete);
    case 20:
        return is("response.in_progress", ResponseEventType::InProgress);
    case 25:
        return is("response.output_item.done", ResponseEventType::OutputItemDone);
    default:
        return ResponseEventType::Other;
    }
}

// response.completed, response.incomplete and response.failed: the response's last event.
inline bool isTerminalResponseEvent(ResponseEventType t) noexcept
{
    return t == ResponseEventType::Completed || t == ResponseEventType::Incomplete || t == ResponseEventType::Failed;
}

} // namespace sy
