#pragma once

#include "accounts/AuthTokens.h"
#include "upstream/egress/EgressRoute.h"

#include <QByteArray>
#include <QObject>
#include <QString>
#include <QUrl>
#include <functional>

namespace sy {

// How a failed refresh should be handled (issue 3 point 4).
enum class RefreshFailure
{
    None,        // the refresh succeeded
    Transient,   // network, 5xx, 429, an unusable answer: try again later, the refresh token is still good
    Permanent,   // the refresh token is dead (invalid_grant, reused, expired, invalidated): reauth_required
    Deactivated, // the account or user was deactivated
};

// Classifies a token endpoint failure. httpStatus 0 means no HTTP answer. `error` and `errorDescription` are
// the OAuth error fields (either may carry the specific code, e.g. invalid_grant + "refresh_token_reused").
RefreshFailure classifyRefreshFailure(int httpStatus, const QString &error, const QString &errorDescription);

struct RefreshResult
{
    bool ok = false;
    AuthTokens tokens; // the new set when ok (refresh_token / id_token kept from the old set when not rotated)
    RefreshFailure failure = RefreshFailure::None;
    int httpStatus = 0;
    QString error;   // the OAuth code that decided the class ("refresh_token_reused", ...), if any
    QString message; // for people and logs; never token text
    // The account's egress pool could not carry the refresh (no_healthy_proxy, pool_unusable,
    // proxy_unreachable): it was not sent directly instead. Transient: the refresh token is untouched.
    QString egressReason;
};

// The JSON body of a refresh: {grant_type: refresh_token, client_id, refresh_token, scope}.
QByteArray refreshRequestBody(const QString &refreshToken);

// Reads a /oauth/token answer to a refresh. A 2xx needs access_token; an absent refresh_token or id_token
// means the old one stays valid.
RefreshResult parseRefreshResponse(int httpStatus, const QByteArray &body, const AuthTokens &old,
                                   const QString &networkError = {});

// Performs one refresh against {authUrl}/oauth/token. No coalescing or claims here (RefreshCoordinator does
// that): every refresh() call is one request. Callbacks run on this object's thread.
//
// With a router, an account bound to an egress pool refreshes only through that pool's proxies (one network
// access manager per proxy, tunnelling with CONNECT or SOCKS5): the next proxy is tried only when nothing of the
// request body went through the previous one (so the refresh token cannot have reached the server), and each
// proxy has setHopTimeoutMs() to take its first byte (EgressPost). Fail closed: when the pool has no usable proxy
// the refresh fails with RefreshResult::egressReason and nothing is sent.
class TokenRefresher : public QObject
{
    Q_OBJECT

public:
    using Done = std::function<void(const RefreshResult &result)>;

    explicit TokenRefresher(QUrl authUrl, QObject *parent = nullptr);

    void setTimeoutMs(int ms) { m_timeoutMs = ms; }
    // Through an egress pool: how long each proxy has to take the request's first byte (Config connect_s)
    // before the next one is tried.
    void setHopTimeoutMs(int ms) { m_hopTimeoutMs = ms; }
    // Decides per account how the refresh leaves the machine; without one every refresh goes direct.
    void setRouter(EgressRouter router) { m_router = std::move(router); }
    void refresh(const QString &accountId, const AuthTokens &tokens, Done done);

private:
    QUrl m_authUrl;
    EgressRouter m_router;
    int m_timeoutMs = 20000;
    int m_hopTimeoutMs = 8000;
};

} // namespace sy
