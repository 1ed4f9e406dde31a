#pragma once

#include <QJsonObject>
#include <QString>
#include <QStringList>

namespace sy {

// What the proxy needs to know about a client's Responses request, and the body to send upstream.
struct SanitizedResponsesRequest
{
    QJsonObject body;               // the upstream body
    bool changed = false;           // false: the client's bytes can be forwarded as they are
    bool clientWantsStream = false; // from the body's `stream` (the openai SDK's Accept header says nothing)
    QString model;
    QString previousResponseId; // continuity anchor, empty if none
    QString promptCacheKey;     // session affinity key, empty if none
    QStringList removedFields;  // names of the top-level fields dropped, for the request log
};

struct ResponsesSanitizeOptions
{
    // The brief for the ChatGPT backend asks for an `instructions` field; Codex CLI 0.171 itself sends none
    // (its instructions travel as developer messages), so the Codex route may turn this off and keep
    // Codex bodies byte-identical.
    bool ensureInstructions = true;
};

// Prepares a client's Responses body for the ChatGPT backend: `store: false`, `stream: true`, and without
// the fields it rejects (max_output_tokens, metadata, temperature, top_p, user, truncation,
// safety_identifier) or that only make sense downstream (stream_options). A string `input` becomes a
// one-message list, since the backend takes only lists; a missing `instructions` becomes "". Every other
// field is kept untouched.
//
// Invalid input (no model, `input` neither a string nor an array) -> false and *error set for a 400 answer.
bool sanitizeResponsesRequest(const QJsonObject &clientBody, SanitizedResponsesRequest *out, QString *error,
                              const ResponsesSanitizeOptions &options = {});

// The top-level fields sanitizeResponsesRequest removes.
const QStringList &upstreamForbiddenResponsesFields();

} // namespace sy
