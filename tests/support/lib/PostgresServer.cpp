#include "PostgresServer.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QHostAddress>
#include <QProcess>
#include <QTcpServer>
#include <QUrl>

#include <pwd.h>
#include <unistd.h>

namespace sy::test {

namespace {

void setError(QString *error, const QString &text)
{
    if (error)
        *error = text;
}

quint16 freePort()
{
    QTcpServer probe;
    if (!probe.listen(QHostAddress::LocalHost, 0))
        return 0;
    return probe.serverPort();
}

} // namespace

PostgresServer::PostgresServer()
{
    m_bin = qEnvironmentVariable("SWITCHYARD_PG_BIN", QStringLiteral("/usr/lib/postgresql/15/bin"));
    m_asPostgresUser = ::geteuid() == 0;
}

PostgresServer::~PostgresServer()
{
    if (m_running) {
        QString ignored;
        run(QStringLiteral("pg_ctl"),
            {QStringLiteral("-D"), m_dir->filePath(QStringLiteral("data")), QStringLiteral("-m"),
             QStringLiteral("immediate"), QStringLiteral("-w"), QStringLiteral("stop")},
            &ignored);
    }
    // QTemporaryDir removes the cluster; as root it may delete the postgres user's files.
}

bool PostgresServer::run(const QString &tool, const QStringList &args, QString *error, QByteArray *out, int timeoutMs,
                         bool asServer) const
{
    QProcess p;
    if (asServer && !m_serverEnvironment.isEmpty()) {
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(m_serverEnvironment);
        p.setProcessEnvironment(environment);
    }
    // The server user must be able to stand in its working directory (ours may be private to root).
    p.setWorkingDirectory(m_dir->path());
    const QString program = m_bin + QLatin1Char('/') + tool;
    if (m_asPostgresUser)
        p.start(QStringLiteral("runuser"),
                QStringList{QStringLiteral("-u"), QStringLiteral("postgres"), QStringLiteral("--"), program} + args);
    else
        p.start(program, args);
    if (!p.waitForStarted(10000)) {
        setError(error, QStringLiteral("%1 did not start: %2").arg(tool, p.errorString()));
        return false;
    }
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished(5000);
        setError(error, QStringLiteral("%1 did not finish within %2 ms").arg(tool).arg(timeoutMs));
        return false;
    }
    const QByteArray stdoutText = p.readAllStandardOutput();
    if (out)
        *out = stdoutText;
    if (p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0) {
        setError(error, QStringLiteral("%1 failed (exit %2): %3")
                            .arg(tool)
                            .arg(p.exitCode())
                            .arg(QString::fromUtf8(p.readAllStandardError()).trimmed()));
        return false;
    }
    return true;
}

bool PostgresServer::start(QString *error, const QString &database)
{
    for (const char *tool : {"initdb", "pg_ctl", "createdb", "pg_dump"}) {
        const QFileInfo info(m_bin + QLatin1Char('/') + QLatin1String(tool));
        if (!info.isExecutable()) {
            setError(error, QStringLiteral("PostgreSQL 15 server binaries are missing (%1 not found): install the "
                                           "Debian package postgresql (see README), or point SWITCHYARD_PG_BIN at "
                                           "them")
                                .arg(info.filePath()));
            return false;
        }
    }
    const passwd *pg = m_asPostgresUser ? ::getpwnam("postgres") : nullptr;
    if (m_asPostgresUser && !pg) {
        setError(error, QStringLiteral("running as root, but there is no system user postgres to run the test "
                                       "server as (install the Debian package postgresql)"));
        return false;
    }
    // Short path: the unix socket lives here and socket paths are limited to about 100 bytes.
    m_dir = std::make_unique<QTemporaryDir>(QStringLiteral("/tmp/sy-pg-XXXXXX"));
    if (!m_dir->isValid()) {
        setError(error, QStringLiteral("cannot create a temporary directory: ") + m_dir->errorString());
        return false;
    }
    if (pg && ::chown(QFile::encodeName(m_dir->path()).constData(), pg->pw_uid, pg->pw_gid) != 0) {
        setError(error, QStringLiteral("cannot hand %1 to the postgres user").arg(m_dir->path()));
        return false;
    }
    if (!run(QStringLiteral("initdb"),
             {QStringLiteral("-D"), m_dir->filePath(QStringLiteral("data")), QStringLiteral("-U"),
              QStringLiteral("postgres"), QStringLiteral("-A"), QStringLiteral("trust"), QStringLiteral("-E"),
              QStringLiteral("UTF8"), QStringLiteral("--no-locale"), QStringLiteral("--no-sync")},
             error))
        return false;
    m_initialized = true;
    if (!startServer(error))
        return false;
    m_database = database;
    return createDatabase(database, error);
}

