#include "accounts/AuthJson.h"

#include <QDateTime>
#include <QJsonDocument>
#include <QJsonObject>

namespace sy {

namespace {

AuthJsonImport fail(QString *error, const QString &text)
{
    if (error)
        *error = text;
    return {};
}

} // namespace

AuthJsonImport parseAuthJson(const QByteArray &fileContents, QString *error)
{
    QJsonParseError parseError{};
    const QJsonDocument doc = QJsonDocument::fromJson(fileContents, &parseError);
    // errorString() and offset describe the syntax problem without quoting the (secret) text around it.
    if (parseError.error != QJsonParseError::NoError)
        return fail(
            error,
            QStringLiteral("not valid JSON (%1 at offset %2)").arg(parseError.errorString()).arg(parseError.offset));
    if (!doc.isObject())
        return fail(error, QStringLiteral("not a JSON object"));
    const QJsonObject root = doc.object();

    const QJsonValue tokensValue = root.value(QStringLiteral("tokens"));
    if (!tokensValue.isObject()) {
        const QJsonValue apiKey = root.value(QStringLiteral("OPENAI_API_KEY"));
        if (apiKey.isString() && !apiKey.toString().isEmpty())
            return fail(error, QStringLiteral("holds an OpenAI API key, not a ChatGPT login (no \"tokens\"); "
                                              "log in to Codex with ChatGPT first"));
        return fail(error, QStringLiteral("\"tokens\" is missing or not an object"));
    }
    const QJsonObject tokens = tokensValue.toObject();

    AuthJsonImport result;
    const struct
    {
        const char *name;
        QString *target;
    } required[] = {{"id_token", &result.tokens.idToken},
                    {"access_token", &result.tokens.accessToken},
                    {"refresh_token", &result.tokens.refreshToken}};
    for (const auto &field : required) {
        const QString name = QString::fromLatin1(field.name);
        const QJsonValue v = tokens.value(name);
        if (v.isUndefined() || v.isNull())
            return fail(error, QStringLiteral("tokens.%1 is missing").arg(name));
        if (!v.isString())
            return fail(error, QStringLiteral("tokens.%1 is not a string").arg(name));
        if (v.toString().trimmed().isEmpty())
            return fail(error, QStringLiteral("tokens.%1 is empty").arg(name));
        *field.target = v.toString();
    }

    QString claimError;
    result.claims = parseIdToken(result.tokens.idToken, &claimError);
    if (!claimError.isEmpty())
        return fail(error, QStringLiteral("tokens.") + claimError);

    const QJsonValue accountIdValue = tokens.value(QStringLiteral("account_id"));
    if (!accountIdValue.isUndefined() && !accountIdValue.isNull() && !accountIdValue.isString())
        return fail(error, QStringLiteral("tokens.account_id is not a string"));
    const QString fileAccountId = accountIdValue.toString();
    // account_id is the workspace Codex selected; the id_token names the same one. A disagreement means
    // a hand-edited or mixed-up file, and guessing would send one person's token to another workspace.
    if (!fileAccountId.isEmpty() && !result.claims.chatgptAccountId.isEmpty() &&
        fileAccountId != result.claims.chatgptAccountId)
        return fail(error, QStringLiteral("tokens.account_id does not match the id_token's chatgpt_account_id"));
    result.chatgptAccountId = fileAccountId.isEmpty() ? result.claims.chatgptAccountId : fileAccountId;
    if (result.chatgptAccountId.isEmpty())
        return fail(error, QStringLiteral("no ChatGPT account id (neither tokens.account_id nor the id_token's "
                                          "chatgpt_account_id claim)"));
    result.userId = result.claims.userId;
    if (result.userId.isEmpty())
        return fail(error, QStringLiteral("the id_token names no user (no chatgpt_user_id, user_id or sub claim)"));
    result.email = result.claims.email;
    result.plan = result.claims.planType;
    result.accessTokenExpiresAtMs = jwtExpiryMs(result.tokens.accessToken);

    const QJsonValue lastRefresh = root.value(QStringLiteral("last_refresh"));
    if (lastRefresh.isString()) {
        const QDateTime when = QDateTime::fromString(lastRefresh.toString(), Qt::ISODateWithMs);
        if (when.isValid())
            result.lastRefreshMs = when.toMSecsSinceEpoch();
    }
    if (error)
        error->clear();
    return result;
}

} // namespace sy
