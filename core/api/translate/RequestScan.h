#pragma once

#include <QByteArray>
#include <QString>
#include <optional>

namespace sy {

// What a Responses request says at its top level, read without building a JSON document: a Codex body of
// several MiB is forwarded byte for byte, so the proxy only needs a few keys out of it (simdjson's on-demand
// parser skips the rest at memory speed).
struct ResponsesScan
{
    QString model;
    QString previousResponseId;
    QString promptCacheKey;
    std::optional<bool> stream;
    std::optional<bool> store;
    bool inputIsArray = false;
    bool hasInstructions = false;
    bool hasForbiddenField = false; // one the upstream rejects (see upstreamForbiddenResponsesFields())

    // The sanitizer would leave this body as it is (for a route that does not add `instructions`).
    bool forwardableAsIs() const
    {
        return !model.isEmpty() && inputIsArray && store == false && stream == true && !hasForbiddenField;
    }
};

// nullopt when the body is not a JSON object, a key of interest has an unexpected type, or anything else
// needs the full parser (the caller then falls back to it, which also produces the error message).
std::optional<ResponsesScan> scanResponsesRequest(const QByteArray &body);

} // namespace sy
