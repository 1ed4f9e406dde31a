#pragma once

#include <QHash>
#include <QString>
#include <optional>

namespace sy {

// Writes Switchyard into a client's own configuration file and takes it out again, touching nothing else:
// `switchyard client-config codex|opencode --write|--undo` and the tray's "Write Codex CLI config".
struct ClientConfigEdit
{
    bool ok = false;
    bool changed = false; // false: the file already said this (or had nothing of ours to undo)
    QString path;
    QString backupPath; // the file as it was before this change (empty when nothing was written)
    QString error;
};

// ~/.codex/config.toml ($CODEX_HOME/config.toml when set).
QString codexConfigPath(const QHash<QString, QString> &env);
// $XDG_CONFIG_HOME/opencode/opencode.json (~/.config/opencode/opencode.json).
QString openCodeConfigPath(const QHash<QString, QString> &env);

// Text transformations (exposed for tests). The Codex ones edit only the [model_providers.switchyard] table and
// the root `model_provider` key, as text, so every other line and comment survives; the input must parse as
// TOML and the output is re-parsed and compared with the input minus our keys before it is accepted.
// On failure they return nullopt and say why in `error`.
std::optional<QString> codexConfigWithSwitchyard(const QString &text, const QString &baseUrl, QString *error);
std::optional<QString> codexConfigWithoutSwitchyard(const QString &text, QString *error);
std::optional<QByteArray> openCodeConfigWithSwitchyard(const QByteArray &json, const QString &baseUrl, QString *error);
std::optional<QByteArray> openCodeConfigWithoutSwitchyard(const QByteArray &json, QString *error);

// The file operations: refuse (file untouched) on a file that does not parse; back the file up next to itself
// (PATH.switchyard-backup) before changing it; write atomically; no change when there is nothing to change.
ClientConfigEdit writeCodexConfig(const QString &path, const QString &baseUrl);
ClientConfigEdit undoCodexConfig(const QString &path);
ClientConfigEdit writeOpenCodeConfig(const QString &path, const QString &baseUrl);
ClientConfigEdit undoOpenCodeConfig(const QString &path);

} // namespace sy
