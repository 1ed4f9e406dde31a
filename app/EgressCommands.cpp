// `switchyard egress list|set-credentials|clear-credentials`: the egress proxies of the config file and their
// credentials in the SecretStore (the keychain by default). A password is read from stdin, never from the
// command line (argv is visible to every user of the machine), and is never printed.
#include "CliSupport.h"
#include "Commands.h"
#include "accounts/SecretStore.h"
#include "accounts/SecretStoreFactory.h"
#include "upstream/egress/EgressConfig.h"
#include "upstream/egress/EgressCredentials.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <cstdio>
#include <memory>
#include <termios.h>
#include <unistd.h>

namespace sy::app {

namespace {

const char kUsage[] = "egress list [--json] | egress set-credentials NAME [--username USER] (password on stdin) | "
                      "egress clear-credentials NAME";

QStringList poolsOf(const EgressSettings &egress, const QString &proxy)
{
    QStringList pools;
    for (const EgressPoolSpec &p : egress.pools) {
        if (p.proxies.contains(proxy))
            pools << p.name;
    }
    return pools;
}

const EgressProxySpec *namedProxy(const Config &config, const CommandLine &cl, int *exitCode)
{
    const QString name = cl.words.value(2);
    *exitCode = ExitOk;
    if (name.isEmpty() || cl.words.size() > 3) {
        *exitCode = fail(cl.words.size() > 3 ? QStringLiteral("egress %1 takes one proxy name; the password is read "
                                                              "from stdin, never from the command line")
                                                   .arg(cl.words.value(1))
                                             : QStringLiteral("egress %1 needs a proxy name").arg(cl.words.value(1)));
        return nullptr;
    }
    const EgressProxySpec *spec = config.egress.proxy(name);
    if (!spec)
        *exitCode =
            fail(QStringLiteral("no egress proxy named \"%1\" in %2 (egress_proxies)")
                     .arg(name, config.configFile.isEmpty() ? QStringLiteral("the configuration") : config.configFile));
    return spec;
}

// The password: a line typed without echo on a terminal, else everything on stdin without its final newline.
QString readPassword(const QString &proxy)
{
    QFile in;
    if (!in.open(stdin, QIODevice::ReadOnly))
        return {};
    QByteArray bytes;
    if (isatty(STDIN_FILENO)) {
        std::fprintf(stderr, "Password for egress proxy %s: ", qPrintable(proxy));
        std::fflush(stderr);
        termios saved{};
        const bool quiet = tcgetattr(STDIN_FILENO, &saved) == 0;
        if (quiet) {
            termios silent = saved;
            silent.c_lflag &= ~tcflag_t(ECHO);
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &silent);
        }
        bytes = in.readLine();
        if (quiet)
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved);
        std::fputc('\n', stderr);
    } else {
        bytes = in.readAll();
    }
    if (bytes.endsWith('\n'))
        bytes.chop(1);
    if (bytes.endsWith('\r'))
        bytes.chop(1);
    return QString::fromUtf8(bytes);
}

int listProxies(const Config &config, const CommandLine &cl)
{
    if (cl.words.size() > 2)
        return fail(QStringLiteral("egress list takes no arguments (use --json)"));
    const EgressSettings &egress = config.egress;
    QString storeError;
    std::unique_ptr<SecretStore> secrets;
    if (!egress.proxies.isEmpty())
        secrets.reset(makeSecretStore(config, &storeError));
    QJsonArray rows;
    for (const EgressProxySpec &p : egress.proxies) {
        QJsonValue stored;
        QString problem = storeError;
        if (secrets) {
            AuthTokens blob;
            const SecretOutcome lookup = secrets->readTokensBlocking(egressSecretKey(p.name), &blob);
            if (lookup.ok) {
                stored = unpackEgressCredentials(blob).has_value();
                if (!stored.toBool())
                    problem = QStringLiteral("the stored entry is not egress credentials");
            } else if (lookup.error == SecretError::NotFound) {
                stored = false;
            } else {
                problem = lookup.errorText;
            }
        }
        QJsonObject row{{QStringLiteral("name"), p.name},
                        {QStringLiteral("type"), egressProxyTypeName(p.type)},
                        {QStringLiteral("host"), p.host},
                        {QStringLiteral("port"), int(p.port)},
                        {QStringLiteral("has_credentials"), p.hasCredentials},
                        {QStringLiteral("credentials_stored"), stored},
                        {QStringLiteral("pools"), QJsonArray::fromStringList(poolsOf(egress, p.name))}};
        if (!problem.isEmpty())
            row.insert(QStringLiteral("credentials_problem"), problem);
        rows.append(row);
    }
    if (cl.json) {
        printJson(QJsonDocument(rows));
        return ExitOk;
    }
    if (rows.isEmpty()) {
        out(QStringLiteral("no egress proxies configured (egress_proxies in the config file)"));
        return ExitOk;
    }
    for (const QJsonValue &v : std::as_const(rows)) {
        const QJsonObject r = v.toObject();
        const QJsonValue stored = r.value(QLatin1String("credentials_stored"));
        QString credentials =
            stored.isNull()
                ? QStringLiteral("unknown (%1)").arg(r.value(QLatin1String("credentials_problem")).toString())
            : stored.toBool() ? QStringLiteral("stored")
                              : QStringLiteral("none");
        if (r.value(QLatin1String("has_credentials")).toBool() && !stored.toBool())
            credentials += QStringLiteral(" (has_credentials is set: the pool is unusable without them)");
        else if (!r.value(QLatin1String("has_credentials")).toBool() && stored.toBool())
            credentials += QStringLiteral(" (unused: has_credentials is not set)");
        QStringList pools;
        for (const QJsonValue &pool : r.value(QLatin1String("pools")).toArray())
            pools << pool.toString();
        out(QStringLiteral("%1 %2 %3 credentials %4, pools %5")
                .arg(padded(r.value(QLatin1String("name")).toString(), 12),
                     padded(r.value(QLatin1String("type")).toString(), 8),
                     padded(QStringLiteral("%1:%2")
                                .arg(r.value(QLatin1String("host")).toString())
                                .arg(r.value(QLatin1String("port")).toInt()),
                            22),
                     credentials, pools.isEmpty() ? QStringLiteral("none") : pools.join(QStringLiteral(", "))));
    }
    return ExitOk;
}

