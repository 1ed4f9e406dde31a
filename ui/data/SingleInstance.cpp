#include "data/SingleInstance.h"

#include <QCryptographicHash>
#include <QDir>
#include <QFileInfo>
#include <QLocalSocket>
#include <unistd.h>

namespace sy::ui {

namespace {

// A line, not just a connection: something else listening under our name must not count as a running
// Switchyard, so the reply is checked too.
constexpr char kRequest[] = "switchyard-show\n";
constexpr char kReply[] = "switchyard-ok\n";

} // namespace

SingleInstance::SingleInstance(const QString &dataDir, QObject *parent) : QObject(parent), m_name(serverName(dataDir))
{
    m_server.setSocketOptions(QLocalServer::UserAccessOption);
    connect(&m_server, &QLocalServer::newConnection, this, [this] {
        while (QLocalSocket *socket = m_server.nextPendingConnection())
            serve(socket);
    });
}

QString SingleInstance::serverName(const QString &dataDir)
{
    QFileInfo info(dataDir);
    const QString canonical = info.canonicalFilePath();
    const QString path = canonical.isEmpty() ? QDir::cleanPath(info.absoluteFilePath()) : canonical;
    const QByteArray hash = QCryptographicHash::hash(path.toUtf8(), QCryptographicHash::Sha256).toHex().left(16);
    return QStringLiteral("switchyard-%1-%2").arg(uint(getuid())).arg(QString::fromLatin1(hash));
}

bool SingleInstance::activateRunning(int timeoutMs)
{
    QLocalSocket socket;
    socket.connectToServer(m_name);
    if (!socket.waitForConnected(timeoutMs))
        return false;
    socket.write(kRequest);
    if (!socket.waitForBytesWritten(timeoutMs))
        return false;
    while (!socket.canReadLine()) {
        if (!socket.waitForReadyRead(timeoutMs))
            return false;
    }
    return socket.readLine() == kReply;
}

bool SingleInstance::listen()
{
    if (m_server.listen(m_name))
        return true;
    if (m_server.serverError() == QAbstractSocket::AddressInUseError) {
        // Nobody answered activateRunning(), so the socket file is a crashed instance's leftover.
        QLocalServer::removeServer(m_name);
        if (m_server.listen(m_name))
            return true;
    }
    m_error = m_server.errorString();
    return false;
}

void SingleInstance::serve(QLocalSocket *socket)
{
    connect(socket, &QLocalSocket::disconnected, socket, &QObject::deleteLater);
    connect(socket, &QLocalSocket::readyRead, this, [this, socket] {
        if (!socket->canReadLine())
            return;
        if (socket->readLine() == kRequest) {
            socket->write(kReply);
            socket->flush();
            emit activationRequested();
        }
        socket->disconnectFromServer();
    });
}

} // namespace sy::ui