bool PostgresServer::startServer(QString *error)
{
    const bool reusePort = m_port != 0;
    QString lastError;
    // A free port can be taken by someone else between the probe and the server's bind: try a few.
    for (int attempt = 0; attempt < 5; ++attempt) {
        if (!reusePort)
            m_port = freePort();
        if (m_port == 0) {
            setError(error, QStringLiteral("no free port on 127.0.0.1"));
            return false;
        }
        const QString options =
            QStringLiteral("-p %1 -k %2 -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
                           "-c full_page_writes=off")
                .arg(m_port)
                .arg(m_dir->path());
        if (run(QStringLiteral("pg_ctl"),
                {QStringLiteral("-D"), m_dir->filePath(QStringLiteral("data")), QStringLiteral("-l"),
                 m_dir->filePath(QStringLiteral("log")), QStringLiteral("-w"), QStringLiteral("-t"),
                 QStringLiteral("60"), QStringLiteral("-o"), options, QStringLiteral("start")},
                &lastError, nullptr, 90000, true)) {
            m_running = true;
            return true;
        }
        if (reusePort)
            break;
    }
    setError(error, lastError + QStringLiteral("\nserver log:\n") + QString::fromUtf8(log().right(2000)));
    return false;
}

bool PostgresServer::pause(QString *error)
{
    if (!m_running) {
        setError(error, QStringLiteral("the server is not running"));
        return false;
    }
    if (!run(QStringLiteral("pg_ctl"),
             {QStringLiteral("-D"), m_dir->filePath(QStringLiteral("data")), QStringLiteral("-m"),
              QStringLiteral("fast"), QStringLiteral("-w"), QStringLiteral("stop")},
             error))
        return false;
    m_running = false;
    return true;
}

bool PostgresServer::resume(QString *error)
{
    if (!m_initialized || m_running) {
        setError(error, QStringLiteral("the server is not paused"));
        return false;
    }
    return startServer(error);
}

bool PostgresServer::sql(const QString &command, QString *error, const QString &database)
{
    return run(QStringLiteral("psql"),
               {QStringLiteral("-h"), QStringLiteral("127.0.0.1"), QStringLiteral("-p"), QString::number(m_port),
                QStringLiteral("-U"), QStringLiteral("postgres"), QStringLiteral("-v"), QStringLiteral("ON_ERROR_STOP=1"),
                QStringLiteral("-d"), database.isEmpty() ? m_database : database, QStringLiteral("-c"), command},
               error);
}

bool PostgresServer::createDatabase(const QString &name, QString *error)
{
    return run(QStringLiteral("createdb"),
               {QStringLiteral("-h"), QStringLiteral("127.0.0.1"), QStringLiteral("-p"), QString::number(m_port),
                QStringLiteral("-U"), QStringLiteral("postgres"), name},
               error);
}

QString PostgresServer::url(const QString &database, const QString &password) const
{
    QUrl u;
    u.setScheme(QStringLiteral("postgresql"));
    u.setUserName(QStringLiteral("postgres"));
    if (!password.isEmpty())
        u.setPassword(password);
    u.setHost(QStringLiteral("127.0.0.1"));
    u.setPort(m_port);
    u.setPath(QLatin1Char('/') + (database.isEmpty() ? m_database : database));
    return u.toString(QUrl::FullyEncoded);
}

bool PostgresServer::dump(const QString &database, QByteArray *out, QString *error)
{
    return run(QStringLiteral("pg_dump"),
               {QStringLiteral("-h"), QStringLiteral("127.0.0.1"), QStringLiteral("-p"), QString::number(m_port),
                QStringLiteral("-U"), QStringLiteral("postgres"), QStringLiteral("--no-owner"), database},
               error, out);
}

QByteArray PostgresServer::log() const
{
    if (!m_dir)
        return {};
    QFile f(m_dir->filePath(QStringLiteral("log")));
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return f.readAll();
}

} // namespace sy::test
