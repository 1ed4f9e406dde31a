#pragma once

#include "store/DatabaseLocation.h"

#include <QString>

namespace sy {

class Database;

// Schema versions, oldest first. To change the schema, add a version: append its statements in Schema.cpp
// (never edit a released version) and bump kLatestSchemaVersion; Database::migrate() applies every version
// above the file's current one in one transaction.
//
// The statements are written once, in SQLite's type words, and translated for PostgreSQL by translateDdl():
// use TEXT, INTEGER (64-bit on both), REAL (double on both) and BLOB; PRIMARY KEY, UNIQUE, CHECK, REFERENCES,
// DEFAULT, CREATE INDEX and ALTER TABLE ... ADD COLUMN. Not portable: AUTOINCREMENT, an INTEGER PRIMARY KEY
// that is expected to number rows by itself, WITHOUT ROWID, STRICT, and any other SQLite-only clause.
constexpr int kLatestSchemaVersion = 8;

// Runs the statements that take a version-(v-1) schema to version v. Called inside migrate()'s transaction.
bool applySchemaVersion(Database &db, int version, QString *error);

// A schema statement for `dialect`. For PostgreSQL the type words INTEGER and INT become BIGINT (SQLite's
// integers are 64-bit, PostgreSQL's INTEGER is 32-bit: millisecond timestamps would overflow), REAL becomes
// DOUBLE PRECISION and BLOB becomes BYTEA. Whole words only, any case, never inside '...' literals, "..."
// identifiers or -- comments. SQLite statements are returned unchanged.
QString translateDdl(const QString &sql, SqlDialect dialect);

} // namespace sy
