#pragma once

#include <QJsonObject>
#include <QString>
#include <optional>

namespace sy {

// What Switchyard reads from an OpenAI id_token's payload (PROTOCOL.md "Accounts: OAuth and auth.json").
// The signature is not verified: the token comes from the user's own auth.json or from our own token
// exchange over TLS, and the upstream checks the access token anyway.
struct IdTokenClaims
{
    QString email;                     // "email", else the "https://api.openai.com/profile" claim's email; may be empty
    std::optional<qint64> expiresAtMs; // "exp" (seconds) in ms
    QString chatgptAccountId;          // auth claim chatgpt_account_id; may be empty
    QString planType;                  // auth claim chatgpt_plan_type; may be empty
    QString userId;                    // auth claim chatgpt_user_id, else user_id, else "sub"
    QString subject;                   // "sub"
};

// Decodes a JWT's payload (base64url, no verification). On failure returns an empty object and sets
// *error; the message names the problem, never any part of the token.
QJsonObject decodeJwtPayload(const QString &jwt, QString *error);

// On failure returns default-constructed claims and sets *error (non-empty); *error is cleared on success.
IdTokenClaims parseIdToken(const QString &jwt, QString *error);

// The "exp" of a token when it is a JWT that carries one (in ms); nullopt for opaque tokens.
std::optional<qint64> jwtExpiryMs(const QString &token);

} // namespace sy
