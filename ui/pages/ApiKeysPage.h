#pragma once

#include "apikeys/ApiKeyAdmin.h"
#include "data/ConfigFileEditor.h"
#include "pages/ApiKeyDialogs.h"

#include <QHash>
#include <QPointer>
#include <QTimer>
#include <QWidget>
#include <functional>

class QLabel;
class QPushButton;
class QTableView;

namespace sy::ui {

class ApiKeysModel;
class StatusPoller;
class StoreClient;

// API keys for clients of a non-loopback listen address (docs/SECURITY.md "API keys"): the stored keys with
// their state, expiry, last use and token limit (read on the UI's query thread), and create/revoke through
// StoreClient, i.e. the code `switchyard apikeys` runs. A created key is shown once in its own dialog and
// kept nowhere else. The header says whether the proxy needs keys: the running proxy's /api/status when it
// answers, else the configuration file.
class ApiKeysPage : public QWidget
{
    Q_OBJECT
public:
    ApiKeysPage(StoreClient *store, StatusPoller *status, const QString &configPath, const QHash<QString, QString> &env,
                QWidget *parent = nullptr);

    ApiKeysModel *model() const { return m_model; }
    QTableView *view() const { return m_view; }
    QString requirementText() const;
    // Whether the header currently says keys are required (nullopt: not known yet).
    std::optional<bool> keysRequired() const { return m_required; }
    // Asks before revoking; replaced in tests.
    void setConfirm(std::function<bool(const QString &question)> confirm) { m_confirm = std::move(confirm); }
    QString selectedKeyId() const;
    // The open dialogs, if any (tests drive them).
    CreateApiKeyDialog *createDialog() const { return m_createDialog; }
    ShownApiKeyDialog *shownDialog() const { return m_shownDialog; }

    // Reads the keys again (coalesced with a read already running).
    void refresh();
    void openCreateDialog();
    void revokeSelected();

signals:
    void listingLoaded();

protected:
    void showEvent(QShowEvent *event) override;
    void hideEvent(QHideEvent *event) override;

private:
    void createFrom(const ApiKeyRequest &request);
    // Reads the configuration file again (what the header falls back to when the proxy does not answer).
    void readConfig();
    void updateRequirement();
    void updateButtons();

    StoreClient *m_store;
    StatusPoller *m_status;
    ConfigFileEditor m_config;
    ApiKeysModel *m_model;
    QTableView *m_view;
    QLabel *m_requirement;
    QLabel *m_message;
    QPushButton *m_create;
    QPushButton *m_revoke;
    QTimer m_timer;
    QPointer<CreateApiKeyDialog> m_createDialog;
    QPointer<ShownApiKeyDialog> m_shownDialog;
    std::function<bool(const QString &)> m_confirm;
    std::optional<bool> m_required;
    // From the configuration file: the listen address, whether it needs keys, or why it cannot be read.
    QString m_configListen;
    std::optional<bool> m_configRequired;
    QString m_configError;
    bool m_loading = false;
    bool m_reloadAgain = false;
};

} // namespace sy::ui
