#pragma once

#include "config/Config.h"

#include <QHash>
#include <QJsonObject>
#include <QString>

namespace sy::ui {

// The settings the dashboard edits in the JSON configuration file (DESIGN "Configuration file"): read the
// file, change keys, validate the result with the very loader `switchyard` starts with, and write it
// atomically (QSaveFile). Keys the page does not know are kept as they are.
class ConfigFileEditor
{
public:
    // path: the file to edit (Config::configFile, else defaultPath()); env: what loadConfig sees.
    ConfigFileEditor(QString path, QHash<QString, QString> env);

    // $XDG_CONFIG_HOME/switchyard/config.json (or ~/.config/...), where `switchyard` looks by default.
    static QString defaultPath(const QHash<QString, QString> &env);

    // Reads the file (a missing file is an empty object). False with *error for unreadable or invalid JSON.
    bool load(QString *error);
    QString path() const { return m_path; }
    const QJsonObject &object() const { return m_object; }

    // The configuration the current object gives (defaults for absent keys), or the loader's error.
    ConfigResult evaluate(const QJsonObject &object) const;
    // Sets `key` unless it is absent and `value` equals what the key defaults to (keeps files minimal).
    static void put(QJsonObject &object, const QString &key, const QJsonValue &value, const QJsonValue &defaultValue);
    // Validates and writes `object`; on success it becomes object(). The file is never left half-written.
    bool save(const QJsonObject &object, QString *error);

    // The pre_response budget the proxy derives for a first attempt with these budgets (RequestBudget's own
    // computation), in milliseconds.
    static qint64 derivedPreResponseMs(const BudgetSettings &budgets);

private:
    QString m_path;
    QHash<QString, QString> m_env;
    QJsonObject m_object;
};

} // namespace sy::ui
