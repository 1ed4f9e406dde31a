#pragma once

#include <QString>

namespace sy {

// Keeps the process's memory out of core dumps: a process that holds account tokens must not leave them in
// a core file after a crash. On Linux the process becomes non-dumpable (PR_SET_DUMPABLE 0, which also covers
// core_pattern pipes such as systemd-coredump, and refuses ptrace attach by other non-root processes) and its
// core size limit drops to 0; on other Unix systems only the limit drops; elsewhere nothing happens.
// Idempotent. Returns false (with *error) when the system refused.
bool disableCoreDumps(QString *error = nullptr);

} // namespace sy
