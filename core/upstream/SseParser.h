#pragma once

#include <QByteArray>
#include <QByteArrayView>
#include <QList>
#include <QMetaType>
#include <deque>

namespace sy {

// One dispatched server-sent event.
struct SseEvent
{
    // The `event:` field as sent; empty when the event had none (an EventSource would call it "message").
    QByteArray event;
    // All `data:` lines of the event joined with '\n' (no trailing newline).
    QByteArray data;
    // The stream's last event id at dispatch time. As in the WHATWG definition it persists across events
    // until an `id:` line changes it, so a consumer can resume from any event.
    QByteArray id;

    bool operator==(const SseEvent &other) const
    {
        return event == other.event && data == other.data && id == other.id;
    }
    bool operator!=(const SseEvent &other) const { return !(*this == other); }
};

// Incremental parser for a text/event-stream body (WHATWG "event stream interpretation").
//
// Bytes may be fed in chunks of any size, split anywhere (inside a line, between CR and LF, inside the
// UTF-8 BOM). Parsed items are queued in wire order and taken with takeNext(); taking them one at a
// time lets a caller stop between two events (pause, abort) without losing the rest of a chunk.
// Comment lines (": keepalive") are queued as separate Comment items and never become events.
class SseParser
{
public:
    // A bound on the bytes held for one unfinished line or event; a stream exceeding it is broken.
    static constexpr qsizetype defaultMaxPendingBytes = 64 * 1024 * 1024;

    struct Item
    {
        enum class Kind
        {
            Event,
            Comment
        };
        Kind kind = Kind::Event;
        SseEvent event;     // Kind::Event
        QByteArray comment; // Kind::Comment: the text after ':' without its one leading space
    };

    enum class EndState
    {
        Clean,      // the stream ended between events
        Incomplete, // bytes or fields of an unfinished event were pending and have been discarded
        Overflowed  // the stream broke the pending-bytes bound; everything after that point was ignored
    };

    explicit SseParser(qsizetype maxPendingBytes = defaultMaxPendingBytes);

    void feed(QByteArrayView bytes);

    bool hasNext() const { return !m_items.empty(); }
    // Precondition: hasNext().
    Item takeNext();
    // Drains the queue and returns only its events; comments are dropped (still counted).
    QList<SseEvent> takeEvents();

    // Ends the stream. A trailing event without its blank line is never dispatched (it may be cut off);
    // the return value says whether anything was pending. The parser is reset for a new stream afterwards,
    // but items still queued stay available.
    EndState finish();

    bool overflowed() const { return m_overflowed; }
    qint64 eventCount() const { return m_eventCount; }
    qint64 commentCount() const { return m_commentCount; }

private:
    void processLine(QByteArrayView line);
    void dispatch();
    void appendToLine(QByteArrayView bytes);
    void resetStream();
    // The event type `value` names, shared with the earlier events of that type.
    QByteArray knownType(QByteArrayView value);
    qsizetype pendingDataSize() const { return m_hasData ? m_data.size() : 0; }

    static constexpr qsizetype kKeepDataCapacity = 4096;
    static constexpr qsizetype kMaxKnownTypeBytes = 64;

    qsizetype m_maxPendingBytes;
    std::deque<Item> m_items;

    QByteArray m_line;            // an unterminated line carried over from the previous chunk
    bool m_skipLeadingLf = false; // the previous chunk ended in CR, so a leading LF belongs to it
    int m_bomMatched = 0;         // bytes of a UTF-8 BOM seen at the very start of the stream
    bool m_bomDone = false;

    QByteArray m_eventType;
    QByteArray m_knownTypes[8];
    int m_nextKnownType = 0;
    // The data lines of the event being read (m_hasData), or else the last dispatched event's data, kept for
    // its storage when it is at most kKeepDataCapacity.
    QByteArray m_data;
    bool m_hasData = false;
    bool m_fieldsPending = false; // a field line arrived since the last blank line
    QByteArray m_lastEventId;
    bool m_overflowed = false;

    qint64 m_eventCount = 0;
    qint64 m_commentCount = 0;
};

// Serialises one event: "event: X\ndata: Y\n\n". Line breaks inside data become separate data lines so the
// event survives a round trip; an empty event name omits the event line; line breaks in the name are cut.
QByteArray sseFormat(const QByteArray &event, const QByteArray &data);
// Serialises a comment line plus blank line, e.g. ": keepalive\n\n".
QByteArray sseComment(QByteArrayView text);

} // namespace sy

Q_DECLARE_METATYPE(sy::SseEvent)
