#pragma once

#include "accounts/AuthTokens.h"
#include "accounts/OAuthProtocol.h"
#include "http/HttpRequest.h"
#include "upstream/egress/EgressRoute.h"

#include <QObject>
#include <QPointer>
#include <QString>
#include <QTimer>
#include <QUrl>
#include <functional>
#include <optional>

namespace sy {

class EgressPost;
struct EgressPostResult;

class SecretStore;
struct Config;

class HttpResponse;
class HttpServer;

struct OAuthLoginOptions
{
    QUrl issuer = QUrl(QStringLiteral("https://auth.openai.com")); // Config::authUrl
    QString clientId = QString::fromLatin1(oauth::kCodexClientId);
    quint16 callbackPort = oauth::kDefaultCallbackPort; // 0 = any free port (tests)
    int timeoutMs = 300 * 1000;                         // whole login, from start() to the callback's end
    int tokenTimeoutMs = 30 * 1000;                     // the code exchange alone
    // How the code exchange leaves the machine: direct, or through an egress pool's proxies in order (the next
    // only when the previous set up no tunnel before any of the code was sent). Never Refused here: the caller
    // refuses the login before it starts.
    EgressRoute egress;
    // Per proxy of `egress`: the time it has to set up its tunnel (the code's first byte written). A proxy that
    // refuses mid-handshake can leave Qt reconnecting without an answer; past this the next one is tried.
    int egressHopTimeoutMs = 8 * 1000; // Config budgets.connect_s
};

// For a process that has no EgressSelector running (the CLI, the dashboard): reads the egress proxies'
// credentials (waiting in a local event loop) and sets options->egress to the route of a login for `alias`
// (its pool, or the default pool; Direct without one) with connect_s per proxy. False, with *error, when that
// pool cannot carry the code exchange: the login must not start, and never goes direct instead.
bool routeLoginExchange(OAuthLoginOptions *options, const Config &config, SecretStore *secrets,
                        const std::optional<QString> &alias, QString *error);

enum class OAuthLoginError
{
    None,
    PortInUse,     // the callback port is taken (Codex CLI's own login uses 1455)
    CannotListen,  // any other reason the callback server could not start
    Denied,        // the user refused consent (error=access_denied)
    ProviderError, // the authorization server redirected with another error
    StateMismatch, // a callback without our state
    BadCallback,   // our state but no code
    TokenEndpoint, // the code exchange failed (HTTP error, unreachable, incomplete answer)
    SaveFailed,    // the completer could not store the account
    Timeout,
    Cancelled,
};

struct OAuthLoginResult
{
    OAuthLoginError error = OAuthLoginError::None;
    QString message;   // for people; never contains token text
    AuthTokens tokens; // complete when ok()
    QString detail;    // the completer's success text (e.g. which account), shown on the browser page
    bool ok() const { return error == OAuthLoginError::None; }
};

// One browser login: the OAuth 2.0 authorization-code flow with PKCE (S256) against the OpenAI issuer,
// as Codex CLI runs it (PROTOCOL.md "Accounts: OAuth and auth.json").
//
// start() binds the callback server on 127.0.0.1 and ::1 (a browser may resolve "localhost" to either),
// emits started(authorizeUrl) and asks the browser opener, if any, to show the URL. The callback
// (/auth/callback?code=..&state=..) is checked against our state, the code is exchanged at /oauth/token,
// the completer (if any) stores the result, and the browser gets a success or error page. Then the server
// stops listening and finished() is emitted once, a moment after the page was handed to the socket so
// that it reaches the browser even when the owner exits at once.
//
// Tokens stay in memory (the result and the completer) and never reach a log line or a message.
// Lives on one thread; the completer runs on it, outside of any socket handler.
class OAuthLogin : public QObject
{
    Q_OBJECT

public:
    // Shows the URL to the user (QDesktopServices::openUrl in the GUI, xdg-open in a CLI with a display).
    // false = could not open: the URL is still printed/shown by the caller.
    using BrowserOpener = std::function<bool(const QUrl &url)>;
    // Stores the exchanged tokens. Returns {ok, text}: on success the text describes what was stored (shown
    // on the success page and put in OAuthLoginResult::detail); on failure it is the reason (SaveFailed).
    using Completer = std::function<std::pair<bool, QString>(const AuthTokens &tokens)>;

    explicit OAuthLogin(OAuthLoginOptions options, QObject *parent = nullptr);
    ~OAuthLogin() override;

    void setBrowserOpener(BrowserOpener opener) { m_opener = std::move(opener); }
    void setCompleter(Completer completer) { m_completer = std::move(completer); }

    // Returns false when the callback server cannot listen; result() then says why (PortInUse or
    // CannotListen) and finished() is not emitted. Otherwise finished() follows exactly once.
    bool start();
    // Ends a running login with Cancelled (no page is sent to the browser).
    void cancel();
    bool isRunning() const { return m_running; }

    QUrl authorizeUrl() const { return m_authorizeUrl; }
    QString redirectUri() const { return m_redirectUri; }
    quint16 callbackPort() const { return m_port; }
    const OAuthLoginResult &result() const { return m_result; }

    // How long finished() waits after the page was handed to the socket.
    static constexpr int kPageFlushMs = 200;

signals:
    void started(const QUrl &authorizeUrl);
    void finished(const sy::OAuthLoginResult &result);

private:
    bool listenBoth(quint16 port, QString *error, bool *inUse);
    void handle(const HttpRequestPtr &request, HttpResponse *response);
    void exchange(const QString &code, HttpResponse *response);
    void post(const QByteArray &form);
    void onTokenReply(const EgressPostResult &sent);
    void finish(OAuthLoginError error, const QString &message, const QString &pageText = {});
    void sendPage(HttpResponse *response, int status, bool success, const QString &text);

    OAuthLoginOptions m_options;
    BrowserOpener m_opener;
    Completer m_completer;
    HttpServer *m_v4 = nullptr;
    HttpServer *m_v6 = nullptr;
    QPointer<EgressPost> m_post;      // the code exchange while it runs
    QPointer<HttpResponse> m_pending; // the browser's callback request, answered when the exchange ends
    QTimer m_timeout;
    QString m_verifier;
    QString m_state;
    QString m_redirectUri;
    QUrl m_authorizeUrl;
    quint16 m_port = 0;
    bool m_started = false;
    bool m_running = false;
    bool m_exchanging = false;
    OAuthLoginResult m_result;
};

} // namespace sy

Q_DECLARE_METATYPE(sy::OAuthLoginResult)