int setCredentials(const Config &config, const CommandLine &cl)
{
    int code = ExitOk;
    const EgressProxySpec *spec = namedProxy(config, cl, &code);
    if (!spec)
        return code;
    QString storeError;
    const std::unique_ptr<SecretStore> secrets(makeSecretStore(config, &storeError));
    if (!secrets)
        return fail(storeError);
    QString user = cl.username;
    if (user.isEmpty()) {
        // Only the password changes: keep the stored user name.
        AuthTokens blob;
        if (secrets->readTokensBlocking(egressSecretKey(spec->name), &blob).ok) {
            if (const std::optional<EgressCredentials> old = unpackEgressCredentials(blob))
                user = old->user;
        }
        if (user.isEmpty())
            return fail(
                QStringLiteral("egress set-credentials %1 needs --username (nothing is stored yet)").arg(spec->name));
    }
    const QString password = readPassword(spec->name);
    if (password.isEmpty())
        return fail(QStringLiteral("no password on stdin (egress set-credentials reads it from there)"));
    const SecretOutcome written =
        secrets->writeTokensBlocking(egressSecretKey(spec->name), packEgressCredentials({user, password}));
    if (!written.ok)
        return fail(QStringLiteral("the credentials of egress proxy %1 were not stored: %2")
                        .arg(spec->name, written.errorText));
    out(QStringLiteral("stored the credentials of egress proxy %1; a running Switchyard uses them after a restart")
            .arg(spec->name));
    if (!spec->hasCredentials)
        out(QStringLiteral("note: set \"has_credentials\": true on egress proxy %1 in the config file, or they stay "
                           "unused")
                .arg(spec->name));
    return ExitOk;
}

int clearCredentials(const Config &config, const CommandLine &cl)
{
    int code = ExitOk;
    const EgressProxySpec *spec = namedProxy(config, cl, &code);
    if (!spec)
        return code;
    QString storeError;
    const std::unique_ptr<SecretStore> secrets(makeSecretStore(config, &storeError));
    if (!secrets)
        return fail(storeError);
    const SecretOutcome removed = secrets->removeTokensBlocking(egressSecretKey(spec->name));
    if (!removed.ok && removed.error != SecretError::NotFound)
        return fail(QStringLiteral("the credentials of egress proxy %1 were not removed: %2")
                        .arg(spec->name, removed.errorText));
    out(removed.ok ? QStringLiteral("removed the credentials of egress proxy %1").arg(spec->name)
                   : QStringLiteral("no credentials were stored for egress proxy %1").arg(spec->name));
    if (spec->hasCredentials)
        out(QStringLiteral("note: egress proxy %1 has has_credentials set: its pools are unusable until credentials "
                           "are stored again")
                .arg(spec->name));
    return ExitOk;
}

} // namespace

int runEgress(const Config &config, const CommandLine &cl)
{
    const QString sub = cl.words.value(1);
    if (sub == QLatin1String("list"))
        return listProxies(config, cl);
    if (sub == QLatin1String("set-credentials"))
        return setCredentials(config, cl);
    if (sub == QLatin1String("clear-credentials"))
        return clearCredentials(config, cl);
    return fail(QStringLiteral("usage: switchyard %1").arg(QLatin1String(kUsage)));
}

} // namespace sy::app
