#include "pages/UsagePage.h"

#include "Format.h"
#include "data/DbWorker.h"
#include "data/StoreClient.h"
#include "store/Database.h"

#include <QBarCategoryAxis>
#include <QBarSet>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QDate>
#include <QDateTime>
#include <QDateTimeAxis>
#include <QElapsedTimer>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QScatterSeries>
#include <QStackedBarSeries>
#include <QValueAxis>

namespace sy::ui {

namespace {

QChartView *makeChartView(const QString &name, const QString &title, QWidget *parent)
{
    auto *chart = new QChart;
    chart->setTitle(title);
    chart->legend()->setAlignment(Qt::AlignBottom);
    auto *view = new QChartView(chart, parent);
    view->setObjectName(name);
    view->setRenderHint(QPainter::Antialiasing);
    view->setMinimumHeight(220);
    return view;
}

void clear(QChart *chart)
{
    chart->removeAllSeries();
    for (QAbstractAxis *axis : chart->axes()) {
        chart->removeAxis(axis);
        delete axis;
    }
}

} // namespace

UsagePage::UsagePage(StoreClient *store, QWidget *parent)
    : QWidget(parent), m_store(store), m_now([] { return QDateTime::currentMSecsSinceEpoch(); })
{
    setObjectName(QStringLiteral("usagePage"));
    auto *layout = new QVBoxLayout(this);
    auto *controls = new QHBoxLayout;
    m_range = new QComboBox(this);
    m_range->setObjectName(QStringLiteral("rangeBox"));
    m_range->addItem(tr("Last 24 hours"), int(UsageRange::Day));
    m_range->addItem(tr("Last 7 days"), int(UsageRange::Week));
    m_range->addItem(tr("Last 30 days"), int(UsageRange::Month));
    m_window = new QComboBox(this);
    m_window->setObjectName(QStringLiteral("windowBox"));
    m_window->addItem(tr("5 h window"));
    m_window->addItem(tr("Weekly window"));
    m_info = new QLabel(this);
    m_info->setObjectName(QStringLiteral("usageInfo"));
    controls->addWidget(new QLabel(tr("Range"), this));
    controls->addWidget(m_range);
    controls->addWidget(new QLabel(tr("Used % of"), this));
    controls->addWidget(m_window);
    controls->addStretch();
    controls->addWidget(m_info);
    layout->addLayout(controls);
    auto *grid = new QGridLayout;
    m_tokens = makeChartView(QStringLiteral("tokensChart"), tr("Tokens per account"), this);
    m_used = makeChartView(QStringLiteral("usedChart"), tr("Used % over time (squares mark resets)"), this);
    m_cache = makeChartView(QStringLiteral("cacheChart"), tr("Input tokens: cached vs uncached"), this);
    grid->addWidget(m_tokens, 0, 0, 1, 2);
    grid->addWidget(m_used, 1, 0);
    grid->addWidget(m_cache, 1, 1);
    layout->addLayout(grid, 1);

    connect(m_range, &QComboBox::currentIndexChanged, this, &UsagePage::reload);
    connect(m_window, &QComboBox::currentIndexChanged, this, &UsagePage::drawUsed);
    // Rollups change with every request; a minute is fresh enough for charts.
    m_timer.setInterval(60000);
    connect(&m_timer, &QTimer::timeout, this, &UsagePage::reload);
}

QChart *UsagePage::tokensChart() const
{
    return m_tokens->chart();
}

QChart *UsagePage::usedChart() const
{
    return m_used->chart();
}

QChart *UsagePage::cacheChart() const
{
    return m_cache->chart();
}

void UsagePage::setRange(UsageRange range)
{
    m_range->setCurrentIndex(m_range->findData(int(range)));
    reload();
}

void UsagePage::showEvent(QShowEvent *event)
{
    QWidget::showEvent(event);
    if (!m_timer.isActive()) {
        m_timer.start();
        reload();
    }
}

void UsagePage::reload()
{
    const auto range = UsageRange(m_range->currentData().toInt());
    const quint64 generation = ++m_generation;
    const qint64 now = m_now();
    const qint64 dayStart = QDateTime(QDateTime::fromMSecsSinceEpoch(now).date(), QTime(0, 0)).toMSecsSinceEpoch();
    m_info->setText(tr("Loading…"));
    m_store->queryWorker()->run<UsageSeries>(
        [range, now, dayStart](DbWorker::Context &ctx) {
            QString error;
            Database *db = ctx.db(&error);
            if (!db) {
                UsageSeries failed;
                failed.error = error;
                return failed;
            }
            return loadUsageSeries(*db, range, now, dayStart);
        },
        this,
        [this, generation](const UsageSeries &series) {
            if (generation == m_generation)
                showSeries(series);
        });
}

QStringList UsagePage::categories() const
{
    QStringList out;
    const QString format = m_series.range == UsageRange::Day    ? QStringLiteral("HH:00")
                           : m_series.range == UsageRange::Week ? QStringLiteral("ddd HH:00")
                                                                : QStringLiteral("MM-dd");
    for (qint64 start : m_series.bucketStarts)
        out << QDateTime::fromMSecsSinceEpoch(start).toString(format);
    return out;
}

void UsagePage::showSeries(const UsageSeries &series)
{
    QElapsedTimer timer;
    timer.start();
    m_series = series;
    drawTokens();
    drawUsed();
    drawCache();
    m_lastDrawMs = timer.elapsed();
    m_info->setText(series.error.isEmpty()
                        ? tr("Read from the rollups in %1 ms, drawn in %2 ms").arg(series.elapsedMs).arg(m_lastDrawMs)
                        : tr("Cannot read the usage: %1").arg(series.error));
    emit seriesShown();
}

void UsagePage::drawTokens()
{
    QChart *chart = m_tokens->chart();
    clear(chart);
    auto *stack = new QStackedBarSeries;
    qint64 highest = 0;
    QList<qint64> sums(m_series.bucketStarts.size(), 0);
    for (const QString &id : std::as_const(m_series.accountIds)) {
        const QString name = id.isEmpty() ? tr("(no account)") : m_series.accountNames.value(id, id);
        auto *set = new QBarSet(name);
        const QList<qint64> values = m_series.tokens.value(id);
        for (int i = 0; i < values.size(); ++i) {
            set->append(double(values.at(i)));
            sums[i] += values.at(i);
        }
        stack->append(set);
    }
    for (qint64 s : std::as_const(sums))
        highest = qMax(highest, s);
    chart->addSeries(stack);
    auto *x = new QBarCategoryAxis;
    x->append(categories());
    auto *y = new QValueAxis;
    y->setRange(0, qMax<qint64>(highest, 1) * 1.05);
    y->setLabelFormat(QStringLiteral("%.0f"));
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    stack->attachAxis(x);
    stack->attachAxis(y);
}

void UsagePage::drawCache()
{
    QChart *chart = m_cache->chart();
    clear(chart);
    auto *stack = new QStackedBarSeries;
    auto *cached = new QBarSet(tr("Cached"));
    auto *uncached = new QBarSet(tr("Uncached"));
    qint64 highest = 0;
    for (int i = 0; i < m_series.cachedInput.size(); ++i) {
        cached->append(double(m_series.cachedInput.at(i)));
        uncached->append(double(m_series.uncachedInput.at(i)));
        highest = qMax(highest, m_series.cachedInput.at(i) + m_series.uncachedInput.at(i));
    }
    stack->append(cached);
    stack->append(uncached);
    chart->addSeries(stack);
    auto *x = new QBarCategoryAxis;
    x->append(categories());
    auto *y = new QValueAxis;
    y->setRange(0, qMax<qint64>(highest, 1) * 1.05);
    y->setLabelFormat(QStringLiteral("%.0f"));
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    stack->attachAxis(x);
    stack->attachAxis(y);
}

void UsagePage::drawUsed()
{
    QChart *chart = m_used->chart();
    clear(chart);
    const bool primary = m_window->currentIndex() == 0;
    // Points are collected first and handed over in one replace(): appending them one by one to a series
    // already in the chart makes the chart redo its geometry per point (quadratic, tens of ms for a week).
    QList<std::pair<QString, QList<QPointF>>> lines;
    QList<QPointF> resetPoints;
    qint64 lastReset = -1; // the reset time of the account's previous sample, -1 when none
    for (const UsageSample &s : std::as_const(m_series.samples)) {
        const UsageRecordWindow &w = primary ? s.primary : s.secondary;
        if (lines.isEmpty() || lines.last().first != s.accountId) {
            lines.append({s.accountId, {}});
            lastReset = -1;
        }
        if (!w.usedPercent)
            continue;
        // A new reset time means the previous window ended: mark where it reset.
        if (lastReset >= 0 && w.resetAtMs && *w.resetAtMs != lastReset && lastReset <= s.observedAtMs)
            resetPoints.append({double(lastReset), 0});
        if (w.resetAtMs)
            lastReset = *w.resetAtMs;
        lines.last().second.append({double(s.observedAtMs), *w.usedPercent});
    }
    auto *x = new QDateTimeAxis;
    x->setFormat(m_series.range == UsageRange::Day ? QStringLiteral("HH:mm") : QStringLiteral("MM-dd"));
    x->setRange(QDateTime::fromMSecsSinceEpoch(m_series.fromMs), QDateTime::fromMSecsSinceEpoch(m_series.toMs));
    auto *y = new QValueAxis;
    y->setRange(0, 100);
    y->setLabelFormat(QStringLiteral("%.0f%%"));
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    for (const auto &[account, points] : std::as_const(lines)) {
        auto *line = new QLineSeries;
        line->setName(m_series.accountNames.value(account, account));
        line->replace(points);
        chart->addSeries(line);
        line->attachAxis(x);
        line->attachAxis(y);
    }
    auto *resets = new QScatterSeries;
    resets->setName(tr("Reset"));
    resets->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
    resets->setMarkerSize(7);
    resets->replace(resetPoints);
    chart->addSeries(resets);
    resets->attachAxis(x);
    resets->attachAxis(y);
}

} // namespace sy::ui
