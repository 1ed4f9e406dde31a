#pragma once

#include <QHash>
#include <QString>

namespace sy::ui {

// "Launch at login" as the XDG autostart specification defines it: a .desktop file in
// $XDG_CONFIG_HOME/autostart (~/.config/autostart) that starts this executable.
class Autostart
{
public:
    explicit Autostart(const QHash<QString, QString> &env);

    QString filePath() const { return m_path; }
    bool isEnabled() const;
    // Writes (atomically) or removes the entry; `executable` is what it starts.
    bool setEnabled(bool enabled, const QString &executable, QString *error);

private:
    QString m_path;
};

} // namespace sy::ui
