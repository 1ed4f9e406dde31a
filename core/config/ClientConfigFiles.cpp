#include "config/ClientConfigFiles.h"

#include "config/ClientConfigText.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>
#include <functional>

namespace sy {

namespace {

bool writeAtomically(const QString &path, const QByteArray &bytes, QFileDevice::Permissions permissions, QString *error)
{
    QSaveFile out(path);
    if (!out.open(QIODevice::WriteOnly) || out.write(bytes) != bytes.size() || !out.commit()) {
        *error = QStringLiteral("cannot write %1: %2").arg(path, out.errorString());
        return false;
    }
    if (permissions)
        QFile::setPermissions(path, permissions);
    return true;
}

using Transform = std::function<std::optional<QByteArray>(const QByteArray &, QString *)>;

// Read, transform, back up, write: the file is left alone on any failure before the final rename.
ClientConfigEdit edit(const QString &path, const Transform &transform)
{
    ClientConfigEdit result;
    result.path = path;
    QByteArray before;
    QFileDevice::Permissions permissions;
    const bool exists = QFileInfo::exists(path);
    if (exists) {
        QFile in(path);
        if (!in.open(QIODevice::ReadOnly)) {
            result.error = QStringLiteral("cannot read %1: %2").arg(path, in.errorString());
            return result;
        }
        before = in.readAll();
        permissions = in.permissions();
    }
    QString error;
    const std::optional<QByteArray> after = transform(before, &error);
    if (!after) {
        result.error = QStringLiteral("%1 was not changed: %2").arg(path, error);
        return result;
    }
    result.ok = true;
    if (*after == before)
        return result;
    if (exists) {
        result.backupPath = path + QStringLiteral(".switchyard-backup");
        if (!writeAtomically(result.backupPath, before, permissions, &error)) {
            result.ok = false;
            result.error = QStringLiteral("%1 was not changed: no backup (%2)").arg(path, error);
            return result;
        }
    } else if (!QDir().mkpath(QFileInfo(path).absolutePath())) {
        result.ok = false;
        result.error = QStringLiteral("cannot create %1").arg(QFileInfo(path).absolutePath());
        return result;
    }
    if (!writeAtomically(path, *after, permissions, &error)) {
        result.ok = false;
        result.error = error;
        return result;
    }
    result.changed = true;
    return result;
}

std::optional<QJsonObject> parseObject(const QByteArray &json, QString *error)
{
    if (json.trimmed().isEmpty())
        return QJsonObject();
    QJsonParseError parseError;
    const QJsonDocument doc = QJsonDocument::fromJson(json, &parseError);
    if (parseError.error != QJsonParseError::NoError) {
        *error = QStringLiteral("it is not valid JSON (at offset %1: %2)")
                     .arg(parseError.offset)
                     .arg(parseError.errorString());
        return std::nullopt;
    }
    if (!doc.isObject()) {
        *error = QStringLiteral("it is not a JSON object");
        return std::nullopt;
    }
    return doc.object();
}

} // namespace

QString codexConfigPath(const QHash<QString, QString> &env)
{
    const QString home = env.value(QStringLiteral("CODEX_HOME"));
    return (home.isEmpty() ? env.value(QStringLiteral("HOME")) + QStringLiteral("/.codex") : home) +
           QStringLiteral("/config.toml");
}

QString openCodeConfigPath(const QHash<QString, QString> &env)
{
    QString base = env.value(QStringLiteral("XDG_CONFIG_HOME"));
    if (base.isEmpty())
        base = env.value(QStringLiteral("HOME")) + QStringLiteral("/.config");
    return base + QStringLiteral("/opencode/opencode.json");
}

std::optional<QByteArray> openCodeConfigWithSwitchyard(const QByteArray &json, const QString &baseUrl, QString *error)
{
    const std::optional<QJsonObject> before = parseObject(json, error);
    if (!before)
        return std::nullopt;
    QJsonObject root = *before;
    const QJsonValue existing = root.value(QLatin1String("provider"));
    if (!existing.isUndefined() && !existing.isObject()) {
        *error = QStringLiteral("its \"provider\" is not an object");
        return std::nullopt;
    }
    // The same provider entry `switchyard client-config opencode` prints.
    const QJsonObject ours = QJsonDocument::fromJson(openCodeClientConfig(baseUrl).toUtf8()).object();
    QJsonObject providers = existing.toObject();
    providers.insert(QStringLiteral("switchyard"),
                     ours.value(QLatin1String("provider")).toObject().value(QLatin1String("switchyard")));
    root.insert(QStringLiteral("provider"), providers);
    if (!root.contains(QLatin1String("$schema")))
        root.insert(QStringLiteral("$schema"), ours.value(QLatin1String("$schema")));
    if (root == *before)
        return json;
    return QJsonDocument(root).toJson(QJsonDocument::Indented);
}

std::optional<QByteArray> openCodeConfigWithoutSwitchyard(const QByteArray &json, QString *error)
{
    const std::optional<QJsonObject> before = parseObject(json, error);
    if (!before)
        return std::nullopt;
    QJsonObject root = *before;
    QJsonObject providers = root.value(QLatin1String("provider")).toObject();
    if (!providers.contains(QLatin1String("switchyard")))
        return json;
    providers.remove(QStringLiteral("switchyard"));
    if (providers.isEmpty())
        root.remove(QStringLiteral("provider"));
    else
        root.insert(QStringLiteral("provider"), providers);
    return QJsonDocument(root).toJson(QJsonDocument::Indented);
}

ClientConfigEdit writeCodexConfig(const QString &path, const QString &baseUrl)
{
    return edit(path, [&baseUrl](const QByteArray &before, QString *error) -> std::optional<QByteArray> {
        const std::optional<QString> after = codexConfigWithSwitchyard(QString::fromUtf8(before), baseUrl, error);
        return after ? std::optional<QByteArray>(*after == QString::fromUtf8(before) ? before : after->toUtf8())
                     : std::nullopt;
    });
}

ClientConfigEdit undoCodexConfig(const QString &path)
{
    return edit(path, [](const QByteArray &before, QString *error) -> std::optional<QByteArray> {
        const std::optional<QString> after = codexConfigWithoutSwitchyard(QString::fromUtf8(before), error);
        return after ? std::optional<QByteArray>(*after == QString::fromUtf8(before) ? before : after->toUtf8())
                     : std::nullopt;
    });
}

ClientConfigEdit writeOpenCodeConfig(const QString &path, const QString &baseUrl)
{
    return edit(path, [&baseUrl](const QByteArray &before, QString *error) {
        return openCodeConfigWithSwitchyard(before, baseUrl, error);
    });
}

ClientConfigEdit undoOpenCodeConfig(const QString &path)
{
    return edit(
        path, [](const QByteArray &before, QString *error) { return openCodeConfigWithoutSwitchyard(before, error); });
}

} // namespace sy
