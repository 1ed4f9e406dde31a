#include "lib/SecretScan.h"

#include "accounts/SecretCipher.h"

#include <QDeadlineTimer>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QJsonDocument>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QThread>
#include <csignal>
#include <sys/resource.h>

namespace sy::test {

namespace {

// A JWT part shorter than this (a test's literal "sig", say) would be found by chance, proving nothing.
constexpr int kMinPartBytes = 8;

} // namespace

QStringList findNeedles(const QByteArray &bytes, const QList<Needle> &needles, const QString &where)
{
    QStringList hits;
    for (const Needle &n : needles) {
        if (bytes.contains(n.bytes))
            hits << where + QStringLiteral(": ") + n.label;
    }
    return hits;
}

QStringList scanDir(const QString &dir, const QList<Needle> &needles, QStringList *scanned, const QString &skip)
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

void allowCoreDumps()
{
    struct rlimit limit = {};
    if (getrlimit(RLIMIT_CORE, &limit) == 0) {
        limit.rlim_cur = limit.rlim_max;
        setrlimit(RLIMIT_CORE, &limit);
    }
}

bool writeSecretKeyFile(const QString &path)
{
    QByteArray key(SecretKey::kBytes, Qt::Uninitialized);
    QRandomGenerator::securelySeeded().fillRange(reinterpret_cast<quint32 *>(key.data()), SecretKey::kBytes / 4);
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
        return false;
    f.write(key.toHex() + '\n');
    f.close();
    return f.setPermissions(QFile::ReadOwner | QFile::WriteOwner);
}

ScanSession::ScanSession()
{
    QDir().mkpath(crashDir());
    QFile f(configPath());
    if (f.open(QIODevice::WriteOnly))
        f.write("{}\n");
}

ScanSession::~ScanSession()
{
    if (m_serve && m_serve->state() != QProcess::NotRunning) {
        m_serve->kill();
        m_serve->waitForFinished();
    }
}

void ScanSession::addSecret(const QString &label, const QString &secret)
{
    if (secret.isEmpty() || m_known.contains(secret.toUtf8()))
        return;
    m_known.insert(secret.toUtf8());
    m_needles.append({secret.toUtf8(), label});
    const QStringList parts = secret.split(QLatin1Char('.'));
    if (parts.size() != 3)
        return;
    for (int i = 0; i < 3; ++i) {
        const QByteArray part = parts.at(i).toUtf8();
        if (part.size() < kMinPartBytes || m_known.contains(part))
            continue;
        m_known.insert(part);
        m_needles.append({part, QStringLiteral("%1 part %2").arg(label).arg(i)});
    }
}

void ScanSession::addTokens(const QString &owner, const QString &access, const QString &refresh, const QString &id)
{
    addSecret(owner + QStringLiteral(" access token"), access);
    addSecret(owner + QStringLiteral(" refresh token"), refresh);
    addSecret(owner + QStringLiteral(" id token"), id);
}

bool ScanSession::importAccounts(int count)
{
    QStringList files;
    for (int i = 0; i < count; ++i) {
        FakeAccount a =
            makeFakeAccount(root(), int(m_accounts.size()) + 1, i % 2 ? QStringLiteral("pro") : QStringLiteral("plus"));
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
        const QRegularExpression re(QStringLiteral("(acc_[0-9a-f]+) \\(%1").arg(QRegularExpression::escape(a.email)));
        const QString id = re.match(text).captured(1);
        if (!id.isEmpty())
            a.id = id;
    }
    return true;
}

QProcessEnvironment ScanSession::environment() const
{
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("SWITCHYARD_DATA_DIR"), dataDir());
    env.insert(QStringLiteral("SWITCHYARD_CONFIG"), configPath());
    env.insert(QStringLiteral("SWITCHYARD_UPSTREAM_URL"),
               m_upstream.isEmpty() ? QStringLiteral("http://127.0.0.1:9") : m_upstream);
    // Fake tokens must never reach the real authorization server.
    env.insert(QStringLiteral("SWITCHYARD_AUTH_URL"), QStringLiteral("http://127.0.0.1:9"));
    // Our own categories at debug level: not even a debug line may carry a token.
    env.insert(QStringLiteral("QT_LOGGING_RULES"), QStringLiteral("sy.*.debug=true;switchyard.*.debug=true"));
    for (auto it = m_env.begin(); it != m_env.end(); ++it)
        env.insert(it.key(), it.value());
    return env;
}

void ScanSession::prepare(QProcess &process) const
{
    process.setProcessEnvironment(environment());
    process.setWorkingDirectory(crashDir());
    process.setChildProcessModifier(allowCoreDumps);
}

void ScanSession::recordCli(const QStringList &args, const QByteArray &output)
{
    m_cliOutput += "$ switchyard " + args.join(QLatin1Char(' ')).toUtf8() + '\n' + output;
}

CliResult ScanSession::cli(const QStringList &args, int timeoutMs)
{
    CliResult r;
    QProcess p;
    prepare(p);
    p.start(qEnvironmentVariable("SWITCHYARD_BIN"), args);
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
    } else {
        r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    }
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    recordCli(args, r.out + r.err);
    return r;
}

bool ScanSession::startServe(QString *error)
{
    m_serve = std::make_unique<QProcess>();
    prepare(*m_serve);
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

QProcess::ExitStatus ScanSession::stopServe(int signal, int *exitCode)
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

void ScanSession::collectServeOutput()
{
    if (m_serve)
        m_serveOutput += m_serve->readAllStandardOutput() + m_serve->readAllStandardError();
}

QJsonObject ScanSession::status()
{
    return cli({QStringLiteral("status"), QStringLiteral("--json"), QStringLiteral("--listen"), listen()})
        .json()
        .object();
}

bool ScanSession::pin(const QString &accountId)
{
    if (cli({QStringLiteral("accounts"), QStringLiteral("pin"), accountId}).exitCode != 0)
        return false;
    QDeadlineTimer deadline(10000);
    while (!deadline.hasExpired()) {
        if (status().value(QLatin1String("pinned_account_id")).toString() == accountId)
            return true;
        QThread::msleep(100);
    }
    return false;
}

QJsonObject ScanSession::readJson(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(f.readAll()).object() : QJsonObject();
}

} // namespace sy::test
