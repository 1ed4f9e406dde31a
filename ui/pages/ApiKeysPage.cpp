#include "pages/ApiKeysPage.h"

#include "data/DbWorker.h"
#include "data/StatusPoller.h"
#include "data/StoreClient.h"
#include "models/ApiKeysModel.h"
#include "pages/ApiKeyDialogs.h"
#include "store/Database.h"

#include <QDateTime>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QHostAddress>
#include <QItemSelectionModel>
#include <QLabel>
#include <QMessageBox>
#include <QPushButton>
#include <QTableView>
#include <QVBoxLayout>

namespace sy::ui {

namespace {

struct KeyListResult
{
    std::optional<QList<ApiKeyListing>> keys;
    QString error;
};

// "192.168.1.5:2455" or "[::1]:2455" or "::1:2455" (how /api/status writes it): is the host a loopback one?
bool listensOnLoopback(const QString &listen)
{
    QString host = listen.left(listen.lastIndexOf(QLatin1Char(':')));
    if (host.startsWith(QLatin1Char('[')) && host.endsWith(QLatin1Char(']')))
        host = host.mid(1, host.size() - 2);
    return QHostAddress(host).isLoopback();
}

QString listenText(const Config &c)
{
    return QStringLiteral("%1:%2").arg(c.listenAddress.toString()).arg(c.listenPort);
}

} // namespace

ApiKeysPage::ApiKeysPage(StoreClient *store, StatusPoller *status, const QString &configPath,
                         const QHash<QString, QString> &env, QWidget *parent)
    : QWidget(parent), m_store(store), m_status(status),
      m_config(configPath.isEmpty() ? ConfigFileEditor::defaultPath(env) : configPath, env),
      m_model(new ApiKeysModel(this))
{
    setObjectName(QStringLiteral("apiKeysPage"));
    m_confirm = [this](const QString &question) {
        return QMessageBox::question(this, tr("Revoke API key"), question) == QMessageBox::Yes;
    };
    auto *layout = new QVBoxLayout(this);
    m_requirement = new QLabel(this);
    m_requirement->setObjectName(QStringLiteral("apiKeysRequirement"));
    m_requirement->setWordWrap(true);
    layout->addWidget(m_requirement);

    m_view = new QTableView(this);
    m_view->setObjectName(QStringLiteral("apiKeysView"));
    m_view->setModel(m_model);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    m_view->verticalHeader()->hide();
    m_view->horizontalHeader()->setStretchLastSection(true);
    m_view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_view->setWordWrap(false);
    layout->addWidget(m_view);

    m_message = new QLabel(this);
    m_message->setObjectName(QStringLiteral("apiKeysMessage"));
    m_message->setWordWrap(true);
    layout->addWidget(m_message);

    auto *buttons = new QHBoxLayout;
    m_create = new QPushButton(tr("Create key…"), this);
    m_create->setObjectName(QStringLiteral("createApiKeyButton"));
    m_revoke = new QPushButton(tr("Revoke…"), this);
    m_revoke->setObjectName(QStringLiteral("revokeApiKeyButton"));
    buttons->addWidget(m_create);
    buttons->addWidget(m_revoke);
    buttons->addStretch();
    layout->addLayout(buttons);

    connect(m_create, &QPushButton::clicked, this, &ApiKeysPage::openCreateDialog);
    connect(m_revoke, &QPushButton::clicked, this, &ApiKeysPage::revokeSelected);
    connect(m_view->selectionModel(), &QItemSelectionModel::selectionChanged, this, &ApiKeysPage::updateButtons);
    connect(m_model, &QAbstractItemModel::modelReset, this, &ApiKeysPage::updateButtons);
    connect(m_model, &QAbstractItemModel::dataChanged, this, &ApiKeysPage::updateButtons);
    connect(status, &StatusPoller::statusReceived, this, &ApiKeysPage::updateRequirement);
    connect(status, &StatusPoller::answeringChanged, this, [this](bool answering) {
        if (!answering)
            readConfig();
        updateRequirement();
    });
    // Last use and tokens in the window change with traffic: read again while the page is shown.
    m_timer.setInterval(2000);
    connect(&m_timer, &QTimer::timeout, this, &ApiKeysPage::refresh);
    readConfig();
    updateRequirement();
    updateButtons();
}

void ApiKeysPage::showEvent(QShowEvent *event)
{
    QWidget::showEvent(event);
    readConfig();
    updateRequirement();
    refresh();
    m_timer.start();
}

void ApiKeysPage::hideEvent(QHideEvent *event)
{
    QWidget::hideEvent(event);
    m_timer.stop();
}

void ApiKeysPage::refresh()
{
    if (m_loading) {
        m_reloadAgain = true;
        return;
    }
    m_loading = true;
    m_store->queryWorker()->run<KeyListResult>(
        [](DbWorker::Context &ctx) {
            KeyListResult r;
            if (Database *db = ctx.db(&r.error))
                r.keys = listApiKeys(*db, QDateTime::currentMSecsSinceEpoch(), &r.error);
            return r;
        },
        this,
        [this](const KeyListResult &r) {
            m_loading = false;
            if (r.keys) {
                m_model->setListing(*r.keys);
                if (m_message->property("readError").toBool())
                    m_message->clear();
                m_message->setProperty("readError", false);
            } else {
                m_message->setText(tr("The API keys cannot be read: %1").arg(r.error));
                m_message->setProperty("readError", true);
            }
            updateRequirement();
            emit listingLoaded();
            if (m_reloadAgain) {
                m_reloadAgain = false;
                refresh();
            }
        });
}

void ApiKeysPage::readConfig()
{
    m_configError.clear();
    m_configRequired.reset();
    QString error;
    if (!m_config.load(&error)) {
        m_configError = error;
        return;
    }
    const ConfigResult r = m_config.evaluate(m_config.object());
    if (!r.ok()) {
        m_configError = r.error;
        return;
    }
    m_configListen = listenText(r.config);
    // The rule ProxyService applies.
    m_configRequired = !r.config.listenAddress.isLoopback() || r.config.requireApiKey;
}

void ApiKeysPage::updateRequirement()
{
    const QJsonObject s = m_status->lastStatus();
    const bool fromProxy = m_status->answering() && s.value(QLatin1String("api_keys_required")).isBool();
    QString listen;
    if (fromProxy) {
        m_required = s.value(QLatin1String("api_keys_required")).toBool();
        listen = s.value(QLatin1String("listen")).toString();
    } else {
        m_required = m_configRequired;
        listen = m_configListen;
    }
    if (!m_required) {
        m_requirement->setText(tr("Whether the proxy needs API keys is not known: it does not answer and the "
                                  "configuration file cannot be used (%1).")
                                   .arg(m_configError));
        return;
    }
    QString text;
    if (!*m_required)
        text = tr("No API key is needed: the proxy listens on %1, a loopback address that only programs on this "
                  "computer can reach. Keys take effect when it listens on another address or when "
                  "require_api_key is set.")
                   .arg(listen);
    else if (!listensOnLoopback(listen))
        text = tr("API keys are required: the proxy listens on %1, which other computers can reach. Every proxy "
                  "request needs a valid key; without one it gets 401.")
                   .arg(listen);
    else
        text = tr("API keys are required: require_api_key is set, so even programs on this computer need a valid "
                  "key for the proxy on %1; without one they get 401.")
                   .arg(listen);
    if (*m_required && m_model->activeCount() == 0)
        text += QLatin1Char(' ') + tr("No key is active: every proxy request is refused until you create one.");
    if (!fromProxy)
        text +=
            QLatin1Char(' ') + tr("(From the configuration file %1: the proxy does not answer.)").arg(m_config.path());
    m_requirement->setText(text);
}

QString ApiKeysPage::requirementText() const
{
    return m_requirement->text();
}

QString ApiKeysPage::selectedKeyId() const
{
    const QModelIndexList rows = m_view->selectionModel()->selectedRows();
    return rows.isEmpty() ? QString() : m_model->keyId(rows.first().row());
}

void ApiKeysPage::updateButtons()
{
    const int row = m_model->rowOf(selectedKeyId());
    m_revoke->setEnabled(row >= 0 && m_model->listing().at(row).state != ApiKeyRecord::State::Revoked);
}

void ApiKeysPage::openCreateDialog()
{
    if (m_createDialog || m_shownDialog) {
        (m_createDialog ? static_cast<QDialog *>(m_createDialog) : m_shownDialog)->raise();
        return;
    }
    m_createDialog = new CreateApiKeyDialog(this);
    m_createDialog->setAttribute(Qt::WA_DeleteOnClose);
    connect(m_createDialog, &QDialog::accepted, this, [this] { createFrom(m_createDialog->request()); });
    m_createDialog->open();
}

void ApiKeysPage::createFrom(const ApiKeyRequest &request)
{
    m_create->setEnabled(false);
    m_message->setText(tr("Creating the key…"));
    // StoreClient outlives the page only in tests, but the answer must not reach a page that is gone.
    QPointer<ApiKeysPage> self(this);
    m_store->createApiKey(request, [this, self](const StoreClient::CreatedApiKey &created) {
        if (!self)
            return; // the secret's last holder lets go: it is wiped
        m_create->setEnabled(true);
        refresh();
        if (!created.ok) {
            m_message->setText(tr("Not created: %1").arg(created.error));
            return;
        }
        m_message->setText(tr("API key %1 created.").arg(created.keyId));
        m_shownDialog = new ShownApiKeyDialog(created.keyId, created.secret, this);
        m_shownDialog->setAttribute(Qt::WA_DeleteOnClose);
        m_shownDialog->open();
    });
}

void ApiKeysPage::revokeSelected()
{
    const QString id = selectedKeyId();
    const int row = m_model->rowOf(id);
    if (row < 0)
        return;
    const ApiKeyRecord &key = m_model->listing().at(row).record;
    const QString named = key.name.isEmpty() ? id : QStringLiteral("%1 (%2)").arg(key.name, id);
    if (!m_confirm(tr("Revoke the API key %1? Clients using it get 401 from their next request; this cannot be "
                      "undone.")
                       .arg(named)))
        return;
    QPointer<ApiKeysPage> self(this);
    m_store->revokeApiKey(id, [this, self](bool ok, const QString &message) {
        if (!self)
            return;
        m_message->setText(ok ? message : tr("Not revoked: %1").arg(message));
        refresh();
    });
}

} // namespace sy::ui
