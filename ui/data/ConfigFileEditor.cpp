#include "data/ConfigFileEditor.h"

#include "upstream/StageBudget.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QSaveFile>
#include <QTemporaryDir>

namespace sy::ui {

namespace {

// Time stands still: the budget is derived as at the very start of a request.
class FrozenClock final : public Clock
{
public:
    qint64 nowMs() const override { return 0; }
    qint64 monotonicMs() const override { return 0; }
};

} // namespace

ConfigFileEditor::ConfigFileEditor(QString path, QHash<QString, QString> env)
    : m_path(std::move(path)), m_env(std::move(env))
{
}

QString ConfigFileEditor::defaultPath(const QHash<QString, QString> &env)
{
    // The same rule as config/Config.cpp's default path.
    QString base = env.value(QStringLiteral("XDG_CONFIG_HOME"));
    if (base.isEmpty())
        base = env.value(QStringLiteral("HOME")) + QStringLiteral("/.config");
    return base + QStringLiteral("/switchyard/config.json");
}

bool ConfigFileEditor::load(QString *error)
{
    QFile f(m_path);
    if (!f.exists()) {
        m_object = {};
        return true;
    }
    if (!f.open(QIODevice::ReadOnly)) {
        *error = QStringLiteral("%1: cannot be read: %2").arg(m_path, f.errorString());
        return false;
    }
    QJsonParseError pe;
    const QJsonDocument doc = QJsonDocument::fromJson(f.readAll(), &pe);
    if (pe.error != QJsonParseError::NoError || !doc.isObject()) {
        *error = QStringLiteral("%1: not a JSON object (%2)").arg(m_path, pe.errorString());
        return false;
    }
    m_object = doc.object();
    return true;
}

ConfigResult ConfigFileEditor::evaluate(const QJsonObject &object) const
{
    // The loader reads files: give it the candidate as one, in a private directory.
    QTemporaryDir dir;
    const QString candidate = dir.path() + QStringLiteral("/config.json");
    QFile f(candidate);
    if (!dir.isValid() || !f.open(QIODevice::WriteOnly) || f.write(QJsonDocument(object).toJson()) < 0) {
        ConfigResult r;
        r.error = QStringLiteral("cannot check the settings: no temporary file");
        return r;
    }
    f.close();
    ConfigOverrides overrides;
    overrides.configFile = candidate;
    ConfigResult r = loadConfig(overrides, m_env);
    // Name the real file, not the temporary one, in what the user reads.
    r.error.replace(candidate, QFileInfo(m_path).fileName());
    return r;
}

void ConfigFileEditor::put(QJsonObject &object, const QString &key, const QJsonValue &value,
                           const QJsonValue &defaultValue)
{
    if (!object.contains(key) && value == defaultValue)
        return;
    object.insert(key, value);
}

bool ConfigFileEditor::save(const QJsonObject &object, QString *error)
{
    const ConfigResult checked = evaluate(object);
    if (!checked.ok()) {
        *error = checked.error;
        return false;
    }
    if (!QDir().mkpath(QFileInfo(m_path).absolutePath())) {
        *error = QStringLiteral("cannot create the directory of %1").arg(m_path);
        return false;
    }
    QSaveFile out(m_path);
    if (!out.open(QIODevice::WriteOnly) || out.write(QJsonDocument(object).toJson(QJsonDocument::Indented)) < 0 ||
        !out.commit()) {
        *error = QStringLiteral("%1: cannot be written: %2").arg(m_path, out.errorString());
        return false;
    }
    m_object = object;
    return true;
}

qint64 ConfigFileEditor::derivedPreResponseMs(const BudgetSettings &budgets)
{
    FrozenClock clock;
    RequestBudget budget(clock, budgets);
    budget.beginAttempt();
    budget.connected();
    return budget.preResponseBudgetMs();
}

} // namespace sy::ui
