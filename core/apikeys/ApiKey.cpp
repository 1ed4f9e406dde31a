#include "apikeys/ApiKey.h"

#include <QRegularExpression>
#include <sodium.h>

namespace sy {

namespace {

bool sodiumReady()
{
    static const bool ready = sodium_init() >= 0;
    return ready;
}

} // namespace

NewApiKey generateApiKey()
{
    if (!sodiumReady())
        qFatal("libsodium has no usable random source");
    unsigned char secret[32];
    randombytes_buf(secret, sizeof secret);
    char encoded[sodium_base64_ENCODED_LEN(sizeof secret, sodium_base64_VARIANT_URLSAFE_NO_PADDING)];
    sodium_bin2base64(encoded, sizeof encoded, secret, sizeof secret, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    sodium_memzero(secret, sizeof secret);

    unsigned char idBytes[6];
    randombytes_buf(idBytes, sizeof idBytes);
    char idHex[sizeof idBytes * 2 + 1];
    sodium_bin2hex(idHex, sizeof idHex, idBytes, sizeof idBytes);

    NewApiKey key;
    key.id = QStringLiteral("key_") + QLatin1String(idHex);
    key.secret = QStringLiteral("sy-") + QLatin1String(encoded);
    sodium_memzero(encoded, sizeof encoded);
    // The Latin-1 copy is this function's own: wiped, not just freed.
    QByteArray latin = key.secret.toLatin1();
    key.hash = hashApiKey(latin);
    sodium_memzero(latin.data(), size_t(latin.size()));
    return key;
}

QString hashApiKey(QByteArrayView presented)
{
    sodiumReady();
    unsigned char digest[crypto_generichash_BYTES];
    crypto_generichash(digest, sizeof digest, reinterpret_cast<const unsigned char *>(presented.data()),
                       size_t(presented.size()), nullptr, 0);
    char hex[sizeof digest * 2 + 1];
    sodium_bin2hex(hex, sizeof hex, digest, sizeof digest);
    return QString::fromLatin1(hex);
}

QByteArray presentedApiKey(const HttpRequest &request)
{
    const QByteArray authorization = request.header("authorization").trimmed();
    if (authorization.size() > 7 && headerNameEquals(authorization.left(7), "bearer "))
        return authorization.mid(7).trimmed();
    return request.header("x-api-key").trimmed();
}

std::optional<qint64> parseLimitWindow(const QString &text, QString *error)
{
    static const QRegularExpression re(QStringLiteral("^([0-9]{1,6})([mhd])$"));
    const QRegularExpressionMatch m = re.match(text.trimmed());
    qint64 seconds = 0;
    if (m.hasMatch()) {
        const qint64 n = m.captured(1).toLongLong();
        const QChar unit = m.captured(2).at(0);
        seconds = n * (unit == QLatin1Char('m') ? 60 : unit == QLatin1Char('h') ? 3600 : 86400);
    }
    if (seconds < 60 || seconds > kMaxLimitWindowS) {
        if (error)
            *error = QStringLiteral("\"%1\" is not a window from 1m to 30d (e.g. 5h, 1d, 7d)").arg(text);
        return std::nullopt;
    }
    return seconds;
}

QString limitWindowText(qint64 seconds)
{
    if (seconds % 86400 == 0)
        return QString::number(seconds / 86400) + QLatin1Char('d');
    if (seconds % 3600 == 0)
        return QString::number(seconds / 3600) + QLatin1Char('h');
    return QString::number(seconds / 60) + QLatin1Char('m');
}

} // namespace sy
