#include "CliSupport.h"

#include "Commands.h"
#include "util/Ids.h"

#include <QDir>
#include <QFileInfo>

#include <cstdio>

namespace sy::app {

int fail(const QString &message, int code)
{
    std::fprintf(stderr, "switchyard: %s\n", qPrintable(message));
    return code;
}

void out(const QString &text)
{
    std::fputs(text.toUtf8().constData(), stdout);
    if (!text.endsWith(QLatin1Char('\n')))
        std::fputc('\n', stdout);
    std::fflush(stdout);
}

std::unique_ptr<Database> openDatabase(const Config &config, bool mustExist)
{
    const QString location = config.databaseLocation();
    const QString shown = redactDatabaseLocation(location);
    if (mustExist && !config.usesPostgres() && !QFileInfo::exists(location)) {
        fail(QStringLiteral("no database at %1 yet (no account imported, nothing served)").arg(shown));
        return nullptr;
    }
    if (!QDir().mkpath(config.dataDir)) {
        fail(QStringLiteral("cannot create the data directory %1").arg(config.dataDir));
        return nullptr;
    }
    auto db = std::make_unique<Database>();
    QString error;
    if (!db->open(location, &error)) {
        fail(QStringLiteral("cannot open the database %1: %2").arg(shown, error));
        return nullptr;
    }
    return db;
}

void printJson(const QJsonDocument &doc)
{
    out(QString::fromUtf8(doc.toJson(QJsonDocument::Indented)));
}

QString optionalText(const std::optional<QString> &v, const QString &none)
{
    return v && !v->isEmpty() ? *v : none;
}

QString percentText(const std::optional<double> &v)
{
    return v ? QString::number(*v, 'f', 0) + QLatin1Char('%') : QStringLiteral("?");
}

QString timeText(const std::optional<qint64> &epochMs)
{
    return epochMs ? isoUtc(*epochMs) : QStringLiteral("-");
}

QJsonObject usageWindowJson(const UsageRecordWindow &w)
{
    return {{QStringLiteral("used_percent"), w.usedPercent ? QJsonValue(*w.usedPercent) : QJsonValue()},
            {QStringLiteral("window_minutes"), w.windowMinutes ? QJsonValue(*w.windowMinutes) : QJsonValue()},
            {QStringLiteral("resets_at"), w.resetAtMs ? QJsonValue(isoUtc(*w.resetAtMs)) : QJsonValue()}};
}

QString padded(const QString &text, int width)
{
    return text.leftJustified(width, QLatin1Char(' '), false) + QLatin1Char(' ');
}

} // namespace sy::app
