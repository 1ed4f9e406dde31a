#pragma once

#include <QList>
#include <QObject>
#include <QPointer>

class QAbstractEventDispatcher;

namespace sy {

class HttpConnection;

// Collects the connections that have output waiting and hands it to the kernel once per event-loop pass,
// right before the thread's event dispatcher polls again (aboutToBlock() in a running loop, awake() in
// processEvents() calls), and on the proxy thread's EpollEventDispatcher also after each ready socket, so
// that a first byte does not wait for the rest of a busy pass. Everything a connection was given while one
// upstream read was handled thus leaves in one send(), without posting events or toggling socket notifiers
// (each of which wakes the glib loop).
// Internal to the http module; one per HttpServer, on the server's thread.
class WriteCoalescer : public QObject
{
    Q_OBJECT

public:
    explicit WriteCoalescer(QObject *parent = nullptr);
    ~WriteCoalescer() override;

    // Flushes `connection` before the next poll. Returns false when this thread has no event dispatcher to
    // hook into; the caller then has to flush at once.
    bool schedule(HttpConnection *connection);
    // Flushes every scheduled connection now.
    void flushAll();

    // When client output goes to the kernel: SWITCHYARD_WRITE_FLUSH=pass at the end of each event-loop pass only
    // (before session 21), =socket also after each ready socket (before session 31), by default also a stream's
    // first bytes inside the write that carries them (HttpResponse::write). For A/B runs in bench/.
    enum class FlushMode
    {
        Pass,
        Socket,
        FirstBytesAtOnce
    };
    static FlushMode flushMode();

private:
    bool hook();

    QList<QPointer<HttpConnection>> m_dirty;
    QList<QPointer<HttpConnection>> m_batch;
    QPointer<QAbstractEventDispatcher> m_dispatcher;
    bool m_flushing = false;
    bool m_retryQueued = false;
    int m_socketHook = 0; // EpollEventDispatcher::addSocketHandledHook id, 0 = none
    int m_passHook = 0;   // EpollEventDispatcher::addPassHook id, 0 = none
};

} // namespace sy
