// SWITCHYARD_NEEDS_KEYRING: the tokens live in a real gnome-keyring (ctest runs this file inside
// tools/with-keyring.sh, with a throwaway HOME).
//
// Secrets at rest (issue 3 point 7): one full session against the fake upstream (import, requests that
// succeed, fail over on 429, hit a 401 and a 500, a client that hangs up mid-stream, the CLI's reports,
// and finally a crash of the serving process with core dumps allowed), then every place a token could
// end up is scanned for every token byte sequence the session used: the data dir (database, WAL, shared
// memory, anything else), the serving process's stdout and stderr (with debug logging on), every CLI
// output, the crash output and any core file, and HOME outside the keychain's own storage.
//
// The session is a list of phases on one Session; every token a phase brings in (an import today; a
// browser login or a refresh later) is registered with Session::addTokens() so the final scan looks for it.
#include "lib/FakeUpstreamProcess.h"
#include "lib/HttpTestClient.h"
#include "lib/ProxyProcess.h"

#include <QDeadlineTimer>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>
#include <csignal>
#include <sys/resource.h>

using namespace sy;
using namespace sy::test;

namespace {

QByteArray codexBody(const QString &text)
{
    const QJsonObject message{
        {QStringLiteral("type"), QStringLiteral("message")},
        {QStringLiteral("role"), QStringLiteral("user")},
        {QStringLiteral("content"), QJsonArray{QJsonObject{{QStringLiteral("type"), QStringLiteral("input_text")},
                                                           {QStringLiteral("text"), text}}}}};
    return QJsonDocument(QJsonObject{{QStringLiteral("model"), QStringLiteral("gpt-5-codex")},
                                     {QStringLiteral("stream"), true},
                                     {QStringLiteral("store"), false},
                                     {QStringLiteral("input"), QJsonArray{message}}})
        .toJson(QJsonDocument::Compact);
}

const HttpHeaderList kCodexHeaders{{"content-type", "application/json"}, {"authorization", "Bearer client-key"}};

// Core files are allowed in the child even though the test runner's soft limit is usually 0: if the
// serving process kept core dumps on, its crash would leave one to scan.
void allowCoreDumps()
{
    struct rlimit limit = {};
    if (getrlimit(RLIMIT_CORE, &limit) == 0) {
        limit.rlim_cur = limit.rlim_max;
        setrlimit(RLIMIT_CORE, &limit);
    }
}

struct Needle
{
    QByteArray bytes;
    QString label; // which token of which account; never the token itself
};

// One data dir, config file and keychain; every CLI run and serve run of the session, with their output.
class Session
{
public:
    Session()
    {
        QDir().mkpath(crashDir());
        QFile f(configPath());
        if (f.open(QIODevice::WriteOnly))
            f.write("{}\n");
    }

    ~Session()
    {
        if (m_serve && m_serve->state() != QProcess::NotRunning) {
            m_serve->kill();
            m_serve->waitForFinished();
        }
    }

    QString root() const { return m_dir.path(); }
    QString dataDir() const { return m_dir.path() + QStringLiteral("/data"); }
    QString configPath() const { return m_dir.path() + QStringLiteral("/config.json"); }
    // The working directory of every process the session starts: a core file would land here.
    QString crashDir() const { return m_dir.path() + QStringLiteral("/cwd"); }
    QString listen() const { return QStringLiteral("127.0.0.1:%1").arg(m_port); }
    QUrl url(const QString &path) const { return QUrl(QStringLiteral("http://%1%2").arg(listen(), path)); }
    const QList<Needle> &needles() const { return m_needles; }
    const QByteArray &cliOutput() const { return m_cliOutput; }
    const QByteArray &serveOutput() const { return m_serveOutput; }
    const QList<FakeAccount> &accounts() const { return m_accounts; }
    void setUpstream(const QString &url) { m_upstream = url; }

    // Every token byte sequence worth looking for: each whole token, and each part of a JWT on its own.
    void addTokens(const QString &owner, const QString &access, const QString &refresh, const QString &id)
    {
        const QList<QPair<QString, QString>> tokens{{QStringLiteral("access token"), access},
                                                    {QStringLiteral("refresh token"), refresh},
                                                    {QStringLiteral("id token"), id}};
        for (const auto &[kind, token] : tokens) {
            if (token.isEmpty())
                continue;
            m_needles.append({token.toUtf8(), owner + QLatin1Char(' ') + kind});
            const QStringList parts = token.split(QLatin1Char('.'));
            if (parts.size() == 3) {
                for (int i = 0; i < 3; ++i)
                    m_needles.append({parts.at(i).toUtf8(), QStringLiteral("%1 %2 part %3").arg(owner, kind).arg(i)});
            }
        }
    }

