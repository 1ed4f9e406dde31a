#include "upstream/SseParser.h"

#include <QRandomGenerator>
#include <QTest>

using sy::SseEvent;
using sy::SseParser;

namespace {

// A Responses stream shaped like the upstream's (event order per PROTOCOL.md), with the irregularities a
// parser must survive: a BOM, every line-break style, a field without the space, a multi-line data field,
// comments, an id, a retry field and an unknown field.
QByteArray capturedStream()
{
    return QByteArray(
        "\xEF\xBB\xBF"
        ": connected\n\n"
        "event: response.created\r\n"
        "data: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\"}}\r\n"
        "\r\n"
        "event:response.in_progress\n"
        "data:{\"type\":\"response.in_progress\"}\n"
        "\n"
        "retry: 3000\r"
        "id: 7\r"
        "event: response.output_item.added\r"
        "data: {\"type\":\"response.output_item.added\",\"output_index\":0}\r"
        "\r"
        ": keepalive\r\n"
        "\r\n"
        "event: response.output_text.delta\n"
        "data: {\"type\":\"response.output_text.delta\",\n"
        "data: \"delta\":\"Hel\"}\n"
        "x-unknown: ignored\n"
        "\n"
        "event: response.output_text.delta\r\n"
        "data: {\"type\":\"response.output_text.delta\",\"delta\":\"lo \\u00e9\"}\n"
        "\r"
        "event: response.completed\n"
        "data: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":5,"
        "\"output_tokens\":2,\"total_tokens\":7}}}\r\n"
        "\r\n");
}

QList<SseEvent> expectedCapturedEvents()
{
    return {
        {"response.created", R"({"type":"response.created","response":{"id":"resp_1","status":"in_progress"}})", ""},
        {"response.in_progress", R"({"type":"response.in_progress"})", ""},
        {"response.output_item.added", R"({"type":"response.output_item.added","output_index":0})", "7"},
        {"response.output_text.delta", "{\"type\":\"response.output_text.delta\",\n\"delta\":\"Hel\"}", "7"},
        {"response.output_text.delta", R"({"type":"response.output_text.delta","delta":"lo \u00e9"})", "7"},
        {"response.completed",
         R"({"type":"response.completed","response":{"usage":{"input_tokens":5,"output_tokens":2,"total_tokens":7}}})",
         "7"},
    };
}

QList<SseEvent> parseInChunks(const QByteArray &stream, const QList<qsizetype> &chunkSizes)
{
    SseParser parser;
    QList<SseEvent> events;
    qsizetype pos = 0;
    for (qsizetype i = 0; pos < stream.size(); ++i) {
        const qsizetype n = std::min(chunkSizes.at(i % chunkSizes.size()), stream.size() - pos);
        parser.feed(QByteArrayView(stream).sliced(pos, n));
        events += parser.takeEvents();
        pos += n;
    }
    if (parser.finish() != SseParser::EndState::Clean)
        qWarning("stream did not end cleanly");
    events += parser.takeEvents();
    return events;
}

QList<SseEvent> parseAll(QByteArrayView stream)
{
    SseParser parser;
    parser.feed(stream);
    return parser.takeEvents();
}

} // namespace

namespace sy {
char *toString(const SseEvent &e)
{
    return QTest::toString(QByteArray("{event=" + e.event + " data=" + e.data + " id=" + e.id + "}"));
}
} // namespace sy

class TestSseParser : public QObject
{
    Q_OBJECT

private slots:
    void singleEvent();
    void multipleDataLinesJoinedWithNewline();
    void lineBreakStyles_data();
    void lineBreakStyles();
    void crAtChunkEndAndLfAtNextStartAreOneBreak();
    void bomAtStartIsSkippedEvenWhenSplit();
    void bomOnlyAtStart();
    void fieldWithoutSpace();
    void commentsAreSeparateItemsInWireOrder();
    void blockWithoutDataDispatchesNothing();
    void emptyDataLineDispatchesEmptyData();
    void idPersistsUntilChanged();
    void finishReportsIncompleteTrailingEvent_data();
    void finishReportsIncompleteTrailingEvent();
    void oversizedEventOverflows();
    void capturedStreamByteAtATimeAndRandomChunks();
    void formatRoundTrips_data();
    void formatRoundTrips();
    void formatExactBytes();
    void anEventKeptWhileTheNextIsReadStaysAsItWas();
    void aTakenEventsStorageServesTheNextEvent();
    void aDispatchedEventDoesNotCountTowardsTheBound();
    void manyTypesEachKeepTheirName();
    void aLargeEventsStorageIsNotKept();
};

