#pragma once

#include <QApplication>
#include <QElapsedTimer>
#include <QList>
#include <QObject>
#include <QString>
#include <QTimer>
#include <deque>

namespace sy::bench {

// One top-level event dispatch on the GUI thread that took long enough to matter.
struct Dispatch
{
    qint64 startNs = 0;
    qint64 durationNs = 0;
    QString what; // receiver class / object name / event type, plus labels noted while it ran
};

// A QApplication that times every top-level event dispatch of the GUI thread (QApplication::notify), so a
// stall can be attributed to what the thread was doing: a queued result from a worker, a paint, a timer.
class TimedApplication : public QApplication
{
public:
    TimedApplication(int &argc, char **argv);
    bool notify(QObject *receiver, QEvent *event) override;

    // Adds `label` to the dispatch running now (e.g. "pageLoaded"): which job a queued call delivered.
    static void note(const QString &label);
    // Dispatches of at least 1 ms that started at or after `sinceNs` (monotonic clock of clock()).
    QList<Dispatch> dispatchesSince(qint64 sinceNs) const;
    const QElapsedTimer &clock() const { return m_clock; }

private:
    QElapsedTimer m_clock;
    int m_depth = 0;
    QString m_labels;
    std::deque<Dispatch> m_recent;
};

// What the GUI thread did between two watchdog ticks that came late.
struct Stall
{
    double gapMs = 0;      // wall time between the two ticks (the 5 ms period included)
    double cpuMs = 0;      // CPU time the GUI thread got in that gap (CLOCK_THREAD_CPUTIME_ID)
    double runqueueMs = 0; // time it waited runnable for a CPU (/proc/thread-self/schedstat)
    double atS = 0;        // seconds since the watchdog started
    QString phase;         // the benchmark phase running then
    QList<Dispatch> dispatches;
};

// A 5 ms precise timer on the GUI thread: every late tick is a stall of the event loop. Keeps every gap (for
// the percentiles) and the details of the longest ones.
class StallWatchdog : public QObject
{
public:
    explicit StallWatchdog(TimedApplication *app, QObject *parent = nullptr);
    void start();
    void stop() { m_timer.stop(); }
    void setPhase(const QString &phase) { m_phase = phase; }
    // Forgets what was measured (warm-up).
    void clear();

    const QList<double> &gaps() const { return m_gaps; }
    // The longest stalls, longest first.
    QList<Stall> longest(int n) const;
    double percentile(double p) const;
    double maxGap() const;
    int countAbove(double ms) const;
    // The most CPU the GUI thread used inside one gap above 20 ms: what a gap would be on an idle machine.
    double maxCpuInGap() const;
    // Sums over every gap above `ms`: wall, CPU and runqueue time.
    Stall sumAbove(double ms) const;

private:
    void tick();

    TimedApplication *m_app;
    QTimer m_timer;
    qint64 m_lastNs = 0;
    qint64 m_lastCpuNs = 0;
    qint64 m_lastWaitNs = 0;
    QString m_phase;
    QList<double> m_gaps;
    QList<Stall> m_stalls; // every gap above 20 ms
};

} // namespace sy::bench
