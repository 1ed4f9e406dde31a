#pragma once

#include "upstream/DirectTcpSocket.h"

#include <QByteArray>
#include <QElapsedTimer>
#include <QNetworkProxy>
#include <QObject>
#include <QSslConfiguration>
#include <QString>
#include <QUrl>

class QTcpSocket;
class QSslSocket;

namespace sy {

// Where a connection goes: connections are only shared between calls with equal keys.
struct UpstreamEndpoint
{
    bool tls = false;
    QString host;
    quint16 port = 0;
    QNetworkProxy proxy;
    QString egressName; // the configured egress proxy, empty when none

    static UpstreamEndpoint fromUrl(const QUrl &url, const QNetworkProxy &proxy);
    // Whether `url` is reached over TLS (https).
    static bool usesTls(const QUrl &url);
    // Scheme, host, port, the egress name and the proxy's type, host, port, user (never its password) and
    // name resolution (SOCKS5 with or without remote DNS): a connection through one egress proxy is never
    // reused for another.
    QString key() const;
};

// The call holding a connection, called instead of UpstreamConnection::readyRead() (setReader()).
class UpstreamConnectionReader
{
public:
    virtual void upstreamReadable() = 0;

protected:
    ~UpstreamConnectionReader() = default;
};

// One HTTP/1.1 transport connection to an upstream: a DirectTcpSocket for plain TCP without a proxy (on POSIX),
// a QTcpSocket through a proxy, or a QSslSocket (ALPN "http/1.1", peer
// verification against the configured CAs, SNI from the host name) for https, through the endpoint's proxy
// (HTTP CONNECT or SOCKS5, as QTcpSocket supports them). It knows nothing about HTTP itself; the call that
// holds it writes one request and reads one response, then hands it back to the pool or closes it.
//
// Write accounting is what tells a safe retry from a resend: writtenAny() turns true once the kernel took
// a first byte of what was written, writtenAll() once it took the last one.
class UpstreamConnection : public QObject, private DirectTcpSocketReader
{
    Q_OBJECT

public:
    UpstreamConnection(const UpstreamEndpoint &endpoint, const QSslConfiguration &tls, QObject *parent);
    ~UpstreamConnection() override;

    const QString &key() const { return m_key; }
    quint64 id() const { return m_id; }

    // Starts connecting (and the TLS handshake); opened() or closed() follows, possibly synchronously.
    void open();
    bool isOpen() const { return m_open && !m_closed; }
    bool isClosed() const { return m_closed; }
    const QString &errorString() const { return m_error; }

    // How many responses were read completely on this connection; more than 0 means it is a reused one.
    int exchanges() const { return m_exchanges; }
    void noteExchangeDone() { ++m_exchanges; }

    // Whether an idle connection can still carry a request: open, nothing unread, and (for a direct
    // connection) the kernel has neither an end of stream nor any byte pending that Qt has not noticed yet.
    bool isReusable() const;
    qint64 idleMs() const { return m_idleSince.isValid() ? m_idleSince.elapsed() : 0; }
    void markIdle() { m_idleSince.start(); }

    // One request: head and body are handed to the socket as they are (Qt keeps a reference to each
    // QByteArray instead of copying a large body into its write buffer; TLS encrypts from them).
    // `holdBack`: that many of the body's last bytes are not written until releaseHeld() (the upstream cannot
    // act on a request it does not have whole).
    void write(const QByteArray &head, const QByteArray &body, qsizetype holdBack = 0);
    // Writes what write() held back, after everything else.
    void releaseHeld();
    bool writtenAny() const { return m_writtenAny; }
    // False while bytes are held back.
    bool writtenAll() const;
    // Plain TCP straight to the upstream: write() hands the bytes to the kernel and signals only later.
    bool isPlainDirect() const { return !m_ssl && m_direct; }

    // Called instead of emitting readyRead() while set: for the call that holds the connection (UpstreamCall), a
    // direct call per received part instead of two signal emissions. Idle in the pool, none is set.
    void setReader(UpstreamConnectionReader *reader) { m_reader = reader; }

    qint64 bytesAvailable() const;
    // Reads without a buffer of its own per part: up to maxBytes received bytes, which endRead() takes. In
    // between nothing else may be called on this connection. A plain connection shows them where they lie
    // (DirectTcpSocket::peek()), a Qt socket reads them into one scratch buffer per thread.
    QByteArrayView beginRead(qint64 maxBytes);
    void endRead();
    // The descriptor the event loop watches for this connection: -1 before there is one, and through a proxy
    // (whose Qt socket engine does not report a real descriptor).
    qintptr socketDescriptor() const;

    // Drops the connection at once; emits nothing.
    void close();

signals:
    void opened();
    // The kernel took more of the written bytes.
    void written();
    void readyRead();
    // The peer closed or the connection failed; emitted once. Unread bytes stay readable.
    void closed();

private:
    QNetworkProxy effectiveProxy();
    void onOpened();
    void onReadyRead();
    void directSocketReadable() override { onReadyRead(); }
    void onWritten(qint64 bytes);
    void onClosed();

    UpstreamEndpoint m_endpoint;
    QString m_key;
    QSslConfiguration m_tls;
    QTcpSocket *m_socket = nullptr;
    QSslSocket *m_ssl = nullptr;
    DirectTcpSocket *m_plain = nullptr; // instead of m_socket: plain TCP straight to the upstream (POSIX)
    quint64 m_id;
    QElapsedTimer m_idleSince;
    QString m_error;
    int m_exchanges = 0;
    bool m_direct = true; // no proxy between the socket and the upstream
    bool m_open = false;
    bool m_closed = false;
    bool m_writing = false; // write() was called
    bool m_writtenAny = false;
    QByteArray m_bodyInQt; // the request body, while Qt's write buffer (or the direct socket's) holds a view of it
    QByteArray m_held;     // the body's held-back tail (write())
    UpstreamConnectionReader *m_reader = nullptr;
    qint64 m_viewed = 0; // what beginRead() showed of a plain connection's bytes, for endRead()
};

} // namespace sy
