#pragma once

#include <QFileDevice>
#include <QString>
#include <QStringList>

namespace sy::test {

// Writes a fresh random 32-byte secret key (hex, one line) to `path`, as `SWITCHYARD_SECRET_KEY_FILE` expects,
// with the given permissions (owner read/write by default). False when the file cannot be written.
bool writeSecretKeyFile(const QString &path,
                        QFileDevice::Permissions permissions = QFileDevice::ReadOwner | QFileDevice::WriteOwner);

// Runs `query` on a read-only SQLite connection of the test's own and returns every row's first column;
// *error is set when the database does not open or the query fails.
QStringList readSqliteColumn(const QString &path, const QString &query, QString *error);

} // namespace sy::test
