// Launch at login: the XDG autostart entry is written where the spec says, is a valid desktop entry that
// starts this executable (quoted per the spec), and is removed again.
#include "data/Autostart.h"

#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

using namespace sy::ui;

class TestAutostart : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;

    static QString read(const QString &path)
    {
        QFile f(path);
        return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
    }

private slots:
    void writesAValidEntryUnderXdgConfigHomeAndRemovesIt()
    {
        const QString config = m_dir.filePath(QStringLiteral("xdg-config"));
        Autostart autostart({{QStringLiteral("XDG_CONFIG_HOME"), config},
                             {QStringLiteral("HOME"), m_dir.filePath(QStringLiteral("home"))}});
        QCOMPARE(autostart.filePath(), config + QStringLiteral("/autostart/io.github.switchyard.Switchyard.desktop"));
        QVERIFY(!autostart.isEnabled());

        QString error;
        const QString exe = m_dir.filePath(QStringLiteral("my apps/switch$yard \"v2\""));
        QVERIFY2(autostart.setEnabled(true, exe, &error), qPrintable(error));
        QVERIFY(autostart.isEnabled());
        const QString text = read(autostart.filePath());
        QVERIFY2(text.contains(QStringLiteral("Exec=\"") +
                               m_dir.filePath(QStringLiteral("my apps/switch\\$yard \\\"v2\\\"\"\n"))),
                 qPrintable(text));

        QProcess validate;
        validate.start(QStringLiteral("desktop-file-validate"), {autostart.filePath()});
        QVERIFY(validate.waitForFinished(30000));
        QVERIFY2(validate.exitCode() == 0, validate.readAllStandardOutput().constData());

        // Writing again is harmless; disabling removes the file; disabling again is not an error.
        QVERIFY2(autostart.setEnabled(true, exe, &error), qPrintable(error));
        QVERIFY2(autostart.setEnabled(false, exe, &error), qPrintable(error));
        QVERIFY(!QFile::exists(autostart.filePath()));
        QVERIFY(!autostart.isEnabled());
        QVERIFY2(autostart.setEnabled(false, exe, &error), qPrintable(error));
    }

    void fallsBackToHomeDotConfig()
    {
        const QString home = m_dir.filePath(QStringLiteral("home2"));
        Autostart autostart({{QStringLiteral("HOME"), home}});
        QCOMPARE(autostart.filePath(),
                 home + QStringLiteral("/.config/autostart/io.github.switchyard.Switchyard.desktop"));
        QString error;
        QVERIFY2(autostart.setEnabled(true, QStringLiteral("/usr/bin/switchyard"), &error), qPrintable(error));
        QVERIFY(read(autostart.filePath()).contains(QStringLiteral("Exec=\"/usr/bin/switchyard\"\n")));
    }

    void reportsAnUnwritableLocation()
    {
        // XDG_CONFIG_HOME is a file, so the autostart directory cannot be made.
        const QString blocker = m_dir.filePath(QStringLiteral("blocker"));
        QFile f(blocker);
        QVERIFY(f.open(QIODevice::WriteOnly));
        f.close();
        Autostart autostart({{QStringLiteral("XDG_CONFIG_HOME"), blocker}});
        QString error;
        QVERIFY(!autostart.setEnabled(true, QStringLiteral("/usr/bin/switchyard"), &error));
        QVERIFY2(error.contains(blocker), qPrintable(error));
        QVERIFY(!autostart.isEnabled());
    }
};

QTEST_MAIN(TestAutostart)
#include "tst_autostart.moc"
