#include "api/translate/RequestScan.h"

#include "api/translate/ResponsesRequestSanitizer.h"
#include "api/translate/SimdjsonBytes.h"
#include "util/LargeBufferPool.h"
#include "util/LargeBuffers.h"

#include <QStringList>

namespace sy {

namespace {

// A DOM parser keeps buffers of about 14 times the largest document it has parsed (tape, strings, indexes).
constexpr qsizetype kReusedParserMaxBytes = 256 * 1024;
constexpr char kLargeParserKind[] = "simdjson::dom::parser";
// The large-body parser is kept for bodies up to this size. Its address space is about 14 bytes per byte of
// capacity (strings 5/3, tape 8, structural indexes 4); resident is what its last parse wrote: about the body's
// size for a Codex body (mostly strings), up to all of it for one made of tiny values.
constexpr qsizetype kKeptParserMaxBytes = 16 * 1024 * 1024;
constexpr qsizetype kParserBytesPerByte = 14;

std::optional<ResponsesScan> scanWith(simdjson::dom::parser &parser, const QByteArray &body)
{
    using namespace simdjson;
    // The DOM parser picks the best kernel for this CPU at run time and validates the whole document.
    dom::object object;
    if (!parseObject(parser, body, &object))
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

} // namespace

std::optional<ResponsesScan> scanResponsesRequest(const QByteArray &body)
{
    // One parser per thread for the usual bodies: its buffers are reused from request to request. A larger
    // body gets the thread's large-body parser from its LargeBufferPool, which keeps it for 10-20 s after its
    // last use, for bodies up to kKeptParserMaxBytes: a fresh parser writes its copies of the body's strings
    // into fresh pages, 7.7 against 1.2 ms for a 10 MiB Codex body on the bench machine.
    if (body.size() > kReusedParserMaxBytes) {
        LargeBufferPool &pool = LargeBufferPool::local();
        // Kept with its capacity as its size: taken for a body it can hold and at least half fills.
        auto parser = std::static_pointer_cast<simdjson::dom::parser>(pool.takeObject(kLargeParserKind, body.size()));
        if (!parser) {
            parser = std::make_shared<simdjson::dom::parser>();
            const size_t capacity = size_t(LargeBufferPool::roomFor(body.size()));
            // Allocated before the parse (the document's buffers would otherwise be allocated inside it), so
            // that their fresh memory, written from the start, can be advised: the string copies (5/3 of the
            // capacity at most), the tape (8 bytes per capacity byte) and stage 1's structural indexes (4).
            if (parser->allocate(capacity) != simdjson::SUCCESS || parser->doc.allocate(capacity) != simdjson::SUCCESS)
                return std::nullopt;
            adviseLargeBuffer(parser->doc.string_buf.get(), qsizetype(capacity / 3 * 5));
            adviseLargeBuffer(parser->doc.tape.get(), qsizetype(capacity * 8));
            if (parser->implementation)
                adviseLargeBuffer(parser->implementation->structural_indexes.get(), qsizetype(capacity * 4));
        }
        std::optional<ResponsesScan> scan = scanWith(*parser, body);
        const qsizetype capacity = qsizetype(parser->capacity());
        if (capacity <= kKeptParserMaxBytes)
            pool.giveBackObject(kLargeParserKind, std::move(parser), capacity, capacity * kParserBytesPerByte);
        return scan;
    }
    thread_local simdjson::dom::parser parser;
    return scanWith(parser, body);
}

} // namespace sy