    // Writes `count` Codex auth.json files and imports them through the CLI in one command.
    bool importAccounts(int count)
    {
        QStringList files;
        for (int i = 0; i < count; ++i) {
            FakeAccount a = makeFakeAccount(root(), int(m_accounts.size()) + 1,
                                            i % 2 ? QStringLiteral("pro") : QStringLiteral("plus"));
            files << a.file;
            m_accounts.append(a);
            const QJsonObject tokens = readJson(a.file).value(QLatin1String("tokens")).toObject();
            addTokens(a.alias, a.accessToken, a.refreshToken, tokens.value(QLatin1String("id_token")).toString());
        }
        const CliResult r = cli(QStringList{QStringLiteral("accounts"), QStringLiteral("import")} + files);
        if (r.exitCode != 0)
            return false;
        const QString text = QString::fromUtf8(r.out);
        for (FakeAccount &a : m_accounts) {
            const QRegularExpression re(
                QStringLiteral("(acc_[0-9a-f]+) \\(%1").arg(QRegularExpression::escape(a.email)));
            a.id = re.match(text).captured(1);
        }
        return true;
    }

    QProcessEnvironment environment() const
    {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("SWITCHYARD_DATA_DIR"), dataDir());
        env.insert(QStringLiteral("SWITCHYARD_CONFIG"), configPath());
        env.insert(QStringLiteral("SWITCHYARD_UPSTREAM_URL"),
                   m_upstream.isEmpty() ? QStringLiteral("http://127.0.0.1:9") : m_upstream);
        // Our own categories at debug level: not even a debug line may carry a token.
        env.insert(QStringLiteral("QT_LOGGING_RULES"), QStringLiteral("sy.*.debug=true;switchyard.*.debug=true"));
        return env;
    }

    CliResult cli(const QStringList &args, int timeoutMs = 30000)
    {
        CliResult r;
        QProcess p;
        p.setProcessEnvironment(environment());
        p.setWorkingDirectory(crashDir());
        p.setChildProcessModifier(allowCoreDumps);
        p.start(qEnvironmentVariable("SWITCHYARD_BIN"), args);
        if (!p.waitForFinished(timeoutMs)) {
            p.kill();
            p.waitForFinished();
        } else {
            r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
        }
        r.out = p.readAllStandardOutput();
        r.err = p.readAllStandardError();
        m_cliOutput += "$ switchyard " + args.join(QLatin1Char(' ')).toUtf8() + '\n' + r.out + r.err;
        return r;
    }