void TestSseParser::singleEvent()
{
    SseParser parser;
    parser.feed("event: response.created\ndata: {\"a\":1}\n");
    QVERIFY(!parser.hasNext());
    parser.feed("\n");
    const QList<SseEvent> events = parser.takeEvents();
    QCOMPARE(events.size(), 1);
    QCOMPARE(events[0].event, QByteArray("response.created"));
    QCOMPARE(events[0].data, QByteArray("{\"a\":1}"));
    QCOMPARE(parser.eventCount(), 1);
    QCOMPARE(parser.finish(), SseParser::EndState::Clean);
}

void TestSseParser::multipleDataLinesJoinedWithNewline()
{
    const QList<SseEvent> events = parseAll("data: a\ndata: b\ndata:\ndata: c\n\n");
    QCOMPARE(events.size(), 1);
    QCOMPARE(events[0].data, QByteArray("a\nb\n\nc"));
    QCOMPARE(events[0].event, QByteArray());
}

void TestSseParser::lineBreakStyles_data()
{
    QTest::addColumn<QByteArray>("breakSeq");
    QTest::newRow("LF") << QByteArray("\n");
    QTest::newRow("CRLF") << QByteArray("\r\n");
    QTest::newRow("CR") << QByteArray("\r");
}

void TestSseParser::lineBreakStyles()
{
    QFETCH(QByteArray, breakSeq);
    const QByteArray stream = "event: one" + breakSeq + "data: 1" + breakSeq + breakSeq + "event: two" + breakSeq +
                              "data: 2" + breakSeq + "data: 3" + breakSeq + breakSeq;
    const QList<SseEvent> events = parseAll(stream);
    QCOMPARE(events.size(), 2);
    QCOMPARE(events[0], (SseEvent{"one", "1", ""}));
    QCOMPARE(events[1], (SseEvent{"two", "2\n3", ""}));
}

void TestSseParser::crAtChunkEndAndLfAtNextStartAreOneBreak()
{
    // Were CR and LF taken as two breaks, the LF would end the event after "a" and yield two events.
    SseParser parser;
    parser.feed("data: a\r");
    parser.feed("\ndata: b\r");
    parser.feed("");
    parser.feed("\n\r");
    parser.feed("\n");
    const QList<SseEvent> events = parser.takeEvents();
    QCOMPARE(events.size(), 1);
    QCOMPARE(events[0].data, QByteArray("a\nb"));
    QCOMPARE(parser.finish(), SseParser::EndState::Clean);
}

void TestSseParser::bomAtStartIsSkippedEvenWhenSplit()
{
    SseParser parser;
    parser.feed("\xEF");
    parser.feed("\xBB");
    parser.feed("\xBF"
                "event: x\ndata: y\n\n");
    const QList<SseEvent> events = parser.takeEvents();
    QCOMPARE(events.size(), 1);
    QCOMPARE(events[0].event, QByteArray("x"));
}

void TestSseParser::bomOnlyAtStart()
{
    // After the start the BOM bytes are ordinary characters, so "\xEF\xBB\xBF" "data" is an unknown field.
    const QList<SseEvent> events = parseAll("data: 1\n\n\xEF\xBB\xBF"
                                            "data: 2\n\n");
    QCOMPARE(events.size(), 1);
    QCOMPARE(events[0].data, QByteArray("1"));
    // A start that only looks like a BOM keeps its bytes.
    const QList<SseEvent> lookalike = parseAll("\xEF"
                                               "data: 3\n\ndata: 4\n\n");
    QCOMPARE(lookalike.size(), 1);
    QCOMPARE(lookalike[0].data, QByteArray("4"));
}

void TestSseParser::fieldWithoutSpace()
{
    const QList<SseEvent> events = parseAll("event:x\ndata:y\n\nevent:  two\ndata:  z\n\ndata\n\n");
    QCOMPARE(events.size(), 3);
    QCOMPARE(events[0], (SseEvent{"x", "y", ""}));
    // Only one leading space belongs to the syntax.
    QCOMPARE(events[1], (SseEvent{" two", " z", ""}));
    // A field name without a colon has an empty value.
    QCOMPARE(events[2].data, QByteArray());
}

