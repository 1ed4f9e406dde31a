// SWITCHYARD_NEEDS_KEYRING: ctest runs this inside tools/with-keyring.sh (a private D-Bus session with an
// unlocked gnome-keyring), so it talks to a real Secret Service and never to the user's keychain.
//
// The failure cases (a keychain that never answers, no D-Bus at all) run in child processes of this same
// binary: GDBus keeps one session-bus connection per process, so a broken bus address only takes effect
// in a fresh process.
#include "accounts/KeychainSecretStore.h"

#include <QCoreApplication>
#include <QDirIterator>
#include <QElapsedTimer>
#include <QLocalServer>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

using namespace sy;

namespace {

const char kChildVariable[] = "SWITCHYARD_KEYCHAIN_CHILD";

AuthTokens sampleTokens(const QString &tag)
{
    return {QStringLiteral("access-") + tag + QStringLiteral("-a1b2c3d4e5"),
            QStringLiteral("refresh-") + tag + QStringLiteral("-f6a7b8c9d0"),
            QStringLiteral("eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.id-") + tag};
}

// What the Secret Service holds for a key, read with libsecret's own command line tool.
QByteArray secretToolLookup(const QString &key)
{
    QProcess p;
    p.start(QStringLiteral("secret-tool"), {QStringLiteral("lookup"), QStringLiteral("server"),
                                            QStringLiteral("switchyard"), QStringLiteral("user"), key});
    if (!p.waitForFinished(10000))
        return "<secret-tool hung>";
    return p.readAllStandardOutput();
}

struct ChildRun
{
    int exitCode = -1;
    QByteArray output;
    qint64 elapsedMs = 0;
};

ChildRun runChild(const QString &testFunction, const QString &busAddress)
{
    QProcess child;
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QString::fromLatin1(kChildVariable), QStringLiteral("1"));
    env.insert(QStringLiteral("DBUS_SESSION_BUS_ADDRESS"), busAddress);
    env.remove(QStringLiteral("DISPLAY"));
    child.setProcessEnvironment(env);
    child.setProcessChannelMode(QProcess::MergedChannels);
    QElapsedTimer timer;
    timer.start();
    child.start(QCoreApplication::applicationFilePath(), {testFunction});
    ChildRun run;
    if (!child.waitForFinished(30000)) {
        child.kill();
        child.waitForFinished();
        run.output = "child did not finish within 30 s\n";
    }
    run.elapsedMs = timer.elapsed();
    run.exitCode = child.exitStatus() == QProcess::NormalExit ? child.exitCode() : -1;
    run.output += child.readAll();
    return run;
}

} // namespace

// Runs in the child processes only.
class tst_KeychainChild : public QObject
{
    Q_OBJECT

private slots:
    void noKeychainWithoutBus()
    {
        KeychainSecretStore store;
        QElapsedTimer timer;
        timer.start();
        const SecretOutcome write =
            store.writeTokensBlocking(QStringLiteral("acc_nobus"), sampleTokens(QStringLiteral("n")));
        QVERIFY(!write.ok);
        QCOMPARE(write.error, SecretError::NoBackend);
        QVERIFY2(write.errorText.startsWith(
                     QStringLiteral("no secure keychain available (Secret Service / D-Bus not reachable): ")),
                 qPrintable(write.errorText));
        QVERIFY2(!write.errorText.contains(QStringLiteral("refresh-n")), qPrintable(write.errorText));
        QCOMPARE(store.readTokensBlocking(QStringLiteral("acc_nobus"), nullptr).error, SecretError::NoBackend);
        QCOMPARE(store.removeTokensBlocking(QStringLiteral("acc_nobus")).error, SecretError::NoBackend);
        QVERIFY2(timer.elapsed() < 3000, qPrintable(QString::number(timer.elapsed())));
    }

