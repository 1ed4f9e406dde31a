// Builds the Debian package with CPack, installs it with apt-get, runs the installed binary against the fake
// upstream and removes the package again. It changes the machine (that is the point), so it needs root: CI runs
// it as root on a throwaway machine, and anywhere else it fails with a message rather than pretending.
#include "lib/CodexRequests.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/HttpTestClient.h"
#include "lib/ProxyProcess.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <memory>
#include <unistd.h>

using namespace sy;
using namespace sy::test;

namespace {

const QString kInstalled = QStringLiteral("/usr/bin/switchyard");

struct Run
{
    int exitCode = -1;
    QByteArray out;
    QByteArray err;
};

Run run(const QString &program, const QStringList &args, int timeoutMs = 300000)
{
    QProcess p;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("DEBIAN_FRONTEND"), QStringLiteral("noninteractive"));
    p.setProcessEnvironment(env);
    p.start(program, args);
    Run r;
    if (!p.waitForStarted(10000)) {
        r.err = p.errorString().toUtf8();
        return r;
    }
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
        r.err = "timed out";
        return r;
    }
    r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    return r;
}

// Other apt users on the machine hold the dpkg lock for a while; wait for it rather than failing.
QStringList aptArgs(const QStringList &args)
{
    return QStringList{QStringLiteral("-o"), QStringLiteral("DPkg::Lock::Timeout=300"), QStringLiteral("-y")} + args;
}

} // namespace

class TestPackageInstall : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    QString m_deb;
    bool m_installed = false;

