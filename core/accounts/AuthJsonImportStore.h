#pragma once

#include "accounts/AuthJson.h"

#include <QList>
#include <QString>
#include <QStringList>
#include <optional>

namespace sy {

class Database;
class SecretStore;

// Reads and parses auth.json files, all before anything is stored: one unreadable or malformed file fails
// the whole set ("FILE: cannot read: ..." / "FILE: <reason> (nothing was imported)"), never with token text.
bool readAuthJsonFiles(const QStringList &files, QList<AuthJsonImport> *parsed, QString *error);

struct ImportedAccount
{
    QString accountId;
    bool created = false;
    QString email;
    QString plan;
};

// Stores one parsed auth.json as `switchyard accounts import` does: the tokens in the SecretStore first (an
// account row never exists without its secret), then the account row (alias set when given). When the row
// cannot be written and no such account exists, the stored secret is removed again. Blocks on the
// SecretStore, so call it on the store's thread. *error: "tokens not stored: ..." or the repository's reason.
std::optional<ImportedAccount> storeAuthJsonImport(Database &db, SecretStore &secrets, const AuthJsonImport &import,
                                                   const std::optional<QString> &alias, QString *error);

} // namespace sy
