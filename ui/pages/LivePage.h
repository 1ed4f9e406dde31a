#pragma once

#include <QHash>
#include <QJsonObject>
#include <QWidget>
#include <functional>

class QLabel;
class QTableView;

namespace sy::ui {

class JsonTableModel;
class StatusPoller;

// What the running proxy is doing now, from its /api/status (polled once a second, asynchronously): the
// in-flight turns with their stage (queued, pre-response, streaming, ...) and the time left of each running
// stage budget; the owner slots with replica, epoch and lease expiry when the proxy reports them.
class LivePage : public QWidget
{
    Q_OBJECT
public:
    explicit LivePage(StatusPoller *status, QWidget *parent = nullptr);

    void setNow(std::function<qint64()> now) { m_now = std::move(now); }
    void showStatus(const QJsonObject &status);
    JsonTableModel *turnsModel() const { return m_turns; }
    JsonTableModel *slotsModel() const { return m_slots; }

private:
    std::function<qint64()> m_now;
    QLabel *m_header;
    QLabel *m_slotsHeader;
    JsonTableModel *m_turns;
    JsonTableModel *m_slots;
    QTableView *m_slotsView;
    QHash<QString, QString> m_aliases; // account id -> alias, from the status' accounts
};

} // namespace sy::ui
