#include "tray/AccountOnboarding.h"

#include "accounts/OAuthLogin.h"
#include "data/StoreClient.h"

#include <QDesktopServices>
#include <QDir>
#include <QFileDialog>
#include <QMessageBox>

namespace sy::ui {

AccountOnboarding::AccountOnboarding(StoreClient *store, const QUrl &authUrl, QObject *parent)
    : QObject(parent), m_store(store), m_authUrl(authUrl),
      m_opener([](const QUrl &url) { return QDesktopServices::openUrl(url); })
{
    connect(m_store, &StoreClient::loginUrl, this, &AccountOnboarding::onLoginUrl);
    connect(m_store, &StoreClient::loginFinished, this, [this](bool ok, const QString &message) {
        if (m_waiting)
            m_waiting->deleteLater();
        report(ok, ok ? tr("Account added") : tr("Login failed"), ok ? tr("Logged in: %1").arg(message) : message);
    });
}

AccountOnboarding::~AccountOnboarding()
{
    delete m_waiting;
}

void AccountOnboarding::addAccount()
{
    if (m_store->loginRunning()) {
        if (m_waiting)
            m_waiting->raise();
        return;
    }
    OAuthLoginOptions options;
    options.issuer = m_authUrl;
    if (m_callbackPort >= 0)
        options.callbackPort = quint16(m_callbackPort);
    m_store->startLogin(options);
}

void AccountOnboarding::onLoginUrl(const QUrl &url)
{
    const bool opened = m_opener(url);
    if (m_quiet)
        return;
    auto *box = new QMessageBox(QMessageBox::Information, tr("Add account"),
                                opened ? tr("Finish the login in the browser window that just opened.")
                                       : tr("Open this address in a browser on this computer to log in:"),
                                QMessageBox::Cancel, m_dialogParent);
    box->setInformativeText(QString::fromLatin1(url.toEncoded()));
    box->setTextInteractionFlags(Qt::TextSelectableByMouse);
    box->setAttribute(Qt::WA_DeleteOnClose);
    connect(box, &QMessageBox::rejected, m_store, &StoreClient::cancelLogin);
    m_waiting = box;
    box->open();
}

void AccountOnboarding::importFiles()
{
    const QStringList files = m_chooser ? m_chooser()
                                        : QFileDialog::getOpenFileNames(m_dialogParent, tr("Import auth.json"),
                                                                        QDir::homePath() + QStringLiteral("/.codex"),
                                                                        tr("Codex auth files (*.json);;All files (*)"));
    if (!files.isEmpty())
        importFiles(files);
}

void AccountOnboarding::importFiles(const QStringList &files)
{
    QPointer<AccountOnboarding> self(this);
    m_store->importAuthJsonFiles(files, [self](bool ok, const QString &message) {
        if (self)
            self->report(ok, ok ? tr("Accounts imported") : tr("Import failed"),
                         ok ? tr("Imported: %1").arg(message) : message);
    });
}

void AccountOnboarding::report(bool ok, const QString &title, const QString &message)
{
    if (!m_quiet) {
        auto *box = new QMessageBox(ok ? QMessageBox::Information : QMessageBox::Warning, title, message,
                                    QMessageBox::Ok, m_dialogParent);
        box->setAttribute(Qt::WA_DeleteOnClose);
        box->open();
    }
    emit finished(ok, message);
}

} // namespace sy::ui
