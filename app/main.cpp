#include "CommandLine.h"
#include "Commands.h"

#include <QCoreApplication>

#include <cstdio>
#ifdef __GLIBC__
#include <malloc.h>
#endif

using namespace sy;
using namespace sy::app;

namespace {

bool hasDisplay()
{
    return !qEnvironmentVariableIsEmpty("DISPLAY") || !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") ||
           !qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM");
}

} // namespace

int main(int argc, char **argv)
{
#ifdef __GLIBC__
    // Large request bodies (up to max_body_mb) are mapped and unmapped instead of growing glibc's adaptive
    // threshold: otherwise the heap keeps their pages after them (measured in bench/: 74 -> 63 MiB RSS with
    // 256 open streams after the 10 MiB-body scenario).
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
    QStringList arguments;
    for (int i = 0; i < argc; ++i)
        arguments.append(QString::fromLocal8Bit(argv[i]));
    const CommandLine cl = parseCommandLine(arguments);
    if (!cl.error.isEmpty())
        return fail(cl.error + QStringLiteral(" (see switchyard --help)"));
    if (cl.help) {
        out(cl.helpText);
        return ExitOk;
    }
    if (cl.version) {
        out(QStringLiteral("switchyard " SWITCHYARD_VERSION));
        return ExitOk;
    }

    const ConfigResult loaded = loadConfig(cl.overrides, processEnvironment());
    const QString command = cl.words.value(0);
    if (command.isEmpty() && hasDisplay())
        return runGui(loaded, cl.overrides, argc, argv); // shows the configuration problem in a dialog itself

    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("switchyard"));
    QCoreApplication::setApplicationVersion(QStringLiteral(SWITCHYARD_VERSION));
    if (!loaded.ok())
        return fail(QStringLiteral("configuration: ") + loaded.error, ExitConfig);
    const Config &config = loaded.config;

    if (command.isEmpty() || command == QLatin1String("serve")) {
        if (cl.words.size() > 1)
            return fail(QStringLiteral("serve takes no arguments"));
        return runServe(config, cl.overrides);
    }
    if (command == QLatin1String("accounts"))
        return runAccounts(config, cl);
    if (command == QLatin1String("requests"))
        return runRequests(config, cl);
    if (command == QLatin1String("usage"))
        return runUsage(config, cl);
    if (command == QLatin1String("status"))
        return runStatus(config, cl);
    if (command == QLatin1String("health"))
        return runHealth(config, cl);
    if (command == QLatin1String("egress"))
        return runEgress(config, cl);
    if (command == QLatin1String("apikeys"))
        return runApiKeys(config, cl);
    if (command == QLatin1String("client-config"))
        return runClientConfig(config, cl);
    return fail(QStringLiteral("unknown command '%1' (see switchyard --help)").arg(command));
}
