#pragma once

#include <QtGlobal>

namespace sy {

// Advice for a large buffer of fresh memory about to be written from its start (a request body, a JSON
// parser's buffers): on Linux its whole 2 MiB stretches are marked for transparent huge pages
// (madvise(MADV_HUGEPAGE)), so filling 10 MiB takes a handful of page faults instead of 2,560. Where page
// faults are dear (virtual machines) that is most of the cost of a large upload (bench/HISTORY.md). Memory is
// only taken where the buffer is written, rounded up to a huge page (at most 2 MiB more). No-op elsewhere,
// for buffers under 4 MiB, and when SWITCHYARD_HUGE_PAGES=off (for A/B runs, or where the kernel's
// compaction for a huge page stalls).
void adviseLargeBuffer(void *data, qsizetype size);

} // namespace sy
