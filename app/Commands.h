#pragma once

#include "CommandLine.h"
#include "config/Config.h"

namespace sy {
class Database;
}

namespace sy::app {

// Exit codes shared by every command (DESIGN.md "Command line").
enum ExitCode { ExitOk = 0, ExitFailure = 1, ExitProblem = 2, ExitConfig = 3 };

// `serve`; `overrides` (the command line's) let it reload the configuration file while running.
int runServe(const Config &config, const ConfigOverrides &overrides);
int runAccounts(const Config &config, const CommandLine &cl);
// `accounts login`: the browser OAuth flow (LoginCommand.cpp).
int loginAccount(Database &db, const Config &config, const CommandLine &cl);
int runRequests(const Config &config, const CommandLine &cl);
int runUsage(const Config &config, const CommandLine &cl);
int runStatus(const Config &config, const CommandLine &cl);
// `health [--json]`: the self-check (HealthCommand.cpp); returns 0 or 2.
int runHealth(const Config &config, const CommandLine &cl);
// `egress list|set-credentials|clear-credentials` (EgressCommands.cpp).
int runEgress(const Config &config, const CommandLine &cl);
// `apikeys create|list|revoke` (ApiKeyCommands.cpp).
int runApiKeys(const Config &config, const CommandLine &cl);
// Where the running instance's local API answers (its instance file, else the configured listen address).
QString localApiBase(const Config &config);
int runClientConfig(const Config &config, const CommandLine &cl);
int runGui(const ConfigResult &loaded, const ConfigOverrides &overrides, int argc, char **argv);

// Prints "switchyard: <message>" on stderr and returns `code`.
int fail(const QString &message, int code = ExitFailure);
// Prints text on stdout.
void out(const QString &text);

} // namespace sy::app
