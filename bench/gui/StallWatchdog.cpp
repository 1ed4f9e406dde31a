#include "StallWatchdog.h"

#include <QEvent>
#include <QFile>
#include <QMetaEnum>
#include <QThread>
#include <algorithm>
#include <ctime>

namespace sy::bench {

namespace {

TimedApplication *g_app = nullptr;
constexpr double kStallMs = 20;

qint64 threadCpuNs()
{
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return qint64(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// Nanoseconds this thread has spent runnable but waiting for a CPU (second field of schedstat).
qint64 runqueueWaitNs()
{
    QFile f(QStringLiteral("/proc/thread-self/schedstat"));
    if (!f.open(QIODevice::ReadOnly))
        return 0;
    const QList<QByteArray> fields = f.readAll().simplified().split(' ');
    return fields.size() >= 2 ? fields.at(1).toLongLong() : 0;
}

QString eventName(QEvent::Type type)
{
    const char *name = QMetaEnum::fromType<QEvent::Type>().valueToKey(type);
    return name ? QString::fromLatin1(name) : QString::number(int(type));
}

} // namespace

TimedApplication::TimedApplication(int &argc, char **argv) : QApplication(argc, argv)
{
    g_app = this;
    m_clock.start();
}

bool TimedApplication::notify(QObject *receiver, QEvent *event)
{
    // Worker threads dispatch their own events through here too: only the GUI thread is measured.
    if (QThread::currentThread() != thread())
        return QApplication::notify(receiver, event);
    if (m_depth > 0) {
        ++m_depth;
        const bool r = QApplication::notify(receiver, event);
        --m_depth;
        return r;
    }
    ++m_depth;
    m_labels.clear();
    const qint64 start = m_clock.nsecsElapsed();
    // Receiver and event may be gone after the dispatch (deleteLater): read them first.
    const QEvent::Type type = event->type();
    const char *className = receiver->metaObject()->className();
    const QString objectName = receiver->objectName();
    const bool r = QApplication::notify(receiver, event);
    const qint64 duration = m_clock.nsecsElapsed() - start;
    --m_depth;
    if (duration >= 1000000) {
        QString what = QStringLiteral("%1 %2").arg(QString::fromLatin1(className), eventName(type));
        if (!objectName.isEmpty())
            what += QStringLiteral(" (%1)").arg(objectName);
        if (!m_labels.isEmpty())
            what += QStringLiteral(" [%1]").arg(m_labels);
        m_recent.push_back({start, duration, what});
        while (m_recent.size() > 4096)
            m_recent.pop_front();
    }
    return r;
}

void TimedApplication::note(const QString &label)
{
    if (!g_app || g_app->m_depth == 0)
        return;
    if (!g_app->m_labels.isEmpty())
        g_app->m_labels += QLatin1Char(',');
    g_app->m_labels += label;
}

QList<Dispatch> TimedApplication::dispatchesSince(qint64 sinceNs) const
{
    QList<Dispatch> out;
    for (auto it = m_recent.rbegin(); it != m_recent.rend() && it->startNs >= sinceNs; ++it)
        out.prepend(*it);
    return out;
}

StallWatchdog::StallWatchdog(TimedApplication *app, QObject *parent) : QObject(parent), m_app(app)
{
    m_timer.setInterval(5);
    m_timer.setTimerType(Qt::PreciseTimer);
    connect(&m_timer, &QTimer::timeout, this, &StallWatchdog::tick);
}

void StallWatchdog::start()
{
    clear();
    m_timer.start();
}

void StallWatchdog::clear()
{
    m_gaps.clear();
    m_stalls.clear();
    m_lastNs = m_app->clock().nsecsElapsed();
    m_lastCpuNs = threadCpuNs();
    m_lastWaitNs = runqueueWaitNs();
}

void StallWatchdog::tick()
{
    const qint64 now = m_app->clock().nsecsElapsed();
    const qint64 cpu = threadCpuNs();
    const qint64 wait = runqueueWaitNs();
    const double gap = double(now - m_lastNs) / 1e6;
    m_gaps << gap;
    if (gap >= kStallMs) {
        Stall s;
        s.gapMs = gap;
        s.cpuMs = double(cpu - m_lastCpuNs) / 1e6;
        s.runqueueMs = double(wait - m_lastWaitNs) / 1e6;
        s.atS = double(now) / 1e9;
        s.phase = m_phase;
        s.dispatches = m_app->dispatchesSince(m_lastNs);
        m_stalls << s;
    }
    m_lastNs = m_app->clock().nsecsElapsed();
    m_lastCpuNs = threadCpuNs();
    m_lastWaitNs = runqueueWaitNs();
}

QList<Stall> StallWatchdog::longest(int n) const
{
    QList<Stall> out = m_stalls;
    std::sort(out.begin(), out.end(), [](const Stall &a, const Stall &b) { return a.gapMs > b.gapMs; });
    return out.mid(0, n);
}

double StallWatchdog::percentile(double p) const
{
    if (m_gaps.isEmpty())
        return 0;
    QList<double> sorted = m_gaps;
    std::sort(sorted.begin(), sorted.end());
    return sorted.at(qMin(sorted.size() - 1, qsizetype(p / 100.0 * double(sorted.size()))));
}

double StallWatchdog::maxGap() const
{
    return m_gaps.isEmpty() ? 0 : *std::max_element(m_gaps.begin(), m_gaps.end());
}

int StallWatchdog::countAbove(double ms) const
{
    return int(std::count_if(m_gaps.begin(), m_gaps.end(), [ms](double g) { return g > ms; }));
}

double StallWatchdog::maxCpuInGap() const
{
    double most = 0;
    for (const Stall &s : m_stalls)
        most = qMax(most, s.cpuMs);
    return most;
}

Stall StallWatchdog::sumAbove(double ms) const
{
    Stall sum;
    for (const Stall &s : m_stalls) {
        if (s.gapMs <= ms)
            continue;
        sum.gapMs += s.gapMs;
        sum.cpuMs += s.cpuMs;
        sum.runqueueMs += s.runqueueMs;
    }
    return sum;
}

} // namespace sy::bench
