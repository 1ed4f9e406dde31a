#include "Commands.h"
#include "ProxyHost.h"
#include "store/DatabaseLocation.h"

#include <QCoreApplication>
#include "ShutdownSignals.h"

#include <cstdio>

namespace sy::app {


int runServe(const Config &config, const ConfigOverrides &overrides)
{
    ProxyHost host(config);
    host.watchConfigFile(overrides, processEnvironment());
    // Before anything can announce readiness: a SIGTERM right after the ready line must drain, not kill.
    installShutdownSignals(&host, [] { QCoreApplication::quit(); });
    const QString error = host.start();
    if (!error.isEmpty())
        return fail(error);
    std::fprintf(stdout, "switchyard: serving on http://%s:%u (data in %s, database %s)\n",
                 qPrintable(config.listenAddress.protocol() == QAbstractSocket::IPv6Protocol
                                ? QLatin1Char('[') + config.listenAddress.toString() + QLatin1Char(']')
                                : config.listenAddress.toString()),
                 unsigned(host.port()), qPrintable(config.dataDir),
                 qPrintable(redactDatabaseLocation(config.databaseLocation())));
    std::fflush(stdout);
    const int rc = QCoreApplication::exec();
    std::fprintf(stderr, "switchyard: shutting down, draining in-flight turns\n");
    host.shutdown(host.drainMs());
    return rc;
}

} // namespace sy::app
