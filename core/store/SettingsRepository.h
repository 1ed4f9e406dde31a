#pragma once

#include "util/Clock.h"

#include <QString>
#include <QStringList>
#include <optional>

namespace sy {

class Database;

struct PinSetting
{
    QString accountId;
    bool strict = false; // --strict: never fall back to another account
};

// Runtime settings kept in the database (not the config file): the pin and the selection strategy.
// Every change bumps meta.change_counter in the same transaction.
class SettingsRepository
{
public:
    static constexpr const char *kPinAccountKey = "pin.account_id";
    static constexpr const char *kPinStrictKey = "pin.strict";
    static constexpr const char *kStrategyKey = "strategy";

    explicit SettingsRepository(Database &db);

    // nullopt when pinning is "auto" (or on error: then *error is set).
    std::optional<PinSetting> pin(QString *error = nullptr);
    // The account must exist.
    bool setPin(const QString &accountId, bool strict, QString *error);
    bool clearPin(QString *error);

    // "capacity_weighted" (the default when unset), "usage_weighted", "round_robin" or "fill_first".
    QString strategy(QString *error = nullptr);
    bool setStrategy(const QString &name, QString *error);
    static QStringList strategyNames();
    static QString defaultStrategy() { return QStringLiteral("capacity_weighted"); }

    // Raw key/value access for settings that have no typed accessor yet.
    std::optional<QString> value(const QString &key, QString *error = nullptr);
    bool setValue(const QString &key, const QString &value, QString *error);
    bool removeValue(const QString &key, QString *error);

private:
    Database &m_db;
};

} // namespace sy
