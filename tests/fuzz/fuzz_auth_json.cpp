// Codex auth.json files and JWT id_tokens (accounts/AuthJson, accounts/IdToken) plus the SecretStore token blob.
// The bytes are read four ways: as an auth.json file, as a token string, as a JWT payload (wrapped into a token
// and into an otherwise valid auth.json) and as a stored token blob.
// Invariants: a failed parse says why and never quotes token text; a successful one has the three tokens, an
// account id and a user id; claims never depend on anything but the payload; token blobs round-trip.
#include "FuzzSupport.h"
#include "accounts/AuthJson.h"
#include "accounts/AuthTokens.h"
#include "accounts/IdToken.h"

#include <QJsonDocument>
#include <QJsonObject>

namespace sy::fuzz {

namespace {

constexpr const char *kTarget = "auth_json";
// Token text shorter than this may appear in an error by coincidence ("missing" is a fine refresh token).
constexpr qsizetype kMinSecretLength = 12;

void checkNoSecret(const QString &error, const QString &secret)
{
    if (secret.size() >= kMinSecretLength)
        SY_FUZZ_CHECK(kTarget, !error.contains(secret), "an error message quotes token text");
}

void checkAuthJson(const QByteArray &file)
{
    QString error;
    const AuthJsonImport result = parseAuthJson(file, &error);
    const QJsonObject tokens = QJsonDocument::fromJson(file).object().value(QLatin1String("tokens")).toObject();
    if (!error.isEmpty()) {
        SY_FUZZ_CHECK(kTarget, result.tokens == AuthTokens(), "a failed import returned tokens");
        for (const char *key : {"id_token", "access_token", "refresh_token"})
            checkNoSecret(error, tokens.value(QLatin1String(key)).toString());
        return;
    }
    SY_FUZZ_CHECK(kTarget, result.tokens.isComplete(), "an import without all three tokens");
    SY_FUZZ_CHECK(kTarget, !result.chatgptAccountId.isEmpty(), "an import without an account id");
    SY_FUZZ_CHECK(kTarget, !result.userId.isEmpty(), "an import without a user id");
    QString claimError;
    const IdTokenClaims claims = parseIdToken(result.tokens.idToken, &claimError);
    SY_FUZZ_CHECK(kTarget, claimError.isEmpty() && claims.userId == result.userId,
                  "import and id_token disagree on the user");
}

void checkToken(const QString &token)
{
    QString error;
    const IdTokenClaims claims = parseIdToken(token, &error);
    if (!error.isEmpty()) {
        SY_FUZZ_CHECK(kTarget, claims.userId.isEmpty() && claims.email.isEmpty() && !claims.expiresAtMs,
                      "a failed id_token parse returned claims");
        checkNoSecret(error, token);
        for (const QStringView part : QStringView(token).split(QLatin1Char('.')))
            checkNoSecret(error, part.toString());
    }
    const std::optional<qint64> expiry = jwtExpiryMs(token);
    if (error.isEmpty())
        SY_FUZZ_CHECK(kTarget, expiry == claims.expiresAtMs, "jwtExpiryMs and parseIdToken disagree on exp");
}

} // namespace

int authJson(const uint8_t *data, size_t size)
{
    const QByteArray bytes(reinterpret_cast<const char *>(data), qsizetype(size));
    checkAuthJson(bytes);
    checkToken(QString::fromUtf8(bytes));

    // The bytes as the payload of an id_token, alone and inside an auth.json that is otherwise fine.
    const QByteArray payload = bytes.toBase64(QByteArray::Base64UrlEncoding | QByteArray::OmitTrailingEquals);
    const QString jwt =
        QStringLiteral("eyJhbGciOiJub25lIn0.") + QString::fromLatin1(payload) + QStringLiteral(".c2lnbmF0dXJl");
    checkToken(jwt);
    const QJsonObject file{{QStringLiteral("tokens"),
                            QJsonObject{{QStringLiteral("id_token"), jwt},
                                        {QStringLiteral("access_token"), jwt},
                                        {QStringLiteral("refresh_token"), QStringLiteral("rt_fuzz_refresh_token")}}},
                           {QStringLiteral("last_refresh"), QStringLiteral("2025-01-01T00:00:00Z")}};
    checkAuthJson(QJsonDocument(file).toJson(QJsonDocument::Compact));

    AuthTokens tokens;
    QString error;
    if (deserializeTokens(bytes, &tokens, &error)) {
        AuthTokens again;
        SY_FUZZ_CHECK(kTarget, deserializeTokens(serializeTokens(tokens), &again, &error) && again == tokens,
                      "a token blob does not round-trip");
    } else {
        SY_FUZZ_CHECK(kTarget, !error.isEmpty(), "a token blob was refused without a reason");
    }
    return 0;
}

} // namespace sy::fuzz

SY_FUZZ_ENTRY(authJson)
