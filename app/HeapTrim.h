#pragma once

class QObject;

namespace sy::app {

// glibc gives memory freed inside a thread's arena back to the system only from the arena's top, so after a
// burst (hundreds of streams opened and finished) the freed middle stays resident for good. malloc_trim(0)
// returns every free page of every arena. Run every `intervalMs` on `owner`'s thread (which needs an event
// loop) for as long as owner lives; a no-op without glibc.
void startHeapTrim(QObject *owner, int intervalMs);

} // namespace sy::app
