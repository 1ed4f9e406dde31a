#include "accounts/OAuthProtocol.h"

#include <QJsonDocument>
#include <QJsonObject>

namespace sy::oauth {

namespace {

// Server-provided descriptions end up in error messages: keep them short and on one line.
QString tidy(const QString &text)
{
    QString t = text.simplified();
    if (t.size() > 200)
        t = t.left(200) + QStringLiteral("...");
    return t;
}

} // namespace

QString redirectUriFor(quint16 port)
{
    return QStringLiteral("http://localhost:%1%2").arg(port).arg(QLatin1String(kCallbackPath));
}

QUrl endpointUrl(const QUrl &issuer, const QString &path)
{
    QUrl url = issuer;
    QString prefix = url.path();
    while (prefix.endsWith(QLatin1Char('/')))
        prefix.chop(1);
    url.setPath(prefix + path);
    url.setQuery(QString());
    url.setFragment(QString());
    return url;
}

QUrl authorizeUrl(const QUrl &issuer, const AuthorizeRequest &request)
{
    QUrl url = endpointUrl(issuer, QStringLiteral("/oauth/authorize"));
    // Built by hand so that every value is fully percent-encoded (QUrlQuery would leave ':' '/' and '+').
    const QByteArray query = formEncode({
        {QStringLiteral("response_type"), QStringLiteral("code")},
        {QStringLiteral("client_id"), request.clientId},
        {QStringLiteral("redirect_uri"), request.redirectUri},
        {QStringLiteral("scope"), QLatin1String(kScope)},
        {QStringLiteral("code_challenge"), request.codeChallenge},
        {QStringLiteral("code_challenge_method"), QStringLiteral("S256")},
        {QStringLiteral("id_token_add_organizations"), QStringLiteral("true")},
        {QStringLiteral("codex_cli_simplified_flow"), QStringLiteral("true")},
        {QStringLiteral("state"), request.state},
    });
    url.setQuery(QString::fromLatin1(query), QUrl::StrictMode);
    return url;
}

CallbackParams parseCallback(const QUrlQuery &query, const QString &expectedState)
{
    const auto value = [&query](const char *key) {
        return query.queryItemValue(QLatin1String(key), QUrl::FullyDecoded);
    };
    CallbackParams p;
    const QString state = value("state");
    if (expectedState.isEmpty() || state != expectedState) {
        p.kind = CallbackParams::Kind::StateMismatch;
        return p;
    }
    p.error = value("error");
    p.errorDescription = tidy(value("error_description"));
    if (!p.error.isEmpty()) {
        p.kind = p.error == QLatin1String("access_denied") ? CallbackParams::Kind::Denied
                                                           : CallbackParams::Kind::ProviderError;
        return p;
    }
    p.code = value("code");
    p.kind = p.code.isEmpty() ? CallbackParams::Kind::Malformed : CallbackParams::Kind::Code;
    return p;
}

QByteArray formEncode(const QList<QPair<QString, QString>> &fields)
{
    QByteArray out;
    for (const auto &field : fields) {
        if (!out.isEmpty())
            out += '&';
        out += QUrl::toPercentEncoding(field.first) + '=' + QUrl::toPercentEncoding(field.second);
    }
    return out;
}

QByteArray authorizationCodeForm(const QString &clientId, const QString &code, const QString &codeVerifier,
                                 const QString &redirectUri)
{
    return formEncode({{QStringLiteral("grant_type"), QStringLiteral("authorization_code")},
                       {QStringLiteral("client_id"), clientId},
                       {QStringLiteral("code"), code},
                       {QStringLiteral("code_verifier"), codeVerifier},
                       {QStringLiteral("redirect_uri"), redirectUri}});
}

TokenResponse parseTokenResponse(int httpStatus, const QByteArray &body, const QString &networkError)
{
    TokenResponse r;
    if (httpStatus == 0) {
        r.message = QStringLiteral("the token endpoint could not be reached: %1").arg(tidy(networkError));
        return r;
    }
    const QJsonDocument doc = QJsonDocument::fromJson(body);
    const QJsonObject o = doc.object();
    if (httpStatus < 200 || httpStatus > 299) {
        const QJsonValue error = o.value(QLatin1String("error"));
        if (error.isString()) {
            r.error = error.toString();
            r.errorDescription = tidy(o.value(QLatin1String("error_description")).toString());
        } else if (error.isObject()) {
            const QJsonObject e = error.toObject();
            r.error = e.value(QLatin1String("code")).toString();
            if (r.error.isEmpty())
                r.error = e.value(QLatin1String("type")).toString();
            r.errorDescription = tidy(e.value(QLatin1String("message")).toString());
        }
        r.error = tidy(r.error);
        QString detail = r.error.isEmpty() ? QStringLiteral("no error code") : r.error;
        if (!r.errorDescription.isEmpty())
            detail += QStringLiteral(": ") + r.errorDescription;
        r.message =
            QStringLiteral("the token endpoint refused the code exchange (HTTP %1, %2)").arg(httpStatus).arg(detail);
        return r;
    }
    if (!doc.isObject()) {
        r.message = QStringLiteral("the token endpoint answered HTTP %1 without a JSON object").arg(httpStatus);
        return r;
    }
    const struct
    {
        const char *name;
        QString *target;
    } fields[] = {{"access_token", &r.tokens.accessToken},
                  {"refresh_token", &r.tokens.refreshToken},
                  {"id_token", &r.tokens.idToken}};
    QStringList missing;
    for (const auto &field : fields) {
        const QJsonValue v = o.value(QLatin1String(field.name));
        if (!v.isString() || v.toString().trimmed().isEmpty())
            missing.append(QLatin1String(field.name));
        else
            *field.target = v.toString();
    }
    if (!missing.isEmpty()) {
        r.tokens = {};
        r.message = QStringLiteral("the token endpoint's answer lacks %1").arg(missing.join(QStringLiteral(", ")));
        return r;
    }
    r.ok = true;
    return r;
}

} // namespace sy::oauth
