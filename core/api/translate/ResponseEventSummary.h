#pragma once

#include <QByteArray>
#include <QJsonObject>
#include <optional>

namespace sy {

// The data of a response.created / response.in_progress / response.completed / response.incomplete event
// reduced to what a summary-only ResponseAccumulator keeps: {"type", "response": {id, status, usage, error,
// incomplete_details}}, the members that are present, as they are. Read with simdjson, without building the
// rest: a pass-through stream needs only these for the request log, and the terminal event repeats the whole
// response (output, and from the real backend the echoed instructions and tools). nullopt when `json` is not a
// JSON object; the caller then parses it the usual way.
std::optional<QJsonObject> responseEventSummary(const QByteArray &json);

} // namespace sy
