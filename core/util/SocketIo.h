#pragma once

#include <QByteArrayView>
#include <QtGlobal>

namespace sy {

// Non-blocking I/O on a connected socket's descriptor, beside Qt's buffered QTcpSocket: a connection uses it
// where Qt's buffer would only add a copy (a large upload, a burst of output). POSIX only; on other systems
// socketIoAvailable() is false and the callers stay with QTcpSocket.
constexpr bool socketIoAvailable()
{
#ifdef Q_OS_WIN
    return false;
#else
    return true;
#endif
}

// Bytes the kernel took, 0 when its buffer is full, -1 when the connection is broken.
qint64 sendNow(qintptr fd, const char *data, qsizetype size);
// The same for two pieces in one call (a request's head and body).
qint64 sendBoth(qintptr fd, QByteArrayView first, QByteArrayView second);

// Bytes read into data (at most size), 0 when nothing is waiting, -1 at end of stream or on an error. The
// descriptor stays readable at the end of stream or after an error, so Qt's own read sees it next and
// reports the disconnection as usual.
qint64 receiveNow(qintptr fd, char *data, qsizetype size);

} // namespace sy
