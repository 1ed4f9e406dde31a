#pragma once

#include "http/HttpRequest.h"

#include <QString>
#include <optional>

namespace sy {

// A freshly made API key. `secret` is shown to the user once and never stored; `hash` is what the store keeps.
struct NewApiKey
{
    QString id;     // "key_" + 12 hex digits: public, names the key in lists and `apikeys revoke`
    QString secret; // "sy-" + 32 random bytes (libsodium randombytes) in unpadded base64url
    QString hash;   // hashApiKey(secret)
};

NewApiKey generateApiKey();

// Hex BLAKE2b-256 (crypto_generichash) of the key as presented. The key carries 256 random bits, so a fast
// unsalted hash is enough: nothing can be guessed from it, and equal keys must map to one lookup value.
QString hashApiKey(QByteArrayView presented);

// The key a client presented: "Authorization: Bearer KEY", else "x-api-key: KEY". Empty when neither.
QByteArray presentedApiKey(const HttpRequest &request);

// "30m", "5h", "1d", "7d": a limit window from 1 minute to 30 days, in seconds; nullopt (with *error) otherwise.
std::optional<qint64> parseLimitWindow(const QString &text, QString *error);
// The shortest of those spellings for a window ("5h", "90m", "7d").
QString limitWindowText(qint64 seconds);

constexpr qint64 kMaxLimitWindowS = 30LL * 24 * 3600;

} // namespace sy
