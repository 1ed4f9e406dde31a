#include "FuzzSupport.h"

#include <QCoreApplication>
#include <cstdio>
#include <cstdlib>

namespace sy::fuzz {

void checkFailed(const char *target, const char *what, const char *file, int line)
{
    std::fprintf(stderr, "FUZZ CHECK FAILED [%s] %s (%s:%d)\n", target, what, file, line);
    std::fflush(stderr);
    std::abort();
}

QList<QByteArrayView> splitByControlByte(quint8 control, QByteArrayView bytes, qsizetype maxChunks)
{
    QList<QByteArrayView> chunks;
    if (control == 0) {
        chunks.append(bytes);
        return chunks;
    }
    quint32 state = control * 2654435761u;
    const quint32 maxLen = control < 64 ? 8 : control < 192 ? 256 : 4096;
    qsizetype pos = 0;
    while (pos < bytes.size()) {
        if (maxChunks > 0 && chunks.size() == maxChunks - 1) {
            chunks.append(bytes.sliced(pos));
            break;
        }
        state = state * 1664525u + 1013904223u;
        const qsizetype len = qMin<qsizetype>(bytes.size() - pos, qsizetype((state >> 8) % maxLen) + 1);
        chunks.append(bytes.sliced(pos, len));
        pos += len;
    }
    return chunks;
}

void ensureCoreApplication()
{
    if (QCoreApplication::instance())
        return;
    static int argc = 1;
    static char name[] = "switchyard-fuzz";
    static char *argv[] = {name, nullptr};
    new QCoreApplication(argc, argv); // lives for the whole process, like a main()'s application
}

} // namespace sy::fuzz
