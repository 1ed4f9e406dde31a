#pragma once

#include <QList>
#include <QPair>
#include <QString>
#include <optional>

namespace sy {

// The SQL engines Switchyard stores its state in. Repositories write SQL both understand; the rare statement
// that must differ asks Database::dialect().
enum class SqlDialect
{
    Sqlite,
    Postgres
};

// Where the database lives, parsed from what SWITCHYARD_DATABASE_URL (or the data directory) names:
//   /abs/path.sqlite or sqlite:///abs/path.sqlite                 -> a SQLite file
//   postgresql://user[:password]@host[:port]/dbname[?sslmode=...]  -> a PostgreSQL database ("postgres://" too)
// The PostgreSQL query part accepts the libpq keywords listed in DatabaseLocation.cpp (sslmode, connect_timeout,
// application_name, sslrootcert, sslcert, sslkey). Parse errors never repeat the text, which may hold a password.
struct DatabaseLocation
{
    SqlDialect dialect = SqlDialect::Sqlite;
    QString sqlitePath; // Sqlite: absolute file path

    // Postgres
    QString host;
    int port = 5432;
    QString user;
    QString password;
    QString databaseName;
    QList<QPair<QString, QString>> options; // libpq keyword -> value, in URL order

    static std::optional<DatabaseLocation> parse(const QString &text, QString *error);

    // For messages and logs: the file path, or the URL with the password replaced by "***".
    QString redacted() const;
    // libpq options in QPSQL's connect-options form ("k=v;k=v"), with a connect timeout unless the URL set one.
    QString postgresConnectOptions() const;
};

// redacted() of whatever `text` parses to; text that does not parse is not shown at all.
QString redactDatabaseLocation(const QString &text);

} // namespace sy
