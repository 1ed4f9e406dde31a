#include "lib/ProxyProcess.h"

#include <QCoreApplication>
#include <QDeadlineTimer>
#include <QDir>
#include <QFile>
#include <QJsonDocument>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QThread>

#include <csignal>

namespace sy::test {

namespace {

QByteArray b64url(const QJsonObject &o)
{
    return QJsonDocument(o).toJson(QJsonDocument::Compact).toBase64(QByteArray::Base64UrlEncoding |
                                                                     QByteArray::OmitTrailingEquals);
}

QString fakeJwt(const QJsonObject &payload)
{
    const QByteArray sig = QByteArray::number(QRandomGenerator::global()->generate64(), 16);
    return QString::fromLatin1(b64url({{QStringLiteral("alg"), QStringLiteral("none")}}) + '.' + b64url(payload) + '.' +
                               sig.toBase64(QByteArray::Base64UrlEncoding | QByteArray::OmitTrailingEquals));
}

} // namespace

QJsonDocument CliResult::json() const
{
    return QJsonDocument::fromJson(out);
}

FakeAccount makeFakeAccount(const QString &dir, int index, const QString &plan)
{
    FakeAccount a;
    const QString salt = QString::number(QRandomGenerator::global()->generate(), 16);
    a.alias = QStringLiteral("acct%1").arg(index);
    a.chatgptAccountId = QStringLiteral("cgpt-%1-%2").arg(index).arg(salt);
    a.userId = QStringLiteral("user-%1").arg(index);
    a.email = QStringLiteral("user%1@example.test").arg(index);
    a.plan = plan;
    const qint64 exp = QDateTime::currentSecsSinceEpoch() + 10 * 24 * 3600;
    const QJsonObject auth{{QStringLiteral("chatgpt_account_id"), a.chatgptAccountId},
                           {QStringLiteral("chatgpt_plan_type"), plan},
                           {QStringLiteral("chatgpt_user_id"), a.userId}};
    a.accessToken = fakeJwt({{QStringLiteral("sub"), a.userId},
                             {QStringLiteral("exp"), exp},
                             {QStringLiteral("https://api.openai.com/auth"), auth},
                             {QStringLiteral("nonce"), QString(salt + QString::number(index))}});
    const QString idToken = fakeJwt({{QStringLiteral("sub"), a.userId},
                                     {QStringLiteral("email"), a.email},
                                     {QStringLiteral("exp"), exp},
                                     {QStringLiteral("https://api.openai.com/auth"), auth}});
    a.refreshToken = QStringLiteral("rt_fake_%1_%2").arg(index).arg(salt);
    const QJsonObject file{{QStringLiteral("OPENAI_API_KEY"), QJsonValue()},
                           {QStringLiteral("tokens"), QJsonObject{{QStringLiteral("id_token"), idToken},
                                                                  {QStringLiteral("access_token"), a.accessToken},
                                                                  {QStringLiteral("refresh_token"), a.refreshToken},
                                                                  {QStringLiteral("account_id"), a.chatgptAccountId}}},
                           {QStringLiteral("last_refresh"), QDateTime::currentDateTimeUtc().toString(Qt::ISODate)}};
    a.file = dir + QStringLiteral("/auth-%1.json").arg(index);
    QFile f(a.file);
    if (f.open(QIODevice::WriteOnly))
        f.write(QJsonDocument(file).toJson());
    return a;
}

ProxyProcess::ProxyProcess()
{
    m_process.setProcessChannelMode(QProcess::SeparateChannels);
}

ProxyProcess::~ProxyProcess()
{
    if (isRunning()) {
        m_process.kill();
        m_process.waitForFinished(5000);
    }
}

QProcessEnvironment ProxyProcess::environment() const
{
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("SWITCHYARD_DATA_DIR"), dataDir());
    env.insert(QStringLiteral("SWITCHYARD_CONFIG"), configPath());
    if (!m_upstream.isEmpty())
        env.insert(QStringLiteral("SWITCHYARD_UPSTREAM_URL"), m_upstream);
    // Token refreshes go to a closed local port unless a test gives its fake OAuth server: fake tokens
    // must never reach the real authorization server.
    env.insert(QStringLiteral("SWITCHYARD_AUTH_URL"), QStringLiteral("http://127.0.0.1:9"));
    for (auto it = m_env.begin(); it != m_env.end(); ++it)
        env.insert(it.key(), it.value());
    return env;
}

bool ProxyProcess::writeConfig()
{
    // Tests count the upstream requests their turns cause: background usage polling stays off unless a
    // test asks for it.
    if (!m_config.contains(QLatin1String("usage_poll_interval_s")))
        m_config.insert(QStringLiteral("usage_poll_interval_s"), 0);
    QFile f(configPath());
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) {
        m_error = f.errorString();
        return false;
    }
    f.write(QJsonDocument(m_config).toJson());
    return true;
}

CliResult ProxyProcess::cli(const QStringList &args, int timeoutMs) const
{
    return cliOf(qEnvironmentVariable("SWITCHYARD_BIN"), args, {}, timeoutMs);
}

