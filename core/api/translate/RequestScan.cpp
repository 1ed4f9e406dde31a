#include "api/translate/RequestScan.h"

#include "api/translate/ResponsesRequestSanitizer.h"

#include <QStringList>

#include <simdjson.h>

namespace sy {

namespace {

QString toQString(std::string_view v)
{
    return QString::fromUtf8(v.data(), qsizetype(v.size()));
}

} // namespace

std::optional<ResponsesScan> scanResponsesRequest(const QByteArray &body)
{
    using namespace simdjson;
    // One parser per thread: its buffers are reused from request to request. The DOM parser picks the best
    // kernel for this CPU at run time and validates the whole document.
    thread_local dom::parser parser;
    const padded_string padded(body.constData(), size_t(body.size()));
    dom::object object;
    if (parser.parse(padded).get(object) != SUCCESS)
        return std::nullopt;
    static const QStringList forbidden = upstreamForbiddenResponsesFields();
    ResponsesScan scan;
    for (const dom::key_value_pair field : object) {
        const QString name = toQString(field.key);
        const dom::element &value = field.value;
        if (name == QLatin1String("model") || name == QLatin1String("previous_response_id") ||
            name == QLatin1String("prompt_cache_key")) {
            std::string_view text;
            if (value.get_string().get(text) != SUCCESS)
                return std::nullopt; // null or another type: the full parser decides
            QString &target = name == QLatin1String("model")                  ? scan.model
                              : name == QLatin1String("previous_response_id") ? scan.previousResponseId
                                                                              : scan.promptCacheKey;
            target = toQString(text);
        } else if (name == QLatin1String("stream") || name == QLatin1String("store")) {
            bool flag = false;
            if (value.get_bool().get(flag) != SUCCESS)
                return std::nullopt;
            (name == QLatin1String("stream") ? scan.stream : scan.store) = flag;
        } else if (name == QLatin1String("input")) {
            scan.inputIsArray = value.is_array();
        } else {
            scan.hasInstructions = scan.hasInstructions || name == QLatin1String("instructions");
            scan.hasForbiddenField = scan.hasForbiddenField || forbidden.contains(name);
        }
    }
    return scan;
}

} // namespace sy
