#pragma once

#include "store/StoreWorker.h"

#include <QSemaphore>

namespace sy::test {

// Occupies the store thread with a unit of work until `gate` is released; returns once that unit runs, so
// that jobs submitted meanwhile all queue behind it.
inline void blockStoreThread(StoreWorker &worker, QSemaphore &gate, QSemaphore &entered)
{
    worker.submit(
        [&gate, &entered](Database &, QString *) {
            entered.release();
            gate.acquire();
            return true;
        },
        nullptr, nullptr);
    entered.acquire();
}

} // namespace sy::test
