// One tray app per data dir: a second launch raises the first one's dashboard and exits; another data dir
// gets its own instance. `serve` on a port somebody else holds fails with a message naming the port.
#include "data/SingleInstance.h"

#include <QDir>
#include <QFile>
#include <QLocalServer>
#include <QLocalSocket>
#include <QProcess>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTest>
#include <future>

using namespace sy;
using namespace sy::ui;

class TestSingleInstance : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_keyFile;

    QProcessEnvironment environment(const QString &dataDir) const
    {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        env.insert(QStringLiteral("HOME"), m_dir.path());
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), m_dir.filePath(QStringLiteral("config")));
        env.insert(QStringLiteral("SWITCHYARD_DATA_DIR"), dataDir);
        env.insert(QStringLiteral("SWITCHYARD_CONFIG"), m_dir.filePath(QStringLiteral("config.json")));
        env.insert(QStringLiteral("SWITCHYARD_UPSTREAM_URL"), QStringLiteral("http://127.0.0.1:9/backend-api"));
        env.insert(QStringLiteral("SWITCHYARD_SECRET_BACKEND"), QStringLiteral("database"));
        env.insert(QStringLiteral("SWITCHYARD_SECRET_KEY_FILE"), m_keyFile);
        return env;
    }

    void launch(QProcess &p, const QString &dataDir, const QStringList &args = {})
    {
        p.setProcessEnvironment(environment(dataDir));
        p.start(qEnvironmentVariable("SWITCHYARD_BIN"),
                QStringList{QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0")} + args);
        QVERIFY2(p.waitForStarted(10000), qPrintable(p.errorString()));
    }

    // Whether an instance listens for `dataDir` (connects only: asking would raise its dashboard).
    static bool accepts(const QString &dataDir)
    {
        QLocalSocket socket;
        socket.connectToServer(SingleInstance::serverName(dataDir));
        return socket.waitForConnected(1000);
    }

    static void stop(QProcess &p)
    {
        if (p.state() == QProcess::NotRunning)
            return;
        p.terminate();
        if (!p.waitForFinished(30000)) {
            p.kill();
            p.waitForFinished();
        }
    }

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        m_keyFile = m_dir.filePath(QStringLiteral("secret.key"));
        QFile key(m_keyFile);
        QVERIFY(key.open(QIODevice::WriteOnly));
        key.write(QByteArray(64, 'b'));
        key.close();
        QVERIFY(key.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner));
        QFile config(m_dir.filePath(QStringLiteral("config.json")));
        QVERIFY(config.open(QIODevice::WriteOnly));
        config.write("{}\n");
    }

    void nameFollowsTheDataDir()
    {
        const QString a = m_dir.filePath(QStringLiteral("a"));
        QVERIFY(QDir().mkpath(a));
        QCOMPARE(SingleInstance::serverName(a), SingleInstance::serverName(a + QStringLiteral("/")));
        QCOMPARE(SingleInstance::serverName(a), SingleInstance::serverName(a + QStringLiteral("/../a")));
        QVERIFY(SingleInstance::serverName(a) != SingleInstance::serverName(m_dir.filePath(QStringLiteral("b"))));
    }

    void secondInstanceActivatesTheFirst()
    {
        const QString dir = m_dir.filePath(QStringLiteral("inproc"));
        SingleInstance first(dir);
        QVERIFY(!first.activateRunning(500));
        QVERIFY2(first.listen(), qPrintable(first.errorString()));
        QSignalSpy raised(&first, &SingleInstance::activationRequested);
        // The second one blocks while it asks, so it asks from another thread; this one keeps serving.
        auto second = std::async(std::launch::async, [dir] { return SingleInstance(dir).activateRunning(20000); });
        QTRY_VERIFY_WITH_TIMEOUT(second.wait_for(std::chrono::seconds(0)) == std::future_status::ready, 30000);
        QVERIFY(second.get());
        QCOMPARE(raised.size(), 1);
    }

    void somethingElseUnderTheNameIsNotAnInstance()
    {
        const QString dir = m_dir.filePath(QStringLiteral("impostor"));
        QLocalServer impostor;
        QVERIFY(impostor.listen(SingleInstance::serverName(dir)));
        QObject::connect(&impostor, &QLocalServer::newConnection, &impostor, [&impostor] {
            if (QLocalSocket *s = impostor.nextPendingConnection())
                s->write("hello\n");
        });
        auto probe = std::async(std::launch::async, [dir] { return SingleInstance(dir).activateRunning(2000); });
        QTRY_VERIFY_WITH_TIMEOUT(probe.wait_for(std::chrono::seconds(0)) == std::future_status::ready, 30000);
        QVERIFY(!probe.get());
    }

    void secondLaunchRaisesTheFirstDashboard()
    {
        const QString dataDir = m_dir.filePath(QStringLiteral("data1"));
        QProcess first;
        launch(first, dataDir);
        QTRY_VERIFY_WITH_TIMEOUT(accepts(dataDir) || first.state() == QProcess::NotRunning, 60000);
        QVERIFY2(first.state() == QProcess::Running, first.readAllStandardError().constData());

        QProcess second;
        launch(second, dataDir);
        QVERIFY(second.waitForFinished(60000));
        const QByteArray secondErr = second.readAllStandardError();
        QCOMPARE(second.exitCode(), 0);
        QVERIFY2(secondErr.contains("already running"), secondErr.constData());
        QVERIFY2(!secondErr.contains("serving"), secondErr.constData());

        QByteArray firstErr;
        QTRY_VERIFY_WITH_TIMEOUT((firstErr += first.readAllStandardError()).count("asked for the dashboard") == 1,
                                 30000);
        QCOMPARE(first.state(), QProcess::Running);

        // Another data dir is another instance: it starts its own proxy and answers under its own name.
        const QString otherDir = m_dir.filePath(QStringLiteral("data2"));
        QProcess other;
        launch(other, otherDir);
        QTRY_VERIFY_WITH_TIMEOUT(accepts(otherDir) || other.state() == QProcess::NotRunning, 60000);
        QVERIFY2(other.state() == QProcess::Running, other.readAllStandardError().constData());
        QCOMPARE((firstErr += first.readAllStandardError()).count("asked for the dashboard"), 1);
        stop(other);
        stop(first);
    }

    void serveOnABusyPortNamesThePort()
    {
        QTcpServer squatter;
        QVERIFY(squatter.listen(QHostAddress::LocalHost, 0));
        const QString port = QString::number(squatter.serverPort());
        QProcess serve;
        serve.setProcessEnvironment(environment(m_dir.filePath(QStringLiteral("data3"))));
        serve.start(qEnvironmentVariable("SWITCHYARD_BIN"),
                    {QStringLiteral("serve"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:") + port});
        QVERIFY(serve.waitForFinished(60000));
        const QString err = QString::fromUtf8(serve.readAllStandardError());
        QCOMPARE(serve.exitCode(), 1);
        QVERIFY2(err.contains(QStringLiteral("port %1 on 127.0.0.1 is already in use").arg(port)), qPrintable(err));
    }
};

QTEST_MAIN(TestSingleInstance)
#include "tst_single_instance.moc"
