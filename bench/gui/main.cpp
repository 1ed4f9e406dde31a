// sy-bench-gui: how long the dashboard's GUI thread goes without serving its event loop, over a request log of
// 1,000,000 rows (issue 6 point 3). Fills a database (or reuses one), opens the dashboard window as GuiMain
// does, and drives it like a user: the Requests page scrolled through many pages while new rows arrive on top,
// every filter and the request-id search over all rows, the usage charts over 24 h / 7 d / 30 d, the other
// pages. A 5 ms watchdog timer measures every gap of the event loop; each long gap is broken down into the CPU
// the GUI thread got, the time it waited for a CPU (runqueue) and the event dispatches that ran in it.
// Prints numbers, asserts nothing.
#include "../db/LogDb.h"
#include "DashboardWindow.h"
#include "StallWatchdog.h"
#include "data/StatusPoller.h"
#include "data/StoreClient.h"
#include "models/RequestsModel.h"
#include "pages/AccountsPage.h"
#include "pages/LivePage.h"
#include "pages/OverviewPage.h"
#include "pages/RequestsPage.h"
#include "pages/UsagePage.h"
#include "store/AccountRepository.h"
#include "store/Database.h"
#include "store/RequestLogRepository.h"
#include "tray/AccountOnboarding.h"

#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QLineEdit>
#include <QScrollBar>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QThread>
#include <atomic>
#include <cstdio>
#include <ctime>
#include <functional>

using namespace sy;
using namespace sy::bench;

namespace {

QString loadAverage()
{
    QFile f(QStringLiteral("/proc/loadavg"));
    return f.open(QIODevice::ReadOnly) ? QString::fromLatin1(f.readAll()).section(QLatin1Char(' '), 0, 2) : QString();
}

// Accounts, 1M rows spread over 30 days (LogDb::fill, straight into SQLite), their hourly rollups, and a
// week of quota observations for the used-% chart.
bool fillDatabase(const QString &path, qint64 rows, QString *error)
{
    {
        Database db;
        if (!db.open(path, error))
            return false;
        AccountRepository accounts(db);
        for (int i = 1; i <= 3; ++i) {
            AccountRepository::Identity id;
            id.chatgptAccountId = QStringLiteral("cgpt-bench-%1").arg(i);
            id.userId = QStringLiteral("user-bench-%1").arg(i);
            id.email = QStringLiteral("bench%1@example.test").arg(i);
            id.plan = QStringLiteral("plus");
            id.alias = QStringLiteral("bench%1").arg(i);
            if (!accounts.upsert(id, error))
                return false;
        }
    }
    LogDb log(path);
    if (!log.open(error) || !log.fill(rows, error))
        return false;
    Database db;
    if (!db.open(path, error))
        return false;
    if (!db.exec(
            QStringLiteral("INSERT INTO usage_rollup_hourly (hour_start_ms, account_id, requests, errors, "
                           "tokens_input, tokens_cached, tokens_output, tokens_reasoning, tokens_total) "
                           "SELECT (started_at_ms / 3600000) * 3600000, coalesce(account_id, ''), count(*), "
                           "sum(CASE WHEN status <> 'completed' THEN 1 ELSE 0 END), coalesce(sum(tokens_input), 0), "
                           "coalesce(sum(tokens_cached), 0), coalesce(sum(tokens_output), 0), "
                           "coalesce(sum(tokens_reasoning), 0), coalesce(sum(tokens_total), 0) "
                           "FROM request_log GROUP BY 1, 2"),
            error))
        return false;
    AccountRepository accounts(db);
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    for (const AccountRecord &a : accounts.list(error)) {
        for (qint64 t = now - 7LL * 24 * 3600 * 1000; t <= now; t += 30 * 60 * 1000) {
            UsageRecord u;
            u.accountId = a.id;
            u.primary = {double((t / 60000) % 100), 300, now + 3600 * 1000};
            u.secondary = {double((t / 3600000) % 100), 10080, now + 3LL * 24 * 3600 * 1000};
            u.observedAtMs = t;
            if (!accounts.saveUsage(u, error))
                return false;
        }
    }
    return true;
}

// Writes request-log rows at `perSecond` on its own connection, like a busy proxy next to the dashboard.
class LogWriter : public QThread
{
public:
    LogWriter(QString path, int perSecond) : m_path(std::move(path)), m_perSecond(perSecond) {}
    std::atomic<bool> stop{false};
    std::atomic<int> written{0};

protected:
    void run() override
    {
        Database db;
        QString error;
        if (m_perSecond <= 0)
            return;
        if (!db.open(m_path, &error)) {
            std::fprintf(stderr, "writer: %s\n", qPrintable(error));
            return;
        }
        const QList<AccountRecord> accounts = AccountRepository(db).list(&error);
        RequestLogRepository log(db);
        const QString run = QString::number(QDateTime::currentMSecsSinceEpoch(), 36); // ids unique per run
        for (int i = 0; !stop; ++i) {
            RequestLogRecord r;
            r.requestId = QStringLiteral("req_live_%1_%2").arg(run).arg(i, 8, 10, QLatin1Char('0'));
            r.startedAtMs = QDateTime::currentMSecsSinceEpoch();
            r.route = QStringLiteral("/backend-api/codex/responses");
            r.model = QStringLiteral("gpt-5-codex");
            r.accountId = accounts.value(i % qMax(1, int(accounts.size()))).id;
            r.status = QStringLiteral("completed");
            r.tokens = {9000, 4000, 300, 20, 9300};
            if (log.insert(r, &error))
                ++written;
            else if (i < 3)
                std::fprintf(stderr, "writer: %s\n", qPrintable(error));
            QThread::msleep(1000 / m_perSecond);
        }
    }

private:
    QString m_path;
    int m_perSecond;
};

struct Step
{
    QString name;
    std::function<void()> action;
    std::function<bool()> done;
    int minMs = 0;
};

} // namespace

