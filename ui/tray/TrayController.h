#pragma once

#include "data/PoolSummary.h"
#include "data/StoreSnapshot.h"
#include "tray/NoticeDiff.h"

#include <QHash>
#include <QObject>
#include <QTimer>
#include <functional>

class QAction;
class QActionGroup;
class QMenu;
class QSystemTrayIcon;

namespace sy {
struct ClientConfigEdit;
}

namespace sy::ui {

class StatusPoller;
class StoreClient;

// The tray: an icon whose look tells the proxy's state (and, when set, a remaining-% number), a tooltip
// naming the pinned or last-used account with both windows, the menu (accounts as an "Automatic"/pin radio
// group, pause, add/import, dashboard, client configs, tray number, quit) and desktop notifications derived
// from successive store snapshots. Without a tray host it stays hidden, says so (trayAvailableChanged) and
// shows itself once a host appears (checked every few seconds).
class TrayController : public QObject
{
    Q_OBJECT
public:
    TrayController(StoreClient *store, StatusPoller *status, QObject *parent = nullptr);
    ~TrayController() override;

    // The proxy's base URL for the client configuration snippets ("http://127.0.0.1:2455").
    void setBaseUrl(const QString &baseUrl) { m_baseUrl = baseUrl; }
    // The file "Write Codex CLI config" edits (default ~/.codex/config.toml, or $CODEX_HOME/config.toml).
    void setCodexConfigPath(const QString &path) { m_codexConfigPath = path; }
    // The file "Write OpenCode config" edits (default $XDG_CONFIG_HOME/opencode/opencode.json).
    void setOpenCodeConfigPath(const QString &path) { m_openCodeConfigPath = path; }
    // Replaces QSystemTrayIcon::isSystemTrayAvailable (tests).
    void setTrayProbe(std::function<bool()> probe) { m_probe = std::move(probe); }
    void setHostPollIntervalMs(int ms) { m_hostTimer.setInterval(ms); }
    // Checks for a tray host now and starts checking periodically.
    void start();

    bool trayVisible() const;
    TrayState state() const { return m_state; }
    std::optional<int> number() const { return m_number; }
    QString toolTip() const { return m_toolTip; }
    QMenu *menu() const { return m_menu; }
    QSystemTrayIcon *trayIcon() const { return m_tray; }
    // The menu entry that pins an account (empty id: "Automatic").
    QAction *pinAction(const QString &accountId) const;

signals:
    void openDashboardRequested();
    void addAccountRequested();
    void importRequested();
    void quitRequested();
    // false: no tray host (show the dashboard instead); true: the icon is docked.
    void trayAvailableChanged(bool available);
    void notified(const sy::ui::Notice &notice);
    // After "Write/Undo Codex CLI config" or "... OpenCode config": whether it worked, what to tell the user
    // and the file it was about.
    void clientConfigEdited(bool ok, const QString &message, const QString &path);

private:
    void buildMenu();
    void onSnapshot(const SnapshotPtr &snapshot);
    void updateAccounts(const StoreSnapshot &s);
    void updateLook();
    void checkHost();
    void copyText(const QString &text, const QString &what);
    void editCodexConfig(bool write);
    void editOpenCodeConfig(bool write);
    void reportConfigEdit(const ClientConfigEdit &edit, bool write, const QString &title, const QString &writeHint);
    void notify(const Notice &notice);

    StoreClient *m_store;
    StatusPoller *m_status;
    QString m_baseUrl;
    QString m_codexConfigPath;
    QString m_openCodeConfigPath;
    std::function<bool()> m_probe;
    QTimer m_hostTimer;
    QSystemTrayIcon *m_tray = nullptr;
    QMenu *m_menu = nullptr;
    QAction *m_header = nullptr;
    QAction *m_accountsEnd = nullptr;
    QAction *m_pause = nullptr;
    QActionGroup *m_pinGroup = nullptr;
    QActionGroup *m_numberGroup = nullptr;
    QHash<QString, QAction *> m_pinActions; // "" = Automatic
    QStringList m_accountOrder;
    SnapshotPtr m_snapshot;
    TrayState m_state = TrayState::Stopped;
    std::optional<int> m_number;
    QString m_toolTip;
    bool m_available = false;
    bool m_announced = false;
};

} // namespace sy::ui
