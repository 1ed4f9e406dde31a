#include "accounts/OAuthLogin.h"

#include "accounts/Pkce.h"
#include "config/Config.h"
#include "http/HttpResponse.h"
#include "http/HttpServer.h"
#include "upstream/egress/EgressPost.h"
#include "upstream/egress/EgressSelector.h"
#include "util/Clock.h"

#include <QEventLoop>
#include <QNetworkRequest>
#include <QTcpServer>

namespace sy {

namespace {

QAbstractSocket::SocketError listenError(HttpServer *server)
{
    // HttpServer reports only a text; its QTcpServer child knows the error code.
    const QTcpServer *tcp = server->findChild<QTcpServer *>();
    return tcp ? tcp->serverError() : QAbstractSocket::UnknownSocketError;
}

QByteArray pageHtml(bool success, const QString &text)
{
    const QString title =
        success ? QStringLiteral("Switchyard: logged in") : QStringLiteral("Switchyard: login failed");
    const QString headline = success ? QStringLiteral("You are logged in.") : QStringLiteral("The login did not work.");
    const QString close = success ? QStringLiteral("You can close this window and return to Switchyard.")
                                  : QStringLiteral("You can close this window. Nothing was stored.");
    return QStringLiteral("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>%1</title>"
                          "<style>body{font-family:sans-serif;margin:4em auto;max-width:36em;color:#222}"
                          "h1{font-size:1.4em}</style></head>\n<body><h1>%2</h1><p>%3</p><p>%4</p></body></html>\n")
        .arg(title.toHtmlEscaped(), headline.toHtmlEscaped(), text.toHtmlEscaped(), close.toHtmlEscaped())
        .toUtf8();
}

} // namespace

bool routeLoginExchange(OAuthLoginOptions *options, const Config &config, SecretStore *secrets,
                        const std::optional<QString> &alias, QString *error)
{
    SystemClock clock;
    EgressSelector egress(config, clock, secrets);
    QEventLoop wait;
    egress.loadCredentialsOnly([&wait] { wait.quit(); });
    wait.exec();
    options->egress = egress.loginRoute(alias);
    options->egressHopTimeoutMs = qMax(1, config.budgets.connectS) * 1000;
    if (options->egress.allowed())
        return true;
    *error = QStringLiteral("egress pool \"%1\" cannot carry the code exchange (%2: %3); it is not sent directly")
                 .arg(options->egress.pool, options->egress.reason, options->egress.detail);
    return false;
}

OAuthLogin::OAuthLogin(OAuthLoginOptions options, QObject *parent) : QObject(parent), m_options(std::move(options))
{
    m_timeout.setSingleShot(true);
    connect(&m_timeout, &QTimer::timeout, this, [this] {
        finish(OAuthLoginError::Timeout,
               QStringLiteral("no browser came back to %1 within %2 s; the login was abandoned and nothing was stored")
                   .arg(m_redirectUri, QString::number(m_options.timeoutMs / 1000.0)),
               QStringLiteral("The login took too long and was abandoned."));
    });
}

OAuthLogin::~OAuthLogin()
{
    if (m_post)
        m_post->abort();
}

bool OAuthLogin::start()
{
    if (m_started)
        return false; // one login per object
    m_started = true;
    const PkcePair pkce = generatePkce();
    m_verifier = pkce.verifier;
    m_state = randomUrlSafeToken(32);

    QString error;
    bool inUse = false;
    if (!listenBoth(m_options.callbackPort, &error, &inUse)) {
        // Whatever did bind must not keep answering on one loopback address.
        delete m_v4;
        delete m_v6;
        m_v4 = m_v6 = nullptr;
        m_result.error = inUse ? OAuthLoginError::PortInUse : OAuthLoginError::CannotListen;
        m_result.message = error;
        m_verifier.clear();
        return false;
    }
    m_redirectUri = oauth::redirectUriFor(m_port);
    m_authorizeUrl =
        oauth::authorizeUrl(m_options.issuer, {m_options.clientId, m_redirectUri, pkce.challenge, m_state});
    m_running = true;
    m_timeout.start(m_options.timeoutMs);
    emit started(m_authorizeUrl);
    if (m_running && m_opener)
        m_opener(m_authorizeUrl);
    return true;
}

void OAuthLogin::cancel()
{
    finish(OAuthLoginError::Cancelled, QStringLiteral("the login was cancelled; nothing was stored"),
           QStringLiteral("The login was cancelled in Switchyard."));
}

bool OAuthLogin::listenBoth(quint16 port, QString *error, bool *inUse)
{
    // With port 0 the kernel picks a port for 127.0.0.1 that may be taken on ::1: try a few.
    const int attempts = port == 0 ? 8 : 1;
    for (int attempt = 0; attempt < attempts; ++attempt) {
        delete m_v4;
        delete m_v6;
        m_v6 = nullptr;
        m_v4 = new HttpServer(this);
        if (!m_v4->listen(QHostAddress::LocalHost, port)) {
            *inUse = listenError(m_v4) == QAbstractSocket::AddressInUseError;
            *error = *inUse ? QStringLiteral("cannot receive the login callback: port %1 on 127.0.0.1 is already in "
                                             "use. Codex CLI's own login ('codex login') uses the same port: finish "
                                             "or cancel it, then try again")
                                  .arg(port)
                            : QStringLiteral("cannot listen on 127.0.0.1:%1 for the login callback: %2")
                                  .arg(port)
                                  .arg(m_v4->errorString());
            return false;
        }
        const quint16 chosen = m_v4->serverPort();
        m_v6 = new HttpServer(this);
        if (m_v6->listen(QHostAddress::LocalHostIPv6, chosen)) {
            m_port = chosen;
            break;
        }
        const QAbstractSocket::SocketError v6Error = listenError(m_v6);
        if (v6Error == QAbstractSocket::AddressInUseError) {
            if (port == 0)
                continue;
            *inUse = true;
            *error = QStringLiteral("cannot receive the login callback: port %1 on ::1 is already in use. Codex "
                                    "CLI's own login ('codex login') uses the same port: finish or cancel it, then "
                                    "try again")
                         .arg(port);
            return false;
        }
        // No IPv6 loopback on this machine: "localhost" cannot resolve to ::1 either, so IPv4 alone is enough.
        delete m_v6;
        m_v6 = nullptr;
        m_port = chosen;
        break;
    }
    if (m_port == 0) {
        *inUse = false;
        *error = QStringLiteral("cannot find a free port on both 127.0.0.1 and ::1 for the login callback");
        return false;
    }
    for (HttpServer *server : {m_v4, m_v6}) {
        if (server)
            server->setHandler([this](HttpRequestPtr request, HttpResponse *response) { handle(request, response); });
    }
    return true;
}

void OAuthLogin::handle(const HttpRequestPtr &request, HttpResponse *response)
{
    if (request->path != QLatin1String(oauth::kCallbackPath)) {
        response->sendFull(404, QByteArrayLiteral("text/plain; charset=utf-8"), QByteArrayLiteral("not found\n"));
        return;
    }
    if (request->method != "GET") {
        response->setHeader(QByteArrayLiteral("Allow"), QByteArrayLiteral("GET"));
        response->sendFull(405, QByteArrayLiteral("text/plain; charset=utf-8"), QByteArrayLiteral("GET only\n"));
        return;
    }
    if (!m_running || m_exchanging) {
        sendPage(response, 409, false,
                 m_exchanging ? QStringLiteral("This login is already being completed in another tab.")
                              : QStringLiteral("This login has already ended."));
        return;
    }
    const oauth::CallbackParams p = oauth::parseCallback(request->query, m_state);
    m_pending = response;
    switch (p.kind) {
    case oauth::CallbackParams::Kind::Code:
        exchange(p.code, response);
        return;
    case oauth::CallbackParams::Kind::StateMismatch:
        finish(OAuthLoginError::StateMismatch,
               QStringLiteral("the browser came back with a state that does not belong to this login (an old browser "
                              "tab or a forged request); nothing was stored, run the login again"),
               QStringLiteral("This answer does not belong to the login Switchyard started (state mismatch)."));
        return;
    case oauth::CallbackParams::Kind::Denied:
        finish(OAuthLoginError::Denied,
               QStringLiteral("the login was denied in the browser (access_denied); no account was added"),
               QStringLiteral("Access was denied, so no account was added."));
        return;
    case oauth::CallbackParams::Kind::ProviderError: {
        QString what = p.error;
        if (!p.errorDescription.isEmpty())
            what += QStringLiteral(": ") + p.errorDescription;
        finish(OAuthLoginError::ProviderError,
               QStringLiteral("the authorization server reported an error (%1); no account was added").arg(what),
               QStringLiteral("The authorization server reported an error (%1).").arg(what));
        return;
    }
    case oauth::CallbackParams::Kind::Malformed:
        finish(OAuthLoginError::BadCallback,
               QStringLiteral("the browser came back without an authorization code; nothing was stored"),
               QStringLiteral("The answer carried no authorization code."));
        return;
    }
}

void OAuthLogin::exchange(const QString &code, HttpResponse *response)
{
    m_exchanging = true;
    m_pending = response;
    post(oauth::authorizationCodeForm(m_options.clientId, code, m_verifier, m_redirectUri));
}

void OAuthLogin::post(const QByteArray &form)
{
    QNetworkRequest request(oauth::endpointUrl(m_options.issuer, QStringLiteral("/oauth/token")));
    request.setHeader(QNetworkRequest::ContentTypeHeader, QByteArrayLiteral("application/x-www-form-urlencoded"));
    request.setRawHeader(QByteArrayLiteral("Accept"), QByteArrayLiteral("application/json"));
    request.setTransferTimeout(m_options.tokenTimeoutMs);
    // The authorization code travels in the body: the next proxy is tried only while none of it went out.
    m_post = new EgressPost(
        request, form, m_options.egress, m_options.egressHopTimeoutMs, QStringLiteral("login code exchange"),
        [this](const EgressPostResult &sent) { onTokenReply(sent); }, this);
    m_post->start();
}

void OAuthLogin::onTokenReply(const EgressPostResult &sent)
{
    m_post = nullptr;
    if (!m_running)
        return;
    if (sent.noTunnel) {
        finish(OAuthLoginError::TokenEndpoint,
               QStringLiteral("no proxy of egress pool \"%1\" could set up a tunnel to the token endpoint (last: "
                              "%2, %3); the code was not sent directly")
                   .arg(m_options.egress.pool, sent.lastHop, sent.networkError),
               QStringLiteral("The authorization code could not be exchanged for tokens."));
        return;
    }
    const oauth::TokenResponse tokens = oauth::parseTokenResponse(sent.httpStatus, sent.body, sent.networkError);
    if (!tokens.ok) {
        finish(OAuthLoginError::TokenEndpoint, tokens.message,
               QStringLiteral("The authorization code could not be exchanged for tokens."));
        return;
    }
    m_result.tokens = tokens.tokens;
    QString detail;
    if (m_completer) {
        // The completer may wait for the keychain in a local event loop; the keychain bounds that wait
        // itself, and the login timeout must not cut a half-done save.
        m_timeout.stop();
        const auto [saved, text] = m_completer(tokens.tokens);
        if (!m_running)
            return; // cancelled meanwhile
        if (!saved) {
            finish(OAuthLoginError::SaveFailed,
                   QStringLiteral("the login worked but the account could not be stored: ") + text,
                   QStringLiteral("The login worked, but Switchyard could not store the account: ") + text);
            return;
        }
        detail = text;
    }
    m_result.detail = detail;
    finish(OAuthLoginError::None, detail.isEmpty() ? QStringLiteral("logged in") : detail,
           detail.isEmpty() ? QStringLiteral("Switchyard received the login.") : detail);
}

void OAuthLogin::finish(OAuthLoginError error, const QString &message, const QString &pageText)
{
    if (!m_running)
        return;
    m_running = false;
    m_exchanging = false;
    m_timeout.stop();
    if (m_post) {
        m_post->abort();
        m_post = nullptr;
    }
    m_verifier.clear();
    m_result.error = error;
    m_result.message = message;
    if (error != OAuthLoginError::None) {
        m_result.tokens = {};
        m_result.detail.clear();
    }
    for (HttpServer *server : {m_v4, m_v6}) {
        if (server)
            server->close();
    }
    bool paged = false;
    if (m_pending && !m_pending->isFinished()) {
        sendPage(m_pending, error == OAuthLoginError::None ? 200 : 400, error == OAuthLoginError::None, pageText);
        paged = true;
    }
    m_pending = nullptr;
    QTimer::singleShot(paged ? kPageFlushMs : 0, this, [this] { emit finished(m_result); });
}

void OAuthLogin::sendPage(HttpResponse *response, int status, bool success, const QString &text)
{
    response->setHeader(QByteArrayLiteral("Cache-Control"), QByteArrayLiteral("no-store"));
    response->sendFull(status, QByteArrayLiteral("text/html; charset=utf-8"), pageHtml(success, text));
}

} // namespace sy
