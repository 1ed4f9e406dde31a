#include "util/CoreDumps.h"

#include <cerrno>
#include <cstring>

#if defined(Q_OS_UNIX)
#include <sys/resource.h>
#endif
#if defined(Q_OS_LINUX)
#include <sys/prctl.h>
#endif

namespace sy {

bool disableCoreDumps(QString *error)
{
    bool ok = true;
    QString problems;
#if defined(Q_OS_UNIX)
    const struct rlimit none = {0, 0};
    if (setrlimit(RLIMIT_CORE, &none) != 0) {
        ok = false;
        problems += QStringLiteral("setrlimit(RLIMIT_CORE): ") + QString::fromLocal8Bit(std::strerror(errno));
    }
#endif
#if defined(Q_OS_LINUX)
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) {
        ok = false;
        if (!problems.isEmpty())
            problems += QStringLiteral("; ");
        problems += QStringLiteral("prctl(PR_SET_DUMPABLE): ") + QString::fromLocal8Bit(std::strerror(errno));
    }
#endif
    if (!ok && error)
        *error = problems;
    return ok;
}

} // namespace sy
