#include "data/StoreSnapshot.h"

#include "store/AccountRepository.h"
#include "store/Database.h"

#include <QHash>

namespace sy::ui {

namespace {

// Used % per hour of one window over the samples (oldest first) that share the newest sample's reset time:
// a reset inside the hour would otherwise read as a negative pace.
std::optional<double> windowPace(const QList<UsageSample> &samples, bool primary)
{
    const auto windowOf = [primary](const UsageSample &s) { return primary ? s.primary : s.secondary; };
    if (samples.size() < 2)
        return std::nullopt;
    const UsageSample &last = samples.last();
    const UsageRecordWindow lastWindow = windowOf(last);
    if (!lastWindow.usedPercent)
        return std::nullopt;
    for (const UsageSample &first : samples) {
        const UsageRecordWindow w = windowOf(first);
        if (!w.usedPercent || w.resetAtMs != lastWindow.resetAtMs)
            continue;
        const qint64 spanMs = last.observedAtMs - first.observedAtMs;
        if (spanMs < UsageRollupRepository::kSampleBucketMs)
            return std::nullopt;
        return (*lastWindow.usedPercent - *w.usedPercent) * 3600000.0 / double(spanMs);
    }
    return std::nullopt;
}

std::optional<double> mean(const QList<double> &values)
{
    if (values.isEmpty())
        return std::nullopt;
    double sum = 0;
    for (double v : values)
        sum += v;
    return sum / double(values.size());
}

} // namespace

QString trayNumberKey(TrayNumber n)
{
    switch (n) {
    case TrayNumber::None:
        return QStringLiteral("none");
    case TrayNumber::FiveHour:
        return QStringLiteral("five_hour");
    case TrayNumber::Weekly:
        return QStringLiteral("weekly");
    case TrayNumber::Lowest:
        return QStringLiteral("lowest");
    case TrayNumber::Pinned:
        return QStringLiteral("pinned");
    }
    return QStringLiteral("lowest");
}

TrayNumber trayNumberFromKey(const QString &key)
{
    for (TrayNumber n :
         {TrayNumber::None, TrayNumber::FiveHour, TrayNumber::Weekly, TrayNumber::Lowest, TrayNumber::Pinned}) {
        if (trayNumberKey(n) == key)
            return n;
    }
    return TrayNumber::Lowest;
}

const AccountView *StoreSnapshot::account(const QString &id) const
{
    for (const AccountView &a : accounts) {
        if (a.record.id == id)
            return &a;
    }
    return nullptr;
}

StoreSnapshot loadStoreSnapshot(Database &db, qint64 nowMs, qint64 startOfDayMs)
{
    StoreSnapshot s;
    s.takenAtMs = nowMs;
    QString error;
    Transaction tx(db, Transaction::Kind::Read);
    if (!tx.begin(&error)) {
        s.error = error;
        return s;
    }
    AccountRepository accounts(db);
    const QList<AccountRecord> records = accounts.list(&error);
    QHash<QString, UsageRecord> usage;
    if (error.isEmpty()) {
        for (const UsageRecord &u : accounts.loadAllUsage(&error))
            usage.insert(u.accountId, u);
    }
    SettingsRepository settings(db);
    if (error.isEmpty())
        s.pin = settings.pin(&error);
    if (error.isEmpty())
        s.strategy = settings.strategy(&error);
    const auto flag = [&](const QString &key) {
        return error.isEmpty() && settings.value(key, &error).value_or(QString()) == QLatin1String("true");
    };
    s.proxyPaused = flag(uikeys::proxyPaused);
    s.startHidden = flag(uikeys::startHidden);
    if (error.isEmpty())
        s.trayNumber = trayNumberFromKey(settings.value(uikeys::trayNumber, &error).value_or(QString()));
    if (error.isEmpty())
        s.language = settings.value(uikeys::language, &error).value_or(QString());
    UsageRollupRepository rollups(db);
    if (error.isEmpty())
        s.today = rollups.total(UsageRollupRepository::hourStart(startOfDayMs), nowMs + 1, &error);
    QHash<QString, QList<UsageSample>> recent;
    if (error.isEmpty()) {
        for (const UsageSample &sample : rollups.samples(nowMs - UsageRollupRepository::kHourMs, nowMs + 1, {}, &error))
            recent[sample.accountId].append(sample);
    }
    tx.rollback(); // read-only: nothing to keep
    if (!error.isEmpty()) {
        s.error = error;
        return s;
    }
    QList<double> primaryPaces, secondaryPaces;
    for (const AccountRecord &r : records) {
        AccountView v;
        v.record = r;
        v.usage = usage.value(r.id);
        v.pinned = s.pin && s.pin->accountId == r.id;
        s.accounts.append(v);
        const QList<UsageSample> &samples = recent[r.id];
        if (const auto p = windowPace(samples, true))
            primaryPaces << *p;
        if (const auto p = windowPace(samples, false))
            secondaryPaces << *p;
    }
    s.primaryPacePerHour = mean(primaryPaces);
    s.secondaryPacePerHour = mean(secondaryPaces);
    return s;
}

} // namespace sy::ui
