#pragma once

#include "http/HttpRequest.h"

#include <QHash>
#include <QJsonArray>
#include <QJsonObject>
#include <QObject>

namespace sy {
class HttpResponse;
class HttpServer;
} // namespace sy

namespace sy::fake {

// Test double for the OpenAI authorization server (PROTOCOL.md "Accounts: OAuth and auth.json").
//
// GET  /oauth/authorize  checks the Codex CLI parameters and, acting as a user who consents at once,
//                        answers 302 to redirect_uri?code=..&state=.. (or ?error=access_denied&state=..
//                        when denying: control "deny", or the query flag fake_deny=true).
// POST /oauth/token      grant_type=authorization_code (form or JSON): the code must be fresh, issued for
//                        that client and redirect_uri, and SHA-256(code_verifier) must match the stored S256
//                        challenge. grant_type=refresh_token (JSON or form): refresh tokens rotate and are
//                        single-use; a reused one gets 400 {"error":"invalid_grant","error_description":
//                        "refresh_token_reused"}, an unknown one "refresh_token_invalidated".
//                        Both answer {access_token, refresh_token, id_token, token_type, expires_in}: unsigned
//                        JWTs whose payloads carry email, exp and the https://api.openai.com/auth claim
//                        {chatgpt_account_id, chatgpt_plan_type, chatgpt_user_id}.
//
// Control API (JSON):
// POST /__control/config  merges settings: deny (bool), wrong_state (bool: redirect with another state),
//                         token_error ({status, error, error_description} or null: every token request
//                         fails so), identity ({email, chatgpt_account_id, chatgpt_user_id,
//                         chatgpt_plan_type}), id_token_without_account (bool: the account id only in the
//                         access token), access_ttl_s (int), token_delay_ms (int).
// POST /__control/refresh_tokens {refresh_token, identity?}  accepts that refresh token once (for tests
//                         that import an auth.json and then refresh against this server).
// POST /__control/reset   back to defaults; forgets codes, refresh tokens and the log.
// GET  /__control/log     every /oauth request, oldest first: {seq, method, path, status, error,
//                         grant_type, client_id, query{} (authorize), refresh_token (refresh requests),
//                         code and code_verifier (code exchanges), issued{access_token, refresh_token,
//                         id_token} (token requests that succeeded)}: tests that look for leaked secrets
//                         need every token the server handed out.
class FakeOAuth : public QObject
{
    Q_OBJECT

public:
    static constexpr char kDefaultClientId[] = "app_EMoamEEZ73f0CkXaXp7hrann";

    explicit FakeOAuth(QString clientId = QString::fromLatin1(kDefaultClientId), QObject *parent = nullptr);
    bool listen(const QHostAddress &address, quint16 port);
    quint16 port() const;
    QString errorString() const;

private:
    struct Identity
    {
        QString email;
        QString accountId;
        QString userId;
        QString plan;
    };
    struct CodeGrant
    {
        QString challenge;
        QString redirectUri;
        Identity identity;
        bool used = false;
    };
    struct RefreshGrant
    {
        Identity identity;
        bool used = false;
    };
    struct Settings
    {
        bool deny = false;
        bool wrongState = false;
        bool idTokenWithoutAccount = false;
        QJsonObject tokenError;
        Identity identity;
        int accessTtlS = 3600;
        int tokenDelayMs = 0;
    };

    void handle(HttpRequestPtr request, HttpResponse *response);
    void authorize(const HttpRequest &request, HttpResponse *response, QJsonObject &log);
    void token(const HttpRequest &request, HttpResponse *response, QJsonObject &log);
    void control(const HttpRequest &request, HttpResponse *response);
    QJsonObject issueTokens(const Identity &identity);
    static Identity identityFrom(const QJsonObject &o, const Identity &fallback);
    static Identity defaultIdentity();

    HttpServer *m_server;
    QString m_clientId;
    Settings m_settings;
    QHash<QString, CodeGrant> m_codes;
    QHash<QString, RefreshGrant> m_refreshTokens;
    QJsonArray m_log;
};

} // namespace sy::fake
