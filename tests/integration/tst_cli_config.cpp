// SWITCHYARD_NEEDS_KEYRING: runs inside tools/with-keyring.sh so `serve` gets a private D-Bus session and a
// throwaway HOME, never the user's keychain or config.
//
// The configuration file and options (DESIGN.md "Command line", "Configuration file"): defaults when there is
// no file at the default path; exit 3 naming the file, key and problem for a broken one; options beat the
// environment beats the file; one `serve` per data dir; clean shutdown on SIGTERM.
#include "lib/HttpTestClient.h"

#include <QDeadlineTimer>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTest>
#include <csignal>

using namespace sy;
using namespace sy::test;

// QVERIFY2 with a QByteArray expression as the message (QStringBuilder is on).
#define QVERIFY_B(cond, message) QVERIFY2(cond, QByteArray(message).constData())

namespace {

quint16 freePort()
{
    QTcpServer s;
    if (!s.listen(QHostAddress::LocalHost, 0))
        return 0;
    return s.serverPort();
}

// n distinct free ports (all held open while choosing, so they differ).
QList<quint16> freePorts(int n)
{
    QList<QTcpServer *> servers;
    QList<quint16> ports;
    for (int i = 0; i < n; ++i) {
        auto *s = new QTcpServer;
        if (s->listen(QHostAddress::LocalHost, 0))
            ports << s->serverPort();
        servers << s;
    }
    qDeleteAll(servers);
    return ports;
}

void writeFile(const QString &path, const QByteArray &bytes)
{
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    if (f.open(QIODevice::WriteOnly | QIODevice::Truncate))
        f.write(bytes);
}

// A sandbox: XDG dirs of its own (so "the default path" is under it) and no SWITCHYARD_* variables unless set.
class Box
{
public:
    QString root() const { return m_dir.path(); }
    QString xdgConfig() const { return root() + QStringLiteral("/xdg-config"); }
    QString xdgData() const { return root() + QStringLiteral("/xdg-data"); }
    QString defaultConfigPath() const { return xdgConfig() + QStringLiteral("/switchyard/config.json"); }
    QString defaultDataDir() const { return xdgData() + QStringLiteral("/switchyard"); }

    QProcessEnvironment env(const QHash<QString, QString> &set = {}) const
    {
        QProcessEnvironment e = QProcessEnvironment::systemEnvironment();
        for (const QString &k : e.keys()) {
            if (k.startsWith(QLatin1String("SWITCHYARD_")) && k != QLatin1String("SWITCHYARD_BIN"))
                e.remove(k);
        }
        e.insert(QStringLiteral("XDG_CONFIG_HOME"), xdgConfig());
        e.insert(QStringLiteral("XDG_DATA_HOME"), xdgData());
        e.insert(QStringLiteral("SWITCHYARD_UPSTREAM_URL"), QStringLiteral("http://127.0.0.1:9/backend-api"));
        for (auto it = set.begin(); it != set.end(); ++it)
            e.insert(it.key(), it.value());
        return e;
    }

private:
    QTemporaryDir m_dir;
};

struct Run
{
    int exitCode = -1; // -1: crashed or had to be killed
    QByteArray out;
    QByteArray err;
    qint64 elapsedMs = 0;
    QByteArray both() const { return out + "\n--- stderr ---\n" + err; }
};

// Runs a command that must end by itself (within timeoutMs; otherwise it is killed and exitCode is -1).
Run runToEnd(const QProcessEnvironment &env, const QStringList &args, int timeoutMs = 15000)
{
    QProcess p;
    p.setProcessEnvironment(env);
    QElapsedTimer timer;
    timer.start();
    p.start(qEnvironmentVariable("SWITCHYARD_BIN"), args);
    Run r;
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
        r.err = "<still running after " + QByteArray::number(timeoutMs) + " ms, killed>\n";
    } else {
        r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    }
    r.elapsedMs = timer.elapsed();
    r.out = p.readAllStandardOutput();
    r.err += p.readAllStandardError();
    return r;
}

// `switchyard serve` as a child process.
class Serve
{
public:
    ~Serve()
    {
        if (m_p.state() != QProcess::NotRunning) {
            m_p.kill();
            m_p.waitForFinished(5000);
        }
    }

