#include "accounts/LoginStorage.h"

#include "accounts/IdToken.h"
#include "accounts/SecretStore.h"

namespace sy {

namespace {

void setError(QString *error, const QString &text)
{
    if (error)
        *error = text;
}

} // namespace

std::optional<AccountRepository::Identity> identityFromLoginTokens(const AuthTokens &tokens, qint64 nowMs,
                                                                   QString *error)
{
    QString claimError;
    const IdTokenClaims claims = parseIdToken(tokens.idToken, &claimError);
    if (!claimError.isEmpty()) {
        setError(error, claimError);
        return std::nullopt;
    }
    AccountRepository::Identity identity;
    identity.chatgptAccountId = claims.chatgptAccountId;
    if (identity.chatgptAccountId.isEmpty()) {
        // Some id_tokens leave the workspace to the access token, which always carries the auth claim.
        QString ignored;
        const QJsonObject access = decodeJwtPayload(tokens.accessToken, &ignored);
        identity.chatgptAccountId = access.value(QLatin1String("https://api.openai.com/auth"))
                                        .toObject()
                                        .value(QLatin1String("chatgpt_account_id"))
                                        .toString();
    }
    if (identity.chatgptAccountId.isEmpty()) {
        setError(error, QStringLiteral("the tokens name no ChatGPT account (no chatgpt_account_id claim)"));
        return std::nullopt;
    }
    identity.userId = claims.userId;
    if (identity.userId.isEmpty()) {
        setError(error, QStringLiteral("the id_token names no user (no chatgpt_user_id, user_id or sub claim)"));
        return std::nullopt;
    }
    identity.email = claims.email;
    identity.plan = claims.planType;
    identity.tokenExpiresAtMs = jwtExpiryMs(tokens.accessToken);
    identity.lastRefreshMs = nowMs;
    if (error)
        error->clear();
    return identity;
}

std::optional<SavedLogin> saveLogin(Database &db, SecretStore &secrets, const AuthTokens &tokens,
                                    const std::optional<QString> &alias, QString *error, const Clock &clock)
{
    QString why;
    std::optional<AccountRepository::Identity> identity = identityFromLoginTokens(tokens, clock.nowMs(), &why);
    if (!identity) {
        setError(error, why);
        return std::nullopt;
    }
    if (alias) {
        if (!AccountRepository::isValidAlias(*alias, &why)) {
            setError(error, QStringLiteral("alias: ") + why);
            return std::nullopt;
        }
        identity->alias = alias;
    }
    const QString id = AccountRepository::makeAccountId(identity->chatgptAccountId, identity->userId);
    const SecretOutcome stored = secrets.writeTokensBlocking(id, tokens);
    if (!stored.ok) {
        setError(error, QStringLiteral("tokens not stored: ") + stored.errorText);
        return std::nullopt;
    }
    AccountRepository repo(db, clock);
    const bool existed = repo.find(id).has_value();
    const auto result = repo.upsert(*identity, &why);
    if (!result) {
        if (!existed)
            secrets.removeTokensBlocking(id); // no orphaned secret for an account that was never created
        setError(error, why);
        return std::nullopt;
    }
    if (error)
        error->clear();
    return SavedLogin{result->id, result->created, identity->email, identity->plan};
}

} // namespace sy
