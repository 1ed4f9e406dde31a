// ConfigWatcher: a running instance notices edits of its configuration file made by another process (DESIGN.md
// "Configuration file"): written in place, replaced by a rename, deleted, broken and repaired, created later.
#include "ManualClock.h"
#include "config/ConfigWatcher.h"

#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <cstdio>

using namespace sy;
using namespace sy::test;

namespace {

bool writeInPlace(const QString &path, const QByteArray &content)
{
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
        return false;
    return f.write(content) == content.size();
}

// What an editor's or QSaveFile's atomic save does: a new file renamed over the old one (a new inode).
bool replaceByRename(const QString &path, const QByteArray &content)
{
    const QString temp = path + QStringLiteral(".tmp");
    if (!writeInPlace(temp, content))
        return false;
    return std::rename(QFile::encodeName(temp).constData(), QFile::encodeName(path).constData()) == 0;
}

QByteArray json(const QJsonObject &o)
{
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

// The environment loadConfig sees: everything under the test's own directory.
QHash<QString, QString> envIn(const QString &root)
{
    return {{QStringLiteral("HOME"), root},
            {QStringLiteral("XDG_CONFIG_HOME"), root + QStringLiteral("/config")},
            {QStringLiteral("XDG_DATA_HOME"), root + QStringLiteral("/data")}};
}

struct Running
{
    ConfigOverrides overrides;
    QHash<QString, QString> env;
    Config config;
};

// Loads the configuration as start-up does; the caller checks `ok`.
Running loadAsAtStart(const ConfigOverrides &overrides, const QHash<QString, QString> &env, bool *ok)
{
    const ConfigResult r = loadConfig(overrides, env);
    *ok = r.ok();
    if (!r.ok())
        qWarning("start-up load failed: %s", qPrintable(r.error));
    return {overrides, env, r.config};
}

} // namespace

class tst_ConfigWatcher : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    ManualClock m_clock;

    QString explicitPath() const { return m_dir.path() + QStringLiteral("/named.json"); }

private slots:
    void init()
    {
        QDir(m_dir.path()).removeRecursively();
        QVERIFY(QDir().mkpath(m_dir.path()));
    }

