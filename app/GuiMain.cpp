#include "Commands.h"
#include "ProxyHost.h"
#include "ShutdownSignals.h"

#include "DashboardWindow.h"

#include <QAction>
#include <QApplication>
#include <QMenu>
#include <QMessageBox>
#include <QStyle>
#include <QLibraryInfo>
#include <QLocale>
#include <QSystemTrayIcon>
#include <QTranslator>

namespace sy::app {

int runGui(const ConfigResult &loaded, int argc, char **argv)
{
    QApplication app(argc, argv);
    QApplication::setApplicationName(QStringLiteral("switchyard"));
    QApplication::setApplicationVersion(QStringLiteral(SWITCHYARD_VERSION));
    QApplication::setQuitOnLastWindowClosed(false);
    QApplication::setWindowIcon(QIcon(QStringLiteral(":/icons/switchyard.svg")));
    QTranslator translator;
    if (translator.load(QLocale(), QStringLiteral("switchyard"), QStringLiteral("_"), QStringLiteral(":/i18n")))
        QApplication::installTranslator(&translator);
    if (!loaded.ok()) {
        QMessageBox::critical(nullptr, QObject::tr("Switchyard"),
                              QObject::tr("The configuration cannot be used:\n%1").arg(loaded.error));
        return ExitConfig;
    }
    const Config &config = loaded.config;
    ProxyHost host(config);
    const QString error = host.start();
    if (!error.isEmpty()) {
        QMessageBox::critical(nullptr, QObject::tr("Switchyard"), error);
        return ExitFailure;
    }
    const QString listen = QStringLiteral("http://%1:%2").arg(config.listenAddress.toString()).arg(host.port());
    ui::DashboardWindow window(config.databaseLocation());
    window.setListenText(QObject::tr("Serving on %1").arg(listen));

    QSystemTrayIcon tray(QApplication::windowIcon());
    QMenu menu;
    QAction *open = menu.addAction(QObject::tr("Open dashboard"));
    menu.addSeparator();
    QAction *quit = menu.addAction(QObject::tr("Quit"));
    QObject::connect(open, &QAction::triggered, &window, [&window] {
        window.show();
        window.raise();
        window.activateWindow();
    });
    QObject::connect(quit, &QAction::triggered, &app, &QApplication::quit);
    tray.setContextMenu(&menu);
    tray.setToolTip(QObject::tr("Switchyard — %1").arg(listen));
    if (QSystemTrayIcon::isSystemTrayAvailable())
        tray.show();
    else
        window.show(); // no tray host: the window is the way in
    installShutdownSignals(&host, [] { QApplication::quit(); });
    const int rc = QApplication::exec();
    host.shutdown(config.drainS * 1000);
    return rc;
}

} // namespace sy::app
