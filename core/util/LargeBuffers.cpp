#include "util/LargeBuffers.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#ifdef Q_OS_LINUX
#include <sys/mman.h>
#endif

namespace sy {

#ifdef Q_OS_LINUX
namespace {

bool adviceEnabled()
{
    static const bool enabled = [] {
        const char *v = std::getenv("SWITCHYARD_HUGE_PAGES");
        return !(v && (std::strcmp(v, "off") == 0 || std::strcmp(v, "0") == 0));
    }();
    return enabled;
}

} // namespace
#endif

void adviseLargeBuffer(void *data, qsizetype size)
{
#ifdef Q_OS_LINUX
    constexpr std::uintptr_t kHugePage = 2 * 1024 * 1024;
    if (!data || size < qsizetype(2 * kHugePage) || !adviceEnabled())
        return;
    // Only whole huge pages inside the buffer: the advice applies to the mapping, and the bytes before and
    // after the buffer may belong to other allocations.
    const auto begin = reinterpret_cast<std::uintptr_t>(data);
    const std::uintptr_t first = (begin + kHugePage - 1) & ~(kHugePage - 1);
    const std::uintptr_t last = (begin + std::uintptr_t(size)) & ~(kHugePage - 1);
    if (last > first)
        ::madvise(reinterpret_cast<void *>(first), last - first, MADV_HUGEPAGE); // advice: failure changes nothing
#else
    Q_UNUSED(data);
    Q_UNUSED(size);
#endif
}

} // namespace sy