private slots:
    void initTestCase()
    {
        QVERIFY2(geteuid() == 0, "this test installs the .deb with apt-get and must run as root (CI does); run it "
                                 "as root on a throwaway machine or container");
        QVERIFY(m_dir.isValid());
    }

    void buildsThePackage()
    {
        const QString config = qEnvironmentVariable("SWITCHYARD_CPACK_CONFIG");
        QVERIFY2(QFile::exists(config), qPrintable(QStringLiteral("no CPack config at '%1'").arg(config)));
        const Run r =
            run(QStringLiteral("cpack"), {QStringLiteral("-G"), QStringLiteral("DEB"), QStringLiteral("--config"),
                                          config, QStringLiteral("-B"), m_dir.path()});
        QVERIFY2(r.exitCode == 0, QByteArray(r.out + r.err).constData());
        const QStringList debs = QDir(m_dir.path()).entryList({QStringLiteral("switchyard_*.deb")}, QDir::Files);
        QCOMPARE(debs.size(), 1);
        m_deb = m_dir.filePath(debs.first());
    }

    void packageDeclaresRunTimeDependencies()
    {
        QVERIFY(!m_deb.isEmpty());
        const Run fields = run(QStringLiteral("dpkg-deb"),
                               {QStringLiteral("-f"), m_deb, QStringLiteral("Depends"), QStringLiteral("Recommends")});
        QCOMPARE(fields.exitCode, 0);
        const QByteArray f = fields.out;
        // Found by dpkg-shlibdeps from what the binary links...
        QVERIFY2(f.contains("libqt6core6"), f.constData());
        QVERIFY2(f.contains("libqt6keychain1"), f.constData());
        QVERIFY2(f.contains("libsodium"), f.constData());
        // ...and named explicitly because Qt and QtKeychain load them at run time.
        QVERIFY2(f.contains("libqt6sql6-sqlite"), f.constData());
        QVERIFY2(f.contains("libqt6svg6"), f.constData());
        QVERIFY2(f.contains("libsecret-1-0"), f.constData());
        QVERIFY2(f.contains("Recommends: gnome-keyring"), f.constData());

        const Run contents = run(QStringLiteral("dpkg-deb"), {QStringLiteral("-c"), m_deb});
        QCOMPARE(contents.exitCode, 0);
        for (const char *path :
             {"./usr/bin/switchyard", "./usr/share/applications/io.github.switchyard.Switchyard.desktop",
              "./usr/share/metainfo/io.github.switchyard.Switchyard.metainfo.xml",
              "./usr/share/icons/hicolor/scalable/apps/io.github.switchyard.Switchyard.svg",
              "./usr/lib/systemd/user/switchyard.service"})
            QVERIFY2(contents.out.contains(path), qPrintable(QString::fromLatin1(path) + QStringLiteral(" missing:\n") +
                                                             QString::fromUtf8(contents.out)));
    }

    void installsRunsAndRemoves()
    {
        QVERIFY(!m_deb.isEmpty());
        const Run install = run(QStringLiteral("apt-get"), aptArgs({QStringLiteral("install"), m_deb}));
        QVERIFY2(install.exitCode == 0, QByteArray(install.out + install.err).constData());
        m_installed = true;
        QVERIFY(QFile::exists(kInstalled));

        // The user unit is well-formed and its ExecStart names the installed binary.
        const Run unit =
            run(QStringLiteral("systemd-analyze"),
                {QStringLiteral("verify"), QStringLiteral("/usr/lib/systemd/user/switchyard.service")}, 60000);
        QVERIFY2(unit.exitCode == 0, QByteArray(unit.out + unit.err).constData());

        const Run version = run(kInstalled, {QStringLiteral("--version")}, 30000);
        QCOMPARE(version.exitCode, 0);
        QCOMPARE(version.out.trimmed(), QByteArray("switchyard " SWITCHYARD_VERSION));

        {
            // The installed binary serves one request end to end (accounts imported by the installed CLI too).
            qputenv("SWITCHYARD_BIN", kInstalled.toUtf8());
            FakeUpstreamProcess fake;
            QVERIFY2(fake.start(), qPrintable(fake.errorString()));
            ProxyProcess proxy;
            proxy.setBinary(kInstalled);
            // Secrets in the database (no keyring daemon needed here), under a throwaway key.
            QFile key(m_dir.filePath(QStringLiteral("secret.key")));
            QVERIFY(key.open(QIODevice::WriteOnly));
            key.write(QByteArray(64, 'a'));
            key.close();
            QVERIFY(key.setPermissions(QFileDevice::ReadOwner | QFileDevice::WriteOwner));
            proxy.setEnv(QStringLiteral("SWITCHYARD_SECRET_BACKEND"), QStringLiteral("database"));
            proxy.setEnv(QStringLiteral("SWITCHYARD_SECRET_KEY_FILE"), key.fileName());
            QVERIFY2(proxy.addAccounts(1), qPrintable(proxy.errorString()));
            QVERIFY2(proxy.start(fake.baseUrl()), qPrintable(proxy.errorString()));
            const SseResult r = sseRequest("POST", QUrl(proxy.url(QStringLiteral("/backend-api/codex/responses"))),
                                           kCodexHeaders, codexBody(QStringLiteral("ECHO: from the package")));
            QCOMPARE(r.status, 200);
            QCOMPARE(r.eventTypes().constLast(), QByteArrayLiteral("response.completed"));
            QCOMPARE(fake.log().size(), 1);
            QCOMPARE(proxy.stop(), 0);
        }

        const Run remove =
            run(QStringLiteral("apt-get"), aptArgs({QStringLiteral("remove"), QStringLiteral("switchyard")}));
        QVERIFY2(remove.exitCode == 0, QByteArray(remove.out + remove.err).constData());
        m_installed = false;
        QVERIFY(!QFile::exists(kInstalled));
        QVERIFY(!QFile::exists(QStringLiteral("/usr/share/applications/io.github.switchyard.Switchyard.desktop")));
    }

    void cleanupTestCase()
    {
        if (m_installed)
            run(QStringLiteral("apt-get"), aptArgs({QStringLiteral("remove"), QStringLiteral("switchyard")}));
    }
};

QTEST_GUILESS_MAIN(TestPackageInstall)
#include "tst_package_install.moc"
