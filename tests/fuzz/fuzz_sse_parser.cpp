// SSE parser: byte 0 picks the chunk boundaries, the rest is an upstream text/event-stream body.
// Invariants: splitting never changes what is parsed (items and end state equal the one-chunk parse); every
// event and comment survives sseFormat()/sseComment() and a second parse unchanged; a small pending-bytes bound
// only ever stops the parser, never lets it hold more.
#include "FuzzSupport.h"
#include "upstream/SseParser.h"

#include <vector>

namespace sy::fuzz {

namespace {

constexpr const char *kTarget = "sse_parser";

struct Parsed
{
    std::vector<SseParser::Item> items;
    SseParser::EndState end = SseParser::EndState::Clean;
};

bool sameItem(const SseParser::Item &a, const SseParser::Item &b)
{
    return a.kind == b.kind && a.event == b.event && a.comment == b.comment;
}

Parsed parseChunks(const QList<QByteArrayView> &chunks, qsizetype maxPending)
{
    SseParser parser(maxPending);
    Parsed out;
    for (const QByteArrayView chunk : chunks) {
        parser.feed(chunk);
        // Take items between chunks, as the upstream call does, so queue and parse state interleave.
        while (parser.hasNext())
            out.items.push_back(parser.takeNext());
    }
    out.end = parser.finish();
    while (parser.hasNext())
        out.items.push_back(parser.takeNext());
    return out;
}

} // namespace

int sseParser(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const QByteArrayView stream(reinterpret_cast<const char *>(data) + 1, qsizetype(size) - 1);
    const Parsed whole = parseChunks({stream}, SseParser::defaultMaxPendingBytes);
    const Parsed split = parseChunks(splitByControlByte(data[0], stream), SseParser::defaultMaxPendingBytes);

    SY_FUZZ_CHECK(kTarget, whole.items.size() == split.items.size(), "chunking changed the number of items");
    for (size_t i = 0; i < whole.items.size(); ++i)
        SY_FUZZ_CHECK(kTarget, sameItem(whole.items[i], split.items[i]), "chunking changed an item");
    SY_FUZZ_CHECK(kTarget, whole.end == split.end, "chunking changed the end state");
    SY_FUZZ_CHECK(kTarget, whole.end != SseParser::EndState::Overflowed, "overflow below the default bound");

    for (const SseParser::Item &item : whole.items) {
        const QByteArray wire = item.kind == SseParser::Item::Kind::Event ? sseFormat(item.event.event, item.event.data)
                                                                          : sseComment(item.comment);
        SseParser again;
        again.feed(wire);
        SY_FUZZ_CHECK(kTarget, again.finish() == SseParser::EndState::Clean, "a formatted item left bytes pending");
        SY_FUZZ_CHECK(kTarget, again.hasNext(), "a formatted item parsed to nothing");
        SseParser::Item back = again.takeNext();
        SY_FUZZ_CHECK(kTarget, !again.hasNext(), "a formatted item parsed to more than one item");
        SY_FUZZ_CHECK(kTarget, back.kind == item.kind, "a formatted item changed its kind");
        if (item.kind == SseParser::Item::Kind::Event) {
            SY_FUZZ_CHECK(kTarget, back.event.event == item.event.event, "event name did not survive sseFormat");
            SY_FUZZ_CHECK(kTarget, back.event.data == item.event.data, "event data did not survive sseFormat");
        } else {
            SY_FUZZ_CHECK(kTarget, back.comment == item.comment, "comment did not survive sseComment");
        }
    }

    // A tight bound: the parser must stop rather than buffer past it, whatever the chunking.
    constexpr qsizetype kSmallBound = 64;
    const Parsed bounded = parseChunks(splitByControlByte(data[0], stream), kSmallBound);
    for (const SseParser::Item &item : bounded.items)
        SY_FUZZ_CHECK(kTarget, item.event.data.size() <= kSmallBound, "event data beyond the pending-bytes bound");
    return 0;
}

} // namespace sy::fuzz

SY_FUZZ_ENTRY(sseParser)
