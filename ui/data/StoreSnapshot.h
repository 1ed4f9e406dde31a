#pragma once

#include "accounts/AccountRecord.h"
#include "store/SettingsRepository.h"
#include "store/UsageRollupRepository.h"

#include <QList>
#include <QMetaType>
#include <QString>
#include <memory>
#include <optional>

namespace sy {
class Database;
}

namespace sy::ui {

// Settings keys the UI keeps in the database's settings table (next to the pin and the strategy), so the
// tray, the dashboard and a later start agree without a second settings file.
namespace uikeys {
// "true" while the user has paused the proxy from the tray. The proxy core has to honour it (new turns
// refused); the UI shows the state.
inline const QString proxyPaused = QStringLiteral("proxy_paused");
// Which number the tray icon shows: see TrayNumber.
inline const QString trayNumber = QStringLiteral("ui.tray_number");
// "" (follow the system), "en" or "zh_CN".
inline const QString language = QStringLiteral("ui.language");
// "true": start with the dashboard closed (only the tray icon).
inline const QString startHidden = QStringLiteral("ui.start_hidden");
} // namespace uikeys

enum class TrayNumber
{
    None,
    FiveHour, // pooled 5 h remaining %
    Weekly,   // pooled weekly remaining %
    Lowest,   // the lower of the two
    Pinned,   // the pinned account's lower remaining % (lowest when nothing is pinned)
};
QString trayNumberKey(TrayNumber n);
TrayNumber trayNumberFromKey(const QString &key);

struct AccountView
{
    AccountRecord record;
    UsageRecord usage; // usage.accountId empty: never observed
    bool pinned = false;
};

// One consistent read of what the UI shows from the store, taken on a DbWorker thread and handed to the GUI
// thread as an immutable value.
struct StoreSnapshot
{
    qint64 takenAtMs = 0;
    QString error; // non-empty: the read failed and the lists are empty
    QList<AccountView> accounts;
    std::optional<PinSetting> pin;
    QString strategy;
    bool proxyPaused = false;
    TrayNumber trayNumber = TrayNumber::Lowest;
    QString language;
    bool startHidden = false;
    UsageRollupRow today; // since local midnight (hour granularity)
    // Pooled change of the used % per hour over the last hour, per window; nullopt without two samples.
    std::optional<double> primaryPacePerHour;
    std::optional<double> secondaryPacePerHour;

    const AccountView *account(const QString &id) const;
};
using SnapshotPtr = std::shared_ptr<const StoreSnapshot>;

// Reads the snapshot through `db` in one read transaction.
StoreSnapshot loadStoreSnapshot(Database &db, qint64 nowMs, qint64 startOfDayMs);

} // namespace sy::ui

Q_DECLARE_METATYPE(sy::ui::SnapshotPtr)