void TestSseParser::commentsAreSeparateItemsInWireOrder()
{
    SseParser parser;
    parser.feed(": keepalive\n\ndata: 1\n\n:no space\n\n");
    QVERIFY(parser.hasNext());
    SseParser::Item first = parser.takeNext();
    QCOMPARE(first.kind, SseParser::Item::Kind::Comment);
    QCOMPARE(first.comment, QByteArray("keepalive"));
    SseParser::Item second = parser.takeNext();
    QCOMPARE(second.kind, SseParser::Item::Kind::Event);
    QCOMPARE(second.event.data, QByteArray("1"));
    SseParser::Item third = parser.takeNext();
    QCOMPARE(third.kind, SseParser::Item::Kind::Comment);
    QCOMPARE(third.comment, QByteArray("no space"));
    QVERIFY(!parser.hasNext());
    QCOMPARE(parser.commentCount(), 2);
    QCOMPARE(parser.eventCount(), 1);
}

void TestSseParser::blockWithoutDataDispatchesNothing()
{
    // The event name of a data-less block must not leak into the next event either.
    const QList<SseEvent> events = parseAll("event: lonely\n\ndata: x\n\n");
    QCOMPARE(events.size(), 1);
    QCOMPARE(events[0], (SseEvent{"", "x", ""}));
}

void TestSseParser::emptyDataLineDispatchesEmptyData()
{
    const QList<SseEvent> events = parseAll("event: e\ndata:\n\n");
    QCOMPARE(events.size(), 1);
    QCOMPARE(events[0], (SseEvent{"e", "", ""}));
}

void TestSseParser::idPersistsUntilChanged()
{
    const QList<SseEvent> events = parseAll("id: 1\ndata: a\n\ndata: b\n\nid\ndata: c\n\n");
    QCOMPARE(events.size(), 3);
    QCOMPARE(events[0].id, QByteArray("1"));
    QCOMPARE(events[1].id, QByteArray("1"));
    QCOMPARE(events[2].id, QByteArray());
    // An id with a NUL is ignored; the length is explicit because the literal contains a NUL.
    SseParser parser;
    parser.feed("id: ok\ndata: d\n\n");
    parser.feed(QByteArrayView("id: x\0y\ndata: e\n\n", 17));
    const QList<SseEvent> nul = parser.takeEvents();
    QCOMPARE(nul.size(), 2);
    QCOMPARE(nul[1].id, QByteArray("ok"));
}

void TestSseParser::finishReportsIncompleteTrailingEvent_data()
{
    QTest::addColumn<QByteArray>("stream");
    QTest::addColumn<int>("events");
    QTest::addColumn<bool>("clean");
    QTest::newRow("complete") << QByteArray("data: a\n\n") << 1 << true;
    QTest::newRow("trailing comment") << QByteArray("data: a\n\n: keepalive\n") << 1 << true;
    QTest::newRow("no blank line") << QByteArray("data: a\n\nevent: b\ndata: b\n") << 1 << false;
    QTest::newRow("partial line") << QByteArray("data: a\n\ndata: {\"trunc") << 1 << false;
    QTest::newRow("event field only") << QByteArray("event: x\n") << 0 << false;
    QTest::newRow("half a BOM") << QByteArray("\xEF\xBB") << 0 << false;
    QTest::newRow("empty") << QByteArray() << 0 << true;
}

void TestSseParser::finishReportsIncompleteTrailingEvent()
{
    QFETCH(QByteArray, stream);
    QFETCH(int, events);
    QFETCH(bool, clean);
    SseParser parser;
    parser.feed(stream);
    const SseParser::EndState state = parser.finish();
    QCOMPARE(state == SseParser::EndState::Clean, clean);
    if (!clean)
        QCOMPARE(state, SseParser::EndState::Incomplete);
    // finish() never turns the unfinished event into a dispatched one.
    QCOMPARE(parser.takeEvents().size(), events);
    // And the parser is ready for a fresh stream afterwards.
    parser.feed("data: fresh\n\n");
    QCOMPARE(parser.takeEvents().value(0).data, QByteArray("fresh"));
}

void TestSseParser::oversizedEventOverflows()
{
    SseParser parser(32);
    parser.feed("data: small\n\n");
    QCOMPARE(parser.takeEvents().size(), 1);
    parser.feed("data: 0123456789");
    parser.feed("0123456789");
    QVERIFY(!parser.overflowed());
    parser.feed("0123456789\n\n");
    QVERIFY(parser.overflowed());
    parser.feed("data: after\n\n");
    QVERIFY(!parser.hasNext());
    QCOMPARE(parser.finish(), SseParser::EndState::Overflowed);

    // Many short data lines of one event count together.
    SseParser lines(32);
    for (int i = 0; i < 10; ++i)
        lines.feed("data: 12345\n");
    QVERIFY(lines.overflowed());
}

