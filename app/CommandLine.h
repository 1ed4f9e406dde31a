#pragma once

#include "config/Config.h"

#include <QStringList>
#include <optional>

namespace sy::app {

// The parsed command line: global options plus the sub-command words.
struct CommandLine
{
    QStringList words; // e.g. {"accounts", "import", "a.json"}
    ConfigOverrides overrides;
    bool json = false;
    bool strict = false;
    bool write = false; // client-config --write
    bool undo = false;  // client-config --undo
    bool version = false;
    bool help = false;
    QString alias;
    QString username; // egress set-credentials
    int limit = 100;
    // apikeys create
    std::optional<QString> name;
    std::optional<QString> expiresDays;
    std::optional<QString> limitTokens;
    std::optional<QString> limitWindow;
    QString error; // non-empty: usage error (exit 1)
    QString helpText;
};

CommandLine parseCommandLine(const QStringList &arguments);

} // namespace sy::app
