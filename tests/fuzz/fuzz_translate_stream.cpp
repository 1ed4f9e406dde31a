// Upstream Responses streams through every route's sink (api/TurnSink): Codex pass-through, /v1/responses
// streaming and JSON, chat completions streaming (ChatStreamTranslator) and JSON (ResponseAccumulator +
// chatCompletionFromResponse), fed the way Turn::onEvent feeds them.
// Invariants: the Codex route passes every event through unchanged; every frame a sink writes is well-formed
// SSE; chat streams carry only JSON objects and end with exactly one [DONE]; /v1 streams start with
// response.created and never show codex.* events; JSON answers are JSON objects.
#include "FuzzSupport.h"
#include "api/TurnSink.h"
#include "upstream/SseParser.h"
#include "usage/FailureClassifier.h"
#include "usage/UsageWindows.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <memory>

namespace sy::fuzz {

namespace {

constexpr const char *kTarget = "translate_stream";
constexpr qint64 kNowMs = 1'760'000'000'000;
// A run feeds six sinks per event; past this many events a long input adds cost, not coverage. The rest is
// treated as a stream that broke there.
constexpr qsizetype kMaxEvents = 64;

QList<SseEvent> reparse(const QByteArray &wire)
{
    SseParser parser;
    parser.feed(wire);
    SY_FUZZ_CHECK(kTarget, parser.finish() == SseParser::EndState::Clean, "a sink wrote an unterminated frame");
    return parser.takeEvents();
}

struct Run
{
    SinkKind kind;
    bool includeUsage = false;
    std::unique_ptr<TurnSink> sink;
    QByteArray out;
};

void checkChatStream(const QList<SseEvent> &events)
{
    SY_FUZZ_CHECK(kTarget, !events.isEmpty() && events.last().data == "[DONE]", "chat stream does not end in [DONE]");
    for (qsizetype i = 0; i + 1 < events.size(); ++i) {
        SY_FUZZ_CHECK(kTarget, events.at(i).data != "[DONE]", "chat stream has [DONE] before its end");
        QJsonParseError pe;
        const QJsonDocument doc = QJsonDocument::fromJson(events.at(i).data, &pe);
        SY_FUZZ_CHECK(kTarget, pe.error == QJsonParseError::NoError && doc.isObject(),
                      "chat stream frame is not a JSON object");
    }
}

} // namespace

int translateStream(const uint8_t *data, size_t size)
{
    SseParser parser;
    parser.feed(QByteArrayView(reinterpret_cast<const char *>(data), qsizetype(size)));
    parser.finish();
    const QList<SseEvent> events = parser.takeEvents();

    std::vector<Run> runs;
    for (const SinkKind kind : {SinkKind::CodexStream, SinkKind::ResponsesStream, SinkKind::ResponsesJson,
                                SinkKind::ChatStream, SinkKind::ChatJson}) {
        for (const bool includeUsage : {false, true}) {
            if (includeUsage && kind != SinkKind::ChatStream)
                continue;
            runs.push_back({kind, includeUsage, makeTurnSink(kind, {QStringLiteral("gpt-fuzz"), includeUsage}), {}});
        }
    }

    QList<SseEvent> forwarded;
    bool terminal = false;
    for (const SseEvent &event : events) {
        if (forwarded.size() == kMaxEvents)
            break;
        const QJsonObject parsed = QJsonDocument::fromJson(event.data).object();
        if (event.event == "error" || event.event == "response.failed")
            classifyStreamError(parsed, kNowMs);
        if (event.event == "codex.rate_limits")
            usageFromRateLimitsEvent(parsed, kNowMs);
        // Pass-through routes skip parsing text deltas (Turn::onEvent); chat always parses.
        const bool skipParse = event.event.endsWith(".delta");
        for (Run &run : runs) {
            const bool chat = run.kind == SinkKind::ChatStream || run.kind == SinkKind::ChatJson;
            run.out += run.sink->onEvent(event.event, event.data, skipParse && !chat ? QJsonObject() : parsed);
        }
        forwarded.append(event);
        if (isTerminalEventType(event.event)) {
            terminal = true;
            break;
        }
    }

    for (Run &run : runs) {
        if (!run.sink->streaming()) {
            SY_FUZZ_CHECK(kTarget, run.out.isEmpty(), "a JSON sink wrote stream bytes");
            QJsonParseError pe;
            const QJsonDocument doc = QJsonDocument::fromJson(run.sink->fullBody(), &pe);
            SY_FUZZ_CHECK(kTarget, pe.error == QJsonParseError::NoError && doc.isObject(),
                          "a JSON sink's body is not a JSON object");
            continue;
        }
        if (run.kind == SinkKind::CodexStream) {
            const QList<SseEvent> back = reparse(run.out);
            SY_FUZZ_CHECK(kTarget, back.size() == forwarded.size(), "Codex route dropped or added events");
            for (qsizetype i = 0; i < back.size(); ++i) {
                SY_FUZZ_CHECK(kTarget, back.at(i).event == forwarded.at(i).event, "Codex route changed an event name");
                SY_FUZZ_CHECK(kTarget, back.at(i).data == forwarded.at(i).data, "Codex route changed event data");
            }
            reparse(run.sink->keepaliveFrame());
        }
        if (!terminal)
            run.out +=
                run.sink->failureFrames(QStringLiteral("upstream_stream_broken"), QStringLiteral("stream broke"));
        const QList<SseEvent> back = reparse(run.out);
        if (run.kind == SinkKind::ChatStream)
            checkChatStream(back);
        if (run.kind == SinkKind::ResponsesStream) {
            SY_FUZZ_CHECK(kTarget, !back.isEmpty() && back.first().event == "response.created",
                          "/v1/responses stream does not start with response.created");
            for (const SseEvent &e : back)
                SY_FUZZ_CHECK(kTarget, !e.event.startsWith("codex."), "/v1/responses stream shows a codex.* event");
        }
    }
    return 0;
}

} // namespace sy::fuzz

SY_FUZZ_ENTRY(translateStream)
