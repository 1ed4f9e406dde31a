#include "Commands.h"
#include "DashboardWindow.h"
#include "ProxyHost.h"
#include "ShutdownSignals.h"
#include "config/ClientConfigText.h"
#include "data/SingleInstance.h"
#include "data/StatusPoller.h"
#include "data/StoreClient.h"
#include "store/Database.h"
#include "store/SettingsRepository.h"
#include "tray/AccountOnboarding.h"
#include "tray/TrayController.h"

#include <QApplication>
#include <QLocale>
#include <QMessageBox>
#include <QTranslator>

#include <cstdio>

namespace sy::app {

namespace {

struct StartupPrefs
{
    QString language;
    bool startHidden = false;
};

// The two preferences needed before any window exists, read once at start-up (the proxy has just opened and
// migrated the database; this is a few rows).
StartupPrefs readStartupPrefs(const QString &databasePath)
{
    StartupPrefs prefs;
    Database db;
    QString error;
    if (!db.open(databasePath, &error, Database::OpenMode::ReadOnly))
        return prefs;
    SettingsRepository settings(db);
    prefs.language = settings.value(ui::uikeys::language).value_or(QString());
    prefs.startHidden = settings.value(ui::uikeys::startHidden).value_or(QString()) == QLatin1String("true");
    return prefs;
}

void loadTranslation(QTranslator &translator, const QString &language)
{
    QApplication::removeTranslator(&translator);
    const QLocale locale = language.isEmpty() ? QLocale() : QLocale(language);
    if (translator.load(locale, QStringLiteral("switchyard"), QStringLiteral("_"), QStringLiteral(":/i18n")))
        QApplication::installTranslator(&translator);
}

} // namespace

int runGui(const ConfigResult &loaded, const ConfigOverrides &overrides, int argc, char **argv)
{
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("switchyard"));
    QApplication::setApplicationVersion(QStringLiteral(SWITCHYARD_VERSION));
    QApplication::setQuitOnLastWindowClosed(false);
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/switchyard.svg")));
    QTranslator translator;
    loadTranslation(translator, {});
    if (!loaded.ok()) {
        QMessageBox::critical(nullptr, QObject::tr("Switchyard"),
                              QObject::tr("The configuration cannot be used:\n%1").arg(loaded.error));
        return ExitConfig;
    }
    const Config &config = loaded.config;
    // A second launch for the same data dir raises the first one's dashboard instead of starting a second
    // proxy on the same port and database.
    ui::SingleInstance instance(config.dataDir);
    if (instance.activateRunning(10000)) {
        std::fprintf(stderr, "switchyard: already running for %s; showing its dashboard\n", qPrintable(config.dataDir));
        return ExitOk;
    }
    if (!instance.listen())
        std::fprintf(stderr, "switchyard: cannot take the single-instance socket %s: %s\n", qPrintable(instance.name()),
                     qPrintable(instance.errorString()));
    ProxyHost host(config);
    host.watchConfigFile(overrides, processEnvironment());
    const QString error = host.start();
    if (!error.isEmpty()) {
        QMessageBox::critical(nullptr, QObject::tr("Switchyard"), error);
        return ExitFailure;
    }
    const StartupPrefs prefs = readStartupPrefs(config.databaseLocation());
    if (!prefs.language.isEmpty())
        loadTranslation(translator, prefs.language);
    const QString base = localBaseUrl(config.listenAddress, host.port());

    ui::StoreClient store(config.databaseLocation());
    store.setSecretConfig(config);
    ui::StatusPoller status;
    status.setBaseUrl(base);
    ui::AccountOnboarding onboarding(&store, config.authUrl);
    ui::DashboardWindow window(&store, &status, &onboarding, config.configFile, processEnvironment());
    onboarding.setDialogParent(&window);
    ui::TrayController tray(&store, &status);
    tray.setBaseUrl(base);

    QObject::connect(&tray, &ui::TrayController::openDashboardRequested, &window, &ui::DashboardWindow::bringToFront);
    QObject::connect(&instance, &ui::SingleInstance::activationRequested, &window, [&window] {
        std::fprintf(stderr, "switchyard: another launch asked for the dashboard\n");
        window.bringToFront();
    });
    QObject::connect(&tray, &ui::TrayController::addAccountRequested, &onboarding,
                     qOverload<>(&ui::AccountOnboarding::addAccount));
    QObject::connect(&tray, &ui::TrayController::importRequested, &onboarding,
                     qOverload<>(&ui::AccountOnboarding::importFiles));
    QObject::connect(&tray, &ui::TrayController::quitRequested, &app, &QApplication::quit);
    // No tray host: the window is the way in, and the app keeps running. A host that appears later gets the
    // icon (TrayController keeps looking).
    bool first = true;
    QObject::connect(&tray, &ui::TrayController::trayAvailableChanged, &window, [&](bool available) {
        if (!available || (first && !prefs.startHidden))
            window.bringToFront();
        first = false;
    });
    store.start();
    status.start();
    tray.start();
    installShutdownSignals(&host, [] { QApplication::quit(); });
    const int rc = QApplication::exec();
    store.stop();
    status.stop();
    host.shutdown(host.drainMs());
    return rc;
}

} // namespace sy::app
