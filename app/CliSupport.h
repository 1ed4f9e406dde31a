#pragma once

#include "config/Config.h"
#include "accounts/AccountRecord.h"
#include "store/Database.h"

#include <QJsonDocument>
#include <QJsonObject>

#include <memory>

namespace sy::app {

// Opens the data dir's database for a CLI command (its own connection; the running instance, if any, keeps
// its own). Returns null and prints the reason when it cannot.
std::unique_ptr<Database> openDatabase(const Config &config, bool mustExist);
void printJson(const QJsonDocument &doc);
QString optionalText(const std::optional<QString> &v, const QString &none = QStringLiteral("-"));
// "42%" or "?" when unknown.
QString percentText(const std::optional<double> &v);
QString timeText(const std::optional<qint64> &epochMs);
// {used_percent, window_minutes, resets_at} with nulls for what is unknown.
QJsonObject usageWindowJson(const UsageRecordWindow &window);
// Pads for simple aligned tables.
QString padded(const QString &text, int width);

} // namespace sy::app
