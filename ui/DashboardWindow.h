#pragma once

#include <QMainWindow>

#include <memory>

class QLabel;
class QTableWidget;
class QTimer;

namespace sy {
class Database;
}

namespace sy::ui {

// First dashboard: the accounts with their quota windows and the newest requests, read once a second through
// the window's own database connection (never the proxy's), so a busy proxy never blocks the UI and the UI
// never blocks the proxy. The full page set (overview, live turns, charts, settings) grows from here.
class DashboardWindow : public QMainWindow
{
    Q_OBJECT
public:
    explicit DashboardWindow(const QString &databasePath, QWidget *parent = nullptr);
    ~DashboardWindow() override;

    void refresh();
    void setListenText(const QString &text);

private:
    QString m_databasePath;
    std::unique_ptr<Database> m_db;
    QLabel *m_header;
    QTableWidget *m_accounts;
    QTableWidget *m_requests;
    QTimer *m_timer;
    QString m_listen;
};

} // namespace sy::ui
