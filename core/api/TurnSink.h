#pragma once

#include "api/translate/ChatStreamTranslator.h"
#include "api/translate/ResponseAccumulator.h"
#include "api/translate/TokenUsage.h"

#include <QByteArray>
#include <QJsonObject>
#include <QList>

#include <memory>

namespace sy {

// How one route presents an upstream Responses stream to its client. The Turn feeds every upstream event in
// order; the sink answers with the bytes to write. Sinks never write themselves: the Turn holds back the
// terminal bytes until the request-log row is durable.
class TurnSink
{
public:
    virtual ~TurnSink() = default;

    // Streaming sinks commit a 200 text/event-stream before the end; others answer once, with a full body.
    virtual bool streaming() const = 0;
    virtual QByteArray contentType() const = 0;
    // Bytes that keep a committed client waiting (streaming sinks only).
    virtual QByteArray keepaliveFrame() const { return QByteArrayLiteral(": keepalive\n\n"); }
    // Bytes for one upstream event; `terminal` is set when the event ended the turn.
    virtual QByteArray onEvent(const QByteArray &type, const QByteArray &rawData, const QJsonObject &data) = 0;
    // Whether onEvent() needs `data` (the parsed rawData) for an event of this type; for the others it may
    // be given an empty object.
    virtual bool needsEventData(const QByteArray &type) const = 0;
    // Parses rawData for onEvent() (and the turn, which reads errors and codex.rate_limits): the whole object,
    // unless the sink reads only a part of this event type and can pick it out more cheaply.
    virtual QJsonObject eventData(const QByteArray &type, const QByteArray &rawData) const;
    // After commit: the bytes that end the stream with an explicit error (never a silent close).
    virtual QByteArray failureFrames(const QString &code, const QString &message) = 0;
    // Non-streaming sinks: the whole answer body once the turn ended normally.
    virtual QByteArray fullBody() const { return {}; }
    // fullBody(), after which the sink keeps only what usage(), terminalStatus() and responseId() need: the
    // answer is not held twice (as bytes and as the response it was built from) while the settlement commits.
    virtual QByteArray takeFullBody() { return fullBody(); }
    virtual TokenUsage usage() const = 0;
    // The final status seen: "completed", "incomplete", "failed", or "" before any terminal event.
    virtual QString terminalStatus() const = 0;
    // The upstream response id of this turn (continuity anchor), empty if not seen yet.
    virtual QString responseId() const = 0;
};

enum class SinkKind { CodexStream, ResponsesStream, ResponsesJson, ChatStream, ChatJson };

struct ChatSinkOptions
{
    QString model;
    bool includeUsage = false;
};

std::unique_ptr<TurnSink> makeTurnSink(SinkKind kind, const ChatSinkOptions &chat = {});

bool isTerminalEventType(const QByteArray &type);

} // namespace sy
