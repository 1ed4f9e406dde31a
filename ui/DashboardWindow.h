#pragma once

#include <QHash>
#include <QMainWindow>

class QTabWidget;

namespace sy::ui {

class AccountOnboarding;
class AccountsPage;
class ApiKeysPage;
class LivePage;
class OverviewPage;
class RequestsPage;
class SettingsPage;
class StatusPoller;
class StoreClient;
class UsagePage;

// The dashboard: one tab per page (Overview, Accounts, Live, Usage, Requests, API keys, Settings). Pages read the
// store through StoreClient's snapshots and query worker and the running proxy through StatusPoller; the
// window itself only arranges them and shows the outcome of actions in its status bar.
class DashboardWindow : public QMainWindow
{
    Q_OBJECT
public:
    struct Pages
    {
        OverviewPage *overview = nullptr;
        AccountsPage *accounts = nullptr;
        LivePage *live = nullptr;
        UsagePage *usage = nullptr;
        RequestsPage *requests = nullptr;
        ApiKeysPage *apiKeys = nullptr;
        SettingsPage *settings = nullptr;
    };

    // configPath: the configuration file the Settings page edits (empty: the default path in env).
    DashboardWindow(StoreClient *store, StatusPoller *status, AccountOnboarding *onboarding, const QString &configPath,
                    const QHash<QString, QString> &env, QWidget *parent = nullptr);

    const Pages &pages() const { return m_pages; }
    QTabWidget *tabs() const { return m_tabs; }
    void showPage(QWidget *page);
    // Shows, raises and activates the window.
    void bringToFront();

private:
    QTabWidget *m_tabs;
    Pages m_pages;
};

} // namespace sy::ui
