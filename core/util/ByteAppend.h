#pragma once

#include <QByteArray>
#include <QByteArrayView>
#include <cstring>
#include <initializer_list>

namespace sy {

// Appends the pieces to `out` in order with one size change and one copy each. QByteArray::append() checks
// sharing, capacity and growth again for every piece (Qt 6.4: 55 to 200 instructions a call), and a streamed
// event's bytes went through nine of them, the frame's six and the chunk's three (bench/HISTORY.md, "A streamed
// event's bytes appended in one piece"). Growth stays geometric (QByteArray::resize). No piece may point into
// `out` itself: the resize may move its storage before the copies.
inline void appendPieces(QByteArray &out, std::initializer_list<QByteArrayView> pieces)
{
    qsizetype total = 0;
    for (const QByteArrayView piece : pieces) {
        Q_ASSERT(piece.isEmpty() || out.isEmpty() || piece.data() + piece.size() <= out.constData() ||
                 piece.data() >= out.constData() + out.size());
        total += piece.size();
    }
    if (total == 0)
        return;
    const qsizetype at = out.size();
    out.resize(at + total);
    char *to = out.data() + at;
    for (const QByteArrayView piece : pieces) {
        if (!piece.isEmpty())
            std::memcpy(to, piece.data(), size_t(piece.size()));
        to += piece.size();
    }
}

} // namespace sy
