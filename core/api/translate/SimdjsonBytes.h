#pragma once

#include <QByteArray>
#include <QString>

#include <simdjson.h>
#include <string_view>

namespace sy {

inline QString toQString(std::string_view text)
{
    return QString::fromUtf8(text.data(), qsizetype(text.size()));
}

// The bytes `bytes` owns after its data. Not capacity() - size(): capacity() also counts free space in front of
// the data (left by a remove() from the front), which is no room to read into. data_ptr() only looks here.
inline qsizetype roomAfterData(const QByteArray &bytes)
{
    return const_cast<QByteArray &>(bytes).data_ptr().freeSpaceAtEnd();
}

inline bool hasSimdjsonPadding(const QByteArray &json)
{
    return roomAfterData(json) >= qsizetype(simdjson::SIMDJSON_PADDING);
}

// Parses `json` as one JSON object with `parser`. The DOM parser reads up to SIMDJSON_PADDING bytes past the
// end: bytes with that slack (HttpConnection reserves it for bodies) are parsed where they lie, anything else
// is copied into a padded buffer first (a 10 MiB upload would otherwise cost a 10 MiB copy and its page
// faults). False when `json` is not a valid JSON object.
inline bool parseObject(simdjson::dom::parser &parser, const QByteArray &json, simdjson::dom::object *out)
{
    if (hasSimdjsonPadding(json))
        return parser.parse(reinterpret_cast<const uint8_t *>(json.constData()), size_t(json.size()), false)
                   .get(*out) == simdjson::SUCCESS;
    const simdjson::padded_string padded(json.constData(), size_t(json.size()));
    return parser.parse(padded).get(*out) == simdjson::SUCCESS;
}

} // namespace sy
