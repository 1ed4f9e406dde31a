#pragma once

#include "data/StoreSnapshot.h"

#include <QWidget>
#include <functional>

class QPushButton;
class QTableView;

namespace sy::ui {

class AccountOnboarding;
class AccountsModel;
class StoreClient;

// The accounts table (alias, email, plan, status, 5 h and weekly bars with reset countdown, last used, token
// expiry) with the actions pause/resume/remove/re-login/pin, all through StoreClient (the CLI's
// repositories) on the UI's store thread.
class AccountsPage : public QWidget
{
    Q_OBJECT
public:
    AccountsPage(StoreClient *store, AccountOnboarding *onboarding, QWidget *parent = nullptr);

    AccountsModel *model() const { return m_model; }
    QTableView *view() const { return m_view; }
    // Asks before removing; replaced in tests.
    void setConfirm(std::function<bool(const QString &question)> confirm) { m_confirm = std::move(confirm); }
    QString selectedAccountId() const;

private:
    void updateButtons();

    StoreClient *m_store;
    AccountOnboarding *m_onboarding;
    AccountsModel *m_model;
    QTableView *m_view;
    QPushButton *m_pause;
    QPushButton *m_resume;
    QPushButton *m_remove;
    QPushButton *m_relogin;
    QPushButton *m_pin;
    QPushButton *m_unpin;
    std::function<bool(const QString &)> m_confirm;
};

} // namespace sy::ui