    // Starts and waits for "serving on http://HOST:PORT" (then, unless `answering` is false, until
    // /health/live answers). False when it exited or never got there.
    bool start(const QProcessEnvironment &env, const QStringList &args, int timeoutMs = 15000, bool answering = true)
    {
        m_p.setProcessEnvironment(env);
        m_p.start(qEnvironmentVariable("SWITCHYARD_BIN"), QStringList{QStringLiteral("serve")} + args);
        QDeadlineTimer deadline(timeoutMs);
        const QRegularExpression re(QStringLiteral("serving on http://(\\S+):(\\d+)"));
        while (!deadline.hasExpired()) {
            m_p.waitForReadyRead(100);
            m_out += m_p.readAllStandardOutput();
            m_err += m_p.readAllStandardError();
            const QRegularExpressionMatch m = re.match(QString::fromUtf8(m_out));
            if (m.hasMatch()) {
                m_host = m.captured(1);
                m_port = quint16(m.captured(2).toUInt());
                if (!answering)
                    return true;
                while (!deadline.hasExpired()) {
                    const HttpResult live = httpRequest(
                        "GET", QUrl(QStringLiteral("http://127.0.0.1:%1/health/live").arg(m_port)), {}, {}, 2000);
                    if (live.status == 200)
                        return true;
                    QTest::qWait(50);
                }
                return false;
            }
            if (m_p.state() == QProcess::NotRunning)
                return false;
        }
        return false;
    }

    // Sends `signal` and waits; returns the exit code (-1: crashed or did not stop).
    int stop(int signal = SIGTERM, int timeoutMs = 15000, qint64 *elapsedMs = nullptr)
    {
        if (m_p.state() == QProcess::NotRunning)
            return m_p.exitStatus() == QProcess::NormalExit ? m_p.exitCode() : -1;
        QElapsedTimer timer;
        timer.start();
        ::kill(pid_t(m_p.processId()), signal);
        const bool ended = m_p.waitForFinished(timeoutMs);
        if (elapsedMs)
            *elapsedMs = timer.elapsed();
        m_out += m_p.readAllStandardOutput();
        m_err += m_p.readAllStandardError();
        if (!ended) {
            m_p.kill();
            m_p.waitForFinished();
            return -1;
        }
        return m_p.exitStatus() == QProcess::NormalExit ? m_p.exitCode() : -1;
    }

    void killHard()
    {
        m_p.kill();
        m_p.waitForFinished(5000);
    }

    bool isRunning() const { return m_p.state() == QProcess::Running; }
    quint16 port() const { return m_port; }
    QString host() const { return m_host; }
    QByteArray output()
    {
        m_out += m_p.readAllStandardOutput();
        m_err += m_p.readAllStandardError();
        return m_out + "\n--- stderr ---\n" + m_err;
    }
    QByteArray stdoutText()
    {
        output();
        return m_out;
    }

private:
    QProcess m_p;
    QByteArray m_out;
    QByteArray m_err;
    QString m_host;
    quint16 m_port = 0;
};

QJsonObject statusOf(const QProcessEnvironment &env, quint16 port)
{
    const Run r = runToEnd(env, {QStringLiteral("status"), QStringLiteral("--json"), QStringLiteral("--listen"),
                                 QStringLiteral("127.0.0.1:%1").arg(port)});
    if (r.exitCode != 0)
        qWarning("status failed: %s", r.both().constData());
    return QJsonDocument::fromJson(r.out).object();
}

} // namespace

class TestCliConfig : public QObject
{
    Q_OBJECT

private slots:
    void initTestCase()
    {
        QVERIFY2(!qEnvironmentVariableIsEmpty("SWITCHYARD_BIN"), "run through ctest (SWITCHYARD_BIN)");
    }

