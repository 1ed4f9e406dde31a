#include "CliSupport.h"
#include "Commands.h"
#include "accounts/LoginStorage.h"
#include "accounts/OAuthLogin.h"
#include "accounts/SecretStore.h"
#include "accounts/SecretStoreFactory.h"
#include "store/AccountRepository.h"

#include <QCoreApplication>
#include <QEventLoop>
#include <QProcess>
#include <memory>

namespace sy::app {

namespace {

// Test and expert knobs; the defaults are what the real issuer expects.
const char kPortVariable[] = "SWITCHYARD_OAUTH_CALLBACK_PORT";
const char kTimeoutVariable[] = "SWITCHYARD_LOGIN_TIMEOUT_S";
const char kNoBrowserVariable[] = "SWITCHYARD_NO_BROWSER";

bool readEnvNumber(const char *name, qint64 min, qint64 max, qint64 *value, QString *error)
{
    if (!qEnvironmentVariableIsSet(name))
        return true;
    bool ok = false;
    const qint64 v = qEnvironmentVariable(name).trimmed().toLongLong(&ok);
    if (!ok || v < min || v > max) {
        *error = QStringLiteral("%1 must be a whole number from %2 to %3").arg(QLatin1String(name)).arg(min).arg(max);
        return false;
    }
    *value = v;
    return true;
}

// The CLI runs a QCoreApplication, so QDesktopServices is out of reach: hand the URL to the desktop's
// opener directly, and only where a desktop exists (on a server xdg-open would start a text browser).
bool openInDesktopBrowser(const QUrl &url)
{
    if (qEnvironmentVariableIsSet(kNoBrowserVariable))
        return false;
    const QString text = QString::fromLatin1(url.toEncoded());
#if defined(Q_OS_MACOS)
    return QProcess::startDetached(QStringLiteral("open"), {text});
#elif defined(Q_OS_WIN)
    return QProcess::startDetached(QStringLiteral("rundll32"), {QStringLiteral("url.dll,FileProtocolHandler"), text});
#else
    if (qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY"))
        return false;
    return QProcess::startDetached(QStringLiteral("xdg-open"), {text});
#endif
}

} // namespace

int loginAccount(Database &db, const Config &config, const CommandLine &cl)
{
    if (cl.words.size() != 2)
        return fail(QStringLiteral("accounts login takes no arguments (use --alias NAME to name the account)"));
    std::optional<QString> alias;
    if (!cl.alias.isEmpty()) {
        QString why;
        if (!AccountRepository::isValidAlias(cl.alias, &why))
            return fail(QStringLiteral("--alias: ") + why);
        alias = cl.alias;
    }
    OAuthLoginOptions options;
    options.issuer = config.authUrl;
    qint64 port = options.callbackPort;
    qint64 timeoutS = options.timeoutMs / 1000;
    QString error;
    if (!readEnvNumber(kPortVariable, 0, 65535, &port, &error) ||
        !readEnvNumber(kTimeoutVariable, 1, 24 * 3600, &timeoutS, &error))
        return fail(error, ExitConfig);
    options.callbackPort = quint16(port);
    options.timeoutMs = int(timeoutS * 1000);

    // A login whose tokens cannot be stored would only waste the user's time in the browser: ask the
    // secret store first. A missing entry is the expected answer; no backend is not.
    const std::unique_ptr<SecretStore> secrets(makeSecretStore(config, &error));
    if (!secrets)
        return fail(error);
    AuthTokens ignored;
    const SecretOutcome probe = secrets->readTokensBlocking(QStringLiteral("login-probe"), &ignored);
    if (!probe.ok && probe.error != SecretError::NotFound)
        return fail(QStringLiteral("cannot log in: tokens cannot be stored (%1)").arg(probe.errorText));

    // The code exchange is the new account's first call to the issuer: it leaves the machine the way the
    // account's refreshes will, through the egress pool of --alias (or the default pool), and never directly
    // when that pool cannot carry it. (The browser's own visit is the browser's business.)
    if (!routeLoginExchange(&options, config, secrets.get(), alias, &error))
        return fail(QStringLiteral("cannot log in: ") + error);
    if (options.egress.kind == EgressRoute::Kind::Proxies)
        out(QStringLiteral("The code exchange goes through egress pool \"%1\".").arg(options.egress.pool));

    OAuthLogin login(options);
    login.setBrowserOpener([&login](const QUrl &url) {
        if (openInDesktopBrowser(url))
            return true;
        // Headless (or SWITCHYARD_NO_BROWSER): the browser may be on another machine, which must then reach
        // this machine's localhost.
        out(QStringLiteral("(No browser was opened. From another machine, forward the port first: "
                           "ssh -L %1:localhost:%1 THIS-HOST)")
                .arg(login.callbackPort()));
        return false;
    });
    login.setCompleter([&](const AuthTokens &tokens) -> std::pair<bool, QString> {
        QString why;
        const std::optional<SavedLogin> saved = saveLogin(db, *secrets, tokens, alias, &why);
        if (!saved)
            return {false, why};
        return {true, QStringLiteral("%1 %2 (%3, %4)")
                          .arg(saved->created ? QStringLiteral("added") : QStringLiteral("updated"), saved->accountId,
                               saved->email.isEmpty() ? QStringLiteral("no email") : saved->email,
                               saved->plan.isEmpty() ? QStringLiteral("plan unknown") : saved->plan)};
    });
    QObject::connect(&login, &OAuthLogin::started, [&](const QUrl &url) {
        out(QStringLiteral("Open this URL in a browser on this machine to log in (waiting %1 s for the answer on "
                           "port %2):")
                .arg(timeoutS)
                .arg(login.callbackPort()));
        out(QString::fromLatin1(url.toEncoded()));
    });
    QEventLoop loop;
    QObject::connect(&login, &OAuthLogin::finished, &loop, &QEventLoop::quit);
    if (!login.start())
        return fail(login.result().message);
    loop.exec();
    const OAuthLoginResult &result = login.result();
    if (!result.ok())
        return fail(QStringLiteral("login failed: ") + result.message);
    out(QStringLiteral("logged in: ") + result.detail);
    return ExitOk;
}

} // namespace sy::app
