#pragma once

#include "data/StoreSnapshot.h"

#include <QCoreApplication>
#include <QList>
#include <QString>

namespace sy::ui {

struct Notice
{
    enum class Kind
    {
        Failover,   // an account hit its limit; the pool serves from the others
        Reauth,     // an account needs a new login
        AllLimited, // nothing can serve until the earliest reset
    };
    Kind kind;
    QString title;
    QString text;
};

// The desktop notifications that the step from one store snapshot to the next deserves. Derived in the UI
// from what the store says, so the proxy core needs no notification hooks.
class NoticeDiff
{
    Q_DECLARE_TR_FUNCTIONS(NoticeDiff)
public:
    static QList<Notice> between(const StoreSnapshot &before, const StoreSnapshot &after, qint64 nowMs);
};

} // namespace sy::ui