CliResult ProxyProcess::cliOf(const QString &program, const QStringList &args, const QByteArray &input,
                              int timeoutMs) const
{
    CliResult r;
    QProcess p;
    p.setProcessEnvironment(environment());
    p.start(program, args);
    if (p.waitForStarted(timeoutMs)) {
        p.write(input);
        p.closeWriteChannel();
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

bool ProxyProcess::addAccounts(int count, const QStringList &plans)
{
    if (!writeConfig())
        return false;
    for (int i = 0; i < count; ++i) {
        const int index = int(m_accounts.size()) + 1;
        FakeAccount a = makeFakeAccount(m_dir.path(), index, plans.value(i % plans.size()));
        const CliResult r = cli({QStringLiteral("accounts"), QStringLiteral("import"), a.file, QStringLiteral("--alias"),
                                 a.alias});
        if (r.exitCode != 0) {
            m_error = QStringLiteral("import failed: ") + QString::fromUtf8(r.err);
            return false;
        }
        const QRegularExpressionMatch m = QRegularExpression(QStringLiteral("(acc_[0-9a-f]+)")).match(QString::fromUtf8(r.out));
        a.id = m.captured(1);
        m_accounts.append(a);
    }
    return true;
}

bool ProxyProcess::start(const QString &upstreamBaseUrl, int timeoutMs)
{
    m_upstream = upstreamBaseUrl;
    if (!writeConfig())
        return false;
    m_process.setProcessEnvironment(environment());
    m_process.start(binary(),
                    {QStringLiteral("serve"), QStringLiteral("--listen"), m_listen});
    QDeadlineTimer deadline(timeoutMs);
    QByteArray out;
    while (!deadline.hasExpired()) {
        if (m_spin) {
            QCoreApplication::processEvents(QEventLoop::AllEvents, 20);
            if (m_process.state() == QProcess::NotRunning) {
                m_error = QStringLiteral("serve exited: ") + QString::fromUtf8(m_process.readAllStandardError());
                return false;
            }
            if (m_process.bytesAvailable() == 0) {
                QThread::msleep(2);
                continue;
            }
        } else if (!m_process.waitForReadyRead(100)) {
            if (m_process.state() != QProcess::Running) {
                m_error = QStringLiteral("serve exited: ") + QString::fromUtf8(m_process.readAllStandardError());
                return false;
            }
            continue;
        }
        out += m_process.readAllStandardOutput();
        const QRegularExpressionMatch m = QRegularExpression(QStringLiteral("serving on http://[^:]+:(\\d+)")).match(QString::fromUtf8(out));
        if (m.hasMatch()) {
            m_port = quint16(m.captured(1).toUInt());
            return true;
        }
    }
    m_error = QStringLiteral("serve did not start: ") + QString::fromUtf8(m_process.readAllStandardError());
    return false;
}

QString ProxyProcess::binary() const
{
    return m_binary.isEmpty() ? qEnvironmentVariable("SWITCHYARD_BIN") : m_binary;
}

bool ProxyProcess::signal(int signalNumber)
{
    return isRunning() && ::kill(pid_t(m_process.processId()), signalNumber) == 0;
}

void ProxyProcess::kill()
{
    if (!isRunning())
        return;
    ::kill(pid_t(m_process.processId()), SIGKILL);
    m_process.waitForFinished(10000);
    m_stderr += m_process.readAllStandardError();
}

void ProxyProcess::terminate()
{
    if (isRunning())
        ::kill(pid_t(m_process.processId()), SIGTERM);
}

int ProxyProcess::stop(int timeoutMs)
{
    if (!isRunning())
        return m_process.exitCode();
    ::kill(pid_t(m_process.processId()), SIGTERM);
    if (!m_process.waitForFinished(timeoutMs)) {
        m_process.kill();
        m_process.waitForFinished();
        return -1;
    }
    m_stderr += m_process.readAllStandardError();
    return m_process.exitStatus() == QProcess::NormalExit ? m_process.exitCode() : -1;
}

QByteArray ProxyProcess::serveStderr()
{
    m_stderr += m_process.readAllStandardError();
    return m_stderr;
}

QString ProxyProcess::url(const QString &path) const
{
    return QStringLiteral("http://127.0.0.1:%1%2").arg(m_port).arg(path);
}

const FakeAccount *ProxyProcess::accountByChatgptId(const QString &chatgptAccountId) const
{
    for (const FakeAccount &a : m_accounts) {
        if (a.chatgptAccountId == chatgptAccountId)
            return &a;
    }
    return nullptr;
}

const FakeAccount *ProxyProcess::accountById(const QString &id) const
{
    for (const FakeAccount &a : m_accounts) {
        if (a.id == id)
            return &a;
    }
    return nullptr;
}

QJsonArray ProxyProcess::requestLog() const
{
    const CliResult r = cli({QStringLiteral("requests"), QStringLiteral("--json"), QStringLiteral("--limit"),
                             QStringLiteral("1000")});
    return r.json().array();
}

QJsonObject ProxyProcess::waitForRequest(const QString &requestId, int timeoutMs) const
{
    QDeadlineTimer deadline(timeoutMs);
    do {
        for (const QJsonValue &v : requestLog()) {
            if (v.toObject().value(QLatin1String("request_id")).toString() == requestId)
                return v.toObject();
        }
        QThread::msleep(50);
    } while (!deadline.hasExpired());
    return {};
}

} // namespace sy::test
