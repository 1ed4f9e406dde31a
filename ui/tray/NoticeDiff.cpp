#include "tray/NoticeDiff.h"

#include "Format.h"
#include "data/PoolSummary.h"

namespace sy::ui {

QList<Notice> NoticeDiff::between(const StoreSnapshot &before, const StoreSnapshot &after, qint64 nowMs)
{
    QList<Notice> notices;
    if (!before.error.isEmpty() || !after.error.isEmpty())
        return notices; // a failed read is no news about the accounts
    const bool allNow = pool::allLimited(after, nowMs);
    if (allNow && !pool::allLimited(before, before.takenAtMs)) {
        const std::optional<qint64> reset = pool::earliestReset(after, nowMs);
        notices.append({Notice::Kind::AllLimited, tr("All accounts are limited"),
                        reset ? tr("No account can take requests until the earliest reset at %1 (%2).")
                                    .arg(Format::dateTime(reset), Format::countdown(reset, nowMs))
                              : tr("No account can take requests until a limit resets.")});
    }
    for (const AccountView &now : after.accounts) {
        const AccountView *was = before.account(now.record.id);
        if (!was)
            continue;
        const QString name = now.record.displayName();
        if (now.record.status == QLatin1String("reauth_required") &&
            was->record.status != QLatin1String("reauth_required")) {
            notices.append({Notice::Kind::Reauth, tr("%1 needs a new login").arg(name),
                            tr("Its tokens no longer work. Use \"Add account…\" to log in again.")});
        }
        // With every account limited the notice above says it all.
        if (!allNow && pool::countsForCapacity(now) && pool::isLimited(now, nowMs) &&
            !pool::isLimited(*was, before.takenAtMs)) {
            const std::optional<qint64> reset = pool::limitResetsAt(now, nowMs);
            notices.append(
                {Notice::Kind::Failover, tr("%1 hit its limit").arg(name),
                 reset ? tr("New requests go to the other accounts until it resets at %1.").arg(Format::dateTime(reset))
                       : tr("New requests go to the other accounts.")});
        }
    }
    return notices;
}

} // namespace sy::ui
