#include "api/RequestScanThread.h"

#include "util/Faults.h"
#include "util/LargeBufferPool.h"

#include <QFileInfo>
#include <QPointer>

namespace sy {

RequestScanThread::RequestScanThread(int sweepIntervalMs, QObject *parent) : QObject(parent)
{
    m_thread.setObjectName(QStringLiteral("scan")); // as /proc shows it (bench/run.sh)
    m_worker = new QObject;
    m_worker->moveToThread(&m_thread);
    // Its pool drops its parser when the worker goes, at the thread's end.
    connect(&m_thread, &QThread::finished, m_worker, &QObject::deleteLater);
    m_thread.start();
    QMetaObject::invokeMethod(m_worker, [this, sweepIntervalMs] {
        LargeBufferPool::startSweeping(m_worker, sweepIntervalMs, [this] { publishPoolFigures(); });
    });
}

void RequestScanThread::publishPoolFigures()
{
    // The count last: a reader that sees the parser gone sees its bytes gone too.
    const LargeBufferPool &pool = LargeBufferPool::local();
    m_poolKeptBytes.store(pool.bytesKept());
    m_poolReuses.store(pool.reuses());
    m_poolObjects.store(pool.objectsKept());
}

RequestScanThread::~RequestScanThread()
{
    // A scan running now finishes (milliseconds); its result, posted to this object, is dropped with it.
    m_thread.quit();
    m_thread.wait();
}

void RequestScanThread::scan(const QByteArray &body, QObject *context, Done done)
{
    // QPointer is made and read on this thread only; the scan thread merely carries it.
    QMetaObject::invokeMethod(m_worker, [this, body, ctx = QPointer<QObject>(context), done = std::move(done)] {
        std::optional<ResponsesScan> result = scanResponsesRequest(body);
        publishPoolFigures();
        if (SY_FAULT("scan-hold")) {
            // Until the test removes the flag file (at most a minute).
            static const QString flag = qEnvironmentVariable("SWITCHYARD_FAULT_SCAN_HOLD_FLAG");
            for (int i = 0; i < 12000 && !flag.isEmpty() && QFileInfo::exists(flag); ++i)
                QThread::msleep(5);
        }
        QMetaObject::invokeMethod(this, [ctx, done, result = std::move(result)] {
            if (ctx)
                done(result);
        });
        m_scansDone.fetch_add(1); // after the result is posted: a caller that saw the count sees the result next
    });
}

} // namespace sy
