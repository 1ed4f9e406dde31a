#include "accounts/SecretCipher.h"

#include <QFile>
#include <QFileInfo>
#include <cctype>
#include <cstring>
#include <sodium.h>

namespace sy {

namespace {

static_assert(SecretKey::kBytes == crypto_aead_xchacha20poly1305_ietf_KEYBYTES, "XChaCha20-Poly1305 key size");

// Prefix of the associated data; a later format change gets a new prefix, so old blobs cannot be confused
// with new ones.
const QByteArray kAssociatedPrefix = QByteArrayLiteral("switchyard/account-secret/v1\n");

bool ensureSodium()
{
    // sodium_init() is idempotent and thread-safe; < 0 means no usable random source.
    static const bool ready = sodium_init() >= 0;
    return ready;
}

QByteArray associatedData(const QString &accountId)
{
    return kAssociatedPrefix + accountId.toUtf8();
}

bool isHexDigits(const QByteArray &text)
{
    for (char c : text) {
        if (!std::isxdigit(static_cast<unsigned char>(c)))
            return false;
    }
    return !text.isEmpty();
}

} // namespace

SecretKey::SecretKey(const SecretKey &other) : m_bytes(other.m_bytes) {}

SecretKey &SecretKey::operator=(const SecretKey &other)
{
    m_bytes = other.m_bytes;
    return *this;
}

SecretKey::~SecretKey()
{
    sodium_memzero(m_bytes.data(), m_bytes.size());
}

std::optional<SecretKey> SecretKey::fromBytes(const QByteArray &raw)
{
    if (raw.size() != kBytes)
        return std::nullopt;
    SecretKey key;
    std::memcpy(key.m_bytes.data(), raw.constData(), kBytes);
    return key;
}

std::optional<SecretKey> SecretKey::fromFile(const QString &path, QString *error)
{
    const auto failWith = [&](const QString &why) -> std::optional<SecretKey> {
        if (error)
            *error = QStringLiteral("secret key file %1 %2").arg(path, why);
        return std::nullopt;
    };
    if (path.isEmpty()) {
        if (error)
            *error = QStringLiteral("no secret key file given (SWITCHYARD_SECRET_KEY_FILE)");
        return std::nullopt;
    }
    const QFileInfo info(path);
    if (!info.exists())
        return failWith(QStringLiteral("does not exist"));
    if (!info.isFile())
        return failWith(QStringLiteral("is not a regular file"));
    const QFile::Permissions others =
        QFile::ReadGroup | QFile::WriteGroup | QFile::ExeGroup | QFile::ReadOther | QFile::WriteOther | QFile::ExeOther;
    if (info.permissions() & others)
        return failWith(QStringLiteral("is accessible by group or others; restrict it with chmod 600"));
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return failWith(QStringLiteral("cannot be read: ") + file.errorString());
    // Anything much longer than a hex key is not a key file; reading it all would only copy more bytes.
    QByteArray content = file.read(256);
    const bool tooLong = !file.atEnd();
    file.close();

    std::optional<SecretKey> key;
    QString why;
    if (tooLong) {
        why = QStringLiteral("is too long for a key");
    } else if (content.size() == kBytes) {
        // 32 hex digits are a 16-byte key written as text, not 32 random bytes.
        if (isHexDigits(content))
            why = QStringLiteral("holds 32 hex digits (16 bytes); a key needs 64 hex digits or 32 raw bytes");
        else
            key = fromBytes(content);
    } else {
        QByteArray text = content.trimmed();
        if (text.size() == 2 * kBytes && isHexDigits(text)) {
            QByteArray raw = QByteArray::fromHex(text);
            key = fromBytes(raw);
            wipe(raw);
        } else {
            why = QStringLiteral("has the wrong size (%1 bytes): it must hold 32 raw bytes or 64 hex digits")
                      .arg(content.size());
        }
        wipe(text);
    }
    wipe(content);
    if (key && sodium_is_zero(key->m_bytes.data(), key->m_bytes.size()))
        return failWith(QStringLiteral("holds an all-zero key"));
    if (!key)
        return failWith(why);
    return key;
}

QString SecretKey::id() const
{
    static const QByteArray label = QByteArrayLiteral("switchyard secret key id");
    unsigned char out[8];
    crypto_generichash(out, sizeof out, reinterpret_cast<const unsigned char *>(label.constData()),
                       static_cast<unsigned long long>(label.size()), m_bytes.data(), m_bytes.size());
    return QString::fromLatin1(QByteArray(reinterpret_cast<const char *>(out), sizeof out).toHex());
}

SealedSecret sealSecret(const SecretKey &key, const QString &accountId, const QByteArray &plaintext)
{
    SealedSecret sealed;
    if (!ensureSodium())
        return sealed;
    const QByteArray ad = associatedData(accountId);
    sealed.nonce.resize(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES);
    randombytes_buf(sealed.nonce.data(), size_t(sealed.nonce.size()));
    sealed.ciphertext.resize(plaintext.size() + qsizetype(crypto_aead_xchacha20poly1305_ietf_ABYTES));
    unsigned long long length = 0;
    crypto_aead_xchacha20poly1305_ietf_encrypt(
        reinterpret_cast<unsigned char *>(sealed.ciphertext.data()), &length,
        reinterpret_cast<const unsigned char *>(plaintext.constData()),
        static_cast<unsigned long long>(plaintext.size()), reinterpret_cast<const unsigned char *>(ad.constData()),
        static_cast<unsigned long long>(ad.size()), nullptr,
        reinterpret_cast<const unsigned char *>(sealed.nonce.constData()), key.data());
    sealed.ciphertext.resize(qsizetype(length));
    return sealed;
}

bool openSecret(const SecretKey &key, const QString &accountId, const SealedSecret &sealed, QByteArray *plaintext)
{
    if (!ensureSodium() || sealed.nonce.size() != qsizetype(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES) ||
        sealed.ciphertext.size() < qsizetype(crypto_aead_xchacha20poly1305_ietf_ABYTES))
        return false;
    const QByteArray ad = associatedData(accountId);
    QByteArray out(sealed.ciphertext.size() - qsizetype(crypto_aead_xchacha20poly1305_ietf_ABYTES), Qt::Uninitialized);
    unsigned long long length = 0;
    const int rc = crypto_aead_xchacha20poly1305_ietf_decrypt(
        reinterpret_cast<unsigned char *>(out.data()), &length, nullptr,
        reinterpret_cast<const unsigned char *>(sealed.ciphertext.constData()),
        static_cast<unsigned long long>(sealed.ciphertext.size()),
        reinterpret_cast<const unsigned char *>(ad.constData()), static_cast<unsigned long long>(ad.size()),
        reinterpret_cast<const unsigned char *>(sealed.nonce.constData()), key.data());
    if (rc != 0) {
        wipe(out);
        return false;
    }
    out.resize(qsizetype(length));
    *plaintext = out;
    return true;
}

void wipe(QByteArray &bytes)
{
    if (!bytes.isEmpty())
        sodium_memzero(bytes.data(), size_t(bytes.size()));
    bytes.clear();
}

} // namespace sy
