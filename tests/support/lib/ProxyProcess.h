#pragma once

#include <QJsonArray>
#include <QJsonObject>
#include <QProcess>
#include <QProcessEnvironment>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>

namespace sy::test {

// A fake ChatGPT account: an auth.json on disk with fake JWTs, and what the fake upstream will see.
struct FakeAccount
{
    QString alias;
    QString chatgptAccountId;
    QString userId;
    QString email;
    QString plan;
    QString accessToken;
    QString refreshToken;
    QString file; // the auth.json
    QString id;   // Switchyard's internal id, filled in after import
};

// Writes a Codex CLI auth.json for a fake account into `dir` and returns it.
FakeAccount makeFakeAccount(const QString &dir, int index, const QString &plan = QStringLiteral("plus"));

struct CliResult
{
    int exitCode = -1;
    QByteArray out;
    QByteArray err;
    QJsonDocument json() const;
};

// `switchyard serve` as a child process with its own data dir and config file, against an upstream URL, with
// accounts imported through the real CLI (so the test must run inside tools/with-keyring.sh: mark the test
// file with SWITCHYARD_NEEDS_KEYRING, or use SWITCHYARD_SECRET_BACKEND=database). The binary comes from
// SWITCHYARD_BIN unless setBinary() names another build (e.g. SWITCHYARD_FAULTS_BIN); cli() always runs
// SWITCHYARD_BIN, so the CLI stays an independent observer of a fault build.
class ProxyProcess
{
public:
    ProxyProcess();
    ~ProxyProcess();
    ProxyProcess(const ProxyProcess &) = delete;
    ProxyProcess &operator=(const ProxyProcess &) = delete;

    // Settings written to the config file before start (e.g. {"gate_wait_s": 1}).
    void setConfig(const QJsonObject &config) { m_config = config; }
    void setEnv(const QString &name, const QString &value) { m_env.insert(name, value); }
    // The --listen address (default 127.0.0.1:0; the port is read from the ready line).
    void setListen(const QString &listen) { m_listen = listen; }
    // The program `serve` runs (default: SWITCHYARD_BIN).
    void setBinary(const QString &path) { m_binary = path; }
    QString binary() const;
    // Uses `dir` as the data dir instead of a private temporary one (a replica id lives there).
    void setDataDir(const QString &dir) { m_dataDir = dir; }
    // start() keeps the caller's event loop running while it waits (asynchronous clients of the test go on).
    void setSpinEventsWhileStarting(bool spin) { m_spin = spin; }
    // Accounts another instance imported into a shared database (SWITCHYARD_DATABASE_URL): known, not imported.
    void adoptAccounts(const QList<FakeAccount> &accounts) { m_accounts = accounts; }
    // Creates and imports `count` accounts (aliases acct1..acctN; plans cycle through `plans`).
    bool addAccounts(int count, const QStringList &plans = {QStringLiteral("plus")});
    // Starts serve on 127.0.0.1:0 and waits for "serving on". Needs the upstream base URL
    // (http://127.0.0.1:PORT/backend-api).
    bool start(const QString &upstreamBaseUrl, int timeoutMs = 15000);
    // SIGTERM and wait; returns the exit code.
    int stop(int timeoutMs = 20000);
    // SIGTERM without waiting (the instance drains; stop() then waits for the exit).
    void terminate();
    bool isRunning() const { return m_process.state() == QProcess::Running; }
    qint64 pid() const { return isRunning() ? m_process.processId() : 0; }
    // Sends a signal (SIGSTOP, SIGCONT...) to the running serve process.
    bool signal(int signalNumber);
    // kill -9 and reap: the process gets no chance to drain or release anything.
    void kill();

    QString errorString() const { return m_error; }
    QString url(const QString &path = {}) const;
    quint16 port() const { return m_port; }
    QString dataDir() const { return m_dataDir.isEmpty() ? m_dir.path() + QStringLiteral("/data") : m_dataDir; }
    QString configPath() const { return m_dir.path() + QStringLiteral("/config.json"); }
    QByteArray serveStderr();
    const QList<FakeAccount> &accounts() const { return m_accounts; }
    const FakeAccount *accountByChatgptId(const QString &chatgptAccountId) const;
    const FakeAccount *accountById(const QString &id) const;

    // Runs the CLI with this instance's data dir and config.
    CliResult cli(const QStringList &args, int timeoutMs = 30000) const;
    // Runs `program` (SWITCHYARD_BIN, SWITCHYARD_FAULTS_BIN...) the same way, with `input` on its stdin.
    CliResult cliOf(const QString &program, const QStringList &args, const QByteArray &input = {},
                    int timeoutMs = 30000) const;
    // The request log as `switchyard requests --json --limit 1000` prints it.
    QJsonArray requestLog() const;
    // Waits until the request log holds a row for `requestId` (rows are written as turns settle).
    QJsonObject waitForRequest(const QString &requestId, int timeoutMs = 10000) const;

private:
    QProcessEnvironment environment() const;
    bool writeConfig();

    QTemporaryDir m_dir;
    QString m_binary;
    QString m_dataDir;
    QString m_listen = QStringLiteral("127.0.0.1:0");
    bool m_spin = false;
    QJsonObject m_config;
    QHash<QString, QString> m_env;
    QString m_upstream;
    QProcess m_process;
    quint16 m_port = 0;
    QString m_error;
    QByteArray m_stderr;
    QList<FakeAccount> m_accounts;
};

} // namespace sy::test
