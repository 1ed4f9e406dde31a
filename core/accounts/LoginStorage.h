#pragma once

#include "accounts/AuthTokens.h"
#include "store/AccountRepository.h"
#include "util/Clock.h"

#include <QString>
#include <optional>

namespace sy {

class Database;
class SecretStore;

// The identity a fresh login's tokens describe: email, user id and plan from the id_token; the ChatGPT
// account id from the id_token, else from the access token's auth claim; the token expiry from the access
// token's own "exp"; last refresh = now. nullopt (and *error without token text) when the tokens do not
// name an account and a user.
std::optional<AccountRepository::Identity> identityFromLoginTokens(const AuthTokens &tokens, qint64 nowMs,
                                                                   QString *error);

struct SavedLogin
{
    QString accountId;
    bool created = false;
    QString email;
    QString plan;
};

// Stores a completed login the way `accounts import` stores a file: the tokens in the SecretStore first
// (an account row never exists without its secret), then the account row. When the row cannot be written
// for an account that did not exist before, the new secret is removed again. Blocks on the SecretStore
// (its own local event loop), so call it on the store's thread, outside of socket handlers.
std::optional<SavedLogin> saveLogin(Database &db, SecretStore &secrets, const AuthTokens &tokens,
                                    const std::optional<QString> &alias, QString *error,
                                    const Clock &clock = SystemClock::instance());

} // namespace sy
