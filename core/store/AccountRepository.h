#pragma once

#include "accounts/AccountRecord.h"
#include "util/Clock.h"

#include <QList>
#include <QString>
#include <QVariant>
#include <optional>

namespace sy {

class Database;

// Accounts and their latest usage in the database. Every method runs in its own transaction (a savepoint
// when the caller already holds one) and reports failures through *error (may be null).
// Methods marked "bumps" also increment meta.change_counter in the same transaction.
class AccountRepository
{
public:
    explicit AccountRepository(Database &db, const Clock &clock = SystemClock::instance());

    // What an import or a login knows about an account.
    struct Identity
    {
        QString chatgptAccountId;
        QString userId;
        QString email;
        QString plan;
        std::optional<qint64> tokenExpiresAtMs;
        std::optional<qint64> lastRefreshMs;
        std::optional<QString> alias; // set (and validated) when given
    };
    struct UpsertResult
    {
        QString id;
        bool created = false;
    };
    // Creates the account for (chatgptAccountId, userId) or updates it: email and plan when known, token
    // times as given, and reauth_required becomes active again (fresh tokens). Bumps.
    std::optional<UpsertResult> upsert(const Identity &identity, QString *error);

    QList<AccountRecord> list(QString *error = nullptr);
    std::optional<AccountRecord> find(const QString &id, QString *error = nullptr);

    // ACCOUNT on the command line: internal id, alias or email (case-insensitive). Exactly one account must
    // match; otherwise `account` is empty and `error` says why, listing every match when ambiguous.
    struct Lookup
    {
        std::optional<AccountRecord> account;
        QList<AccountRecord> matches;
        QString error;
    };
    Lookup findByRef(const QString &ref);

    // status: one of accountStatusNames(). Bumps.
    bool setStatus(const QString &id, const QString &status, const QString &reason, QString *error);
    // nullopt clears the alias. Aliases are unique, 1-64 characters, without spaces or control characters.
    // Bumps.
    bool setAlias(const QString &id, const std::optional<QString> &alias, QString *error);
    bool setSlotCount(const QString &id, int slotCount, QString *error); // bumps
    // Backoff state after failures (nullopt = no cooldown).
    bool setCooldown(const QString &id, std::optional<qint64> untilMs, int consecutiveFailures, QString *error);
    // Stores now as the account's selection time, or the stored one + 1 ms when that is not older (its value in
    // *storedMs): every claim on an account stores a value of its own.
    bool touchSelected(const QString &id, QString *error, qint64 *storedMs = nullptr);
    // The same, called inside a write transaction (as every write job on the store thread runs) that has read
    // the account's selection time already (`readMs`, empty for NULL). On SQLite that transaction holds the
    // write lock from its BEGIN IMMEDIATE, so the row still has that value and the stored one follows from it:
    // one statement, no read-back (it updates only a row that still holds `readMs`; any other takes
    // touchSelected()'s way). On PostgreSQL (READ COMMITTED) another replica may have moved it since:
    // touchSelected().
    bool touchSelectedAfterReading(const QString &id, std::optional<qint64> readMs, QString *error, qint64 *storedMs);
    // Puts `previousMs` back as the selection time if it is still `storedMs` (no later claim touched it).
    bool undoSelected(const QString &id, std::optional<qint64> previousMs, qint64 storedMs, QString *error);
    bool setTokenTimes(const QString &id, std::optional<qint64> expiresAtMs, std::optional<qint64> lastRefreshMs,
                       QString *error);
    bool setPlan(const QString &id, const QString &plan, QString *error);
    // Deletes the account with its usage, anchors and session affinity (and the pin when it names it);
    // the request log keeps its rows. Bumps.
    bool remove(const QString &id, QString *error);

    // The latest usage observation per account (replaces the previous one).
    bool saveUsage(const UsageRecord &usage, QString *error);
    std::optional<UsageRecord> loadUsage(const QString &accountId, QString *error = nullptr);
    QList<UsageRecord> loadAllUsage(QString *error = nullptr);

    // "acc_" + the first hexDigits hex digits of SHA-256(chatgptAccountId "\n" userId).
    static QString makeAccountId(const QString &chatgptAccountId, const QString &userId, int hexDigits = 12);
    static bool isValidAlias(const QString &alias, QString *why = nullptr);

private:
    bool update(const QString &id, const QString &assignments, const QVariantList &values, bool bump, QString *error);
    bool checkAliasFree(const QString &alias, const QString &exceptId, QString *error);

    Database &m_db;
    const Clock &m_clock;
};

} // namespace sy
