#pragma once

#include <QObject>
#include <QPointer>
#include <QUrl>
#include <functional>

class QMessageBox;
class QWidget;

namespace sy::ui {

class StoreClient;

// "Add account…" and "Import auth.json…" for the tray and the Accounts page: the browser login (opened with
// QDesktopServices, the URL also shown in a small window with a Cancel button) and the file import, both
// stored by StoreClient the way the CLI stores them. Each ends with finished(ok, message), shown to the user
// unless quiet.
class AccountOnboarding : public QObject
{
    Q_OBJECT
public:
    AccountOnboarding(StoreClient *store, const QUrl &authUrl, QObject *parent = nullptr);
    ~AccountOnboarding() override;

    void setDialogParent(QWidget *parent) { m_dialogParent = parent; }
    // No message boxes (tests); finished() still says everything.
    void setQuiet(bool quiet) { m_quiet = quiet; }
    // Replaces QDesktopServices::openUrl (tests).
    void setBrowserOpener(std::function<bool(const QUrl &)> opener) { m_opener = std::move(opener); }
    // Replaces the file dialog (tests).
    void setFileChooser(std::function<QStringList()> chooser) { m_chooser = std::move(chooser); }
    // Test knob: the login's callback port (0 = any free port); the real issuer expects the default.
    void setCallbackPort(int port) { m_callbackPort = port; }

    void addAccount();
    void importFiles();
    void importFiles(const QStringList &files);

signals:
    void finished(bool ok, const QString &message);

private:
    void onLoginUrl(const QUrl &url);
    void report(bool ok, const QString &title, const QString &message);

    StoreClient *m_store;
    QUrl m_authUrl;
    QPointer<QWidget> m_dialogParent;
    QPointer<QMessageBox> m_waiting;
    std::function<bool(const QUrl &)> m_opener;
    std::function<QStringList()> m_chooser;
    int m_callbackPort = -1;
    bool m_quiet = false;
};

} // namespace sy::ui