    void timeoutWhenKeychainHangs()
    {
        KeychainSecretStore store(nullptr, 500);
        QElapsedTimer timer;
        timer.start();
        std::optional<SecretOutcome> outcome;
        store.readTokens(QStringLiteral("acc_hang"), [&](const SecretOutcome &o, const AuthTokens &) { outcome = o; });
        QTRY_VERIFY_WITH_TIMEOUT(outcome.has_value(), 5000);
        QCOMPARE(outcome->error, SecretError::Timeout);
        QVERIFY2(outcome->errorText.contains(QStringLiteral("did not answer within 500 ms while reading tokens")),
                 qPrintable(outcome->errorText));
        QVERIFY(timer.elapsed() >= 450);

        // The blocking helper has its own bound too (the CLI's 10 s default, shortened here).
        KeychainSecretStore patient(nullptr, 60000);
        const SecretOutcome blocked =
            patient.writeTokensBlocking(QStringLiteral("acc_hang"), sampleTokens(QStringLiteral("h")), 300);
        QCOMPARE(blocked.error, SecretError::Timeout);
        QVERIFY2(blocked.errorText.contains(QStringLiteral("within 0.3 s while writing tokens")),
                 qPrintable(blocked.errorText));
        QVERIFY(timer.elapsed() < 5000);
    }
};

