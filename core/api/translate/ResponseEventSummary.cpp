#include "api/translate/ResponseEventSummary.h"

#include "api/translate/SimdjsonBytes.h"

#include <QJsonDocument>
#include <QJsonParseError>
#include <string>

namespace sy {

namespace {

// Appends `key` (plain ASCII) of an object being written, after a comma unless it is the first.
void appendKey(std::string &out, std::string_view key)
{
    if (out.back() != '{')
        out += ',';
    out += '"';
    out += key;
    out += "\":";
}

// Appends `key` and the member's value as compact JSON.
void appendMember(std::string &out, std::string_view key, simdjson::dom::element value)
{
    appendKey(out, key);
    out += simdjson::minify(value);
}

} // namespace

std::optional<QJsonObject> responseEventSummary(const QByteArray &json)
{
    // One parser per thread: its buffers (a few times the largest event) are reused from event to event.
    thread_local simdjson::dom::parser parser;
    simdjson::dom::object root;
    if (!parseObject(parser, json, &root))
        return std::nullopt;
    // The summary is written as compact JSON and read by Qt's parser in one go: building the QJsonObject member
    // by member (each insert() a lookup, a detach and a conversion) was 42,000 instructions per summary, two
    // per streamed turn, one of them (response.created) in front of the client's first byte.
    thread_local std::string text;
    text.assign("{");
    simdjson::dom::element type;
    if (root["type"].get(type) == simdjson::SUCCESS && type.is_string())
        appendMember(text, "type", type);
    simdjson::dom::element response;
    if (root["response"].get(response) == simdjson::SUCCESS) {
        if (!response.is_object()) {
            appendMember(text, "response", response);
        } else {
            appendKey(text, "response");
            text += '{';
            for (const char *key : {"id", "status", "usage", "error", "incomplete_details"}) {
                simdjson::dom::element value;
                if (response[key].get(value) == simdjson::SUCCESS)
                    appendMember(text, key, value);
            }
            text += '}';
        }
    }
    text += '}';
    QJsonParseError error;
    const QJsonDocument doc =
        QJsonDocument::fromJson(QByteArray::fromRawData(text.data(), qsizetype(text.size())), &error);
    if (error.error != QJsonParseError::NoError || !doc.isObject())
        return std::nullopt; // not expected (simdjson wrote it from valid JSON); the caller parses it whole
    return doc.object();
}

} // namespace sy
