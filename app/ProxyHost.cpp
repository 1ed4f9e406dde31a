#include "ProxyHost.h"

#include "HeapTrim.h"

#include "accounts/SecretStore.h"
#include "accounts/SecretStoreFactory.h"
#include "api/ProxyService.h"
#include "store/Database.h"
#include "store/DatabaseLocation.h"
#include "store/StoreWorker.h"
#include "util/Clock.h"
#include "util/EpollEventDispatcher.h"

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>
#include <QDir>
#include <QMetaObject>

namespace sy::app {

ProxyHost::ProxyHost(const Config &config, QObject *parent) : QObject(parent), m_config(config)
{
    m_proxyThread.setObjectName(QStringLiteral("proxy"));
}

ProxyHost::~ProxyHost()
{
    shutdown(0);
}

void ProxyHost::watchConfigFile(const ConfigOverrides &overrides, const QHash<QString, QString> &env)
{
    m_watchOverrides = overrides;
    m_watchEnv = env;
}

int ProxyHost::drainMs() const
{
    int seconds = m_config.drainS;
    if (m_proxy)
        QMetaObject::invokeMethod(m_proxy, [this, &seconds] { seconds = m_proxy->config()->drainS; },
                                  Qt::BlockingQueuedConnection);
    return seconds * 1000;
}

void ProxyHost::installProxyEventDispatcher()
{
    // epoll on Linux (util/EpollEventDispatcher.h); SWITCHYARD_EVENT_DISPATCHER=qt keeps Qt's own, for
    // comparisons (bench/README.md) and as a way out should the epoll one ever misbehave.
    if (m_proxyThread.eventDispatcher()
        || qEnvironmentVariable("SWITCHYARD_EVENT_DISPATCHER") == QLatin1String("qt"))
        return;
    if (QAbstractEventDispatcher *dispatcher = EpollEventDispatcher::create())
        m_proxyThread.setEventDispatcher(dispatcher);
}

QString ProxyHost::start()
{
    if (!QDir().mkpath(m_config.dataDir))
        return QStringLiteral("cannot create the data directory %1").arg(m_config.dataDir);
    // With SQLite one process owns a data dir at a time; the CLI talks to it through the local API.
    m_lock = std::make_unique<QLockFile>(m_config.dataDir + QStringLiteral("/switchyard.lock"));
    m_lock->setStaleLockTime(0);
    if (!m_lock->tryLock(100)) {
        // Only LockFailedError means another process holds the lock; the others are about the file system.
        if (m_lock->error() != QLockFile::LockFailedError) {
            QString why = Database::describeFileSystemProblem(m_config.dataDir);
            if (why.isEmpty())
                why = m_lock->error() == QLockFile::PermissionError ? QStringLiteral("permission denied")
                                                                     : QStringLiteral("cannot write it");
            return QStringLiteral("cannot create the lock file in the data directory %1: %2")
                .arg(m_config.dataDir, why);
        }
        qint64 pid = 0;
        QString host, app;
        m_lock->getLockInfo(&pid, &host, &app);
        return QStringLiteral("another Switchyard (pid %1) is already running on the data directory %2")
            .arg(pid)
            .arg(m_config.dataDir);
    }
    m_store = std::make_unique<StoreWorker>();
    QString error;
    if (!m_store->start(m_config.databaseLocation(), &error))
        return QStringLiteral("cannot open the database %1: %2")
            .arg(redactDatabaseLocation(m_config.databaseLocation()), error);

    m_secrets = makeSecretStore(m_config, &error);
    if (!m_secrets)
        return error;
    m_secrets->moveToThread(&m_proxyThread);
    m_proxy = new ProxyService(m_config, SystemClock::instance(), m_store.get(), m_secrets);
    if (m_watchOverrides)
        m_proxy->watchConfigFile(*m_watchOverrides, m_watchEnv);
    m_proxy->moveToThread(&m_proxyThread);
    connect(&m_proxyThread, &QThread::finished, m_proxy, &QObject::deleteLater);
    connect(&m_proxyThread, &QThread::finished, m_secrets, &QObject::deleteLater);
    installProxyEventDispatcher();
    m_proxyThread.start();
    QString listenError;
    QMetaObject::invokeMethod(m_proxy, "start", Qt::BlockingQueuedConnection, Q_RETURN_ARG(QString, listenError));
    m_running = true;
    if (listenError.isEmpty()) {
        writeInstanceFile();
        // Measured in bench/ (256 open streams after the c=256 and 10 MiB-body runs): 55 -> 44 MiB RSS.
        startHeapTrim(this, 10 * 1000);
    }
    return listenError;
}

quint16 ProxyHost::port() const
{
    quint16 p = 0;
    if (m_proxy)
        QMetaObject::invokeMethod(m_proxy, [this, &p] { p = m_proxy->port(); }, Qt::BlockingQueuedConnection);
    return p;
}

bool ProxyHost::waitForTurns(int timeoutMs)
{
    QDeadlineTimer deadline(timeoutMs);
    for (;;) {
        int inFlight = 0;
        QMetaObject::invokeMethod(m_proxy, [this, &inFlight] { inFlight = m_proxy->inFlightTurns(); },
                                  Qt::BlockingQueuedConnection);
        if (inFlight == 0)
            return true;
        if (deadline.hasExpired())
            return false;
        QThread::msleep(50);
    }
}

void ProxyHost::writeInstanceFile()
{
    // Where the CLI finds this instance's local API, also when it listens on another port than the config says.
    QHostAddress a = m_config.listenAddress;
    if (a == QHostAddress::Any || a == QHostAddress::AnyIPv4)
        a = QHostAddress::LocalHost;
    else if (a == QHostAddress::AnyIPv6)
        a = QHostAddress::LocalHostIPv6;
    const QString host = a.protocol() == QAbstractSocket::IPv6Protocol ? QLatin1Char('[') + a.toString() + QLatin1Char(']')
                                                                         : a.toString();
    const QJsonObject o{{QStringLiteral("pid"), QCoreApplication::applicationPid()},
                        {QStringLiteral("api"), QStringLiteral("http://%1:%2").arg(host).arg(port())}};
    QSaveFile f(instanceFilePath(m_config));
    if (f.open(QIODevice::WriteOnly)) {
        f.write(QJsonDocument(o).toJson(QJsonDocument::Compact));
        f.commit();
    }
}

QString ProxyHost::instanceFilePath(const Config &config)
{
    return config.dataDir + QStringLiteral("/instance.json");
}

void ProxyHost::shutdown(int drainMs)
{
    if (!m_running)
        return;
    m_running = false;
    QFile::remove(instanceFilePath(m_config));
    QMetaObject::invokeMethod(m_proxy, "stop", Qt::BlockingQueuedConnection);
    // Drain: in-flight turns finish (and are booked) before the threads stop. Turns still running at the
    // deadline are cancelled with an explicit error and booked too; only then do the threads stop.
    if (!waitForTurns(drainMs)) {
        QMetaObject::invokeMethod(m_proxy, "cancelRemainingTurns", Qt::BlockingQueuedConnection);
        waitForTurns(5000);
    }
    QMetaObject::invokeMethod(m_proxy, "finishDrain", Qt::BlockingQueuedConnection);
    m_proxyThread.quit();
    m_proxyThread.wait();
    m_proxy = nullptr;
    m_secrets = nullptr;
    if (m_store)
        m_store->stop();
    m_lock.reset();
}

} // namespace sy::app