    // No file at the default path: documented defaults, serve on the given --listen.
    void defaultsWithoutConfigFile()
    {
        Box box;
        QVERIFY(!QFileInfo::exists(box.defaultConfigPath()));
        const quint16 port = freePort();
        QVERIFY(port != 0);
        const QProcessEnvironment env = box.env();
        Serve serve;
        QVERIFY_B(serve.start(env, {QStringLiteral("--listen"), QStringLiteral("127.0.0.1:%1").arg(port)}),
                  serve.output());
        QCOMPARE(serve.port(), port);
        QCOMPARE(serve.host(), QStringLiteral("127.0.0.1"));
        const HttpResult live = httpRequest("GET", QUrl(QStringLiteral("http://127.0.0.1:%1/health/live").arg(port)));
        QCOMPARE(live.status, 200);
        const QJsonObject status = statusOf(env, port);
        QCOMPARE(status.value(QLatin1String("strategy")).toString(), QStringLiteral("capacity_weighted"));
        // The data dir defaults to the XDG data dir.
        QVERIFY_B(serve.stdoutText().contains(box.defaultDataDir().toUtf8()), serve.output());
        QVERIFY(QFileInfo::exists(box.defaultDataDir()));
        QCOMPARE(serve.stop(), 0);
        // Nothing was written at the default config path (defaults are not a file).
        QVERIFY(!QFileInfo::exists(box.defaultConfigPath()));
    }

