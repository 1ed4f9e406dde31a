#pragma once

#include "data/StoreSnapshot.h"

#include <QJsonObject>
#include <QWidget>
#include <functional>

class QFormLayout;
class QLabel;
class QProgressBar;

namespace sy::ui {

class StatusPoller;
class StoreClient;

// The first page: pooled 5 h and weekly remaining, today's requests, tokens and errors, the pace of each
// window with its projected exhaustion, the strategy and the pin.
class OverviewPage : public QWidget
{
    Q_OBJECT
public:
    OverviewPage(StoreClient *store, StatusPoller *status, QWidget *parent = nullptr);

    void setNow(std::function<qint64()> now) { m_now = std::move(now); }
    void showSnapshot(const SnapshotPtr &snapshot);
    void showStatus(const QJsonObject &status);

private:
    QLabel *addRow(const QString &name, const QString &label);

    std::function<qint64()> m_now;
    QString m_runningStrategy; // from the proxy's /api/status
    QProgressBar *m_fiveHourBar;
    QProgressBar *m_weeklyBar;
    QLabel *m_fiveHour;
    QLabel *m_weekly;
    QLabel *m_requests;
    QLabel *m_tokens;
    QLabel *m_errors;
    QLabel *m_paceFiveHour;
    QLabel *m_paceWeekly;
    QLabel *m_strategy;
    QLabel *m_pin;
    QLabel *m_proxy;
    QFormLayout *m_form;
};

} // namespace sy::ui
