#pragma once

#include <QLocalServer>
#include <QObject>
#include <QString>

namespace sy::ui {

// One tray app per data dir. The first launch listens on a local socket named after its data dir; a later
// launch with the same data dir asks it to show its dashboard and exits instead of starting a second proxy
// on the same port and database. Launches with different data dirs have different names and coexist.
class SingleInstance : public QObject
{
    Q_OBJECT
public:
    explicit SingleInstance(const QString &dataDir, QObject *parent = nullptr);

    // The socket name for a data dir: per user, and the same for every spelling of the same path.
    static QString serverName(const QString &dataDir);
    QString name() const { return m_name; }

    // True when a running instance for this data dir answered and was asked to raise its dashboard.
    bool activateRunning(int timeoutMs = 3000);
    // Becomes the instance for this data dir (a socket left behind by a crashed instance is replaced).
    bool listen();
    QString errorString() const { return m_error; }

signals:
    void activationRequested();

private:
    void serve(QLocalSocket *socket);

    QString m_name;
    QLocalServer m_server;
    QString m_error;
};

} // namespace sy::ui
