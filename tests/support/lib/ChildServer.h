#pragma once

#include <QProcess>
#include <QString>

namespace sy::test {

// Starts a test server executable (path in the environment variable `programVariable`) with
// `--port 0 --exit-on-stdin-close` and waits for its "LISTENING <port>" line. Returns the port, or 0 with
// *error set (the process is then stopped).
quint16 startListeningChild(QProcess &process, const char *programVariable, QString *error, int timeoutMs);
void stopChild(QProcess &process);

} // namespace sy::test
