#pragma once

#include "api/translate/RequestScan.h"

#include <QByteArray>
#include <QObject>
#include <QThread>
#include <atomic>
#include <functional>

namespace sy {

// A thread that scans large Codex bodies (scanResponsesRequest) off the proxy thread. A 10 MiB body takes the
// proxy thread 1.3 ms to scan; meanwhile it could not push the rest of that body, already on its way upstream
// with its last byte held back (Turn::sendEarly), nor serve any other socket. Scanned here, the body goes out
// while it is scanned, and the turn takes the result once both are done (Turn::start()).
//
// Lives on the proxy thread; the thread keeps a large-body parser for 10-20 s after its last use
// (LargeBufferPool), and ends with this object.
class RequestScanThread : public QObject
{
    Q_OBJECT

public:
    explicit RequestScanThread(int sweepIntervalMs, QObject *parent = nullptr);
    ~RequestScanThread() override;

    using Done = std::function<void(std::optional<ResponsesScan>)>;
    // Scans `body` (shared, not copied) on the scan thread; `done` runs on this object's thread with the result,
    // unless `context` (on that thread too) is gone by then.
    void scan(const QByteArray &body, QObject *context, Done done);

    // Scans finished (tests).
    quint64 scansDone() const { return m_scansDone.load(); }

    // The scan thread's LargeBufferPool (its parser) as of its latest scan or sweep: what /api/status shows
    // next to the proxy thread's.
    struct PoolFigures
    {
        int objects = 0; // its parser, if kept
        qint64 keptBytes = 0;
        quint64 reuses = 0;
    };
    PoolFigures poolFigures() const { return {m_poolObjects.load(), m_poolKeptBytes.load(), m_poolReuses.load()}; }

private:
    void publishPoolFigures(); // on the scan thread

    QThread m_thread;
    QObject *m_worker = nullptr; // lives on m_thread
    std::atomic<quint64> m_scansDone{0};
    std::atomic<int> m_poolObjects{0};
    std::atomic<qint64> m_poolKeptBytes{0};
    std::atomic<quint64> m_poolReuses{0};
};

} // namespace sy