    bool startServe(QString *error)
    {
        m_serve = std::make_unique<QProcess>();
        m_serve->setProcessEnvironment(environment());
        m_serve->setWorkingDirectory(crashDir());
        m_serve->setChildProcessModifier(allowCoreDumps);
        m_serve->start(qEnvironmentVariable("SWITCHYARD_BIN"),
                       {QStringLiteral("serve"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0")});
        QDeadlineTimer deadline(15000);
        QByteArray out;
        while (!deadline.hasExpired()) {
            if (!m_serve->waitForReadyRead(100)) {
                if (m_serve->state() != QProcess::Running)
                    break;
                continue;
            }
            out += m_serve->readAllStandardOutput();
            const QRegularExpressionMatch m =
                QRegularExpression(QStringLiteral("serving on http://[^:]+:(\\d+)")).match(QString::fromUtf8(out));
            if (m.hasMatch()) {
                m_port = quint16(m.captured(1).toUInt());
                m_serveOutput += out;
                return true;
            }
        }
        m_serveOutput += out + m_serve->readAllStandardError();
        *error = QStringLiteral("serve did not start: ") + QString::fromUtf8(m_serveOutput.right(2000));
        return false;
    }

    // SIGTERM (graceful) or SIGSEGV (a crash); collects the rest of the output. Returns how it ended.
    QProcess::ExitStatus stopServe(int signal, int *exitCode)
    {
        ::kill(pid_t(m_serve->processId()), signal);
        if (!m_serve->waitForFinished(30000)) {
            m_serve->kill();
            m_serve->waitForFinished();
        }
        collectServeOutput();
        *exitCode = m_serve->exitCode();
        return m_serve->exitStatus();
    }

    void collectServeOutput()
    {
        if (m_serve)
            m_serveOutput += m_serve->readAllStandardOutput() + m_serve->readAllStandardError();
    }

    static QJsonObject readJson(const QString &path)
    {
        QFile f(path);
        return f.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(f.readAll()).object() : QJsonObject();
    }

private:
    QTemporaryDir m_dir;
    QString m_upstream;
    QList<FakeAccount> m_accounts;
    QList<Needle> m_needles;
    QByteArray m_cliOutput;
    QByteArray m_serveOutput;
    std::unique_ptr<QProcess> m_serve;
    quint16 m_port = 0;
};

// "where: which token" for every needle found in bytes.
QStringList findNeedles(const QByteArray &bytes, const QList<Needle> &needles, const QString &where)
{
    QStringList hits;
    for (const Needle &n : needles) {
        if (bytes.contains(n.bytes))
            hits << where + QStringLiteral(": ") + n.label;
    }
    return hits;
}

// Scans every regular file below dir (hidden ones too), except below `skip`.
QStringList scanDir(const QString &dir, const QList<Needle> &needles, QStringList *scanned, const QString &skip = {})
{
    QStringList hits;
    QDirIterator it(dir, QDir::Files | QDir::Hidden | QDir::System, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString path = it.next();
        if (!skip.isEmpty() && path.startsWith(skip))
            continue;
        QFile f(path);
        if (!f.open(QIODevice::ReadOnly))
            continue;
        scanned->append(path);
        hits += findNeedles(f.readAll(), needles, path);
    }
    return hits;
}

} // namespace

class tst_SecretsAtRest : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;

    // The upstream request log entries for turns, oldest first.
    QJsonArray upstreamTurns()
    {
        QJsonArray out;
        for (const QJsonValue &v : m_fake.log()) {
            if (v.toObject().value(QLatin1String("path")).toString().endsWith(QLatin1String("/codex/responses")))
                out.append(v);
        }
        return out;
    }

    QStringList upstreamActions()
    {
        QStringList out;
        for (const QJsonValue &v : upstreamTurns())
            out << v.toObject().value(QLatin1String("action")).toString();
        return out;
    }

    QJsonObject status(Session &s)
    {
        const CliResult r =
            s.cli({QStringLiteral("status"), QStringLiteral("--json"), QStringLiteral("--listen"), s.listen()});
        return r.json().object();
    }

    // Pins an account through the CLI and waits until the running instance has picked it up.
    bool pin(Session &s, const FakeAccount &a)
    {
        if (s.cli({QStringLiteral("accounts"), QStringLiteral("pin"), a.id}).exitCode != 0)
            return false;
        QDeadlineTimer deadline(10000);
        while (!deadline.hasExpired()) {
            if (status(s).value(QLatin1String("pinned_account_id")).toString() == a.id)
                return true;
            QTest::qWait(100);
        }
        return false;
    }

    // Waits until the running instance no longer cools `accountId` down (cooldowns last at least 30 s).
    bool waitForCooldownOf(Session &s, const QString &accountId, int timeoutMs)
    {
        QDeadlineTimer deadline(timeoutMs);
        while (!deadline.hasExpired()) {
            for (const QJsonValue &v : status(s).value(QLatin1String("accounts")).toArray()) {
                const QJsonObject a = v.toObject();
                if (a.value(QLatin1String("account_id")).toString() == accountId &&
                    a.value(QLatin1String("cooldown_until")).isNull())
                    return true;
            }
            QTest::qWait(500);
        }
        return false;
    }

    SseResult turn(Session &s, const QString &text, int timeoutMs = 30000)
    {
        return sseRequest("POST", s.url(QStringLiteral("/backend-api/codex/responses")), kCodexHeaders, codexBody(text),
                          timeoutMs);
    }

private slots:
    void initTestCase()
    {
        QVERIFY2(!qEnvironmentVariableIsEmpty("SWITCHYARD_BIN"), "run through ctest (SWITCHYARD_BIN)");
        QVERIFY2(!qEnvironmentVariableIsEmpty("DBUS_SESSION_BUS_ADDRESS"), "run through tools/with-keyring.sh");
        QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString()));
    }

    void fullSessionLeavesNoTokenAtRest()
    {
        Session s;
        s.setUpstream(m_fake.baseUrl());

        // Phase 1: import two accounts into the keychain.
        QVERIFY2(s.importAccounts(2), s.cliOutput().constData());
        const FakeAccount a = s.accounts().at(0);
        const FakeAccount b = s.accounts().at(1);
        QVERIFY(!a.id.isEmpty() && !b.id.isEmpty());
        s.cli({QStringLiteral("accounts"), QStringLiteral("list")});

        // Phase 2: serve and send requests through it.
        QString error;
        QVERIFY2(s.startServe(&error), qPrintable(error));
        QVERIFY(m_fake.reset());

        // 2a. Plain successes on three routes.
        QCOMPARE(turn(s, QStringLiteral("ECHO: hello")).status, 200);
        const HttpResult chat = httpRequest(
            "POST", s.url(QStringLiteral("/v1/chat/completions")), kCodexHeaders,
            QJsonDocument(
                QJsonObject{{QStringLiteral("model"), QStringLiteral("gpt-5")},
                            {QStringLiteral("messages"),
                             QJsonArray{QJsonObject{{QStringLiteral("role"), QStringLiteral("user")},
                                                    {QStringLiteral("content"), QStringLiteral("ECHO: chat")}}}}})
                .toJson(QJsonDocument::Compact));
        QVERIFY2(chat.status == 200, chat.body.constData());
        QCOMPARE(httpRequest("GET", s.url(QStringLiteral("/v1/models")), kCodexHeaders).status, 200);

        // 2b. A client that hangs up in the middle of a stream.
        QVERIFY(pin(s, a));
        QVERIFY(m_fake.script(a.chatgptAccountId, {QStringLiteral("stall_mid")}));
        const SseResult gone = turn(s, QStringLiteral("ECHO: one two three four five six"), 1500);
        QVERIFY(gone.timedOut);
        QVERIFY(m_fake.dropHeld());

        // 2c. 429 on the pinned account, served by the other one.
        QVERIFY(m_fake.reset());
        QVERIFY(m_fake.script(a.chatgptAccountId, {QStringLiteral("429_rate")}));
        const SseResult failover = turn(s, QStringLiteral("ECHO: after a 429"));
        QVERIFY2(failover.status == 200, failover.body.constData());
        QCOMPARE(upstreamActions(), (QStringList{QStringLiteral("429_rate"), QStringLiteral("ok")}));

        // 2d. A 500 on the other account while the first cools down: the client gets the error.
        QVERIFY(pin(s, b));
        QVERIFY(m_fake.reset());
        QVERIFY(m_fake.script(b.chatgptAccountId, {QStringLiteral("500")}));
        const SseResult serverError = turn(s, QStringLiteral("ECHO: into a 500"));
        QVERIFY2(serverError.status >= 400, serverError.body.constData());
        QCOMPARE(upstreamActions(), QStringList{QStringLiteral("500")});

        // 2e. Once b's cooldown has passed: a 401 (the tokens were refused upstream).
        QVERIFY(waitForCooldownOf(s, b.id, 60000));
        QVERIFY(m_fake.reset());
        QVERIFY(m_fake.script(b.chatgptAccountId, {QStringLiteral("401")}));
        const SseResult unauthorized = turn(s, QStringLiteral("ECHO: into a 401"));
        QVERIFY2(unauthorized.status >= 400, unauthorized.body.constData());
        QCOMPARE(upstreamActions(), QStringList{QStringLiteral("401")});

        // Phase 3: the CLI's reports while the instance runs, including the live status.
        for (const QStringList &args :
             {QStringList{QStringLiteral("accounts"), QStringLiteral("list")},
              QStringList{QStringLiteral("accounts"), QStringLiteral("list"), QStringLiteral("--json")},
              QStringList{QStringLiteral("usage")}, QStringList{QStringLiteral("usage"), QStringLiteral("--json")},
              QStringList{QStringLiteral("requests")},
              QStringList{QStringLiteral("requests"), QStringLiteral("--json")},
              QStringList{QStringLiteral("status"), QStringLiteral("--listen"), s.listen()},
              QStringList{QStringLiteral("status"), QStringLiteral("--json"), QStringLiteral("--listen"), s.listen()},
              QStringList{QStringLiteral("client-config"), QStringLiteral("codex")}}) {
            const CliResult r = s.cli(args);
            QVERIFY2(r.exitCode == 0, QByteArray(args.join(QLatin1Char(' ')).toUtf8() + ": " + r.err).constData());
        }
        const QJsonArray logged = s.cli({QStringLiteral("requests"), QStringLiteral("--json")}).json().array();
        QVERIFY2(logged.size() >= 6, QJsonDocument(logged).toJson().constData());

        // The database, WAL and shared memory while the instance holds them open.
        QStringList scanned;
        QStringList hits = scanDir(s.dataDir(), s.needles(), &scanned);
        QVERIFY2(hits.isEmpty(), qPrintable(hits.join(QLatin1Char('\n'))));
        const QString sqlite = s.dataDir() + QStringLiteral("/switchyard.sqlite");
        for (const QString &suffix : {QString(), QStringLiteral("-wal"), QStringLiteral("-shm")})
            QVERIFY2(scanned.contains(sqlite + suffix), qPrintable(scanned.join(QLatin1Char(' '))));

        // Phase 4: a graceful stop, then a second run that crashes with core dumps allowed.
        int exitCode = -1;
        QCOMPARE(s.stopServe(SIGTERM, &exitCode), QProcess::NormalExit);
        QCOMPARE(exitCode, 0);
        QVERIFY2(s.startServe(&error), qPrintable(error));
        turn(s, QStringLiteral("ECHO: before the crash"));
        QCOMPARE(s.stopServe(SIGSEGV, &exitCode), QProcess::CrashExit);
        QCOMPARE(exitCode, int(SIGSEGV));
        s.cli({QStringLiteral("accounts"), QStringLiteral("list"), QStringLiteral("--json")});

        // The scan.
        scanned.clear();
        hits = scanDir(s.dataDir(), s.needles(), &scanned);
        hits += scanDir(s.crashDir(), s.needles(), &scanned);
        QStringList cores;
        for (const QString &path : scanned) {
            if (QFileInfo(path).fileName().startsWith(QLatin1String("core")))
                cores << path;
        }
        QVERIFY2(cores.isEmpty(), qPrintable(QStringLiteral("the crash left a core file: ") + cores.join(' ')));
        hits += findNeedles(s.serveOutput(), s.needles(), QStringLiteral("serve stdout/stderr"));
        hits += findNeedles(s.cliOutput(), s.needles(), QStringLiteral("CLI output"));
        // HOME holds the keychain's own storage (where the tokens belong); everything else is fair game.
        const QString keyrings =
            qEnvironmentVariable("XDG_DATA_HOME", QDir::homePath() + QStringLiteral("/.local/share")) +
            QStringLiteral("/keyrings");
        hits += scanDir(QDir::homePath(), s.needles(), &scanned, keyrings);
        QVERIFY2(hits.isEmpty(), qPrintable(hits.join(QLatin1Char('\n'))));
        QVERIFY(s.serveOutput().contains("serving on"));
        QVERIFY2(s.serveOutput().contains("sy."), "debug logging was not on, the scan of the logs proves little");

        // The scanner has teeth: every needle is found in the auth.json files the tokens came from.
        QByteArray authFiles;
        for (const FakeAccount &acct : s.accounts()) {
            QFile f(acct.file);
            QVERIFY(f.open(QIODevice::ReadOnly));
            authFiles += f.readAll();
        }
        const QStringList found = findNeedles(authFiles, s.needles(), QStringLiteral("auth.json"));
        QCOMPARE(found.size(), s.needles().size());
        QVERIFY(s.needles().size() >= 2 * (3 + 2 * 3));
    }

    // The crash check above only means something where a crashing process does leave a core file: show
    // that a process started the same way (limit raised, same kind of working directory) leaves one.
    void coreFilesAreWrittenHere()
    {
        QFile pattern(QStringLiteral("/proc/sys/kernel/core_pattern"));
        if (pattern.open(QIODevice::ReadOnly) && pattern.readAll().startsWith('|'))
            QSKIP("core dumps go to a pipe handler on this machine; the core-file check cannot fail here");
        QTemporaryDir dir;
        QProcess p;
        p.setWorkingDirectory(dir.path());
        p.setChildProcessModifier(allowCoreDumps);
        p.start(QStringLiteral("sleep"), {QStringLiteral("30")});
        QVERIFY(p.waitForStarted());
        ::kill(pid_t(p.processId()), SIGSEGV);
        QVERIFY(p.waitForFinished(10000));
        QCOMPARE(p.exitStatus(), QProcess::CrashExit);
        const QStringList files = QDir(dir.path()).entryList(QDir::Files);
        QVERIFY2(!files.isEmpty(), "a crashing process left no core file: the crash check cannot fail here");
    }
};

QTEST_GUILESS_MAIN(tst_SecretsAtRest)
#include "tst_secrets_at_rest.moc"
