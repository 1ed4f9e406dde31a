#include "accounts/AuthTokens.h"

#include <QJsonDocument>
#include <QJsonObject>

namespace sy {

namespace {
const QString kAccess = QStringLiteral("access_token");
const QString kRefresh = QStringLiteral("refresh_token");
const QString kId = QStringLiteral("id_token");
} // namespace

QByteArray serializeTokens(const AuthTokens &tokens)
{
    QJsonObject o;
    o.insert(kAccess, tokens.accessToken);
    o.insert(kRefresh, tokens.refreshToken);
    o.insert(kId, tokens.idToken);
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

bool deserializeTokens(const QByteArray &blob, AuthTokens *tokens, QString *error)
{
    QJsonParseError parseError{};
    const QJsonDocument doc = QJsonDocument::fromJson(blob, &parseError);
    // QJsonParseError::errorString() names the problem and offset only, never the text around it.
    if (parseError.error != QJsonParseError::NoError || !doc.isObject()) {
        if (error)
            *error = QStringLiteral("stored secret is not a JSON object");
        return false;
    }
    const QJsonObject o = doc.object();
    for (const QString &key : {kAccess, kRefresh, kId}) {
        if (!o.value(key).isString()) {
            if (error)
                *error = QStringLiteral("stored secret lacks %1").arg(key);
            return false;
        }
    }
    tokens->accessToken = o.value(kAccess).toString();
    tokens->refreshToken = o.value(kRefresh).toString();
    tokens->idToken = o.value(kId).toString();
    return true;
}

} // namespace sy
