#pragma once

#include <QString>

namespace sy {

class Database;

// Schema versions, oldest first. To change the schema, add a version: append its statements in Schema.cpp
// (never edit a released version) and bump kLatestSchemaVersion; Database::migrate() applies every version
// above the file's current one in one transaction.
constexpr int kLatestSchemaVersion = 5;

// Runs the statements that take a version-(v-1) schema to version v. Called inside migrate()'s transaction.
bool applySchemaVersion(Database &db, int version, QString *error);

} // namespace sy