    // A config file named explicitly (--config or SWITCHYARD_CONFIG) that does not exist: exit 3 naming it.
    void explicitConfigMissing()
    {
        Box box;
        const QString missing = box.root() + QStringLiteral("/missing.json");
        const QList<QPair<QStringList, QHash<QString, QString>>> runs{
            {{QStringLiteral("serve"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"),
              QStringLiteral("--config"), missing},
             {}},
            {{QStringLiteral("accounts"), QStringLiteral("list"), QStringLiteral("--config"), missing}, {}},
            {{QStringLiteral("serve"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0")},
             {{QStringLiteral("SWITCHYARD_CONFIG"), missing}}},
            {{QStringLiteral("requests"), QStringLiteral("--json")}, {{QStringLiteral("SWITCHYARD_CONFIG"), missing}}},
        };
        for (const auto &run : runs) {
            const Run r = runToEnd(box.env(run.second), run.first);
            QVERIFY_B(r.exitCode == 3, r.both());
            QVERIFY_B(r.err.contains(missing.toUtf8()), r.both());
            QVERIFY_B(!r.out.contains("serving on"), r.both());
        }
    }

    void brokenConfigFile_data()
    {
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<QStringList>("mentions"); // besides the file path

        const QByteArray invalid = "{\n  \"gate_wait_s\": 5,,\n  \"connect_s\": 3\n}\n";
        QJsonParseError pe{};
        QJsonDocument::fromJson(invalid, &pe);
        QTest::newRow("invalid json") << invalid << QStringList{QStringLiteral("offset"), QString::number(pe.offset)};
        QTest::newRow("empty file") << QByteArray() << QStringList{};
        QTest::newRow("not an object") << QByteArray("[1, 2]") << QStringList{};
        QTest::newRow("wrong type") << QByteArray(R"({"gate_wait_s": "ten"})")
                                    << QStringList{QStringLiteral("gate_wait_s")};
        QTest::newRow("wrong type listen")
            << QByteArray(R"({"listen": 2455})") << QStringList{QStringLiteral("listen")};
        QTest::newRow("out of range zero")
            << QByteArray(R"({"slots_per_account": 0})") << QStringList{QStringLiteral("slots_per_account")};
        QTest::newRow("out of range negative")
            << QByteArray(R"({"gate_wait_s": -5})") << QStringList{QStringLiteral("gate_wait_s")};
        QTest::newRow("unknown key") << QByteArray(R"({"gate_wait_s": 5, "gate_wait_seconds": 5})")
                                     << QStringList{QStringLiteral("gate_wait_seconds")};
        QTest::newRow("unknown strategy")
            << QByteArray(R"({"strategy": "random"})") << QStringList{QStringLiteral("strategy")};
        QTest::newRow("bad listen") << QByteArray(R"({"listen": "nonsense"})") << QStringList{QStringLiteral("listen")};
        QTest::newRow("contradictory") << QByteArray(R"({"gate_wait_s": 700, "request_total_s": 600})")
                                       << QStringList{QStringLiteral("gate_wait_s"), QStringLiteral("request_total_s")};
    }

    // A broken config file is never replaced by defaults: exit 3 naming the file, key and problem.
    void brokenConfigFile()
    {
        QFETCH(QByteArray, content);
        QFETCH(QStringList, mentions);
        Box box;
        const QString path = box.root() + QStringLiteral("/config.json");
        writeFile(path, content);
        // Named explicitly, through the environment, and found at the default path: all the same.
        const QList<QPair<QStringList, QHash<QString, QString>>> runs{
            {{QStringLiteral("serve"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"),
              QStringLiteral("--config"), path},
             {}},
            {{QStringLiteral("serve"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0")},
             {{QStringLiteral("SWITCHYARD_CONFIG"), path}}},
            {{QStringLiteral("accounts"), QStringLiteral("list"), QStringLiteral("--json"), QStringLiteral("--config"),
              path},
             {}},
        };
        for (const auto &run : runs) {
            const Run r = runToEnd(box.env(run.second), run.first);
            QVERIFY_B(r.exitCode == 3, r.both());
            QVERIFY_B(r.err.contains(path.toUtf8()), r.both());
            for (const QString &m : mentions)
                QVERIFY_B(r.err.contains(m.toUtf8()), "stderr does not mention " + m.toUtf8() + ": " + r.both());
            QVERIFY_B(!r.out.contains("serving on"), r.both());
        }
        writeFile(box.defaultConfigPath(), content);
        const Run r =
            runToEnd(box.env(), {QStringLiteral("serve"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0")});
        QVERIFY_B(r.exitCode == 3, r.both());
        QVERIFY_B(r.err.contains(box.defaultConfigPath().toUtf8()), r.both());
    }

    // --listen that is not HOST:PORT: refused with a message (3: invalid configuration, or 1).
    void listenOptionInvalid()
    {
        Box box;
        for (const QString &bad : {QStringLiteral("nonsense"), QStringLiteral("127.0.0.1:99999"),
                                   QStringLiteral("127.0.0.1:port"), QStringLiteral("300.1.1.1:2455")}) {
            const Run r = runToEnd(box.env(), {QStringLiteral("serve"), QStringLiteral("--listen"), bad});
            QVERIFY_B(r.exitCode == 3 || r.exitCode == 1, r.both());
            QVERIFY_B(r.err.contains("listen") || r.err.contains(bad.toUtf8()), r.both());
            QVERIFY_B(!r.out.contains("serving on"), r.both());
        }
    }

    // A port already in use: exit 1 naming the port.
    void portInUse()
    {
        Box box;
        QTcpServer squatter;
        QVERIFY(squatter.listen(QHostAddress::LocalHost, 0));
        const quint16 port = squatter.serverPort();
        const Run r = runToEnd(
            box.env(), {QStringLiteral("serve"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:%1").arg(port)});
        QVERIFY_B(r.exitCode == 1, r.both());
        QVERIFY_B(r.err.contains(QByteArray::number(port)), r.both());
        QVERIFY_B(!r.out.contains("serving on"), r.both());
        // The failed start left no lock behind: the data dir can be served right away.
        Serve serve;
        QVERIFY_B(serve.start(box.env(), {QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0")}), serve.output());
        QCOMPARE(serve.stop(), 0);
    }

    // Options beat the environment beats the file (beats the default path's file beats defaults).
    void listenAndConfigPrecedence()
    {
        Box box;
        const QList<quint16> ports = freePorts(4);
        QCOMPARE(ports.size(), 4);
        const quint16 p1 = ports[0], p2 = ports[1], p3 = ports[2], p4 = ports[3];
        auto config = [](quint16 port, const char *strategy) {
            return QJsonDocument(QJsonObject{{QStringLiteral("listen"), QStringLiteral("127.0.0.1:%1").arg(port)},
                                             {QStringLiteral("strategy"), QLatin1String(strategy)},
                                             {QStringLiteral("gate_wait_s"), 7}})
                .toJson();
        };
        writeFile(box.defaultConfigPath(), config(p1, "round_robin"));
        const QString envFile = box.root() + QStringLiteral("/env-config.json");
        writeFile(envFile, config(p3, "fill_first"));
        const QString optionFile = box.root() + QStringLiteral("/option-config.json");
        writeFile(optionFile, config(p4, "usage_weighted"));

        struct Case
        {
            const char *what;
            QStringList args;
            QHash<QString, QString> env;
            quint16 port;
        };
        const QList<Case> cases{
            {"the file at the default path is read", {}, {}, p1},
            {"--listen beats the file", {QStringLiteral("--listen"), QStringLiteral("127.0.0.1:%1").arg(p2)}, {}, p2},
            {"SWITCHYARD_CONFIG beats the default path", {}, {{QStringLiteral("SWITCHYARD_CONFIG"), envFile}}, p3},
            {"--config beats SWITCHYARD_CONFIG",
             {QStringLiteral("--config"), optionFile},
             {{QStringLiteral("SWITCHYARD_CONFIG"), envFile}},
             p4},
            {"--listen beats --config's file",
             {QStringLiteral("--config"), optionFile, QStringLiteral("--listen"),
              QStringLiteral("127.0.0.1:%1").arg(p2)},
             {{QStringLiteral("SWITCHYARD_CONFIG"), envFile}},
             p2},
        };
        for (const Case &c : cases) {
            const QProcessEnvironment env = box.env(c.env);
            Serve serve;
            QVERIFY_B(serve.start(env, c.args), QByteArray(c.what) + ": " + serve.output());
            QVERIFY_B(serve.port() == c.port, QByteArray(c.what) + ": served on " + QByteArray::number(serve.port()) +
                                                  ", expected " + QByteArray::number(c.port));
            const HttpResult live =
                httpRequest("GET", QUrl(QStringLiteral("http://127.0.0.1:%1/health/live").arg(c.port)));
            QVERIFY_B(live.status == 200, QByteArray(c.what));
            QCOMPARE(serve.stop(), 0);
        }
    }

    // The file's settings reach the running instance: "strategy" is what /api/status reports (no strategy
    // was ever stored in this fresh data dir, so nothing else can override the file).
    void configStrategyReachesInstance_data()
    {
        QTest::addColumn<QString>("strategy");
        for (const char *name : {"usage_weighted", "round_robin", "fill_first"})
            QTest::newRow(name) << QString::fromLatin1(name);
    }

    void configStrategyReachesInstance()
    {
        QFETCH(QString, strategy);
        Box box;
        const QString file = box.root() + QStringLiteral("/config.json");
        writeFile(file, QJsonDocument(QJsonObject{{QStringLiteral("strategy"), strategy}}).toJson());
        const QProcessEnvironment env = box.env({{QStringLiteral("SWITCHYARD_CONFIG"), file}});
        Serve serve;
        QVERIFY_B(serve.start(env, {QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0")}), serve.output());
        const QJsonObject status = statusOf(env, serve.port());
        QCOMPARE(serve.stop(), 0);
        QCOMPARE(status.value(QLatin1String("strategy")).toString(), strategy);
    }

    // --data-dir beats SWITCHYARD_DATA_DIR beats the XDG default.
    void dataDirPrecedence()
    {
        Box box;
        const QString fromEnv = box.root() + QStringLiteral("/env-data");
        const QString fromOption = box.root() + QStringLiteral("/option-data");
        const QString sqlite = QStringLiteral("/switchyard.sqlite");

        Serve a;
        QVERIFY_B(a.start(box.env({{QStringLiteral("SWITCHYARD_DATA_DIR"), fromEnv}}),
                          {QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"), QStringLiteral("--data-dir"),
                           fromOption}),
                  a.output());
        QVERIFY_B(a.stdoutText().contains(fromOption.toUtf8()), a.output());
        QCOMPARE(a.stop(), 0);
        QVERIFY(QFileInfo::exists(fromOption + sqlite));
        QVERIFY(!QFileInfo::exists(fromEnv + sqlite));
        QVERIFY(!QFileInfo::exists(box.defaultDataDir() + sqlite));

        Serve b;
        QVERIFY_B(b.start(box.env({{QStringLiteral("SWITCHYARD_DATA_DIR"), fromEnv}}),
                          {QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0")}),
                  b.output());
        QVERIFY_B(b.stdoutText().contains(fromEnv.toUtf8()), b.output());
        QCOMPARE(b.stop(), 0);
        QVERIFY(QFileInfo::exists(fromEnv + sqlite));
        QVERIFY(!QFileInfo::exists(box.defaultDataDir() + sqlite));

        // The other commands follow the same precedence.
        const QString third = box.root() + QStringLiteral("/third-data");
        const Run r =
            runToEnd(box.env({{QStringLiteral("SWITCHYARD_DATA_DIR"), fromEnv}}),
                     {QStringLiteral("requests"), QStringLiteral("--json"), QStringLiteral("--data-dir"), third});
        QVERIFY_B(r.exitCode == 0, r.both());
        QVERIFY(QFileInfo::exists(third + sqlite));
    }

    // One serve per data dir: the second is refused (exit 1) while the first keeps serving.
    void secondServeOnSameDataDir()
    {
        Box box;
        const QString data = box.root() + QStringLiteral("/shared-data");
        const QProcessEnvironment env = box.env({{QStringLiteral("SWITCHYARD_DATA_DIR"), data}});
        Serve first;
        QVERIFY_B(first.start(env, {QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0")}), first.output());

        const Run second =
            runToEnd(env, {QStringLiteral("serve"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0")});
        QVERIFY_B(second.exitCode == 1, second.both());
        QVERIFY_B(second.err.toLower().contains("another"), second.both());
        QVERIFY_B(second.err.contains(data.toUtf8()), second.both());
        QVERIFY_B(!second.out.contains("serving on"), second.both());
        // Also through --data-dir with a trailing slash (the same directory spelled differently).
        const Run third =
            runToEnd(box.env(), {QStringLiteral("serve"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0"),
                                 QStringLiteral("--data-dir"), data + QLatin1Char('/')});
        QVERIFY_B(third.exitCode == 1, third.both());

        QVERIFY(first.isRunning());
        const HttpResult live =
            httpRequest("GET", QUrl(QStringLiteral("http://127.0.0.1:%1/health/live").arg(first.port())));
        QCOMPARE(live.status, 200);
        QCOMPARE(first.stop(), 0);

        // Once the owner is gone the data dir is free again.
        Serve next;
        QVERIFY_B(next.start(env, {QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0")}), next.output());
        QCOMPARE(next.stop(), 0);
    }

    // An owner that died without cleaning up (SIGKILL) does not block the data dir forever.
    void staleLockAfterKill()
    {
        Box box;
        const QString data = box.root() + QStringLiteral("/data");
        const QProcessEnvironment env = box.env({{QStringLiteral("SWITCHYARD_DATA_DIR"), data}});
        Serve killed;
        QVERIFY_B(killed.start(env, {QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0")}), killed.output());
        killed.killHard();
        Serve next;
        QVERIFY_B(next.start(env, {QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0")}), next.output());
        QCOMPARE(next.stop(), 0);
    }

    // SIGTERM (and SIGINT) on an idle serve: clean exit 0 within a few seconds.
    void signalShutdownIsClean_data()
    {
        QTest::addColumn<int>("signal");
        QTest::newRow("SIGTERM") << int(SIGTERM);
        QTest::newRow("SIGINT") << int(SIGINT);
    }

    // A supervisor (systemd, a test harness) may stop serve the moment it has said "serving on": the signal
    // must already be handled then (clean exit 0), not kill the process with the default disposition.
    void sigtermRightAfterReadyLine()
    {
        Box box;
        const QProcessEnvironment env =
            box.env({{QStringLiteral("SWITCHYARD_DATA_DIR"), box.root() + QStringLiteral("/d")}});
        for (int i = 0; i < 6; ++i) {
            Serve serve;
            QVERIFY_B(serve.start(env, {QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0")}, 15000, false),
                      serve.output());
            const int rc = serve.stop(SIGTERM);
            QVERIFY_B(rc == 0, "run " + QByteArray::number(i) + ": exit " + QByteArray::number(rc) +
                                   " (-1: killed by the signal itself): " + serve.output());
        }
    }

    void signalShutdownIsClean()
    {
        QFETCH(int, signal);
        Box box;
        const QProcessEnvironment env =
            box.env({{QStringLiteral("SWITCHYARD_DATA_DIR"), box.root() + QStringLiteral("/d")}});
        Serve serve;
        QVERIFY_B(serve.start(env, {QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0")}), serve.output());
        const quint16 port = serve.port();
        QCOMPARE(httpRequest("GET", QUrl(QStringLiteral("http://127.0.0.1:%1/health/live").arg(port))).status, 200);
        qint64 elapsed = 0;
        const int rc = serve.stop(signal, 15000, &elapsed);
        QVERIFY_B(rc == 0, "exit " + QByteArray::number(rc) + ": " + serve.output());
        QVERIFY_B(elapsed < 5000, "shutdown took " + QByteArray::number(elapsed) + " ms");
        // The port is free again.
        QTcpServer again;
        QVERIFY2(again.listen(QHostAddress::LocalHost, port), qPrintable(again.errorString()));
    }
};

QTEST_GUILESS_MAIN(TestCliConfig)
#include "tst_cli_config.moc"
