#include "DashboardWindow.h"

#include "data/StatusPoller.h"
#include "data/StoreClient.h"
#include "pages/AccountsPage.h"
#include "pages/ApiKeysPage.h"
#include "pages/LivePage.h"
#include "pages/OverviewPage.h"
#include "pages/RequestsPage.h"
#include "pages/SettingsPage.h"
#include "pages/UsagePage.h"

#include <QStatusBar>
#include <QTabWidget>

namespace sy::ui {

DashboardWindow::DashboardWindow(StoreClient *store, StatusPoller *status, AccountOnboarding *onboarding,
                                 const QString &configPath, const QHash<QString, QString> &env, QWidget *parent)
    : QMainWindow(parent)
{
    setWindowTitle(tr("Switchyard"));
    m_tabs = new QTabWidget(this);
    m_tabs->setObjectName(QStringLiteral("dashboardTabs"));
    m_pages.overview = new OverviewPage(store, status, m_tabs);
    m_pages.accounts = new AccountsPage(store, onboarding, m_tabs);
    m_pages.live = new LivePage(status, m_tabs);
    m_pages.usage = new UsagePage(store, m_tabs);
    m_pages.requests = new RequestsPage(store, m_tabs);
    m_pages.apiKeys = new ApiKeysPage(store, status, configPath, env, m_tabs);
    m_pages.settings = new SettingsPage(store, configPath, env, m_tabs);
    m_tabs->addTab(m_pages.overview, tr("Overview"));
    m_tabs->addTab(m_pages.accounts, tr("Accounts"));
    m_tabs->addTab(m_pages.live, tr("Live"));
    m_tabs->addTab(m_pages.usage, tr("Usage"));
    m_tabs->addTab(m_pages.requests, tr("Requests"));
    m_tabs->addTab(m_pages.apiKeys, tr("API keys"));
    m_tabs->addTab(m_pages.settings, tr("Settings"));
    setCentralWidget(m_tabs);
    resize(1100, 720);

    connect(store, &StoreClient::actionFinished, this, [this](bool ok, const QString &message) {
        if (!ok)
            statusBar()->showMessage(tr("Not done: %1").arg(message), 15000);
        else if (!message.isEmpty())
            statusBar()->showMessage(message, 5000);
    });
    connect(status, &StatusPoller::answeringChanged, this, [this](bool answering) {
        statusBar()->showMessage(answering ? tr("The proxy answers again.") : tr("The proxy does not answer."), 10000);
    });
}

void DashboardWindow::showPage(QWidget *page)
{
    m_tabs->setCurrentWidget(page);
}

void DashboardWindow::bringToFront()
{
    show();
    raise();
    activateWindow();
}

} // namespace sy::ui
