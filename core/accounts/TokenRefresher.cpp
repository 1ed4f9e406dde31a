#include "accounts/TokenRefresher.h"

#include "accounts/OAuthProtocol.h"
#include "upstream/egress/EgressPost.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QLoggingCategory>
#include <QNetworkRequest>
#include <QTimer>

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

TokenRefresher::TokenRefresher(QUrl authUrl, QObject *parent) : QObject(parent), m_authUrl(std::move(authUrl)) {}

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
    QNetworkRequest request(oauth::endpointUrl(m_authUrl, QStringLiteral("/oauth/token")));
    request.setHeader(QNetworkRequest::ContentTypeHeader, QByteArrayLiteral("application/json"));
    request.setRawHeader("Accept", "application/json");
    request.setTransferTimeout(m_timeoutMs);
    const AuthTokens old = tokens;
    const QString pool = route.pool;
    // The refresh token travels in the body: EgressPost tries the next proxy only while none of it went out.
    auto *post = new EgressPost(
        request, refreshRequestBody(tokens.refreshToken), route, m_hopTimeoutMs,
        QStringLiteral("refresh of ") + accountId,
        [old, accountId, pool, done](const EgressPostResult &sent) {
            RefreshResult result = parseRefreshResponse(sent.httpStatus, sent.body, old, sent.networkError);
            if (sent.noTunnel) {
                result.egressReason = QStringLiteral("proxy_unreachable");
                result.message = QStringLiteral("no proxy of egress pool \"%1\" could set up a tunnel to the token "
                                                "endpoint (last: %2, %3)")
                                     .arg(pool, sent.lastHop, sent.networkError);
            }
            if (!result.ok)
                qCInfo(lcRefresh).noquote() << "refresh of" << accountId << "failed:" << result.message;
            done(result);
        },
        this);
    post->start();
}

} // namespace sy