void TestSseParser::capturedStreamByteAtATimeAndRandomChunks()
{
    const QByteArray stream = capturedStream();
    const QList<SseEvent> whole = parseInChunks(stream, {stream.size()});
    QCOMPARE(whole, expectedCapturedEvents());

    QCOMPARE(parseInChunks(stream, {1}), whole);

    // Chunk sizes from a fixed seed, so a failure reproduces; every cut position is covered many times.
    QRandomGenerator rng(20261130);
    for (int round = 0; round < 500; ++round) {
        QList<qsizetype> sizes;
        for (int i = 0; i < 64; ++i)
            sizes.append(rng.bounded(1, round % 2 ? 8 : 64));
        const QList<SseEvent> events = parseInChunks(stream, sizes);
        if (events != whole)
            QFAIL(qPrintable(QStringLiteral("round %1 differs").arg(round)));
    }

    // Comments are counted the same way at any chunking.
    SseParser parser;
    for (char c : stream)
        parser.feed(QByteArrayView(&c, 1));
    QCOMPARE(parser.commentCount(), 2);
    QCOMPARE(parser.eventCount(), 6);
}

void TestSseParser::formatRoundTrips_data()
{
    QTest::addColumn<QByteArray>("event");
    QTest::addColumn<QByteArray>("data");
    QTest::newRow("plain") << QByteArray("response.created") << QByteArray(R"({"type":"response.created"})");
    QTest::newRow("multi-line") << QByteArray("x") << QByteArray("a\nb\r\nc\rd");
    QTest::newRow("empty data") << QByteArray("x") << QByteArray();
    QTest::newRow("trailing newline") << QByteArray("x") << QByteArray("a\n");
    QTest::newRow("no name") << QByteArray() << QByteArray("[DONE]");
    QTest::newRow("leading space") << QByteArray("x") << QByteArray(" spaced");
}

void TestSseParser::formatRoundTrips()
{
    QFETCH(QByteArray, event);
    QFETCH(QByteArray, data);
    const QList<SseEvent> events = parseAll(sy::sseFormat(event, data));
    QCOMPARE(events.size(), 1);
    QCOMPARE(events[0].event, event);
    QByteArray normalized = data;
    normalized.replace("\r\n", "\n").replace('\r', '\n');
    QCOMPARE(events[0].data, normalized);
}

void TestSseParser::formatExactBytes()
{
    QCOMPARE(sy::sseFormat("response.created", "{}"), QByteArray("event: response.created\ndata: {}\n\n"));
    QCOMPARE(sy::sseFormat("a\r\nevent: injected", "1"), QByteArray("event: a\ndata: 1\n\n"));
    QCOMPARE(sy::sseComment("keepalive"), QByteArray(": keepalive\n\n"));
    SseParser parser;
    parser.feed(sy::sseComment("keepalive"));
    QCOMPARE(parser.commentCount(), 1);
    QCOMPARE(parser.eventCount(), 0);
}

// The parser hands an event's data and type out shared with what it keeps (for the storage, and the type for the
// next events of that type): a consumer that keeps an event must see it unchanged whatever comes next, in the
// same read or a later one. The two events of one type share the type's storage (red when each event's type is
// a copy of its own).
void TestSseParser::anEventKeptWhileTheNextIsReadStaysAsItWas()
{
    SseParser parser;
    parser.feed("event: response.output_text.delta\ndata: first\n\n");
    const SseParser::Item first = parser.takeNext();
    parser.feed("event: response.output_text.delta\ndata: second, longer\n\nevent: other\ndata: third\n\n");
    const SseParser::Item second = parser.takeNext();
    const SseParser::Item third = parser.takeNext();
    QCOMPARE(first.event.data, QByteArray("first"));
    QCOMPARE(second.event.data, QByteArray("second, longer"));
    QCOMPARE(third.event.data, QByteArray("third"));
    QCOMPARE(first.event.event, QByteArray("response.output_text.delta"));
    QCOMPARE(second.event.event, QByteArray("response.output_text.delta"));
    QCOMPARE(third.event.event, QByteArray("other"));
    QCOMPARE(static_cast<const void *>(second.event.event.constData()),
             static_cast<const void *>(first.event.event.constData()));
    // Multi-line data of the next event, after an event kept from the same chunk.
    parser.feed("data: a\n\ndata: b\ndata: c\n\n");
    const SseParser::Item fourth = parser.takeNext();
    const SseParser::Item fifth = parser.takeNext();
    QCOMPARE(fourth.event.data, QByteArray("a"));
    QCOMPARE(fifth.event.data, QByteArray("b\nc"));
    QCOMPARE(first.event.data, QByteArray("first"));
}

