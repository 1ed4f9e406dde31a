#include "store/AccountRepository.h"
#include "store/Database.h"
#include "store/SqlValues.h"
#include "store/UsageRollupRepository.h"

#include <QSqlQuery>
#include <QStringList>

// AccountRepository's usage half: the latest quota observation per account (table account_usage).

namespace sy {

using namespace sql;

namespace {
const QString kUsageColumns = QStringLiteral(
    "account_id, primary_used_percent, primary_window_minutes, primary_reset_at_ms, secondary_used_percent, "
    "secondary_window_minutes, secondary_reset_at_ms, credits_has, credits_unlimited, credits_balance, "
    "observed_at_ms");

UsageRecord usageFrom(const QSqlQuery &q)
{
    UsageRecord u;
    u.accountId = q.value(0).toString();
    u.primary = {optDouble(q.value(1)), optInt(q.value(2)), optInt64(q.value(3))};
    u.secondary = {optDouble(q.value(4)), optInt(q.value(5)), optInt64(q.value(6))};
    u.hasCredits = optBool(q.value(7));
    u.unlimited = optBool(q.value(8));
    u.creditsBalance = optDouble(q.value(9));
    u.observedAtMs = q.value(10).toLongLong();
    return u;
}

void setError(QString *error, const QString &text)
{
    if (error)
        *error = text;
}

} // namespace

bool AccountRepository::saveUsage(const UsageRecord &u, QString *error)
{
    QSqlQuery q = m_db.query();
    // The latest observation replaces the previous one whole; unknowns overwrite with NULL.
    QStringList updates;
    for (const QString &column : kUsageColumns.split(QStringLiteral(", ")).mid(1))
        updates << QStringLiteral("%1 = excluded.%1").arg(column);
    if (!m_db.prepare(q,
                      QStringLiteral("INSERT INTO account_usage (") + kUsageColumns +
                          QStringLiteral(") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (account_id) DO UPDATE SET ") +
                          updates.join(QStringLiteral(", ")),
                      error))
        return false;
    for (const QVariant &v :
         {QVariant(u.accountId), nullable(u.primary.usedPercent), nullable(u.primary.windowMinutes),
          nullable(u.primary.resetAtMs), nullable(u.secondary.usedPercent), nullable(u.secondary.windowMinutes),
          nullable(u.secondary.resetAtMs), nullable(u.hasCredits), nullable(u.unlimited), nullable(u.creditsBalance),
          QVariant::fromValue<qint64>(u.observedAtMs)})
        q.addBindValue(v);
    // The dashboard's "used % over time" history moves with the latest observation.
    Transaction tx(m_db);
    return tx.begin(error) && m_db.exec(q, error) && UsageRollupRepository(m_db).recordSample(u, error) &&
           tx.commit(error);
}

std::optional<UsageRecord> AccountRepository::loadUsage(const QString &accountId, QString *error)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(
            q, QStringLiteral("SELECT ") + kUsageColumns + QStringLiteral(" FROM account_usage WHERE account_id = ?"),
            error))
        return std::nullopt;
    q.addBindValue(accountId);
    if (!m_db.exec(q, error))
        return std::nullopt;
    if (!q.next()) {
        setError(error, QString());
        return std::nullopt;
    }
    return usageFrom(q);
}

QList<UsageRecord> AccountRepository::loadAllUsage(QString *error)
{
    QList<UsageRecord> all;
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q, QStringLiteral("SELECT ") + kUsageColumns + QStringLiteral(" FROM account_usage"), error) ||
        !m_db.exec(q, error))
        return all;
    while (q.next())
        all << usageFrom(q);
    return all;
}

} // namespace sy