class tst_Keychain : public QObject
{
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY2(!qEnvironmentVariableIsEmpty("DBUS_SESSION_BUS_ADDRESS"),
                 "run through tools/with-keyring.sh (ctest does)");
    }

    void writeReadRemoveRoundTrip()
    {
        KeychainSecretStore store;
        const QString id = QStringLiteral("acc_roundtrip");
        const AuthTokens first = sampleTokens(QStringLiteral("one"));
        SecretOutcome outcome = store.writeTokensBlocking(id, first);
        QVERIFY2(outcome.ok, qPrintable(outcome.errorText));

        AuthTokens read;
        outcome = store.readTokensBlocking(id, &read);
        QVERIFY2(outcome.ok, qPrintable(outcome.errorText));
        QCOMPARE(read, first);

        // Stored as one JSON blob under service "switchyard", key "account/<id>".
        AuthTokens fromKeyring;
        QString error;
        QVERIFY2(deserializeTokens(secretToolLookup(QStringLiteral("account/") + id), &fromKeyring, &error),
                 qPrintable(error));
        QCOMPARE(fromKeyring, first);

        const AuthTokens second = sampleTokens(QStringLiteral("two"));
        QVERIFY(store.writeTokensBlocking(id, second).ok);
        QVERIFY(store.readTokensBlocking(id, &read).ok);
        QCOMPARE(read, second);

        QVERIFY(store.removeTokensBlocking(id).ok);
        outcome = store.readTokensBlocking(id, &read);
        QVERIFY(!outcome.ok);
        QCOMPARE(outcome.error, SecretError::NotFound);
        QVERIFY(secretToolLookup(QStringLiteral("account/") + id).isEmpty());
        QVERIFY2(store.removeTokensBlocking(id).ok, "removing what is gone succeeds");
    }

    void accountsAreSeparateEntries()
    {
        KeychainSecretStore store;
        QVERIFY(store.writeTokensBlocking(QStringLiteral("acc_a"), sampleTokens(QStringLiteral("a"))).ok);
        QVERIFY(store.writeTokensBlocking(QStringLiteral("acc_b"), sampleTokens(QStringLiteral("b"))).ok);
        QVERIFY(store.removeTokensBlocking(QStringLiteral("acc_a")).ok);
        AuthTokens read;
        QCOMPARE(store.readTokensBlocking(QStringLiteral("acc_a"), &read).error, SecretError::NotFound);
        QVERIFY(store.readTokensBlocking(QStringLiteral("acc_b"), &read).ok);
        QCOMPARE(read, sampleTokens(QStringLiteral("b")));
        QVERIFY(store.removeTokensBlocking(QStringLiteral("acc_b")).ok);
    }

    void callbacksArriveLaterOnTheStoreThread()
    {
        KeychainSecretStore store;
        bool written = false;
        store.writeTokens(QStringLiteral("acc_async"), sampleTokens(QStringLiteral("c")), [&](const SecretOutcome &o) {
            QVERIFY(o.ok);
            QCOMPARE(QThread::currentThread(), store.thread());
            written = true;
        });
        QVERIFY(!written);
        QTRY_VERIFY_WITH_TIMEOUT(written, 10000);
        QVERIFY(store.removeTokensBlocking(QStringLiteral("acc_async")).ok);
    }

    void noPlaintextCopyAnywhereInHome()
    {
        KeychainSecretStore store;
        const AuthTokens tokens = sampleTokens(QStringLiteral("plaintextprobe"));
        QVERIFY(store.writeTokensBlocking(QStringLiteral("acc_plain"), tokens).ok);
        // with-keyring.sh gives us a throwaway HOME holding the keyring files and any QSettings fallback.
        const QString home = qEnvironmentVariable("HOME");
        QVERIFY(!home.isEmpty());
        QDirIterator it(home, QDir::Files | QDir::Hidden | QDir::NoSymLinks, QDirIterator::Subdirectories);
        int scanned = 0;
        bool sawKeyring = false;
        while (it.hasNext()) {
            QFile f(it.next());
            if (!f.open(QIODevice::ReadOnly))
                continue;
            ++scanned;
            sawKeyring |= f.fileName().contains(QStringLiteral("/keyrings/")) && f.size() > 0;
            const QByteArray content = f.readAll();
            QVERIFY2(!content.contains(tokens.refreshToken.toUtf8()), qPrintable(f.fileName()));
            QVERIFY2(!content.contains(tokens.accessToken.toUtf8()), qPrintable(f.fileName()));
        }
        qInfo("scanned %d files under HOME", scanned);
        QVERIFY2(sawKeyring, "gnome-keyring wrote no keyring file, so the scan proved nothing");
        QVERIFY(store.removeTokensBlocking(QStringLiteral("acc_plain")).ok);
    }

    void noKeychainWithoutBusIsReportedQuickly()
    {
        QTemporaryDir dir;
        const ChildRun run = runChild(QStringLiteral("noKeychainWithoutBus"),
                                      QStringLiteral("unix:path=") + dir.filePath(QStringLiteral("no-such-bus")));
        QVERIFY2(run.exitCode == 0, run.output.constData());
        QVERIFY2(run.output.contains("PASS   : tst_KeychainChild::noKeychainWithoutBus()"), run.output.constData());
        QVERIFY2(run.elapsedMs < 5000, qPrintable(QString::number(run.elapsedMs)));
    }

    void hungKeychainTimesOut()
    {
        // A socket that accepts connections and never says a word: the D-Bus handshake waits forever.
        QTemporaryDir dir;
        QLocalServer blackHole;
        const QString socketPath = dir.filePath(QStringLiteral("silent-bus"));
        QVERIFY2(blackHole.listen(socketPath), qPrintable(blackHole.errorString()));
        const ChildRun run =
            runChild(QStringLiteral("timeoutWhenKeychainHangs"), QStringLiteral("unix:path=") + socketPath);
        QVERIFY2(run.exitCode == 0, run.output.constData());
        QVERIFY2(run.output.contains("PASS   : tst_KeychainChild::timeoutWhenKeychainHangs()"), run.output.constData());
        QVERIFY2(run.elapsedMs < 10000, qPrintable(QString::number(run.elapsedMs)));
    }
};

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    if (qEnvironmentVariableIsSet(kChildVariable)) {
        tst_KeychainChild child;
        return QTest::qExec(&child, argc, argv);
    }
    tst_Keychain test;
    return QTest::qExec(&test, argc, argv);
}

#include "tst_keychain.moc"
