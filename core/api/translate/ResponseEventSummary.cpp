#include "api/translate/ResponseEventSummary.h"
#include "api/translate/SimdjsonBytes.h"

#include <QJsonArray>
#include <QJsonValue>

namespace sy {

namespace {

// The members kept are small (usage counters, an error object): converted value by value.
QJsonValue toJsonValue(simdjson::dom::element e)
{
    using simdjson::dom::element_type;
    switch (e.type()) {
    case element_type::OBJECT: {
        QJsonObject o;
        const simdjson::dom::object object = e.get_object().value_unsafe();
        for (const auto field : object)
            o.insert(toQString(field.key), toJsonValue(field.value));
        return o;
    }
    case element_type::ARRAY: {
        QJsonArray a;
        const simdjson::dom::array array = e.get_array().value_unsafe();
        for (const simdjson::dom::element item : array)
            a.append(toJsonValue(item));
        return a;
    }
    case element_type::STRING:
        return toQString(e.get_string().value_unsafe());
    case element_type::INT64:
        return qint64(e.get_int64().value_unsafe());
    case element_type::UINT64:
        return double(e.get_uint64().value_unsafe()); // beyond qint64, as QJsonDocument reads it
    case element_type::DOUBLE:
        return e.get_double().value_unsafe();
    case element_type::BOOL:
        return e.get_bool().value_unsafe();
    case element_type::NULL_VALUE:
        break;
    }
    return QJsonValue(QJsonValue::Null);
}

} // namespace

std::optional<QJsonObject> responseEventSummary(const QByteArray &json)
{
    // One parser per thread: its buffers (a few times the largest event) are reused from event to event.
    thread_local simdjson::dom::parser parser;
    simdjson::dom::object root;
    if (!parseObject(parser, json, &root))
        return std::nullopt;
    QJsonObject out;
    std::string_view type;
    if (root["type"].get(type) == simdjson::SUCCESS)
        out.insert(QLatin1String("type"), toQString(type));
    simdjson::dom::element response;
    if (root["response"].get(response) != simdjson::SUCCESS)
        return out;
    if (!response.is_object()) {
        out.insert(QLatin1String("response"), toJsonValue(response));
        return out;
    }
    QJsonObject summary;
    for (const char *key : {"id", "status", "usage", "error", "incomplete_details"}) {
        simdjson::dom::element value;
        if (response[key].get(value) == simdjson::SUCCESS)
            summary.insert(QLatin1String(key), toJsonValue(value));
    }
    out.insert(QLatin1String("response"), summary);
    return out;
}

} // namespace sy
