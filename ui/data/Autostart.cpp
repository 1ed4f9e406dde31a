#include "data/Autostart.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QSaveFile>

namespace sy::ui {

Autostart::Autostart(const QHash<QString, QString> &env)
{
    QString base = env.value(QStringLiteral("XDG_CONFIG_HOME"));
    if (base.isEmpty())
        base = env.value(QStringLiteral("HOME")) + QStringLiteral("/.config");
    m_path = base + QStringLiteral("/autostart/io.github.switchyard.Switchyard.desktop");
}

bool Autostart::isEnabled() const
{
    return QFileInfo::exists(m_path);
}

bool Autostart::setEnabled(bool enabled, const QString &executable, QString *error)
{
    if (!enabled) {
        if (QFile::exists(m_path) && !QFile::remove(m_path)) {
            *error = QStringLiteral("%1 cannot be removed").arg(m_path);
            return false;
        }
        return true;
    }
    if (!QDir().mkpath(QFileInfo(m_path).absolutePath())) {
        *error = QStringLiteral("cannot create %1").arg(QFileInfo(m_path).absolutePath());
        return false;
    }
    // Exec quoting per the Desktop Entry specification: the path in double quotes, with \ " ` $ escaped.
    QString quoted = executable;
    for (const char c : {'\\', '"', '`', '$'})
        quoted.replace(QLatin1Char(c), QStringLiteral("\\") + QLatin1Char(c));
    const QString text = QStringLiteral("[Desktop Entry]\nType=Application\nName=Switchyard\n"
                                        "Exec=\"%1\"\nIcon=io.github.switchyard.Switchyard\n"
                                        "X-GNOME-Autostart-enabled=true\n")
                             .arg(quoted);
    QSaveFile out(m_path);
    if (!out.open(QIODevice::WriteOnly) || out.write(text.toUtf8()) < 0 || !out.commit()) {
        *error = QStringLiteral("%1: %2").arg(m_path, out.errorString());
        return false;
    }
    return true;
}

} // namespace sy::ui
