#pragma once

#include <QPointer>
#include <functional>
#include <memory>

namespace sy {

// Posts callbacks from one thread to objects that live on another and may be destroyed at any moment.
//
// QMetaObject::invokeMethod(context, functor, Qt::QueuedConnection) reads `context` (its thread, its count of
// posted events). Called from another thread after, or while, that object is destroyed, it reads freed memory:
// a `serve` on PostgreSQL crashed so in about one shutdown of 25 under load, delivering a store job's result to
// a proxy-thread object the shutdown had just deleted. Qt's queued signals are safe because they post under a
// lock the receiver's destructor also takes; GuardedContexts does the same for plain callbacks.
class GuardedContexts
{
public:
    GuardedContexts();

    // While `context` is certainly alive (on its own thread, or with a caller that keeps it alive): the handle
    // post() takes. The first call for an object connects to its destroyed() signal.
    QPointer<QObject> watch(QObject *context);

    // Any thread: queues fn on the context's thread unless the context's destruction has begun (then fn is
    // dropped). Returns whether it was queued.
    bool post(const QPointer<QObject> &context, std::function<void()> fn) const;

    // Objects watched and not destroyed yet (for tests).
    int watchedCount() const;

private:
    struct Shared;
    std::shared_ptr<Shared> m_shared;
};

} // namespace sy
