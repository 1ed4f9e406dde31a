#pragma once

#include "util/SocketIo.h"

#include <QByteArray>
#include <QHostAddress>
#include <QList>
#include <QObject>
#include <QString>

class QHostInfo;
class QSocketNotifier;
class QTimer;

namespace sy {

// The one reader of a busy socket, called instead of DirectTcpSocket::readyRead() (setReader()).
class DirectTcpSocketReader
{
public:
    virtual void directSocketReadable() = 0;

protected:
    ~DirectTcpSocketReader() = default;
};

// A plain TCP connection on a descriptor of its own, for an upstream reached without TLS and without a proxy
// (POSIX only: available() is false elsewhere). It does what QTcpSocket does for such a connection minus what
// an event stream pays for on every wake-up: Qt asks the kernel how much is waiting (an ioctl) before each
// read, allocates a buffer chunk for it and copies it out again. Here one recv() per readiness goes into a
// buffer that is reused, and the descriptor is watched level-triggered, so what one recv() leaves is
// reported again.
//
// Reading is bounded like QTcpSocket::setReadBufferSize(): once readLimit bytes wait unread, the descriptor is
// no longer watched for reading and TCP flow control pushes back on the peer; read() watches it again.
// Writing: write() hands the bytes to the kernel at once (head and body in one call) and keeps what it did not
// take (the body by reference, not copied) until the descriptor is writable.
class DirectTcpSocket : public QObject
{
    Q_OBJECT

public:
    static constexpr bool available() { return socketIoAvailable(); }

    DirectTcpSocket(qint64 readLimit, QObject *parent);
    ~DirectTcpSocket() override;

    // Resolves host (no lookup for an address literal) and connects to its addresses in turn; connected() or
    // closed() follows, never synchronously.
    void connectToHost(const QString &host, quint16 port);
    // The same for addresses already known, tried in this order.
    void connectToAddresses(const QList<QHostAddress> &addresses, quint16 port);
    // How long an address that neither accepts nor refuses is waited for while others remain (default 30 s).
    void setAttemptTimeout(int ms)
    {
        m_attemptTimeoutMs = ms;
    }
    bool isConnected() const { return m_connected && !m_closed; }
    bool isClosed() const { return m_closed; }
    qintptr descriptor() const { return m_fd; }
    const QString &errorString() const { return m_error; }

    // Bytes the kernel did not take yet stay here; bytesWritten() reports each further part it takes.
    // Returns how many bytes the kernel took at once.
    qint64 write(QByteArrayView head, const QByteArray &body);
    // More bytes of the same request, sent after everything written before (a body's held-back tail). Returns
    // how many bytes the kernel took at once.
    qint64 append(const QByteArray &bytes);
    qint64 bytesToWrite() const;

    qint64 bytesAvailable() const { return m_in.size() - m_inPos; }
    QByteArray read(qint64 maxBytes);
    // The first maxBytes (at most) of the unread bytes, where they lie: valid until the next call on this
    // socket or the next turn of its event loop (which may receive more into the same buffer). skip() then takes
    // n of them, as read(n) would without copying them out.
    QByteArrayView peek(qint64 maxBytes) const
    {
        return QByteArrayView(m_in.constData() + m_inPos, qBound<qint64>(0, maxBytes, bytesAvailable()));
    }
    void skip(qint64 n);

    // Closes the descriptor at once; emits nothing.
    void abort();

    // Called instead of emitting readyRead() while set: the one reader of a busy socket (UpstreamConnection)
    // skips a signal emission per received part, a measurable share of the proxy thread's time with many
    // streams (bench/HISTORY.md, "Upstream reads without signals"). Null: readyRead() is emitted. A plain
    // pointer, so that the reader may unset itself from inside its call.
    void setReader(DirectTcpSocketReader *reader) { m_reader = reader; }

signals:
    void connected();
    void readyRead();
    void bytesWritten(qint64 bytes);
    // The peer closed or the connection failed; emitted once. Unread bytes stay readable.
    void closed();

private:
    void onLookedUp(const QHostInfo &info);
    void connectNext();
    void onWritable();
    void onReadable();
    class Notifier;
    void fail(const QString &error);
    void flushPending();
    void closeDescriptor();

    qint64 m_readLimit;
    int m_fd = -1;
    quint16 m_port = 0;
    QList<QHostAddress> m_addresses;
    int m_lookupId = -1;
    QSocketNotifier *m_readNotifier = nullptr;
    QSocketNotifier *m_writeNotifier = nullptr;
    QTimer *m_attemptTimer = nullptr;
    DirectTcpSocketReader *m_reader = nullptr;
    int m_attemptTimeoutMs = 30000;
    QString m_error;
    QByteArray m_in; // received bytes; the unread ones start at m_inPos
    qsizetype m_inPos = 0;
    QByteArray m_pendingHead; // what the kernel has not taken yet: the head's rest, then the body's
    QByteArray m_pendingBody;
    qsizetype m_pendingBodyPos = 0;
    QByteArray m_pendingTail; // append()ed while the head or body still waited
    bool m_connected = false;
    bool m_closed = false;
    bool m_peerClosed = false;
};

} // namespace sy
