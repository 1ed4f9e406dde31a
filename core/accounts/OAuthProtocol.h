#pragma once

#include "accounts/AuthTokens.h"

#include <QByteArray>
#include <QString>
#include <QUrl>
#include <QUrlQuery>

namespace sy::oauth {

// The OpenAI authorization server as Codex CLI uses it (PROTOCOL.md "Accounts: OAuth and auth.json").
inline constexpr char kCodexClientId[] = "app_EMoamEEZ73f0CkXaXp7hrann";
inline constexpr char kScope[] = "openid profile email offline_access";
inline constexpr char kCallbackPath[] = "/auth/callback";
inline constexpr quint16 kDefaultCallbackPort = 1455;

// http://localhost:PORT/auth/callback. The server only accepts the registered localhost form, so it is
// "localhost" even though the callback server binds the loopback addresses themselves.
QString redirectUriFor(quint16 port);

// `path` ("/oauth/token") under the issuer URL, keeping any path prefix the issuer URL has (tests and
// proxies mount the issuer below a prefix).
QUrl endpointUrl(const QUrl &issuer, const QString &path);

struct AuthorizeRequest
{
    QString clientId;
    QString redirectUri;
    QString codeChallenge; // S256
    QString state;
};

// {issuer}/oauth/authorize with response_type=code, client_id, redirect_uri, scope, code_challenge,
// code_challenge_method=S256, id_token_add_organizations=true, codex_cli_simplified_flow=true and state.
QUrl authorizeUrl(const QUrl &issuer, const AuthorizeRequest &request);

// What the browser brought back to the redirect URI.
struct CallbackParams
{
    enum class Kind
    {
        Code,          // success: `code` is set
        Denied,        // error=access_denied: the user said no
        ProviderError, // any other error=...: `error` and `errorDescription` say which
        StateMismatch, // state absent or not ours: never trust anything else in such a callback
        Malformed,     // right state but neither code nor error
    };
    Kind kind = Kind::Malformed;
    QString code;
    QString error;
    QString errorDescription;
};

// The state is checked first, also for error callbacks: a request without our state may come from any web
// page the browser shows, so it must neither complete nor describe the login.
CallbackParams parseCallback(const QUrlQuery &query, const QString &expectedState);

// application/x-www-form-urlencoded, every value fully percent-encoded (QUrlQuery leaves '+' alone,
// which a form decoder reads as a space).
QByteArray formEncode(const QList<QPair<QString, QString>> &fields);

// The form for grant_type=authorization_code.
QByteArray authorizationCodeForm(const QString &clientId, const QString &code, const QString &codeVerifier,
                                 const QString &redirectUri);

struct TokenResponse
{
    bool ok = false;
    AuthTokens tokens;        // complete when ok
    QString error;            // OAuth "error" code (or error.code / error.type of an OpenAI-style body)
    QString errorDescription; // "error_description" or error.message, shortened
    QString message;          // for people; names the status and the error, never token text
};

// Reads a /oauth/token answer: 2xx with access_token, refresh_token and id_token, or an error body.
// httpStatus 0 means no HTTP answer (networkError says why).
TokenResponse parseTokenResponse(int httpStatus, const QByteArray &body, const QString &networkError = {});

} // namespace sy::oauth
