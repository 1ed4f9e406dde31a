#include "HeapTrim.h"

#include <QObject>
#include <QTimer>

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace sy::app {

void startHeapTrim(QObject *owner, int intervalMs)
{
#ifdef __GLIBC__
    auto *timer = new QTimer(owner);
    // Coarse: it costs a walk over the free chunks (well under a millisecond) and nothing needs it on time.
    timer->setTimerType(Qt::VeryCoarseTimer);
    QObject::connect(timer, &QTimer::timeout, timer, [] { malloc_trim(0); });
    timer->start(intervalMs);
#else
    Q_UNUSED(owner);
    Q_UNUSED(intervalMs);
#endif
}

} // namespace sy::app