// One event per read, each taken and dropped before the next read (a streamed turn): the next event's data goes
// into the same storage. Red when every event's data is a new allocation: the array made meanwhile (as any other
// work of the proxy thread would) takes the freed block, and the next event's data lands elsewhere.
void TestSseParser::aTakenEventsStorageServesTheNextEvent()
{
    SseParser parser;
    parser.feed("event: response.output_text.delta\ndata: {\"delta\":\"0123456789abcdef\"}\n\n");
    const char *storage = nullptr;
    qsizetype capacity = 0;
    {
        const SseParser::Item first = parser.takeNext();
        storage = first.event.data.constData();
        capacity = first.event.data.capacity();
    }
    QByteArray meanwhile; // as large as the first event's storage: it takes that block if the block was freed
    meanwhile.reserve(capacity);
    parser.feed("event: response.output_text.delta\ndata: {\"delta\":\"fedcba9876543210\"}\n\n");
    const SseParser::Item second = parser.takeNext();
    QCOMPARE(second.event.data, QByteArray("{\"delta\":\"fedcba9876543210\"}"));
    QCOMPARE(static_cast<const void *>(second.event.data.constData()), static_cast<const void *>(storage));
    QVERIFY(meanwhile.constData() != storage);
}

// The pending-bytes bound counts the event being read, not the storage kept from the last one. Red when the kept
// data counts: 28 + 5 bytes are over 32.
void TestSseParser::aDispatchedEventDoesNotCountTowardsTheBound()
{
    SseParser parser(32);
    parser.feed(QByteArray("data: " + QByteArray(28, 'y') + "\n\n"));
    QCOMPARE(parser.takeEvents().size(), 1);
    parser.feed("data: abcd\n\n");
    QVERIFY(!parser.overflowed());
    const QList<SseEvent> events = parser.takeEvents();
    QCOMPARE(events.size(), 1);
    QCOMPARE(events[0].data, QByteArray("abcd"));
}

// More distinct types than the parser keeps, and one longer than it keeps at all, cycled: every event has its
// own type's name.
void TestSseParser::manyTypesEachKeepTheirName()
{
    QList<QByteArray> types;
    for (int i = 0; i < 12; ++i)
        types.append("type." + QByteArray::number(i));
    types.append(QByteArray(100, 't'));
    SseParser parser;
    QList<QByteArray> expected;
    for (int round = 0; round < 3; ++round) {
        for (int i = 0; i < types.size(); ++i) {
            const QByteArray &type = types.at((i * 5 + round) % types.size());
            parser.feed(QByteArray("event: " + type + "\ndata: " + QByteArray::number(i) + "\n\n"));
            expected.append(type);
        }
    }
    const QList<SseEvent> events = parser.takeEvents();
    QCOMPARE(events.size(), expected.size());
    for (qsizetype i = 0; i < events.size(); ++i)
        QCOMPARE(events.at(i).event, expected.at(i));
}

// An event's data above 4 KiB goes with the event: the parser keeps no storage of that size for the rest of the
// stream (nor holds it beside the next event's data, against the pending-bytes bound). Red when it is kept: the
// next small event's data lands in the large storage.
void TestSseParser::aLargeEventsStorageIsNotKept()
{
    SseParser parser;
    parser.feed(QByteArray("data: " + QByteArray(6000, 'z') + "\n\n"));
    QCOMPARE(parser.takeEvents().at(0).data.size(), 6000);
    parser.feed("data: small\n\n");
    const QList<SseEvent> events = parser.takeEvents();
    QCOMPARE(events.at(0).data, QByteArray("small"));
    QVERIFY2(events.at(0).data.capacity() < 4096, QByteArray::number(events.at(0).data.capacity()).constData());
}

QTEST_GUILESS_MAIN(TestSseParser)
#include "tst_sseparser.moc"
