#pragma once

#include "accounts/AuthTokens.h"
#include "accounts/IdToken.h"

#include <QByteArray>
#include <QString>
#include <optional>

namespace sy {

// One Codex CLI auth.json, validated: what `switchyard accounts import` needs to create or update an
// account (identity from the id_token) and to store its tokens (in the SecretStore only).
struct AuthJsonImport
{
    AuthTokens tokens;
    IdTokenClaims claims;
    QString chatgptAccountId; // tokens.account_id, else the id_token's chatgpt_account_id
    QString userId;           // from the id_token (chatgpt_user_id, user_id, else sub)
    QString email;
    QString plan;
    std::optional<qint64> accessTokenExpiresAtMs; // the access token's own "exp" when it is a JWT
    std::optional<qint64> lastRefreshMs;          // "last_refresh" when present and parseable
};

// Parses the auth.json format in PROTOCOL.md. On failure returns a default-constructed value and sets
// *error to a reason naming the field and problem; the reason never contains token text.
AuthJsonImport parseAuthJson(const QByteArray &fileContents, QString *error);

} // namespace sy
