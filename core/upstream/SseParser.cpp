#include "upstream/SseParser.h"

#include <cstring>
#include <utility>

namespace sy {

namespace {

constexpr char utf8Bom[3] = {'\xEF', '\xBB', '\xBF'};

// The first CR or LF at or after `from`, or -1. Two memchr() scans (the second only up to the first LF), not a
// loop over bytes: this runs over every byte of every upstream stream (the loop was 10 % of the proxy
// thread's instructions in bench/instructions.sh).
qsizetype findLineBreak(QByteArrayView bytes, qsizetype from)
{
    if (from >= bytes.size())
        return -1; // also keeps an empty view's null data() away from memchr
    const char *begin = bytes.data() + from;
    const size_t length = size_t(bytes.size() - from);
    const char *lf = static_cast<const char *>(std::memchr(begin, '\n', length));
    const char *cr = static_cast<const char *>(std::memchr(begin, '\r', lf ? size_t(lf - begin) : length));
    const char *hit = cr ? cr : lf;
    return hit ? hit - bytes.data() : -1;
}

} // namespace

SseParser::SseParser(qsizetype maxPendingBytes) : m_maxPendingBytes(maxPendingBytes) {}

void SseParser::feed(QByteArrayView bytes)
{
    if (m_overflowed)
        return;
    qsizetype pos = 0;
    const qsizetype size = bytes.size();

    // The BOM may itself be split over chunks, so it is matched byte by byte.
    while (!m_bomDone && pos < size) {
        if (bytes[pos] == utf8Bom[m_bomMatched]) {
            ++pos;
            if (++m_bomMatched == 3)
                m_bomDone = true;
        } else {
            m_bomDone = true;
            m_line.append(QByteArrayView(utf8Bom, sizeof utf8Bom).first(m_bomMatched));
        }
    }

    if (m_skipLeadingLf && pos < size) {
        m_skipLeadingLf = false;
        if (bytes[pos] == '\n')
            ++pos;
    }

    while (pos < size && !m_overflowed) {
        const qsizetype brk = findLineBreak(bytes, pos);
        if (brk < 0) {
            appendToLine(bytes.sliced(pos));
            return;
        }
        if (m_line.isEmpty()) {
            processLine(bytes.sliced(pos, brk - pos));
        } else {
            appendToLine(bytes.sliced(pos, brk - pos));
            if (m_overflowed)
                return;
            const QByteArray line = std::exchange(m_line, QByteArray());
            processLine(line);
        }
        pos = brk + 1;
        if (bytes[brk] == '\r') {
            if (pos < size) {
                if (bytes[pos] == '\n')
                    ++pos;
            } else {
                m_skipLeadingLf = true;
            }
        }
    }
}

QByteArray SseParser::knownType(QByteArrayView value)
{
    // A stream names few types (deltas, then a handful of others): each is kept once and handed out shared, not
    // copied into a new array for every event. An empty value is not kept (it stays a non-null empty array).
    if (value.isEmpty())
        return value.toByteArray();
    for (const QByteArray &known : m_knownTypes) {
        if (known == value)
            return known;
    }
    QByteArray type = value.toByteArray();
    if (value.size() <= kMaxKnownTypeBytes) {
        m_knownTypes[m_nextKnownType] = type;
        m_nextKnownType = (m_nextKnownType + 1) % int(std::size(m_knownTypes));
    }
    return type;
}

void SseParser::appendToLine(QByteArrayView bytes)
{
    if (m_line.size() + pendingDataSize() + bytes.size() > m_maxPendingBytes) {
        m_overflowed = true;
        m_line.clear();
        m_data.clear();
        return;
    }
    m_line.append(bytes);
}

void SseParser::processLine(QByteArrayView line)
{
    if (line.isEmpty()) {
        dispatch();
        return;
    }
    if (line.front() == ':') {
        QByteArrayView text = line.sliced(1);
        if (text.startsWith(' '))
            text = text.sliced(1);
        Item item;
        item.kind = Item::Kind::Comment;
        item.comment = text.toByteArray();
        m_items.push_back(std::move(item));
        ++m_commentCount;
        return;
    }

    QByteArrayView field = line;
    QByteArrayView value;
    const qsizetype colon = line.indexOf(':');
    if (colon >= 0) {
        field = line.first(colon);
        value = line.sliced(colon + 1);
        if (value.startsWith(' '))
            value = value.sliced(1);
    }
    m_fieldsPending = true;

    if (field == "data") {
        if (pendingDataSize() + value.size() + 1 > m_maxPendingBytes) {
            m_overflowed = true;
            m_data.clear();
            return;
        }
        if (m_hasData) {
            m_data.append('\n');
        } else {
            // Still the previous event's data, up to kKeepDataCapacity (dispatch() shares it with its item): once
            // the item is taken and done with, the usual case when one read brings one event, this reuses its
            // storage; while the item is alive it detaches, as a fresh array would allocate.
            m_data.resize(0);
        }
        m_data.append(value);
        m_hasData = true;
    } else if (field == "event") {
        m_eventType = knownType(value);
    } else if (field == "id") {
        // An id containing NUL is ignored by definition (it could not be sent back in Last-Event-ID).
        if (!value.contains('\0'))
            m_lastEventId = value.toByteArray();
    }
    // "retry" and unknown fields carry nothing a proxy acts on.
}

void SseParser::dispatch()
{
    m_fieldsPending = false;
    if (!m_hasData) {
        // Per the event stream rules a block without data lines dispatches nothing.
        m_eventType.clear();
        return;
    }
    Item item;
    item.kind = Item::Kind::Event;
    item.event.event = std::exchange(m_eventType, QByteArray());
    // Shared, and kept for the next event's data (processLine()); a large event's is given away, so that it is
    // neither pinned for the rest of the stream nor counted twice against the pending-bytes bound.
    item.event.data = m_data.capacity() > kKeepDataCapacity ? std::exchange(m_data, QByteArray()) : m_data;
    item.event.id = m_lastEventId;
    m_hasData = false;
    m_items.push_back(std::move(item));
    ++m_eventCount;
}

SseParser::Item SseParser::takeNext()
{
    Q_ASSERT(!m_items.empty());
    Item item = std::move(m_items.front());
    m_items.pop_front();
    return item;
}

QList<SseEvent> SseParser::takeEvents()
{
    QList<SseEvent> events;
    while (!m_items.empty()) {
        Item item = takeNext();
        if (item.kind == Item::Kind::Event)
            events.append(std::move(item.event));
    }
    return events;
}

SseParser::EndState SseParser::finish()
{
    EndState state = EndState::Clean;
    if (m_overflowed)
        state = EndState::Overflowed;
    else if (!m_line.isEmpty() || m_fieldsPending || (!m_bomDone && m_bomMatched > 0))
        state = EndState::Incomplete;
    resetStream();
    return state;
}

void SseParser::resetStream()
{
    m_line.clear();
    m_skipLeadingLf = false;
    m_bomMatched = 0;
    m_bomDone = false;
    m_eventType.clear();
    m_data.clear();
    m_hasData = false;
    m_fieldsPending = false;
    m_lastEventId.clear();
    m_overflowed = false;
}

namespace {

void appendLines(QByteArray &out, QByteArrayView prefix, QByteArrayView text)
{
    qsizetype pos = 0;
    for (;;) {
        const qsizetype brk = findLineBreak(text, pos);
        out.append(prefix);
        if (brk < 0) {
            out.append(text.sliced(pos));
            out.append('\n');
            return;
        }
        out.append(text.sliced(pos, brk - pos));
        out.append('\n');
        pos = brk + 1;
        if (text[brk] == '\r' && pos < text.size() && text[pos] == '\n')
            ++pos;
    }
}

} // namespace

QByteArray sseFormat(const QByteArray &event, const QByteArray &data)
{
    QByteArray out;
    out.reserve(event.size() + data.size() + 16);
    if (!event.isEmpty()) {
        const qsizetype brk = findLineBreak(event, 0);
        out.append("event: ");
        out.append(brk < 0 ? QByteArrayView(event) : QByteArrayView(event).first(brk));
        out.append('\n');
    }
    appendLines(out, "data: ", data);
    out.append('\n');
    return out;
}

QByteArray sseComment(QByteArrayView text)
{
    QByteArray out;
    appendLines(out, ": ", text);
    out.append('\n');
    return out;
}

} // namespace sy
