#pragma once

#include <QByteArray>
#include <QString>
#include <array>
#include <optional>

namespace sy {

// The 32-byte key of the database secret backend (SWITCHYARD_SECRET_KEY_FILE). Wiped from memory when
// destroyed. Never printed: id() is a short one-way fingerprint that tells two keys apart in messages.
class SecretKey
{
public:
    static constexpr int kBytes = 32;

    SecretKey() = default;
    SecretKey(const SecretKey &other);
    SecretKey &operator=(const SecretKey &other);
    ~SecretKey();

    // Exactly kBytes raw bytes; nullopt otherwise.
    static std::optional<SecretKey> fromBytes(const QByteArray &raw);
    // A key file holds either the 32 raw bytes or 64 hex digits (surrounding whitespace allowed). It must be
    // a regular file that neither group nor others may read, write or execute (mode 0600 or stricter).
    // On failure *error names the file and the problem, never the key.
    static std::optional<SecretKey> fromFile(const QString &path, QString *error);

    const unsigned char *data() const { return m_bytes.data(); }
    // 16 hex digits of a keyed BLAKE2b hash of the key: equal for equal keys, useless for recovering it.
    QString id() const;

private:
    std::array<unsigned char, kBytes> m_bytes{};
};

// One sealed secret: XChaCha20-Poly1305 (IETF) with a random 24-byte nonce per seal.
struct SealedSecret
{
    QByteArray nonce;
    QByteArray ciphertext; // includes the 16-byte tag
};

// The associated data binds a sealed blob to its account: opening it under another account id fails.
SealedSecret sealSecret(const SecretKey &key, const QString &accountId, const QByteArray &plaintext);
// False when the key is wrong, the blob was altered or it belongs to another account.
bool openSecret(const SecretKey &key, const QString &accountId, const SealedSecret &sealed, QByteArray *plaintext);

// Overwrites the bytes of a buffer that held a secret (the compiler may not drop it).
void wipe(QByteArray &bytes);

} // namespace sy
