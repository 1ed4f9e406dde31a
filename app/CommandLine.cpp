#include "CommandLine.h"

#include <QCommandLineParser>

namespace sy::app {

namespace {

const char kUsage[] = R"(Commands:
  (none)                          tray app with the proxy in-process (headless serve without a display)
  serve                           headless proxy
  accounts login [--alias NAME]    OAuth login in the browser (callback on localhost:1455)
  accounts import FILE... [--alias NAME]
  accounts list [--json]
  accounts pause|resume|remove ACCOUNT
  accounts pin ACCOUNT [--strict] | accounts pin auto
  requests [--json] [--limit N]   recent request log, newest first
  usage [--json]                  per-account quota windows and token totals
  status [--json]                 live view from the running instance
  health [--json]                 self-check: exit 0 clean, 2 problem found, 3 configuration invalid
  egress list [--json]            egress proxies, their pools and whether credentials are stored
  egress set-credentials NAME [--username USER]   store a proxy's credentials (password read from stdin)
  egress clear-credentials NAME   remove them
  client-config codex|opencode    print the client configuration snippet
  client-config codex|opencode --write|--undo
                                  put Switchyard into ~/.codex/config.toml (or OpenCode's opencode.json), or
                                  take it out again; other settings stay, a backup is kept next to the file
  apikeys create [--name N] [--expires DAYS] [--limit-tokens N --limit-window 5h|1d|7d]
                                  make an API key (printed once) for clients of a non-loopback listen address
  apikeys list [--json]           keys with their state and tokens used in their window (never the keys)
  apikeys revoke KEY_ID
ACCOUNT is the internal id, the alias or the email.)";

} // namespace

CommandLine parseCommandLine(const QStringList &arguments)
{
    CommandLine cl;
    QCommandLineParser p;
    p.setApplicationDescription(QStringLiteral("Switchyard pools several Codex/ChatGPT accounts behind one local "
                                               "endpoint.\n\n") +
                                QLatin1String(kUsage));
    p.setOptionsAfterPositionalArgumentsMode(QCommandLineParser::ParseAsOptions);
    const QCommandLineOption help({QStringLiteral("h"), QStringLiteral("help")}, QStringLiteral("Show this help."));
    const QCommandLineOption version(QStringLiteral("version"), QStringLiteral("Print the version."));
    const QCommandLineOption listen(QStringLiteral("listen"), QStringLiteral("Listen address (default 127.0.0.1:2455)."),
                                    QStringLiteral("HOST:PORT"));
    const QCommandLineOption dataDir(QStringLiteral("data-dir"), QStringLiteral("Data directory."), QStringLiteral("DIR"));
    const QCommandLineOption config(QStringLiteral("config"), QStringLiteral("Configuration file."),
                                    QStringLiteral("FILE"));
    const QCommandLineOption json(QStringLiteral("json"), QStringLiteral("Print JSON."));
    const QCommandLineOption strict(QStringLiteral("strict"), QStringLiteral("Pin without fallback."));
    const QCommandLineOption alias(QStringLiteral("alias"), QStringLiteral("Alias for an imported account."),
                                   QStringLiteral("NAME"));
    const QCommandLineOption limit(QStringLiteral("limit"), QStringLiteral("How many rows (default 100)."),
                                   QStringLiteral("N"));
    const QCommandLineOption name(QStringLiteral("name"), QStringLiteral("Name of a new API key."), QStringLiteral("N"));
    const QCommandLineOption username(QStringLiteral("username"),
                                      QStringLiteral("User name for egress set-credentials."), QStringLiteral("USER"));
    const QCommandLineOption expires(QStringLiteral("expires"), QStringLiteral("API key lifetime in days."),
                                     QStringLiteral("DAYS"));
    const QCommandLineOption limitTokens(QStringLiteral("limit-tokens"),
                                         QStringLiteral("API key: tokens allowed per window."), QStringLiteral("N"));
    const QCommandLineOption limitWindow(QStringLiteral("limit-window"),
                                         QStringLiteral("API key: the token window (e.g. 5h, 1d, 7d)."),
                                         QStringLiteral("WINDOW"));
    const QCommandLineOption write(QStringLiteral("write"), QStringLiteral("client-config: edit the client's file."));
    const QCommandLineOption undo(QStringLiteral("undo"), QStringLiteral("client-config: take Switchyard out again."));
    p.addOptions({help, version, listen, dataDir, config, json, strict, alias, limit, username, name, expires,
                  limitTokens, limitWindow, write, undo});
    p.addPositionalArgument(QStringLiteral("command"), QStringLiteral("What to do (see above)."));
    cl.helpText = p.helpText();
    if (!p.parse(arguments)) {
        cl.error = p.errorText();
        return cl;
    }
    cl.help = p.isSet(help);
    cl.version = p.isSet(version);
    cl.words = p.positionalArguments();
    cl.json = p.isSet(json);
    cl.strict = p.isSet(strict);
    cl.write = p.isSet(write);
    cl.undo = p.isSet(undo);
    cl.alias = p.value(alias);
    cl.username = p.value(username);
    auto optional = [&p](const QCommandLineOption &o) {
        return p.isSet(o) ? std::optional<QString>(p.value(o)) : std::nullopt;
    };
    cl.name = optional(name);
    cl.expiresDays = optional(expires);
    cl.limitTokens = optional(limitTokens);
    cl.limitWindow = optional(limitWindow);
    if (p.isSet(listen))
        cl.overrides.listen = p.value(listen);
    if (p.isSet(dataDir))
        cl.overrides.dataDir = p.value(dataDir);
    if (p.isSet(config))
        cl.overrides.configFile = p.value(config);
    if (p.isSet(limit)) {
        bool ok = false;
        cl.limit = p.value(limit).toInt(&ok);
        if (!ok || cl.limit < 1 || cl.limit > 100000)
            cl.error = QStringLiteral("--limit must be a number from 1 to 100000");
    }
    return cl;
}

} // namespace sy::app
