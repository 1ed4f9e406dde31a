// Client request bodies: the Chat Completions -> Responses translation, the Responses sanitizer and the
// simdjson RequestScan fast path, on the same bytes.
// Invariants: a translated chat request is always a valid upstream body (the sanitizer accepts it and has
// nothing left to fix but `instructions`); a sanitized body has store:false, stream:true, an input list and no
// forbidden field; when the scan says "forward as is", the full parser agrees on every value the proxy routes
// and logs by, and would not change the body either.
#include "FuzzSupport.h"
#include "api/translate/ChatRequestToResponses.h"
#include "api/translate/RequestScan.h"
#include "api/translate/ResponsesRequestSanitizer.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace sy::fuzz {

namespace {

constexpr const char *kTarget = "translate_request";

void checkSanitized(const SanitizedResponsesRequest &s)
{
    const QJsonObject &b = s.body;
    SY_FUZZ_CHECK(kTarget, !s.model.isEmpty() && b.value(QLatin1String("model")).toString() == s.model,
                  "sanitized body lost its model");
    SY_FUZZ_CHECK(kTarget, b.value(QLatin1String("store")) == QJsonValue(false), "sanitized body without store:false");
    SY_FUZZ_CHECK(kTarget, b.value(QLatin1String("stream")) == QJsonValue(true), "sanitized body without stream:true");
    SY_FUZZ_CHECK(kTarget, b.value(QLatin1String("input")).isArray(), "sanitized body input is not a list");
    for (const QString &field : upstreamForbiddenResponsesFields())
        SY_FUZZ_CHECK(kTarget, !b.contains(field), "sanitized body kept a forbidden field");
}

} // namespace

int translateRequest(const uint8_t *data, size_t size)
{
    const QByteArray bytes(reinterpret_cast<const char *>(data), qsizetype(size));
    const std::optional<ResponsesScan> scan = scanResponsesRequest(bytes);

    QJsonParseError pe;
    const QJsonDocument doc = QJsonDocument::fromJson(bytes, &pe);
    const bool isObject = pe.error == QJsonParseError::NoError && doc.isObject();
    const QJsonObject body = doc.object();

    if (scan && scan->forwardableAsIs()) {
        // Turn::prepare forwards these bytes untouched and takes model/anchor/session key from the scan.
        SY_FUZZ_CHECK(kTarget, isObject, "scan forwards a body the JSON parser rejects");
        SanitizedResponsesRequest s;
        QString error;
        ResponsesSanitizeOptions codex;
        codex.ensureInstructions = false;
        SY_FUZZ_CHECK(kTarget, sanitizeResponsesRequest(body, &s, &error, codex),
                      "scan forwards a body the sanitizer rejects");
        SY_FUZZ_CHECK(kTarget, !s.changed, "scan forwards a body the sanitizer would change");
        SY_FUZZ_CHECK(kTarget, s.model == scan->model, "scan and parser disagree on model");
        SY_FUZZ_CHECK(kTarget, s.previousResponseId == scan->previousResponseId,
                      "scan and parser disagree on previous_response_id");
        SY_FUZZ_CHECK(kTarget, s.promptCacheKey == scan->promptCacheKey,
                      "scan and parser disagree on prompt_cache_key");
    }
    if (!isObject)
        return 0;

    for (const bool ensureInstructions : {true, false}) {
        SanitizedResponsesRequest s;
        QString error;
        ResponsesSanitizeOptions options;
        options.ensureInstructions = ensureInstructions;
        if (sanitizeResponsesRequest(body, &s, &error, options)) {
            checkSanitized(s);
            if (ensureInstructions)
                SY_FUZZ_CHECK(kTarget, s.body.value(QLatin1String("instructions")).isString(),
                              "sanitized body without instructions");
        } else {
            SY_FUZZ_CHECK(kTarget, !error.isEmpty(), "sanitizer failed without a reason");
        }
    }

    QString error;
    const QJsonObject translated = chatRequestToResponses(body, &error);
    if (!error.isEmpty()) {
        SY_FUZZ_CHECK(kTarget, translated.isEmpty(), "failed translation returned a body");
        return 0;
    }
    SanitizedResponsesRequest s;
    QString sanitizeError;
    SY_FUZZ_CHECK(kTarget, sanitizeResponsesRequest(translated, &s, &sanitizeError),
                  "translated chat request rejected by the sanitizer");
    checkSanitized(s);
    SY_FUZZ_CHECK(kTarget, !s.changed, "translated chat request still needed sanitizing");
    SY_FUZZ_CHECK(kTarget, translated.value(QLatin1String("instructions")).isString(),
                  "translated chat request without instructions");
    // What Turn sends upstream must survive serialisation.
    const QByteArray wire = QJsonDocument(s.body).toJson(QJsonDocument::Compact);
    SY_FUZZ_CHECK(kTarget, QJsonDocument::fromJson(wire).object() == s.body, "upstream body does not round-trip");
    return 0;
}

} // namespace sy::fuzz

SY_FUZZ_ENTRY(translateRequest)
