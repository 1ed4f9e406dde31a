// The fault build (switchyard-faults) is headless: tests run only its CLI and `serve`.
#include "Commands.h"

namespace sy::app {

int runGui(const ConfigResult &, const ConfigOverrides &, int, char **)
{
    return fail(QStringLiteral("switchyard-faults is a test build without the tray app; use 'serve'"));
}

} // namespace sy::app