int main(int argc, char **argv)
{
    if (!qEnvironmentVariableIsSet("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    TimedApplication app(argc, argv);
    QStringList args = QCoreApplication::arguments().mid(1);
    qint64 rows = 1000000;
    int walkRows = 100000;
    int writerHz = 20;
    QString dbPath;
    for (int i = 0; i + 1 < args.size(); i += 2) {
        if (args[i] == QLatin1String("--rows"))
            rows = args[i + 1].toLongLong();
        else if (args[i] == QLatin1String("--walk-rows"))
            walkRows = args[i + 1].toInt();
        else if (args[i] == QLatin1String("--writer-hz"))
            writerHz = args[i + 1].toInt();
        else if (args[i] == QLatin1String("--db"))
            dbPath = args[i + 1];
    }
    QTemporaryDir tmp;
    if (dbPath.isEmpty())
        dbPath = tmp.filePath(QStringLiteral("switchyard.sqlite"));
    QString error;
    if (!QFile::exists(dbPath)) {
        std::fprintf(stderr, "filling %lld rows into %s\n", static_cast<long long>(rows), qPrintable(dbPath));
        if (!fillDatabase(dbPath, rows, &error)) {
            std::fprintf(stderr, "fill failed: %s\n", qPrintable(error));
            return 1;
        }
    }
    std::printf("gui_bench db=%s load_start=%s\n", qPrintable(dbPath), qPrintable(loadAverage()));

    ui::StoreClient store(dbPath);
    ui::StatusPoller status;
    status.setBaseUrl(QStringLiteral("http://127.0.0.1:9")); // no proxy: the pages show "not answering"
    ui::AccountOnboarding onboarding(&store, QUrl(QStringLiteral("http://127.0.0.1:9")));
    ui::DashboardWindow window(&store, &status, &onboarding, tmp.filePath(QStringLiteral("config.json")),
                               {{QStringLiteral("HOME"), tmp.path()}});
    const ui::DashboardWindow::Pages &pages = window.pages();
    ui::RequestsModel *model = pages.requests->model();
    QTableView *view = pages.requests->view();
    QObject::connect(model, &ui::RequestsModel::pageLoaded,
                     [](int) { TimedApplication::note(QStringLiteral("pageLoaded")); });
    QList<Step> steps;
    int current = -1;
    // Where a reset's time goes: before the model announces it, the views' reset handling, after it.
    QElapsedTimer resetClock;
    qint64 resetCpu0 = 0, aboutCpu = 0;
    const auto cpuNs = [] {
        timespec ts{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return qint64(ts.tv_sec) * 1000000000 + ts.tv_nsec;
    };
    QObject::connect(model, &QAbstractItemModel::modelAboutToBeReset, [&] { aboutCpu = cpuNs(); });
    QObject::connect(model, &QAbstractItemModel::modelReset, [&] {
        std::printf("reset (%s, %.0f ms wall so far): %.1f ms CPU before it, %.1f ms CPU in the views' reset\n",
                    qPrintable(steps.value(current).name), double(resetClock.elapsed()),
                    double(aboutCpu - resetCpu0) / 1e6, double(cpuNs() - aboutCpu) / 1e6);
        TimedApplication::note(QStringLiteral("modelReset: %1 ms CPU before, %2 ms CPU in the views' reset")
                                   .arg(double(aboutCpu - resetCpu0) / 1e6, 0, 'f', 1)
                                   .arg(double(cpuNs() - aboutCpu) / 1e6, 0, 'f', 1));
    });
    QObject::connect(model, &QAbstractItemModel::rowsInserted, [](const QModelIndex &, int first, int last) {
        TimedApplication::note(QStringLiteral("rowsInserted %1..%2").arg(first).arg(last));
    });
    QObject::connect(pages.usage, &ui::UsagePage::seriesShown, [&] {
        TimedApplication::note(QStringLiteral("chartsDrawn %1 ms").arg(pages.usage->lastDrawMs()));
    });
    QObject::connect(&store, &ui::StoreClient::snapshotChanged,
                     [] { TimedApplication::note(QStringLiteral("snapshot")); });

    StallWatchdog watchdog(&app);
    LogWriter writer(dbPath, writerHz);
    const auto idle = [model] { return !model->isLoading() && model->matchingCount().has_value(); };
    auto *statusCombo = pages.requests->findChild<QComboBox *>(QStringLiteral("statusFilter"));
    auto *accountCombo = pages.requests->findChild<QComboBox *>(QStringLiteral("accountFilter"));
    auto *timeCombo = pages.requests->findChild<QComboBox *>(QStringLiteral("timeFilter"));
    auto *search = pages.requests->findChild<QLineEdit *>(QStringLiteral("requestSearch"));
    auto *modelFilter = pages.requests->findChild<QLineEdit *>(QStringLiteral("modelFilter"));
    int seriesSeen = 0;
    QObject::connect(pages.usage, &ui::UsagePage::seriesShown, [&] { ++seriesSeen; });
    int pagesWalked = 0;
    int rowsWalked = 0;
    qint64 walkStart = 0;
    qint64 walkMs = 0;
    QElapsedTimer clock;
    clock.start();

    steps << Step{QStringLiteral("open"), [&] { window.showPage(pages.requests); }, idle, 500};
    steps << Step{QStringLiteral("scroll"), [&] { walkStart = clock.elapsed(); },
                  [&] {
                      // What a user dragging the scroll bar to the end does: the view fetches the next page.
                      if (!model->isLoading() && model->rowCount() < walkRows) {
                          view->verticalScrollBar()->setValue(view->verticalScrollBar()->maximum());
                          ++pagesWalked;
                          if (qEnvironmentVariableIsSet("SY_BENCH_DEBUG"))
                              std::fprintf(stderr, "rows %d max %d visible %d more %d\n", model->rowCount(),
                                           view->verticalScrollBar()->maximum(), int(view->isVisible()),
                                           int(model->canFetchMore({})));
                      }
                      if (model->rowCount() < walkRows && (model->isLoading() || model->hasMore()))
                          return false;
                      rowsWalked = model->rowCount();
                      walkMs = clock.elapsed() - walkStart;
                      return true;
                  }};
    steps << Step{QStringLiteral("select"), [&] { view->selectRow(model->rowCount() / 2); }, [] { return true; }, 300};
    steps << Step{QStringLiteral("filter status"),
                  [&] { statusCombo->setCurrentIndex(statusCombo->findData(QStringLiteral("failed"))); }, idle, 300};
    steps << Step{QStringLiteral("filter account"), [&] { accountCombo->setCurrentIndex(2); }, idle, 300};
    steps << Step{QStringLiteral("filter model"), [&] { modelFilter->setText(QStringLiteral("gpt-5-codex")); }, idle,
                  600};
    steps << Step{QStringLiteral("filter time"), [&] { timeCombo->setCurrentIndex(2); }, idle, 300};
    steps << Step{QStringLiteral("clear filters"),
                  [&] {
                      statusCombo->setCurrentIndex(0);
                      accountCombo->setCurrentIndex(0);
                      modelFilter->clear();
                      timeCombo->setCurrentIndex(0);
                  },
                  idle, 600};
    steps << Step{QStringLiteral("search"), [&] { search->setText(QStringLiteral("ab1")); }, idle, 600};
    steps << Step{QStringLiteral("search upstream id"), [&] { search->setText(QStringLiteral("req_up_99999")); }, idle,
                  600};
    steps << Step{QStringLiteral("clear search"), [&] { search->clear(); }, idle, 600};
    for (auto range : {ui::UsageRange::Day, ui::UsageRange::Week, ui::UsageRange::Month, ui::UsageRange::Day}) {
        steps << Step{QStringLiteral("usage charts"),
                      [&, range] {
                          window.showPage(pages.usage);
                          seriesSeen = 0;
                          pages.usage->setRange(range);
                      },
                      [&] { return seriesSeen > 0; }, 300};
    }
    steps << Step{QStringLiteral("overview"), [&] { window.showPage(pages.overview); }, [] { return true; }, 1500};
    steps << Step{QStringLiteral("accounts"), [&] { window.showPage(pages.accounts); }, [] { return true; }, 1500};
    steps << Step{QStringLiteral("live"), [&] { window.showPage(pages.live); }, [] { return true; }, 1500};
    steps << Step{QStringLiteral("requests with new rows"), [&] { window.showPage(pages.requests); }, idle, 6000};

    qint64 stepStart = 0;
    QTimer driver;
    driver.setInterval(20);
    QObject::connect(&driver, &QTimer::timeout, [&] {
        if (current >= 0) {
            const Step &s = steps[current];
            if (!s.done() || clock.elapsed() - stepStart < s.minMs)
                return;
        }
        if (++current >= steps.size()) {
            driver.stop();
            QCoreApplication::quit();
            return;
        }
        stepStart = clock.elapsed();
        watchdog.setPhase(steps[current].name);
        resetCpu0 = cpuNs();
        resetClock.start();
        steps[current].action();
        const double actionCpuMs = double(cpuNs() - resetCpu0) / 1e6;
        std::printf("action %s: %.1f ms CPU, %.0f ms wall\n", qPrintable(steps[current].name), actionCpuMs,
                    double(resetClock.elapsed()));
        if (actionCpuMs > 5)
            TimedApplication::note(
                QStringLiteral("%1: %2 ms CPU in the action").arg(steps[current].name).arg(actionCpuMs, 0, 'f', 1));
    });

    window.resize(1100, 720);
    window.show();
    store.start();
    status.start();
    writer.start();
    // The first second (window creation, first snapshot, fonts) is start-up, not steady state.
    QTimer::singleShot(1000, [&] {
        watchdog.start();
        driver.start();
    });
    app.exec();
    writer.stop = true;
    writer.wait();

    const double seconds = double(clock.elapsed()) / 1000;
    std::printf("rows_walked=%d pages_walked=%d walk_s=%.1f new_rows_written=%d run_s=%.1f load_end=%s\n", rowsWalked,
                pagesWalked, double(walkMs) / 1000, writer.written.load(), seconds, qPrintable(loadAverage()));
    std::printf("gui_gap_ms max=%.1f p99=%.1f p99.9=%.1f p50=%.1f ticks=%lld over_50ms=%d over_20ms=%d\n",
                watchdog.maxGap(), watchdog.percentile(99), watchdog.percentile(99.9), watchdog.percentile(50),
                static_cast<long long>(watchdog.gaps().size()), watchdog.countAbove(50), watchdog.countAbove(20));
    const Stall sum = watchdog.sumAbove(20);
    std::printf("gaps_over_20ms_total wall=%.1f ms gui_cpu=%.1f ms runqueue_wait=%.1f ms; most GUI-thread CPU in one "
                "gap=%.1f ms\n",
                sum.gapMs, sum.cpuMs, sum.runqueueMs, watchdog.maxCpuInGap());
    std::printf("longest gaps (wall / GUI-thread CPU / waiting for a CPU; dispatches >= 1 ms in the gap):\n");
    for (const Stall &s : watchdog.longest(12)) {
        std::printf("  %6.1f ms  cpu %5.1f  runqueue %5.1f  at %5.1f s  [%s]\n", s.gapMs, s.cpuMs, s.runqueueMs, s.atS,
                    qPrintable(s.phase));
        for (const Dispatch &d : s.dispatches)
            std::printf("      %5.1f ms  %s\n", double(d.durationNs) / 1e6, qPrintable(d.what));
    }
    return 0;
}
