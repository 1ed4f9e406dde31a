#include "pages/AccountsPage.h"

#include "data/StoreClient.h"
#include "models/AccountsModel.h"
#include "pages/UsageBarDelegate.h"
#include "tray/AccountOnboarding.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QMessageBox>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

namespace sy::ui {

AccountsPage::AccountsPage(StoreClient *store, AccountOnboarding *onboarding, QWidget *parent)
    : QWidget(parent), m_store(store), m_onboarding(onboarding), m_model(new AccountsModel(this))
{
    setObjectName(QStringLiteral("accountsPage"));
    m_confirm = [this](const QString &question) {
        return QMessageBox::question(this, tr("Remove account"), question) == QMessageBox::Yes;
    };
    auto *layout = new QVBoxLayout(this);
    m_view = new QTableView(this);
    m_view->setObjectName(QStringLiteral("accountsView"));
    m_view->setModel(m_model);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    m_view->verticalHeader()->hide();
    m_view->horizontalHeader()->setStretchLastSection(true);
    m_view->setWordWrap(false);
    // A handful of rows: measuring their contents is cheap and keeps emails and countdowns readable.
    m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    auto *bars = new UsageBarDelegate(m_view);
    m_view->setItemDelegateForColumn(AccountsModel::FiveHour, bars);
    m_view->setItemDelegateForColumn(AccountsModel::Weekly, bars);
    layout->addWidget(m_view);

    auto *buttons = new QHBoxLayout;
    const auto button = [this, buttons](const QString &name, const QString &text) {
        auto *b = new QPushButton(text, this);
        b->setObjectName(name);
        buttons->addWidget(b);
        return b;
    };
    m_pin = button(QStringLiteral("pinButton"), tr("Pin"));
    m_unpin = button(QStringLiteral("unpinButton"), tr("Automatic"));
    m_pause = button(QStringLiteral("pauseButton"), tr("Pause"));
    m_resume = button(QStringLiteral("resumeButton"), tr("Resume"));
    m_relogin = button(QStringLiteral("reloginButton"), tr("Log in again…"));
    m_remove = button(QStringLiteral("removeButton"), tr("Remove…"));
    buttons->addStretch();
    QPushButton *add = button(QStringLiteral("addButton"), tr("Add account…"));
    QPushButton *import = button(QStringLiteral("importButton"), tr("Import auth.json…"));
    layout->addLayout(buttons);

    connect(m_pin, &QPushButton::clicked, this, [this] { m_store->setPin(selectedAccountId()); });
    connect(m_unpin, &QPushButton::clicked, this, [this] { m_store->clearPin(); });
    connect(m_pause, &QPushButton::clicked, this, [this] { m_store->setAccountPaused(selectedAccountId(), true); });
    connect(m_resume, &QPushButton::clicked, this, [this] { m_store->setAccountPaused(selectedAccountId(), false); });
    // A login for an existing account updates it (fresh tokens, reauth_required becomes active again).
    connect(m_relogin, &QPushButton::clicked, m_onboarding, qOverload<>(&AccountOnboarding::addAccount));
    connect(add, &QPushButton::clicked, m_onboarding, qOverload<>(&AccountOnboarding::addAccount));
    connect(import, &QPushButton::clicked, m_onboarding, qOverload<>(&AccountOnboarding::importFiles));
    connect(m_remove, &QPushButton::clicked, this, [this] {
        const QString id = selectedAccountId();
        const AccountView *a = m_model->snapshot() ? m_model->snapshot()->account(id) : nullptr;
        if (!a)
            return;
        if (m_confirm(tr("Remove %1 and its stored tokens? Its request history stays.").arg(a->record.displayName())))
            m_store->removeAccount(id);
    });

    connect(store, &StoreClient::snapshotChanged, this, [this](const SnapshotPtr &s) {
        m_model->setSnapshot(s);
        updateButtons();
    });
    connect(m_view->selectionModel(), &QItemSelectionModel::selectionChanged, this, &AccountsPage::updateButtons);
    connect(m_model, &QAbstractItemModel::modelReset, this, &AccountsPage::updateButtons);
    if (store->snapshot())
        m_model->setSnapshot(store->snapshot());
    updateButtons();
}

QString AccountsPage::selectedAccountId() const
{
    const QModelIndexList rows = m_view->selectionModel()->selectedRows();
    return rows.isEmpty() ? QString() : m_model->accountId(rows.first().row());
}

void AccountsPage::updateButtons()
{
    const QString id = selectedAccountId();
    const AccountView *a = m_model->snapshot() && !id.isEmpty() ? m_model->snapshot()->account(id) : nullptr;
    const bool paused = a && a->record.status == QLatin1String("paused");
    m_pin->setEnabled(a && !a->pinned);
    m_unpin->setEnabled(m_model->snapshot() && m_model->snapshot()->pin.has_value());
    m_pause->setEnabled(a && !paused);
    m_resume->setEnabled(a && paused);
    m_relogin->setEnabled(a != nullptr);
    m_remove->setEnabled(a != nullptr);
}

} // namespace sy::ui
