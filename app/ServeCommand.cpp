#include "Commands.h"
#include "ProxyHost.h"

#include <QCoreApplication>
#include <QSocketNotifier>

#include <csignal>
#include <cstdio>
#include <sys/socket.h>
#include <unistd.h>

namespace sy::app {

namespace {

int g_signalFd[2] = {-1, -1};

void onSignal(int)
{
    const char c = 1;
    [[maybe_unused]] const ssize_t n = ::write(g_signalFd[0], &c, 1);
}

// SIGTERM/SIGINT end the event loop through a socket pair, the async-signal-safe way.
void installShutdownSignals(QObject *context, std::function<void()> handler)
{
    if (::socketpair(AF_UNIX, SOCK_STREAM, 0, g_signalFd) != 0)
        return;
    auto *notifier = new QSocketNotifier(g_signalFd[1], QSocketNotifier::Read, context);
    QObject::connect(notifier, &QSocketNotifier::activated, context, [notifier, handler] {
        char c;
        [[maybe_unused]] const ssize_t n = ::read(g_signalFd[1], &c, 1);
        notifier->setEnabled(false);
        handler();
    });
    struct sigaction sa = {};
    sa.sa_handler = onSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
}

} // namespace

int runServe(const Config &config)
{
    ProxyHost host(config);
    const QString error = host.start();
    if (!error.isEmpty())
        return fail(error);
    std::fprintf(stdout, "switchyard: serving on http://%s:%u (data in %s)\n",
                 qPrintable(config.listenAddress.protocol() == QAbstractSocket::IPv6Protocol
                                ? QLatin1Char('[') + config.listenAddress.toString() + QLatin1Char(']')
                                : config.listenAddress.toString()),
                 unsigned(host.port()), qPrintable(config.dataDir));
    std::fflush(stdout);
    installShutdownSignals(&host, [] { QCoreApplication::quit(); });
    const int rc = QCoreApplication::exec();
    std::fprintf(stderr, "switchyard: shutting down, draining in-flight turns\n");
    host.shutdown(config.budgets.requestTotalS * 1000 / 20 + 5000);
    return rc;
}

} // namespace sy::app
