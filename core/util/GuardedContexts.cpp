#include "util/GuardedContexts.h"

#include <QMetaObject>
#include <QMutex>
#include <QObject>
#include <QSet>

namespace sy {

struct GuardedContexts::Shared
{
    QMutex mutex;
    QSet<const QObject *> watched; // objects with a destroyed() connection to this set
};

GuardedContexts::GuardedContexts() : m_shared(std::make_shared<Shared>()) {}

QPointer<QObject> GuardedContexts::watch(QObject *context)
{
    if (!context)
        return {};
    bool first = false;
    {
        QMutexLocker lock(&m_shared->mutex);
        if (!m_shared->watched.contains(context)) {
            m_shared->watched.insert(context);
            first = true;
        }
    }
    if (first) {
        // Runs inside ~QObject on the object's thread: after every QPointer to it reads null and before its posted
        // events are removed (~QObjectPrivate). Once it holds the mutex no post() is between its null check and
        // its postEvent, so whatever was posted is removed with the object, and nothing is posted after.
        // The set outlives whichever of this object and the context goes first.
        QObject::connect(context, &QObject::destroyed, [shared = m_shared, context] {
            QMutexLocker lock(&shared->mutex);
            shared->watched.remove(context);
        });
    }
    return QPointer<QObject>(context);
}

bool GuardedContexts::post(const QPointer<QObject> &context, std::function<void()> fn) const
{
    QMutexLocker lock(&m_shared->mutex);
    QObject *target = context.data();
    if (!target)
        return false;
    QMetaObject::invokeMethod(target, std::move(fn), Qt::QueuedConnection);
    return true;
}

int GuardedContexts::watchedCount() const
{
    QMutexLocker lock(&m_shared->mutex);
    return int(m_shared->watched.size());
}

} // namespace sy
