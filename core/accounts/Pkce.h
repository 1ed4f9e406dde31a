#pragma once

#include <QString>

namespace sy {

// Proof Key for Code Exchange (RFC 7636) with the S256 method, as the OpenAI authorization server
// requires for public clients such as Codex CLI and Switchyard.
struct PkcePair
{
    QString verifier;  // 86 characters of base64url (64 random bytes), kept in memory only
    QString challenge; // pkceChallengeS256(verifier)
};

// A fresh verifier from the system's cryptographic random source, with its challenge.
PkcePair generatePkce();

// BASE64URL(SHA-256(ASCII(verifier))) without padding.
QString pkceChallengeS256(const QString &verifier);

// `bytes` random bytes from the system's cryptographic source as unpadded base64url (for `state`).
QString randomUrlSafeToken(int bytes);

// True when `text` is 43..128 characters of the RFC 7636 "unreserved" set, the shape both a verifier
// and an S256 challenge must have.
bool isPkceShaped(const QString &text);

} // namespace sy
