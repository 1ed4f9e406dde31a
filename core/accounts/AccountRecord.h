#pragma once

#include <QString>
#include <QStringList>
#include <optional>

namespace sy {

// One pooled account as stored. An account is (chatgpt_account_id, user id): two members of one
// workspace are two accounts, one person in two workspaces is two accounts too.
// `status` holds the DESIGN.md name ("active", "rate_limited", ...); routing/AccountStatus.h converts it.
struct AccountRecord
{
    QString id; // internal id, "acc_" + short hash of (chatgptAccountId, userId)
    QString chatgptAccountId;
    QString userId;
    QString email; // empty when the id_token carried none
    std::optional<QString> alias;
    QString plan; // "plus", "pro", ...; empty when unknown
    QString status = QStringLiteral("active");
    QString statusReason;
    std::optional<qint64> cooldownUntilMs;
    int consecutiveFailures = 0;
    qint64 createdAtMs = 0;
    qint64 updatedAtMs = 0;
    std::optional<qint64> lastSelectedMs;
    std::optional<qint64> tokenExpiresAtMs;
    std::optional<qint64> lastRefreshMs;
    // Per-account override of slots_per_account; nullopt = the configured default applies.
    std::optional<int> slotCount;
    // Durable snapshot version: grows with every change of the row that other processes must notice.
    qint64 version = 0;

    // Alias when set, else the internal id: the name shown to people and sent in x-switchyard-account.
    QString displayName() const { return alias.value_or(id); }
};

// The status names DESIGN.md defines, in its order.
QStringList accountStatusNames();
bool isAccountStatusName(const QString &name);

// One observation of an account's quota windows and credits. Unknown facts stay nullopt (NULL in the
// database) and are never stored as 0. Mirrors usage/UsageWindows.h's AccountUsage field for field.
struct UsageRecordWindow
{
    std::optional<double> usedPercent;
    std::optional<int> windowMinutes;
    std::optional<qint64> resetAtMs;
};

struct UsageRecord
{
    QString accountId;
    UsageRecordWindow primary;   // 5-hour window
    UsageRecordWindow secondary; // weekly window
    std::optional<bool> hasCredits;
    std::optional<bool> unlimited;
    std::optional<double> creditsBalance;
    qint64 observedAtMs = 0;
};

} // namespace sy
