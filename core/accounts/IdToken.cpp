#include "accounts/IdToken.h"

#include <QByteArray>
#include <QJsonDocument>
#include <QList>

namespace sy {

namespace {

void setError(QString *error, const QString &text)
{
    if (error)
        *error = text;
}

QString stringClaim(const QJsonObject &o, const QString &key)
{
    const QJsonValue v = o.value(key);
    return v.isString() ? v.toString() : QString();
}

// "exp" in ms. The claim is a JSON number of seconds and may be anything a token's author wrote (1e300, -1e19):
// converting such a double to qint64, or multiplying it by 1000, is undefined behaviour. A value beyond year
// 9999 either way is no expiry time at all.
std::optional<qint64> expiryMs(const QJsonValue &exp)
{
    constexpr double kMaxSeconds = 253402300799.0; // 9999-12-31T23:59:59Z
    if (!exp.isDouble())
        return std::nullopt;
    const double seconds = exp.toDouble();
    if (!(seconds >= -kMaxSeconds && seconds <= kMaxSeconds)) // also false for NaN
        return std::nullopt;
    return static_cast<qint64>(seconds) * 1000;
}

} // namespace

QJsonObject decodeJwtPayload(const QString &jwt, QString *error)
{
    const QList<QStringView> parts = QStringView(jwt).split(QLatin1Char('.'));
    if (parts.size() != 3 || parts.at(1).isEmpty()) {
        setError(error, QStringLiteral("not a JWT (expected three dot-separated parts)"));
        return {};
    }
    const auto decoded = QByteArray::fromBase64Encoding(
        parts.at(1).toLatin1(), QByteArray::Base64UrlEncoding | QByteArray::AbortOnBase64DecodingErrors);
    if (!decoded) {
        setError(error, QStringLiteral("JWT payload is not valid base64url"));
        return {};
    }
    QJsonParseError parseError{};
    const QJsonDocument doc = QJsonDocument::fromJson(*decoded, &parseError);
    if (parseError.error != QJsonParseError::NoError || !doc.isObject()) {
        setError(error, QStringLiteral("JWT payload is not a JSON object"));
        return {};
    }
    if (error)
        error->clear();
    return doc.object();
}

IdTokenClaims parseIdToken(const QString &jwt, QString *error)
{
    QString decodeError;
    const QJsonObject payload = decodeJwtPayload(jwt, &decodeError);
    if (!decodeError.isEmpty()) {
        setError(error, QStringLiteral("id_token is invalid: ") + decodeError);
        return {};
    }
    IdTokenClaims claims;
    claims.subject = stringClaim(payload, QStringLiteral("sub"));
    claims.email = stringClaim(payload, QStringLiteral("email"));
    if (claims.email.isEmpty()) {
        const QJsonObject profile = payload.value(QStringLiteral("https://api.openai.com/profile")).toObject();
        claims.email = stringClaim(profile, QStringLiteral("email"));
    }
    claims.expiresAtMs = expiryMs(payload.value(QStringLiteral("exp")));

    const QJsonObject auth = payload.value(QStringLiteral("https://api.openai.com/auth")).toObject();
    claims.chatgptAccountId = stringClaim(auth, QStringLiteral("chatgpt_account_id"));
    claims.planType = stringClaim(auth, QStringLiteral("chatgpt_plan_type"));
    claims.userId = stringClaim(auth, QStringLiteral("chatgpt_user_id"));
    if (claims.userId.isEmpty())
        claims.userId = stringClaim(auth, QStringLiteral("user_id"));
    if (claims.userId.isEmpty())
        claims.userId = claims.subject;
    if (error)
        error->clear();
    return claims;
}

std::optional<qint64> jwtExpiryMs(const QString &token)
{
    QString error;
    const QJsonObject payload = decodeJwtPayload(token, &error);
    if (!error.isEmpty())
        return std::nullopt;
    return expiryMs(payload.value(QStringLiteral("exp")));
}

} // namespace sy
