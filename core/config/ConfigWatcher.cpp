#include "config/ConfigWatcher.h"

#include "util/Clock.h"

#include <QCryptographicHash>
#include <QFile>
#include <QFileInfo>
#include <QLoggingCategory>

Q_LOGGING_CATEGORY(lcConfig, "switchyard.config")

namespace sy {

ConfigWatcher::ConfigWatcher(const ConfigOverrides &overrides, const QHash<QString, QString> &env, const Clock &clock,
                             QObject *parent)
    : QObject(parent), m_overrides(overrides), m_env(env), m_clock(clock), m_watcher(this), m_pollTimer(this),
      m_settleTimer(this)
{
    m_path = configFilePath(overrides, env);
    m_dir = QFileInfo(m_path).absolutePath();
    m_pollTimer.setInterval(1000);
    connect(&m_pollTimer, &QTimer::timeout, this, &ConfigWatcher::checkNow);
    // Saving is rarely one event (truncate then write, or write a temporary then rename): look once they settle.
    m_settleTimer.setSingleShot(true);
    m_settleTimer.setInterval(50);
    connect(&m_settleTimer, &QTimer::timeout, this, &ConfigWatcher::checkNow);
    connect(&m_watcher, &QFileSystemWatcher::fileChanged, this, &ConfigWatcher::scheduleCheck);
    connect(&m_watcher, &QFileSystemWatcher::directoryChanged, this, &ConfigWatcher::scheduleCheck);
}

void ConfigWatcher::start(const Config &running)
{
    m_current = running;
    m_loadedAtMs = m_clock.nowMs();
    m_running = true;
    rewatch();
    m_pollTimer.start();
    // The file may have changed between start-up's read and now: one look closes that gap.
    load();
}

void ConfigWatcher::stop()
{
    m_running = false;
    m_pollTimer.stop();
    m_settleTimer.stop();
    const QStringList watched = m_watcher.files() + m_watcher.directories();
    if (!watched.isEmpty())
        m_watcher.removePaths(watched);
}

void ConfigWatcher::scheduleCheck()
{
    if (m_running)
        m_settleTimer.start();
}

void ConfigWatcher::checkNow()
{
    if (!m_running)
        return;
    rewatch();
    if (fingerprint() != m_seen)
        load();
}

void ConfigWatcher::rewatch()
{
    // A rename over the file (atomic save) or a deletion removes the file's watch; the directory's stays.
    if (!m_watcher.directories().contains(m_dir) && QFileInfo(m_dir).isDir())
        m_watcher.addPath(m_dir);
    if (!m_watcher.files().contains(m_path) && QFileInfo::exists(m_path))
        m_watcher.addPath(m_path);
}

ConfigWatcher::Fingerprint ConfigWatcher::fingerprint() const
{
    Fingerprint f;
    const QFileInfo info(m_path);
    f.exists = info.exists();
    if (!f.exists)
        return f;
    f.mtimeMs = info.lastModified().toMSecsSinceEpoch();
    f.size = info.size();
    // The hash catches a rewrite within the file system's timestamp granularity that keeps the size.
    QFile file(m_path);
    if (file.open(QIODevice::ReadOnly))
        f.hash = QCryptographicHash::hash(file.readAll(), QCryptographicHash::Sha256);
    return f;
}

void ConfigWatcher::load()
{
    // Fingerprint first: a write landing between the two is seen as a change by the next look.
    m_seen = fingerprint();
    const ConfigResult r = loadConfig(m_overrides, m_env);
    if (!r.ok()) {
        if (r.error != m_error) {
            m_error = r.error;
            qCWarning(lcConfig).noquote() << "configuration not applied, the last good one stays in force:" << m_error;
            emit stateChanged();
        }
        return;
    }
    if (!m_error.isEmpty())
        qCInfo(lcConfig).noquote() << "configuration file" << m_path << "is valid again";
    m_error.clear();
    m_loadedAtMs = m_clock.nowMs();
    const QStringList changed = differingFileKeys(m_current, r.config);
    m_current = r.config;
    emit stateChanged();
    if (!changed.isEmpty())
        emit configLoaded(m_current);
}

} // namespace sy
