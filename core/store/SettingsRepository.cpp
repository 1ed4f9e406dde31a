#include "store/SettingsRepository.h"

#include "store/Database.h"

#include <QSqlQuery>
#include <QVariant>

namespace sy {

namespace {

void setError(QString *error, const QString &text)
{
    if (error)
        *error = text;
}

} // namespace

SettingsRepository::SettingsRepository(Database &db) : m_db(db) {}

std::optional<QString> SettingsRepository::value(const QString &key, QString *error)
{
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q, QStringLiteral("SELECT value FROM settings WHERE key = ?"), error))
        return std::nullopt;
    q.addBindValue(key);
    if (!m_db.exec(q, error))
        return std::nullopt;
    if (!q.next())
        return std::nullopt;
    return q.value(0).toString();
}

bool SettingsRepository::setValue(const QString &key, const QString &value, QString *error)
{
    Transaction tx(m_db);
    if (!tx.begin(error))
        return false;
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q, QStringLiteral("INSERT INTO settings (key, value) VALUES (?, ?) "
                                                 "ON CONFLICT (key) DO UPDATE SET value = excluded.value"), error))
        return false;
    q.addBindValue(key);
    q.addBindValue(value);
    return m_db.exec(q, error) && m_db.bumpChangeCounter(error) && tx.commit(error);
}

bool SettingsRepository::removeValue(const QString &key, QString *error)
{
    Transaction tx(m_db);
    if (!tx.begin(error))
        return false;
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q, QStringLiteral("DELETE FROM settings WHERE key = ?"), error))
        return false;
    q.addBindValue(key);
    return m_db.exec(q, error) && m_db.bumpChangeCounter(error) && tx.commit(error);
}

std::optional<PinSetting> SettingsRepository::pin(QString *error)
{
    QString readError;
    const std::optional<QString> account = value(QLatin1String(kPinAccountKey), &readError);
    if (!readError.isEmpty()) {
        setError(error, readError);
        return std::nullopt;
    }
    if (!account || account->isEmpty())
        return std::nullopt;
    const std::optional<QString> strict = value(QLatin1String(kPinStrictKey), &readError);
    if (!readError.isEmpty()) {
        setError(error, readError);
        return std::nullopt;
    }
    return PinSetting{*account, strict.value_or(QString()) == QLatin1String("true")};
}

bool SettingsRepository::setPin(const QString &accountId, bool strict, QString *error)
{
    Transaction tx(m_db);
    if (!tx.begin(error))
        return false;
    QSqlQuery q = m_db.query();
    if (!m_db.prepare(q, QStringLiteral("SELECT 1 FROM accounts WHERE id = ?"), error))
        return false;
    q.addBindValue(accountId);
    if (!m_db.exec(q, error))
        return false;
    if (!q.next()) {
        setError(error, QStringLiteral("no account %1").arg(accountId));
        return false;
    }
    q.finish();
    return setValue(QLatin1String(kPinAccountKey), accountId, error) &&
           setValue(QLatin1String(kPinStrictKey), strict ? QStringLiteral("true") : QStringLiteral("false"), error) &&
           tx.commit(error);
}

bool SettingsRepository::clearPin(QString *error)
{
    Transaction tx(m_db);
    return tx.begin(error) && removeValue(QLatin1String(kPinAccountKey), error) &&
           removeValue(QLatin1String(kPinStrictKey), error) && tx.commit(error);
}

QStringList SettingsRepository::strategyNames()
{
    return {QStringLiteral("capacity_weighted"), QStringLiteral("usage_weighted"), QStringLiteral("round_robin"),
            QStringLiteral("fill_first")};
}

QString SettingsRepository::strategy(QString *error)
{
    const std::optional<QString> stored = value(QLatin1String(kStrategyKey), error);
    if (stored && strategyNames().contains(*stored))
        return *stored;
    return defaultStrategy();
}

bool SettingsRepository::setStrategy(const QString &name, QString *error)
{
    if (!strategyNames().contains(name)) {
        setError(
            error,
            QStringLiteral("unknown strategy '%1' (one of: %2)").arg(name, strategyNames().join(QStringLiteral(", "))));
        return false;
    }
    return setValue(QLatin1String(kStrategyKey), name, error);
}

} // namespace sy
