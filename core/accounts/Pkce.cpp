#include "accounts/Pkce.h"

#include <QByteArray>
#include <QCryptographicHash>
#include <QRandomGenerator>

namespace sy {

namespace {

QString base64Url(const QByteArray &bytes)
{
    return QString::fromLatin1(bytes.toBase64(QByteArray::Base64UrlEncoding | QByteArray::OmitTrailingEquals));
}

QByteArray randomBytes(int count)
{
    QByteArray bytes(count, Qt::Uninitialized);
    // QRandomGenerator::system() reads the OS entropy source (getrandom, BCryptGenRandom, ...); the
    // seeded global() generator would be predictable from its seed.
    QRandomGenerator *rng = QRandomGenerator::system();
    for (int i = 0; i < count; ++i)
        bytes[i] = char(rng->bounded(256));
    return bytes;
}

} // namespace

PkcePair generatePkce()
{
    PkcePair pair;
    pair.verifier = base64Url(randomBytes(64));
    pair.challenge = pkceChallengeS256(pair.verifier);
    return pair;
}

QString pkceChallengeS256(const QString &verifier)
{
    return base64Url(QCryptographicHash::hash(verifier.toLatin1(), QCryptographicHash::Sha256));
}

QString randomUrlSafeToken(int bytes)
{
    return base64Url(randomBytes(bytes));
}

bool isPkceShaped(const QString &text)
{
    if (text.size() < 43 || text.size() > 128)
        return false;
    for (const QChar c : text) {
        const bool unreserved = (c >= QLatin1Char('A') && c <= QLatin1Char('Z')) ||
                                (c >= QLatin1Char('a') && c <= QLatin1Char('z')) ||
                                (c >= QLatin1Char('0') && c <= QLatin1Char('9')) || c == QLatin1Char('-') ||
                                c == QLatin1Char('.') || c == QLatin1Char('_') || c == QLatin1Char('~');
        if (!unreserved)
            return false;
    }
    return true;
}

} // namespace sy
