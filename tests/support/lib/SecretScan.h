#pragma once

#include "lib/ProxyProcess.h"

#include <QHash>
#include <QJsonObject>
#include <QList>
#include <QProcess>
#include <QProcessEnvironment>
#include <QSet>
#include <QString>
#include <QStringList>
#include <QTemporaryDir>
#include <QUrl>
#include <memory>

// Secrets at rest (issue 3 point 7), shared by the tst_secrets_at_rest* tests: a session of `switchyard` CLI
// and serve runs on one data dir whose outputs are kept, the token byte sequences ("needles") the session
// used, and scanners that report where a needle turns up.
namespace sy::test {

struct Needle
{
    QByteArray bytes;
    QString label; // which token of which account; never the token itself
};

// "where: label" for every needle found in bytes.
QStringList findNeedles(const QByteArray &bytes, const QList<Needle> &needles, const QString &where);
// Scans every regular file below dir (hidden ones too), except below `skip`; appends the paths it read.
QStringList scanDir(const QString &dir, const QList<Needle> &needles, QStringList *scanned, const QString &skip = {});
// Raises the core-file limit to its hard maximum (a child process modifier): if a process kept core dumps
// on, its crash would leave a core file to scan.
void allowCoreDumps();
// A fresh random key file for SWITCHYARD_SECRET_BACKEND=database (64 hex digits, mode 0600).
bool writeSecretKeyFile(const QString &path);

// One data dir, config file and secret backend; every CLI run and serve run of the session, with output.
class ScanSession
{
public:
    ScanSession();
    ~ScanSession();
    ScanSession(const ScanSession &) = delete;
    ScanSession &operator=(const ScanSession &) = delete;

    QString root() const { return m_dir.path(); }
    QString dataDir() const { return m_dir.path() + QStringLiteral("/data"); }
    QString sqlitePath() const { return dataDir() + QStringLiteral("/switchyard.sqlite"); }
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
    // Extra environment for every process of the session (e.g. SWITCHYARD_AUTH_URL, the secret backend).
    void setEnv(const QString &name, const QString &value) { m_env.insert(name, value); }

    // Registers a secret the scan must not find: the whole byte sequence and, for a JWT, each part on its own.
    // Empty values and repeats are ignored; so are JWT parts too short to mean anything.
    void addSecret(const QString &label, const QString &secret);
    void addTokens(const QString &owner, const QString &access, const QString &refresh, const QString &id);
    bool hasSecret(const QString &secret) const { return m_known.contains(secret.toUtf8()); }

    // Writes `count` Codex auth.json files and imports them through the CLI in one command.
    bool importAccounts(int count);

    QProcessEnvironment environment() const;
    // Environment, working directory and core-file limit of a process the session starts itself.
    void prepare(QProcess &process) const;
    // Adds the output of a process started with prepare() to the CLI output the scan looks at.
    void recordCli(const QStringList &args, const QByteArray &output);
    CliResult cli(const QStringList &args, int timeoutMs = 30000);

    bool startServe(QString *error);
    // SIGTERM (graceful) or SIGSEGV (a crash); collects the rest of the output. Returns how it ended.
    QProcess::ExitStatus stopServe(int signal, int *exitCode);
    void collectServeOutput();

    // `status --json` of the running instance.
    QJsonObject status();
    // Pins an account through the CLI and waits until the running instance has picked it up.
    bool pin(const QString &accountId);

    static QJsonObject readJson(const QString &path);

private:
    QTemporaryDir m_dir;
    QString m_upstream;
    QHash<QString, QString> m_env;
    QList<FakeAccount> m_accounts;
    QList<Needle> m_needles;
    QSet<QByteArray> m_known;
    QByteArray m_cliOutput;
    QByteArray m_serveOutput;
    std::unique_ptr<QProcess> m_serve;
    quint16 m_port = 0;
};

} // namespace sy::test
