#include "FakeOAuth.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QSocketNotifier>
#include <cstdio>

#ifdef Q_OS_UNIX
#include <unistd.h>
#endif

// Test double for the OpenAI authorization server. Prints "LISTENING <port>" once ready.
int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    QCommandLineParser parser;
    parser.addHelpOption();
    QCommandLineOption portOption(QStringLiteral("port"), QStringLiteral("Port to listen on (0 = any free port)."),
                                  QStringLiteral("N"), QStringLiteral("0"));
    QCommandLineOption hostOption(QStringLiteral("host"), QStringLiteral("Address to listen on."),
                                  QStringLiteral("ADDR"), QStringLiteral("127.0.0.1"));
    QCommandLineOption clientOption(QStringLiteral("client-id"), QStringLiteral("The only client id accepted."),
                                    QStringLiteral("ID"), QString::fromLatin1(sy::fake::FakeOAuth::kDefaultClientId));
    QCommandLineOption stdinOption(QStringLiteral("exit-on-stdin-close"),
                                   QStringLiteral("Exit when standard input closes (the parent died)."));
    parser.addOptions({portOption, hostOption, clientOption, stdinOption});
    parser.process(app);

    bool ok = false;
    const uint port = parser.value(portOption).toUInt(&ok);
    if (!ok || port > 65535) {
        std::fprintf(stderr, "fake_oauth: bad --port\n");
        return 2;
    }
    sy::fake::FakeOAuth server(parser.value(clientOption));
    if (!server.listen(QHostAddress(parser.value(hostOption)), quint16(port))) {
        std::fprintf(stderr, "fake_oauth: cannot listen: %s\n", qPrintable(server.errorString()));
        return 1;
    }

#ifdef Q_OS_UNIX
    if (parser.isSet(stdinOption)) {
        auto *notifier = new QSocketNotifier(STDIN_FILENO, QSocketNotifier::Read, &app);
        QObject::connect(notifier, &QSocketNotifier::activated, &app, [notifier] {
            char buffer[256];
            if (::read(STDIN_FILENO, buffer, sizeof buffer) <= 0) {
                notifier->setEnabled(false);
                QCoreApplication::quit();
            }
        });
    }
#endif

    std::printf("LISTENING %u\n", unsigned(server.port()));
    std::fflush(stdout);
    return app.exec();
}
