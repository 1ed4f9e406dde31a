#pragma once

#include <QString>

namespace sy {

struct Config;
class SecretStore;

// The SecretStore the configuration asks for (SWITCHYARD_SECRET_BACKEND): the OS keychain by default, or
// the database (DatabaseSecretStore on the data dir's SQLite file, key from SWITCHYARD_SECRET_KEY_FILE).
// Returns a new unparented store the caller owns (move it to its thread before the first call), or null
// with *error saying why (a missing or unsafe key file, an unknown backend); never a token in the text.
// Every process that handles tokens comes through here, so this also turns core dumps off for the process
// (disableCoreDumps()): after a crash, no core file may hold a token.
SecretStore *makeSecretStore(const Config &config, QString *error);

} // namespace sy
