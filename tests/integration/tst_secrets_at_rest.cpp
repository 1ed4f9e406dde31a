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
// The session is a list of phases on one ScanSession (tests/support/lib/SecretScan.h); every token a phase
// brings in is registered with addTokens() so the final scan looks for it. tst_secrets_at_rest_login runs
// the session with a browser login and token refreshes, on both secret backends.
#include "lib/CodexRequests.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/HttpTestClient.h"
#include "lib/ProxyProcess.h"
#include "lib/SecretScan.h"

#include <QDeadlineTimer>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <csignal>

using namespace sy;
using namespace sy::test;

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

    // Waits until the running instance no longer cools `accountId` down (cooldowns last at least 30 s).
    bool waitForCooldownOf(ScanSession &s, const QString &accountId, int timeoutMs)
    {
        QDeadlineTimer deadline(timeoutMs);
        while (!deadline.hasExpired()) {
            for (const QJsonValue &v : s.status().value(QLatin1String("accounts")).toArray()) {
                const QJsonObject a = v.toObject();
                if (a.value(QLatin1String("account_id")).toString() == accountId &&
                    a.value(QLatin1String("cooldown_until")).isNull())
                    return true;
            }
            QTest::qWait(500);
        }
        return false;
    }

    SseResult turn(ScanSession &s, const QString &text, int timeoutMs = 30000)
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
        ScanSession s;
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
        QVERIFY(s.pin(a.id));
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
        QVERIFY(s.pin(b.id));
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
        // Per account: three whole tokens, two JWTs' payload and signature parts; one JWT header for all.
        QVERIFY(s.needles().size() >= 2 * (3 + 2 * 2) + 1);
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
