#include "store/DatabaseLocation.h"

#include <QDir>
#include <QStringList>
#include <QUrl>
#include <QUrlQuery>

namespace sy {

namespace {

void setError(QString *error, const QString &text)
{
    if (error)
        *error = text;
}

// libpq keywords a URL may set. Others (host, user, password, dbname, ...) have their place in the URL itself,
// and keywords that run programs or read arbitrary files are not offered.
const char *const kPostgresOptions[] = {"sslmode",  "connect_timeout", "application_name",
                                        "sslrootcert", "sslcert",      "sslkey"};
const char *const kSslModes[] = {"disable", "allow", "prefer", "require", "verify-ca", "verify-full"};

bool isKnownOption(const QString &key)
{
    for (const char *k : kPostgresOptions) {
        if (key == QLatin1String(k))
            return true;
    }
    return false;
}

QString checkOption(const QString &key, const QString &value)
{
    if (!isKnownOption(key))
        return QStringLiteral("unknown parameter \"%1\" (allowed: sslmode, connect_timeout, application_name, "
                              "sslrootcert, sslcert, sslkey)")
            .arg(key);
    // QPSQL joins options with ';' and libpq splits them at spaces: such values cannot be passed on intact.
    if (value.isEmpty() || value.contains(QLatin1Char(';')) || value.contains(QLatin1Char(' ')) ||
        value.contains(QLatin1Char('\'')) || value.contains(QLatin1Char('\\')))
        return QStringLiteral("parameter \"%1\" needs a value without spaces, quotes, backslashes or ';'").arg(key);
    if (key == QLatin1String("sslmode")) {
        for (const char *m : kSslModes) {
            if (value == QLatin1String(m))
                return {};
        }
        // Without the value: a mistyped URL can put anything there, the password included.
        return QStringLiteral("sslmode is not one of disable, allow, prefer, require, verify-ca, verify-full");
    }
    if (key == QLatin1String("connect_timeout")) {
        bool ok = false;
        const int seconds = value.toInt(&ok);
        if (!ok || seconds < 1 || seconds > 3600)
            return QStringLiteral("connect_timeout must be a whole number of seconds from 1 to 3600");
    }
    return {};
}

std::optional<DatabaseLocation> parsePostgres(const QString &text, QString *error)
{
    const QUrl url(text, QUrl::StrictMode);
    if (!url.isValid()) {
        setError(error, QStringLiteral("not a valid postgresql:// URL"));
        return std::nullopt;
    }
    DatabaseLocation loc;
    loc.dialect = SqlDialect::Postgres;
    loc.host = url.host(QUrl::FullyDecoded);
    loc.user = url.userName(QUrl::FullyDecoded);
    loc.password = url.password(QUrl::FullyDecoded);
    if (loc.host.isEmpty()) {
        setError(error, QStringLiteral("a postgresql:// URL needs a host"));
        return std::nullopt;
    }
    if (loc.user.isEmpty()) {
        setError(error, QStringLiteral("a postgresql:// URL needs a user (postgresql://user@host/dbname)"));
        return std::nullopt;
    }
    const int port = url.port(5432);
    if (port < 1 || port > 65535) {
        setError(error, QStringLiteral("the port must be from 1 to 65535"));
        return std::nullopt;
    }
    loc.port = port;
    QString path = url.path(QUrl::FullyDecoded);
    if (path.startsWith(QLatin1Char('/')))
        path.remove(0, 1);
    if (path.isEmpty() || path.contains(QLatin1Char('/'))) {
        setError(error, QStringLiteral("a postgresql:// URL needs one database name after the host "
                                       "(postgresql://user@host/dbname)"));
        return std::nullopt;
    }
    loc.databaseName = path;
    if (url.hasFragment()) {
        setError(error, QStringLiteral("a postgresql:// URL cannot have a #fragment"));
        return std::nullopt;
    }
    const QUrlQuery query(url);
    for (const auto &item : query.queryItems(QUrl::FullyDecoded)) {
        const QString problem = checkOption(item.first, item.second);
        if (!problem.isEmpty()) {
            setError(error, problem);
            return std::nullopt;
        }
        loc.options.append(item);
    }
    return loc;
}

} // namespace

std::optional<DatabaseLocation> DatabaseLocation::parse(const QString &text, QString *error)
{
    if (text.startsWith(QLatin1String("postgresql://")) || text.startsWith(QLatin1String("postgres://")))
        return parsePostgres(text, error);
    DatabaseLocation loc;
    if (text.startsWith(QLatin1String("sqlite:"))) {
        const QUrl url(text, QUrl::StrictMode);
        const QString path = url.path(QUrl::FullyDecoded);
        if (!url.isValid() || !url.host().isEmpty() || !text.startsWith(QLatin1String("sqlite:///")) ||
            url.hasQuery() || url.hasFragment() || !QDir::isAbsolutePath(path) || path.endsWith(QLatin1Char('/'))) {
            setError(error, QStringLiteral("a sqlite URL names an absolute file: sqlite:///path/to/switchyard.sqlite"));
            return std::nullopt;
        }
        loc.sqlitePath = QDir::cleanPath(path);
        return loc;
    }
    if (text.contains(QLatin1String("://"))) {
        setError(error, QStringLiteral("unsupported scheme (use postgresql://, sqlite:/// or an absolute file path)"));
        return std::nullopt;
    }
    if (text.isEmpty() || !QDir::isAbsolutePath(text) || text.endsWith(QLatin1Char('/'))) {
        setError(error, QStringLiteral("not an absolute SQLite file path, a sqlite:/// URL or a postgresql:// URL"));
        return std::nullopt;
    }
    loc.sqlitePath = QDir::cleanPath(text);
    return loc;
}

QString DatabaseLocation::redacted() const
{
    if (dialect == SqlDialect::Sqlite)
        return sqlitePath;
    QUrl url;
    url.setScheme(QStringLiteral("postgresql"));
    url.setUserName(user);
    if (!password.isEmpty())
        url.setPassword(QStringLiteral("***"));
    url.setHost(host);
    url.setPort(port);
    url.setPath(QLatin1Char('/') + databaseName);
    if (!options.isEmpty()) {
        QUrlQuery query;
        query.setQueryItems(options);
        url.setQuery(query);
    }
    return url.toString();
}

QString DatabaseLocation::postgresConnectOptions() const
{
    QStringList parts;
    bool timeout = false;
    for (const auto &option : options) {
        parts << option.first + QLatin1Char('=') + option.second;
        timeout = timeout || option.first == QLatin1String("connect_timeout");
    }
    // libpq waits for ever by default; a replica whose database is unreachable should say so.
    if (!timeout)
        parts << QStringLiteral("connect_timeout=10");
    return parts.join(QLatin1Char(';'));
}

QString redactDatabaseLocation(const QString &text)
{
    const std::optional<DatabaseLocation> loc = DatabaseLocation::parse(text, nullptr);
    return loc ? loc->redacted() : QStringLiteral("(invalid database location)");
}

} // namespace sy