    void inPlaceRewriteIsApplied()
    {
        QVERIFY(writeInPlace(explicitPath(), json({{QStringLiteral("strategy"), QStringLiteral("round_robin")}})));
        ConfigOverrides overrides;
        overrides.configFile = explicitPath();
        bool ok = false;
        const Running start = loadAsAtStart(overrides, envIn(m_dir.path()), &ok);
        QVERIFY(ok);
        ConfigWatcher watcher(start.overrides, start.env, m_clock);
        QSignalSpy loaded(&watcher, &ConfigWatcher::configLoaded);
        watcher.start(start.config);
        QCOMPARE(loaded.count(), 0); // nothing changed since start-up's read
        const qint64 firstLoad = watcher.loadedAtMs();

        m_clock.advance(5000);
        QVERIFY(writeInPlace(explicitPath(), json({{QStringLiteral("strategy"), QStringLiteral("fill_first")},
                                                   {QStringLiteral("slots_per_account"), 9}})));
        QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 10000);
        const Config c = loaded.first().first().value<Config>();
        QCOMPARE(c.strategy, QStringLiteral("fill_first"));
        QCOMPARE(c.slotsPerAccount, 9);
        QCOMPARE(watcher.current().strategy, QStringLiteral("fill_first"));
        QVERIFY(watcher.error().isEmpty());
        QCOMPARE(watcher.loadedAtMs(), firstLoad + 5000);
    }

    void replacementByRenameIsApplied()
    {
        QVERIFY(writeInPlace(explicitPath(), json({{QStringLiteral("slots_per_account"), 2}})));
        ConfigOverrides overrides;
        overrides.configFile = explicitPath();
        bool ok = false;
        const Running start = loadAsAtStart(overrides, envIn(m_dir.path()), &ok);
        QVERIFY(ok);
        ConfigWatcher watcher(start.overrides, start.env, m_clock);
        QSignalSpy loaded(&watcher, &ConfigWatcher::configLoaded);
        watcher.start(start.config);

        // Twice: the first rename drops the watch on the old inode; the second must still be seen.
        QVERIFY(replaceByRename(explicitPath(), json({{QStringLiteral("slots_per_account"), 3}})));
        QTRY_COMPARE_WITH_TIMEOUT(watcher.current().slotsPerAccount, 3, 10000);
        QVERIFY(replaceByRename(explicitPath(), json({{QStringLiteral("slots_per_account"), 4}})));
        QTRY_COMPARE_WITH_TIMEOUT(watcher.current().slotsPerAccount, 4, 10000);
        QCOMPARE(loaded.count(), 2);
    }

    void brokenFileKeepsTheLastGoodOneUntilRepaired()
    {
        QVERIFY(writeInPlace(explicitPath(), json({{QStringLiteral("slots_per_account"), 2}})));
        ConfigOverrides overrides;
        overrides.configFile = explicitPath();
        bool ok = false;
        const Running start = loadAsAtStart(overrides, envIn(m_dir.path()), &ok);
        QVERIFY(ok);
        ConfigWatcher watcher(start.overrides, start.env, m_clock);
        QSignalSpy loaded(&watcher, &ConfigWatcher::configLoaded);
        watcher.start(start.config);
        const qint64 goodLoad = watcher.loadedAtMs();

        // A wrong type: named with file and key; never replaced by the default (4).
        m_clock.advance(1000);
        QVERIFY(writeInPlace(explicitPath(), json({{QStringLiteral("slots_per_account"), QStringLiteral("many")}})));
        QTRY_VERIFY_WITH_TIMEOUT(!watcher.error().isEmpty(), 10000);
        QVERIFY2(watcher.error().contains(explicitPath()), qPrintable(watcher.error()));
        QVERIFY2(watcher.error().contains(QLatin1String("slots_per_account")), qPrintable(watcher.error()));
        QCOMPARE(watcher.current().slotsPerAccount, 2);
        QCOMPARE(watcher.loadedAtMs(), goodLoad);

        // Not JSON at all.
        QVERIFY(writeInPlace(explicitPath(), QByteArrayLiteral("{\"slots_per_account\": 7,")));
        QTRY_VERIFY_WITH_TIMEOUT(watcher.error().contains(QLatin1String("invalid JSON")), 10000);
        QCOMPARE(watcher.current().slotsPerAccount, 2);
        QCOMPARE(loaded.count(), 0);

        QVERIFY(writeInPlace(explicitPath(), json({{QStringLiteral("slots_per_account"), 6}})));
        QTRY_COMPARE_WITH_TIMEOUT(watcher.current().slotsPerAccount, 6, 10000);
        QVERIFY(watcher.error().isEmpty());
        QCOMPARE(loaded.count(), 1);
        QVERIFY(watcher.loadedAtMs() > goodLoad);
    }

    void deletedNamedFileIsAnError()
    {
        QVERIFY(writeInPlace(explicitPath(), json({{QStringLiteral("slots_per_account"), 2}})));
        ConfigOverrides overrides;
        overrides.configFile = explicitPath();
        bool ok = false;
        const Running start = loadAsAtStart(overrides, envIn(m_dir.path()), &ok);
        QVERIFY(ok);
        ConfigWatcher watcher(start.overrides, start.env, m_clock);
        QSignalSpy loaded(&watcher, &ConfigWatcher::configLoaded);
        watcher.start(start.config);

        QVERIFY(QFile::remove(explicitPath()));
        QTRY_VERIFY_WITH_TIMEOUT(watcher.error().contains(QLatin1String("does not exist")), 10000);
        QCOMPARE(watcher.current().slotsPerAccount, 2);
        QCOMPARE(loaded.count(), 0);

        // Written again (a new file: the old watch is gone with the old inode).
        QVERIFY(writeInPlace(explicitPath(), json({{QStringLiteral("slots_per_account"), 3}})));
        QTRY_COMPARE_WITH_TIMEOUT(watcher.current().slotsPerAccount, 3, 10000);
        QVERIFY(watcher.error().isEmpty());
    }

    void deletedDefaultFileMeansDefaults()
    {
        const QHash<QString, QString> env = envIn(m_dir.path());
        const QString path = configFilePath({}, env);
        QVERIFY(QDir().mkpath(QFileInfo(path).absolutePath()));
        QVERIFY(writeInPlace(path, json({{QStringLiteral("slots_per_account"), 7},
                                         {QStringLiteral("strategy"), QStringLiteral("round_robin")}})));
        bool ok = false;
        const Running start = loadAsAtStart({}, env, &ok);
        QVERIFY(ok);
        QCOMPARE(start.config.slotsPerAccount, 7);
        ConfigWatcher watcher(start.overrides, start.env, m_clock);
        QCOMPARE(watcher.path(), path);
        QSignalSpy loaded(&watcher, &ConfigWatcher::configLoaded);
        watcher.start(start.config);

        QVERIFY(QFile::remove(path));
        QTRY_COMPARE_WITH_TIMEOUT(loaded.count(), 1, 10000);
        const Config defaults;
        QCOMPARE(watcher.current().slotsPerAccount, defaults.slotsPerAccount);
        QCOMPARE(watcher.current().strategy, defaults.strategy);
        QVERIFY(watcher.error().isEmpty());
    }

    // No directory to watch at start (nothing at the default path yet): the poll finds the file once it appears.
    void fileCreatedLaterIsFoundByThePoll()
    {
        const QHash<QString, QString> env = envIn(m_dir.path());
        const QString path = configFilePath({}, env);
        QVERIFY(!QFileInfo::exists(QFileInfo(path).absolutePath()));
        bool ok = false;
        const Running start = loadAsAtStart({}, env, &ok);
        QVERIFY(ok);
        ConfigWatcher watcher(start.overrides, start.env, m_clock);
        watcher.start(start.config);

        QVERIFY(QDir().mkpath(QFileInfo(path).absolutePath()));
        QVERIFY(writeInPlace(path, json({{QStringLiteral("gate_max_waiters"), 17}})));
        QTRY_COMPARE_WITH_TIMEOUT(watcher.current().gateMaxWaiters, 17, 10000);
    }

    // A rewrite that keeps size and modification time is still a change: the content hash tells.
    void sameSizeSameMtimeRewriteIsSeen()
    {
        QVERIFY(writeInPlace(explicitPath(), json({{QStringLiteral("slots_per_account"), 5}})));
        ConfigOverrides overrides;
        overrides.configFile = explicitPath();
        bool ok = false;
        const Running start = loadAsAtStart(overrides, envIn(m_dir.path()), &ok);
        QVERIFY(ok);
        ConfigWatcher watcher(start.overrides, start.env, m_clock);
        watcher.start(start.config);
        const QDateTime mtime = QFileInfo(explicitPath()).lastModified();

        QVERIFY(writeInPlace(explicitPath(), json({{QStringLiteral("slots_per_account"), 6}})));
        {
            QFile f(explicitPath());
            QVERIFY(f.open(QIODevice::ReadWrite));
            QVERIFY(f.setFileTime(mtime, QFileDevice::FileModificationTime));
        }
        QCOMPARE(QFileInfo(explicitPath()).lastModified(), mtime);
        QTRY_COMPARE_WITH_TIMEOUT(watcher.current().slotsPerAccount, 6, 10000);
    }

    void restartOnlyKeysAreClassified()
    {
        Config running;
        Config edited = running;
        edited.listenPort = 9999;
        edited.strategy = QStringLiteral("fill_first");
        edited.budgets.requestTotalS = 30;
        edited.egress.defaultPool = QStringLiteral("main");
        const QStringList keys = differingFileKeys(running, edited);
        QCOMPARE(keys, (QStringList{QStringLiteral("listen"), QStringLiteral("strategy"),
                                    QStringLiteral("request_total_s"), QStringLiteral("egress_default_pool")}));
        QVERIFY(isRestartOnlyKey(QStringLiteral("listen")));
        QVERIFY(isRestartOnlyKey(QStringLiteral("egress_default_pool")));
        QVERIFY(!isRestartOnlyKey(QStringLiteral("strategy")));
        QVERIFY(!isRestartOnlyKey(QStringLiteral("request_total_s")));
        keepRestartOnlySettings(running, &edited);
        QCOMPARE(differingFileKeys(running, edited),
                 (QStringList{QStringLiteral("strategy"), QStringLiteral("request_total_s")}));
    }
};

QTEST_GUILESS_MAIN(tst_ConfigWatcher)
#include "tst_config_watcher.moc"
