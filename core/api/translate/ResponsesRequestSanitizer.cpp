#include "api/translate/ResponsesRequestSanitizer.h"

#include <QJsonArray>

using namespace Qt::StringLiterals;

namespace sy {

const QStringList &upstreamForbiddenResponsesFields()
{
    static const QStringList fields{
        u"max_output_tokens"_s, u"metadata"_s,          u"temperature"_s,   u"top_p"_s, u"user"_s,
        u"truncation"_s,        u"safety_identifier"_s, u"stream_options"_s};
    return fields;
}

bool sanitizeResponsesRequest(const QJsonObject &clientBody, SanitizedResponsesRequest *out, QString *error,
                              const ResponsesSanitizeOptions &options)
{
    const auto fail = [error](const QString &message) {
        if (error)
            *error = message;
        return false;
    };

    const QJsonValue model = clientBody.value("model"_L1);
    if (!model.isString() || model.toString().isEmpty())
        return fail(u"model is required"_s);
    const QJsonValue input = clientBody.value("input"_L1);
    if (!input.isString() && !input.isArray())
        return fail(u"input must be a string or an array of items"_s);

    SanitizedResponsesRequest r;
    r.model = model.toString();
    r.clientWantsStream = clientBody.value("stream"_L1).toBool(false);
    r.previousResponseId = clientBody.value("previous_response_id"_L1).toString();
    r.promptCacheKey = clientBody.value("prompt_cache_key"_L1).toString();
    r.body = clientBody; // shared until the first change; Codex bodies usually need none

    for (const QString &field : upstreamForbiddenResponsesFields()) {
        if (r.body.contains(field)) {
            r.body.remove(field);
            r.removedFields.append(field);
            r.changed = true;
        }
    }
    if (r.body.value("store"_L1) != QJsonValue(false)) {
        r.body.insert(u"store"_s, false);
        r.changed = true;
    }
    if (r.body.value("stream"_L1) != QJsonValue(true)) {
        r.body.insert(u"stream"_s, true);
        r.changed = true;
    }
    if (input.isString()) {
        const QJsonObject message{
            {u"type"_s, u"message"_s},
            {u"role"_s, u"user"_s},
            {u"content"_s, QJsonArray{QJsonObject{{u"type"_s, u"input_text"_s}, {u"text"_s, input.toString()}}}}};
        r.body.insert(u"input"_s, QJsonArray{message});
        r.changed = true;
    }
    if (options.ensureInstructions && !r.body.value("instructions"_L1).isString()) {
        r.body.insert(u"instructions"_s, u""_s);
        r.changed = true;
    }
    *out = std::move(r);
    return true;
}

} // namespace sy
