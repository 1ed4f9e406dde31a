#include "FakeOAuth.h"

#include "accounts/OAuthProtocol.h"
#include "accounts/Pkce.h"
#include "http/HttpResponse.h"
#include "http/HttpServer.h"

#include <QDateTime>
#include <QJsonDocument>
#include <QPointer>
#include <QTimer>
#include <QUrl>

namespace sy::fake {

namespace {

const QLatin1String kAuthClaim("https://api.openai.com/auth");

QByteArray compact(const QJsonValue &v)
{
    return v.isArray() ? QJsonDocument(v.toArray()).toJson(QJsonDocument::Compact)
                       : QJsonDocument(v.toObject()).toJson(QJsonDocument::Compact);
}

QByteArray b64url(const QByteArray &bytes)
{
    return bytes.toBase64(QByteArray::Base64UrlEncoding | QByteArray::OmitTrailingEquals);
}

QString unsignedJwt(const QJsonObject &payload)
{
    return QString::fromLatin1(b64url(compact(QJsonObject{{QStringLiteral("alg"), QStringLiteral("none")},
                                                          {QStringLiteral("typ"), QStringLiteral("JWT")}})) +
                               '.' + b64url(compact(payload)) + '.' + randomUrlSafeToken(16).toLatin1());
}

// application/x-www-form-urlencoded, with '+' as space (QUrlQuery keeps '+' literally).
QHash<QString, QString> parseForm(const QByteArray &body)
{
    QHash<QString, QString> fields;
    for (const QByteArray &pair : body.split('&')) {
        if (pair.isEmpty())
            continue;
        const int eq = pair.indexOf('=');
        QByteArray key = eq < 0 ? pair : pair.left(eq);
        QByteArray value = eq < 0 ? QByteArray() : pair.mid(eq + 1);
        key.replace('+', ' ');
        value.replace('+', ' ');
        fields.insert(QString::fromUtf8(QByteArray::fromPercentEncoding(key)),
                      QString::fromUtf8(QByteArray::fromPercentEncoding(value)));
    }
    return fields;
}

void sendJson(HttpResponse *response, int status, const QJsonObject &body)
{
    response->setHeader(QByteArrayLiteral("Cache-Control"), QByteArrayLiteral("no-store"));
    response->sendFull(status, QByteArrayLiteral("application/json"), compact(body));
}

QJsonObject oauthError(const QString &error, const QString &description)
{
    return {{QStringLiteral("error"), error}, {QStringLiteral("error_description"), description}};
}

} // namespace

FakeOAuth::FakeOAuth(QString clientId, QObject *parent)
    : QObject(parent), m_server(new HttpServer(this)), m_clientId(std::move(clientId))
{
    m_settings.identity = defaultIdentity();
    m_server->setHandler([this](HttpRequestPtr request, HttpResponse *response) { handle(request, response); });
}

bool FakeOAuth::listen(const QHostAddress &address, quint16 port)
{
    return m_server->listen(address, port);
}

quint16 FakeOAuth::port() const
{
    return m_server->serverPort();
}

QString FakeOAuth::errorString() const
{
    return m_server->errorString();
}

FakeOAuth::Identity FakeOAuth::defaultIdentity()
{
    return {QStringLiteral("fake.user@example.com"), QStringLiteral("acct_fake_1"), QStringLiteral("user-fake-1"),
            QStringLiteral("plus")};
}

FakeOAuth::Identity FakeOAuth::identityFrom(const QJsonObject &o, const Identity &fallback)
{
    Identity id = fallback;
    id.email = o.value(QLatin1String("email")).toString(id.email);
    id.accountId = o.value(QLatin1String("chatgpt_account_id")).toString(id.accountId);
    id.userId = o.value(QLatin1String("chatgpt_user_id")).toString(id.userId);
    id.plan = o.value(QLatin1String("chatgpt_plan_type")).toString(id.plan);
    return id;
}

void FakeOAuth::handle(HttpRequestPtr request, HttpResponse *response)
{
    if (request->path.startsWith(QLatin1String("/__control/")))
        return control(*request, response);
    QJsonObject log{{QStringLiteral("seq"), int(m_log.size()) + 1},
                    {QStringLiteral("method"), QString::fromLatin1(request->method)},
                    {QStringLiteral("path"), request->path}};
    if (request->path == QLatin1String("/oauth/authorize") && request->method == "GET")
        authorize(*request, response, log);
    else if (request->path == QLatin1String("/oauth/token") && request->method == "POST")
        token(*request, response, log);
    else {
        log.insert(QStringLiteral("status"), 404);
        sendJson(response, 404, oauthError(QStringLiteral("not_found"), QStringLiteral("no such endpoint")));
    }
    m_log.append(log);
}

void FakeOAuth::authorize(const HttpRequest &request, HttpResponse *response, QJsonObject &log)
{
    QJsonObject query;
    for (const auto &item : request.query.queryItems(QUrl::FullyDecoded))
        query.insert(item.first, item.second);
    log.insert(QStringLiteral("query"), query);
    log.insert(QStringLiteral("client_id"), query.value(QLatin1String("client_id")));
    const auto param = [&query](const char *name) { return query.value(QLatin1String(name)).toString(); };
    const auto reject = [&](const QString &error, const QString &description) {
        log.insert(QStringLiteral("status"), 400);
        log.insert(QStringLiteral("error"), error);
        sendJson(response, 400, oauthError(error, description));
    };

    if (param("response_type") != QLatin1String("code"))
        return reject(QStringLiteral("unsupported_response_type"), QStringLiteral("response_type must be code"));
    if (param("client_id") != m_clientId)
        return reject(QStringLiteral("invalid_client"), QStringLiteral("unknown client_id"));
    const QUrl redirect(param("redirect_uri"), QUrl::StrictMode);
    if (!redirect.isValid() || redirect.scheme() != QLatin1String("http") ||
        redirect.host() != QLatin1String("localhost") || redirect.port() <= 0 ||
        redirect.path() != QLatin1String(oauth::kCallbackPath) || redirect.hasQuery())
        return reject(QStringLiteral("invalid_request"),
                      QStringLiteral("redirect_uri must be http://localhost:PORT/auth/callback"));
    const QStringList scopes = param("scope").split(QLatin1Char(' '), Qt::SkipEmptyParts);
    for (const char *needed : {"openid", "profile", "email", "offline_access"}) {
        if (!scopes.contains(QLatin1String(needed)))
            return reject(QStringLiteral("invalid_scope"), QStringLiteral("scope lacks %1").arg(QLatin1String(needed)));
    }
    if (param("code_challenge_method") != QLatin1String("S256") || !isPkceShaped(param("code_challenge")))
        return reject(QStringLiteral("invalid_request"), QStringLiteral("an S256 code_challenge is required"));
    if (param("state").isEmpty())
        return reject(QStringLiteral("invalid_request"), QStringLiteral("state is required"));
    if (param("id_token_add_organizations") != QLatin1String("true") ||
        param("codex_cli_simplified_flow") != QLatin1String("true"))
        return reject(QStringLiteral("invalid_request"),
                      QStringLiteral("id_token_add_organizations and codex_cli_simplified_flow must be true"));

    QString state = param("state");
    if (m_settings.wrongState)
        state = QStringLiteral("not-") + state;
    QList<QPair<QString, QString>> back;
    if (m_settings.deny || param("fake_deny") == QLatin1String("true")) {
        back = {{QStringLiteral("error"), QStringLiteral("access_denied")},
                {QStringLiteral("error_description"), QStringLiteral("The user denied the request")},
                {QStringLiteral("state"), state}};
        log.insert(QStringLiteral("error"), QStringLiteral("access_denied"));
    } else {
        const QString code = QStringLiteral("ac_") + randomUrlSafeToken(24);
        m_codes.insert(code, {param("code_challenge"), param("redirect_uri"), m_settings.identity, false});
        back = {{QStringLiteral("code"), code}, {QStringLiteral("state"), state}};
    }
    QUrl location = redirect;
    location.setQuery(QString::fromLatin1(oauth::formEncode(back)), QUrl::StrictMode);
    log.insert(QStringLiteral("status"), 302);
    response->setHeader(QByteArrayLiteral("Location"), location.toEncoded());
    response->sendFull(302, QByteArrayLiteral("text/plain"), QByteArrayLiteral("redirecting\n"));
}

void FakeOAuth::token(const HttpRequest &request, HttpResponse *response, QJsonObject &log)
{
    QHash<QString, QString> in;
    if (request.header("content-type").startsWith("application/json")) {
        const QJsonObject o = QJsonDocument::fromJson(request.body).object();
        for (auto it = o.begin(); it != o.end(); ++it)
            in.insert(it.key(), it.value().toString());
        log.insert(QStringLiteral("body_format"), QStringLiteral("json"));
    } else {
        in = parseForm(request.body);
        log.insert(QStringLiteral("body_format"), QStringLiteral("form"));
    }
    const QString grant = in.value(QStringLiteral("grant_type"));
    log.insert(QStringLiteral("grant_type"), grant);
    log.insert(QStringLiteral("client_id"), in.value(QStringLiteral("client_id")));
    // What was presented is logged even when the request is refused below.
    if (grant == QLatin1String("refresh_token")) {
        log.insert(QStringLiteral("refresh_token"), in.value(QStringLiteral("refresh_token")));
    } else if (grant == QLatin1String("authorization_code")) {
        log.insert(QStringLiteral("code"), in.value(QStringLiteral("code")));
        log.insert(QStringLiteral("code_verifier"), in.value(QStringLiteral("code_verifier")));
    }

    int status = 200;
    QJsonObject answer;
    const auto refuse = [&](int code, const QString &error, const QString &description) {
        status = code;
        answer = oauthError(error, description);
    };
    if (!m_settings.tokenError.isEmpty()) {
        refuse(m_settings.tokenError.value(QLatin1String("status")).toInt(400),
               m_settings.tokenError.value(QLatin1String("error")).toString(QStringLiteral("server_error")),
               m_settings.tokenError.value(QLatin1String("error_description")).toString());
    } else if (in.value(QStringLiteral("client_id")) != m_clientId) {
        refuse(401, QStringLiteral("invalid_client"), QStringLiteral("unknown client_id"));
    } else if (grant == QLatin1String("authorization_code")) {
        const auto it = m_codes.find(in.value(QStringLiteral("code")));
        const QString verifier = in.value(QStringLiteral("code_verifier"));
        if (it == m_codes.end() || it->used)
            refuse(400, QStringLiteral("invalid_grant"), QStringLiteral("the code is unknown or was already used"));
        else if (in.value(QStringLiteral("redirect_uri")) != it->redirectUri)
            refuse(400, QStringLiteral("invalid_grant"),
                   QStringLiteral("redirect_uri differs from the authorize request"));
        else if (!isPkceShaped(verifier) || pkceChallengeS256(verifier) != it->challenge)
            refuse(400, QStringLiteral("invalid_grant"), QStringLiteral("code_verifier does not match code_challenge"));
        else {
            it->used = true;
            answer = issueTokens(it->identity);
        }
    } else if (grant == QLatin1String("refresh_token")) {
        const QString presented = in.value(QStringLiteral("refresh_token"));
        const auto it = m_refreshTokens.find(presented);
        if (it == m_refreshTokens.end())
            refuse(400, QStringLiteral("invalid_grant"), QStringLiteral("refresh_token_invalidated"));
        else if (it->used)
            refuse(400, QStringLiteral("invalid_grant"), QStringLiteral("refresh_token_reused"));
        else {
            it->used = true;
            answer = issueTokens(it->identity);
        }
    } else {
        refuse(400, QStringLiteral("unsupported_grant_type"), QStringLiteral("unknown grant_type"));
    }
    log.insert(QStringLiteral("status"), status);
    if (status != 200)
        log.insert(QStringLiteral("error"), answer.value(QLatin1String("error")));
    else
        log.insert(QStringLiteral("issued"),
                   QJsonObject{{QStringLiteral("access_token"), answer.value(QLatin1String("access_token"))},
                               {QStringLiteral("refresh_token"), answer.value(QLatin1String("refresh_token"))},
                               {QStringLiteral("id_token"), answer.value(QLatin1String("id_token"))}});

    if (m_settings.tokenDelayMs <= 0)
        return sendJson(response, status, answer);
    QPointer<HttpResponse> later(response);
    QTimer::singleShot(m_settings.tokenDelayMs, this, [later, status, answer] {
        if (later)
            sendJson(later, status, answer);
    });
}

QJsonObject FakeOAuth::issueTokens(const Identity &identity)
{
    const qint64 now = QDateTime::currentSecsSinceEpoch();
    const QJsonObject auth{{QStringLiteral("chatgpt_account_id"), identity.accountId},
                           {QStringLiteral("chatgpt_plan_type"), identity.plan},
                           {QStringLiteral("chatgpt_user_id"), identity.userId}};
    QJsonObject idAuth = auth;
    if (m_settings.idTokenWithoutAccount)
        idAuth.remove(QStringLiteral("chatgpt_account_id"));
    const QString access = unsignedJwt({{QStringLiteral("sub"), identity.userId},
                                        {QStringLiteral("iat"), now},
                                        {QStringLiteral("exp"), now + m_settings.accessTtlS},
                                        {QStringLiteral("jti"), randomUrlSafeToken(12)},
                                        {kAuthClaim, auth}});
    const QString id = unsignedJwt({{QStringLiteral("sub"), identity.userId},
                                    {QStringLiteral("aud"), m_clientId},
                                    {QStringLiteral("email"), identity.email},
                                    {QStringLiteral("iat"), now},
                                    {QStringLiteral("exp"), now + 3600},
                                    {kAuthClaim, idAuth}});
    const QString refresh = QStringLiteral("rt_fake_") + randomUrlSafeToken(24);
    m_refreshTokens.insert(refresh, {identity, false});
    return {{QStringLiteral("access_token"), access},
            {QStringLiteral("refresh_token"), refresh},
            {QStringLiteral("id_token"), id},
            {QStringLiteral("token_type"), QStringLiteral("Bearer")},
            {QStringLiteral("expires_in"), m_settings.accessTtlS}};
}

void FakeOAuth::control(const HttpRequest &request, HttpResponse *response)
{
    const QString what = request.path.mid(int(qstrlen("/__control/")));
    const QJsonObject in = QJsonDocument::fromJson(request.body).object();
    const QJsonObject ok{{QStringLiteral("ok"), true}};
    if (what == QLatin1String("log") && request.method == "GET")
        return response->sendFull(200, QByteArrayLiteral("application/json"), compact(m_log));
    if (what == QLatin1String("reset") && request.method == "POST") {
        m_settings = Settings();
        m_settings.identity = defaultIdentity();
        m_codes.clear();
        m_refreshTokens.clear();
        m_log = QJsonArray();
        return sendJson(response, 200, ok);
    }
    if (what == QLatin1String("config") && request.method == "POST") {
        m_settings.deny = in.value(QLatin1String("deny")).toBool(m_settings.deny);
        m_settings.wrongState = in.value(QLatin1String("wrong_state")).toBool(m_settings.wrongState);
        m_settings.idTokenWithoutAccount =
            in.value(QLatin1String("id_token_without_account")).toBool(m_settings.idTokenWithoutAccount);
        if (in.contains(QLatin1String("token_error")))
            m_settings.tokenError = in.value(QLatin1String("token_error")).toObject();
        if (in.value(QLatin1String("identity")).isObject())
            m_settings.identity = identityFrom(in.value(QLatin1String("identity")).toObject(), m_settings.identity);
        m_settings.accessTtlS = in.value(QLatin1String("access_ttl_s")).toInt(m_settings.accessTtlS);
        m_settings.tokenDelayMs = in.value(QLatin1String("token_delay_ms")).toInt(m_settings.tokenDelayMs);
        return sendJson(response, 200, ok);
    }
    if (what == QLatin1String("refresh_tokens") && request.method == "POST") {
        const QString token = in.value(QLatin1String("refresh_token")).toString();
        if (token.isEmpty())
            return sendJson(
                response, 400,
                oauthError(QStringLiteral("bad_control_request"), QStringLiteral("refresh_token is required")));
        m_refreshTokens.insert(
            token, {identityFrom(in.value(QLatin1String("identity")).toObject(), m_settings.identity), false});
        return sendJson(response, 200, ok);
    }
    sendJson(response, 404, oauthError(QStringLiteral("not_found"), QStringLiteral("unknown control request")));
}

} // namespace sy::fake
