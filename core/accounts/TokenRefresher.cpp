#include "accounts/TokenRefresher.h"

#include "accounts/OAuthProtocol.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QLoggingCategory>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <QPointer>
#include <QTimer>
#include <memory>

Q_LOGGING_CATEGORY(lcRefresh, "switchyard.refresh")

namespace sy {

namespace {

bool mentions(const QString &haystack, std::initializer_list<const char *> codes)
{
    for (const char *code : codes) {
        if (haystack.contains(QLatin1String(code)))
            return true;
    }
    return false;
}

} // namespace

RefreshFailure classifyRefreshFailure(int httpStatus, const QString &error, const QString &errorDescription)
{
    if (httpStatus == 0 || httpStatus == 429 || httpStatus >= 500)
        return RefreshFailure::Transient;
    if (httpStatus >= 200 && httpStatus < 300)
        return RefreshFailure::Transient; // a 2xx that could not be used: the old token was not consumed knowingly
    const QString text = (error + QLatin1Char(' ') + errorDescription).toLower();
    if (mentions(text, {"account_deactivated", "user_deactivated"}) ||
        (httpStatus == 403 && text.contains(QLatin1String("deactivated"))))
        return RefreshFailure::Deactivated;
    if ((httpStatus == 400 || httpStatus == 401) &&
        mentions(text, {"invalid_grant", "refresh_token_reused", "refresh_token_expired", "refresh_token_invalidated"}))
        return RefreshFailure::Permanent;
    // Other refusals (a proxy's 403, an unknown 4xx) may be passing conditions: never discard credentials on them.
    return RefreshFailure::Transient;
}

QByteArray refreshRequestBody(const QString &refreshToken)
{
    const QJsonObject body{{QStringLiteral("grant_type"), QStringLiteral("refresh_token")},
                           {QStringLiteral("client_id"), QLatin1String(oauth::kCodexClientId)},
                           {QStringLiteral("refresh_token"), refreshToken},
                           {QStringLiteral("scope"), QLatin1String(oauth::kScope)}};
    return QJsonDocument(body).toJson(QJsonDocument::Compact);
}

RefreshResult parseRefreshResponse(int httpStatus, const QByteArray &body, const AuthTokens &old,
                                   const QString &networkError)
{
    RefreshResult r;
    r.httpStatus = httpStatus;
    if (httpStatus < 200 || httpStatus > 299) {
        const oauth::TokenResponse parsed = oauth::parseTokenResponse(httpStatus, body, networkError);
        r.failure = classifyRefreshFailure(httpStatus, parsed.error, parsed.errorDescription);
        // The specific code is often in error_description (error = invalid_grant): report the more specific one.
        r.error = parsed.errorDescription.startsWith(QLatin1String("refresh_token_")) ||
                          parsed.errorDescription.contains(QLatin1String("deactivated"))
                      ? parsed.errorDescription.section(QLatin1Char(' '), 0, 0)
                      : parsed.error;
        if (httpStatus == 0) {
            r.message = parsed.message;
        } else {
            QString detail = parsed.error.isEmpty() ? QStringLiteral("no error code") : parsed.error;
            if (!parsed.errorDescription.isEmpty())
                detail += QStringLiteral(": ") + parsed.errorDescription;
            r.message =
                QStringLiteral("the token endpoint refused the refresh (HTTP %1, %2)").arg(httpStatus).arg(detail);
        }
        return r;
    }
    const QJsonDocument doc = QJsonDocument::fromJson(body);
    const QJsonObject o = doc.object();
    const QString access = o.value(QLatin1String("access_token")).toString().trimmed();
    if (!doc.isObject() || access.isEmpty()) {
        r.failure = RefreshFailure::Transient;
        r.message = QStringLiteral("the token endpoint answered HTTP %1 without an access_token").arg(httpStatus);
        return r;
    }
    const QString refresh = o.value(QLatin1String("refresh_token")).toString().trimmed();
    const QString id = o.value(QLatin1String("id_token")).toString().trimmed();
    r.tokens.accessToken = access;
    r.tokens.refreshToken = refresh.isEmpty() ? old.refreshToken : refresh;
    r.tokens.idToken = id.isEmpty() ? old.idToken : id;
    r.ok = true;
    return r;
}

TokenRefresher::TokenRefresher(QUrl authUrl, QObject *parent)
    : QObject(parent), m_authUrl(std::move(authUrl)), m_network(new QNetworkAccessManager(this))
{
}

void TokenRefresher::refresh(const QString &accountId, const AuthTokens &tokens, Done done)
{
    const EgressRoute route = m_router ? m_router(accountId) : EgressRoute();
    if (!route.allowed()) {
        RefreshResult r;
        r.failure = RefreshFailure::Transient;
        r.egressReason = route.reason;
        r.message = QStringLiteral("egress pool \"%1\" cannot carry the token refresh (%2: %3); it is not sent "
                                   "directly instead")
                        .arg(route.pool, route.reason, route.detail);
        qCInfo(lcRefresh).noquote() << "refresh of" << accountId << "failed:" << r.message;
        QTimer::singleShot(0, this, [done, r] { done(r); });
        return;
    }
    post(accountId, tokens, route, 0, std::move(done));
}

QNetworkAccessManager *TokenRefresher::networkFor(const EgressRoute::Hop &hop)
{
    QNetworkAccessManager *&network = m_viaProxy[hop.name];
    if (!network)
        network = new QNetworkAccessManager(this);
    network->setProxy(tunnelOnly(hop.proxy));
    return network;
}

void TokenRefresher::post(const QString &accountId, const AuthTokens &tokens, const EgressRoute &route, int hop,
                          Done done)
{
    const bool viaProxy = route.kind == EgressRoute::Kind::Proxies;
    QNetworkAccessManager *network = viaProxy ? networkFor(route.hops.at(hop)) : m_network;
    QNetworkRequest request(oauth::endpointUrl(m_authUrl, QStringLiteral("/oauth/token")));
    request.setHeader(QNetworkRequest::ContentTypeHeader, QByteArrayLiteral("application/json"));
    request.setRawHeader("Accept", "application/json");
    request.setTransferTimeout(m_timeoutMs);
    QNetworkReply *reply = network->post(request, refreshRequestBody(tokens.refreshToken));
    const AuthTokens old = tokens;
    // The refresh token travels in the body: while none of it was written, the server cannot have used it.
    auto bodySent = std::make_shared<bool>(false);
    connect(reply, &QNetworkReply::uploadProgress, this, [bodySent](qint64 sent, qint64) {
        if (sent > 0)
            *bodySent = true;
    });
    QPointer<TokenRefresher> self(this);
    connect(reply, &QNetworkReply::finished, this, [self, reply, old, accountId, route, hop, viaProxy, bodySent, done] {
        reply->deleteLater();
        const int status = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
        // Nothing of the request went through the proxy (no tunnel, or it broke before the body was written):
        // the refresh token cannot have reached the token endpoint, so the next proxy may try it. Once any of
        // the body was sent, another try could spend the single-use token twice.
        const bool noTunnel = viaProxy && status == 0 && !*bodySent;
        if (noTunnel && self && hop + 1 < route.hops.size()) {
            qCInfo(lcRefresh).noquote() << "refresh of" << accountId << "through egress proxy"
                                        << route.hops.at(hop).name << "failed (" + reply->errorString() + "), trying"
                                        << route.hops.at(hop + 1).name;
            self->post(accountId, old, route, hop + 1, done);
            return;
        }
        const QByteArray body = reply->readAll();
        const QString networkError = status == 0 ? reply->errorString() : QString();
        RefreshResult result = parseRefreshResponse(status, body, old, networkError);
        if (noTunnel) {
            result.egressReason = QStringLiteral("proxy_unreachable");
            result.message = QStringLiteral("no proxy of egress pool \"%1\" could set up a tunnel to the token "
                                            "endpoint (last: %2, %3)")
                                 .arg(route.pool, route.hops.at(hop).name, reply->errorString());
        }
        if (!result.ok)
            qCInfo(lcRefresh).noquote() << "refresh of" << accountId << "failed:" << result.message;
        done(result);
    });
}

} // namespace sy
