#pragma once

#include "config/Config.h"

#include <QByteArray>
#include <QFileSystemWatcher>
#include <QHash>
#include <QObject>
#include <QTimer>

namespace sy {

class Clock;

// Notices edits of the configuration file made by other processes (the dashboard's Settings page, an editor,
// a script) and loads them with the real loader (loadConfig, same options and environment as at start-up).
// A file system watcher on the file and on its directory (editors and atomic saves replace the file by a
// rename, which drops a watch on the file itself) reacts at once; a 1 s poll comparing existence, mtime, size
// and a hash of the content catches whatever the watcher misses.
//
// A valid file emits configLoaded(). A broken one (unreadable, bad JSON, wrong type, out of range, unknown key,
// an explicitly named file deleted) leaves the last good configuration in force: error() names the file, key
// and problem, it is logged once, and stateChanged() tells the listener. A deleted file at the default path
// means the documented defaults, as at start-up. Lives on one thread (the proxy's); not thread-safe.
class ConfigWatcher : public QObject
{
    Q_OBJECT

public:
    ConfigWatcher(const ConfigOverrides &overrides, const QHash<QString, QString> &env, const Clock &clock,
                  QObject *parent = nullptr);

    // `running` is the configuration in force; a file that changed since it was read is loaded at once.
    void start(const Config &running);
    void stop();
    // Reads the file now if it changed since the last look (what the poll and the watcher call).
    void checkNow();

    QString path() const { return m_path; }
    // The last error, empty while the file in force is the file on disk.
    QString error() const { return m_error; }
    // When the file was last read and found valid (start-up counts).
    qint64 loadedAtMs() const { return m_loadedAtMs; }
    const Config &current() const { return m_current; }
    void setPollIntervalMs(int ms) { m_pollTimer.setInterval(ms); }

signals:
    // A valid file whose settings differ from the last good ones.
    void configLoaded(const sy::Config &config);
    // error(), loadedAtMs() or the file's existence changed.
    void stateChanged();

private:
    struct Fingerprint
    {
        bool exists = false;
        qint64 mtimeMs = 0;
        qint64 size = -1;
        QByteArray hash;
        bool operator==(const Fingerprint &o) const
        {
            return exists == o.exists && mtimeMs == o.mtimeMs && size == o.size && hash == o.hash;
        }
        bool operator!=(const Fingerprint &o) const { return !(*this == o); }
    };
    Fingerprint fingerprint() const;
    void load();
    void rewatch();
    void scheduleCheck();

    ConfigOverrides m_overrides;
    QHash<QString, QString> m_env;
    const Clock &m_clock;
    QString m_path;
    QString m_dir;
    Config m_current;
    QString m_error;
    qint64 m_loadedAtMs = 0;
    Fingerprint m_seen;
    QFileSystemWatcher m_watcher;
    QTimer m_pollTimer;
    QTimer m_settleTimer;
    bool m_running = false;
};

} // namespace sy
