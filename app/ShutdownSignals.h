#pragma once

#include <functional>

class QObject;

namespace sy::app {

// SIGTERM/SIGINT run `handler` on `context`'s thread (through a socket pair, the async-signal-safe way), so
// `serve` under systemd and the tray app both drain in-flight turns instead of dying mid-stream.
void installShutdownSignals(QObject *context, std::function<void()> handler);

} // namespace sy::app
