#pragma once

// Test-only fault switches. They exist only in builds compiled with SWITCHYARD_FAULT_INJECTION (never the
// shipped program): a negative test plants one of the failures the egress pool and the health check must
// make impossible, and shows that the independent probe or the health check notices. Each switch is named
// in the comma-separated environment variable SWITCHYARD_FAULT. Code using it sits inside
// #ifdef SWITCHYARD_FAULT_INJECTION blocks, so a normal build contains none of it.
#ifdef SWITCHYARD_FAULT_INJECTION

#include <QByteArray>
#include <QByteArrayList>
#include <QtGlobal>

namespace sy::fault {

// The planted failures, by switch name:
inline constexpr char recordWrongProxy[] = "egress_record_wrong_proxy";         // picked proxy != recorded proxy
inline constexpr char sharedBudget[] = "egress_shared_budget";                  // one budget for the whole batch
inline constexpr char firstReasonOnly[] = "egress_first_reason_only";           // blocked_by keeps one reason
inline constexpr char healthFromCandidates[] = "egress_health_from_candidates"; // pool "healthy" = has members
inline constexpr char emptyCriteria[] = "health_empty_criteria";                // no criteria, always green
inline constexpr char exitZero[] = "health_exit_zero";                          // health exits 0 whatever it found
inline constexpr char configDefaults[] = "config_defaults";                     // broken egress config -> direct

inline bool active(const char *name)
{
    const QByteArrayList names = qgetenv("SWITCHYARD_FAULT").split(',');
    return names.contains(QByteArray(name));
}

} // namespace sy::fault

#endif
