#pragma once

#include "data/UsageSeries.h"

#include <QTimer>
#include <QWidget>
#include <functional>

class QChart;
class QChartView;
class QComboBox;
class QLabel;

namespace sy::ui {

class StoreClient;

// Qt Charts over the rollups: tokens per account (stacked) over 24 h / 7 d / 30 d, the used % of the 5 h or
// weekly window over time with reset markers, and cached vs uncached input. The data is read on the query
// worker thread and drawn when it arrives.
class UsagePage : public QWidget
{
    Q_OBJECT
public:
    explicit UsagePage(StoreClient *store, QWidget *parent = nullptr);

    void setRange(UsageRange range);
    void reload();
    const UsageSeries &series() const { return m_series; }
    QChart *tokensChart() const;
    QChart *usedChart() const;
    QChart *cacheChart() const;
    // Milliseconds from the arrival of the data to the charts drawn (GUI thread).
    qint64 lastDrawMs() const { return m_lastDrawMs; }
    // For tests: a fixed clock.
    void setNow(std::function<qint64()> now) { m_now = std::move(now); }

signals:
    void seriesShown();

protected:
    void showEvent(QShowEvent *event) override;

private:
    void showSeries(const UsageSeries &series);
    void drawTokens();
    void drawUsed();
    void drawCache();
    QStringList categories() const;

    StoreClient *m_store;
    std::function<qint64()> m_now;
    QComboBox *m_range;
    QComboBox *m_window;
    QLabel *m_info;
    QChartView *m_tokens;
    QChartView *m_used;
    QChartView *m_cache;
    QTimer m_timer;
    UsageSeries m_series;
    quint64 m_generation = 0;
    qint64 m_lastDrawMs = 0;
};

} // namespace sy::ui
