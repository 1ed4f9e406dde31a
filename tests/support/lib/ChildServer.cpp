#include "lib/ChildServer.h"

#include <QDeadlineTimer>

namespace sy::test {

quint16 startListeningChild(QProcess &process, const char *programVariable, QString *error, int timeoutMs)
{
    const QString program = qEnvironmentVariable(programVariable);
    if (program.isEmpty()) {
        *error = QStringLiteral("%1 is not set").arg(QLatin1String(programVariable));
        return 0;
    }
    process.start(program, {QStringLiteral("--port"), QStringLiteral("0"), QStringLiteral("--exit-on-stdin-close")});
    if (!process.waitForStarted(timeoutMs)) {
        *error = QStringLiteral("cannot start %1: %2").arg(program, process.errorString());
        return 0;
    }
    QDeadlineTimer deadline(timeoutMs);
    QByteArray output;
    while (!deadline.hasExpired()) {
        if (!process.canReadLine() && !process.waitForReadyRead(int(qMax<qint64>(1, deadline.remainingTime()))))
            break;
        while (process.canReadLine()) {
            const QByteArray line = process.readLine().trimmed();
            output += line + '\n';
            if (line.startsWith("LISTENING ")) {
                const quint16 port = quint16(line.mid(10).toUInt());
                if (port != 0)
                    return port;
            }
        }
    }
    *error = QStringLiteral("%1 did not report LISTENING: %2").arg(program, QString::fromUtf8(output));
    stopChild(process);
    return 0;
}

void stopChild(QProcess &process)
{
    if (process.state() != QProcess::NotRunning) {
        process.kill();
        process.waitForFinished(5000);
    }
}

} // namespace sy::test
