#pragma once

#include "accounts/AuthTokens.h"

#include <QString>
#include <optional>

namespace sy {

// An egress proxy's username and password. They live in the SecretStore under egressSecretKey(name), packed
// into the store's one blob shape (AuthTokens), and only ever in memory otherwise: never in the config
// file, a log line or an error message.
struct EgressCredentials
{
    QString user;
    QString password;
};

AuthTokens packEgressCredentials(const EgressCredentials &credentials);
// Nullopt when the blob was not written by packEgressCredentials().
std::optional<EgressCredentials> unpackEgressCredentials(const AuthTokens &tokens);

} // namespace sy
