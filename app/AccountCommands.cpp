#include "CliSupport.h"
#include "Commands.h"

#include "accounts/AuthJson.h"
#include "accounts/AuthJsonImportStore.h"
#include "accounts/SecretStore.h"
#include "accounts/SecretStoreFactory.h"
#include "store/AccountRepository.h"
#include "routing/Selection.h"
#include "store/SettingsRepository.h"
#include "usage/UsageRecordConversion.h"

#include <QDateTime>
#include <QFile>
#include <QJsonArray>
#include <QJsonObject>

#include <memory>

namespace sy::app {

namespace {

QJsonValue opt(const std::optional<QString> &v)
{
    return v ? QJsonValue(*v) : QJsonValue();
}

QJsonValue optTime(const std::optional<qint64> &v)
{
    return v ? QJsonValue(timeText(v)) : QJsonValue();
}

int importFiles(Database &db, const Config &config, const CommandLine &cl)
{
    const QStringList files = cl.words.mid(2);
    if (files.isEmpty())
        return fail(QStringLiteral("accounts import needs at least one auth.json file"));
    if (!cl.alias.isEmpty() && files.size() != 1)
        return fail(QStringLiteral("--alias names one account: give exactly one file with it"));
    QString why;
    if (!cl.alias.isEmpty() && !AccountRepository::isValidAlias(cl.alias, &why))
        return fail(QStringLiteral("--alias: ") + why);

    // Parse every file first: a malformed file changes nothing.
    QList<AuthJsonImport> parsed;
    QString error;
    if (!readAuthJsonFiles(files, &parsed, &error))
        return fail(error);

    QString storeError;
    const std::unique_ptr<SecretStore> secrets(makeSecretStore(config, &storeError));
    if (!secrets)
        return fail(storeError);
    const std::optional<QString> alias = cl.alias.isEmpty() ? std::nullopt : std::optional<QString>(cl.alias);
    for (int i = 0; i < parsed.size(); ++i) {
        const AuthJsonImport &imp = parsed.at(i);
        const auto result = storeAuthJsonImport(db, *secrets, imp, alias, &error);
        if (!result)
            return fail(QStringLiteral("%1: %2").arg(files.at(i), error));
        out(QStringLiteral("%1 %2 (%3, %4)")
                .arg(result->created ? QStringLiteral("imported") : QStringLiteral("updated"), result->accountId,
                     imp.email.isEmpty() ? QStringLiteral("no email") : imp.email,
                     imp.plan.isEmpty() ? QStringLiteral("plan unknown") : imp.plan));
    }
    return ExitOk;
}

// When a limited or cooling-down account serves again (its cooldown or the reset of its exhausted window);
// nullopt when it serves now or only a person can change its status (paused, re-login, deactivated).
std::optional<qint64> statusUntil(const AccountRecord &a, const UsageRecord &u)
{
    Candidate c;
    c.status = parseAccountStatus(a.status).value_or(AccountStatus::Active);
    c.cooldownUntilMs = a.cooldownUntilMs.value_or(0);
    c.usage = fromUsageRecord(u);
    return availableAgainAtMs(c, QDateTime::currentMSecsSinceEpoch());
}

int listAccounts(Database &db, const Config &config, const CommandLine &cl)
{
    AccountRepository repo(db);
    QString error;
    const QList<AccountRecord> accounts = repo.list(&error);
    if (!error.isEmpty())
        return fail(error);
    QHash<QString, UsageRecord> usage;
    for (const UsageRecord &u : repo.loadAllUsage())
        usage.insert(u.accountId, u);
    const auto pin = SettingsRepository(db).pin();
    if (cl.json) {
        QJsonArray arr;
        for (const AccountRecord &a : accounts) {
            const UsageRecord u = usage.value(a.id);
            arr.append(QJsonObject{
                {QStringLiteral("account_id"), a.id},
                {QStringLiteral("account_alias"), opt(a.alias)},
                {QStringLiteral("email"), a.email.isEmpty() ? QJsonValue() : QJsonValue(a.email)},
                {QStringLiteral("chatgpt_account_id"), a.chatgptAccountId},
                {QStringLiteral("plan"), a.plan.isEmpty() ? QJsonValue() : QJsonValue(a.plan)},
                {QStringLiteral("status"), a.status},
                {QStringLiteral("status_reason"), a.statusReason.isEmpty() ? QJsonValue() : QJsonValue(a.statusReason)},
                {QStringLiteral("pinned"), pin && pin->accountId == a.id},
                {QStringLiteral("slots"), a.slotCount.value_or(config.slotsPerAccount)},
                {QStringLiteral("cooldown_until"), optTime(a.cooldownUntilMs)},
                {QStringLiteral("status_until"), optTime(statusUntil(a, u))},
                {QStringLiteral("token_expires_at"), optTime(a.tokenExpiresAtMs)},
                {QStringLiteral("last_selected_at"), optTime(a.lastSelectedMs)},
                {QStringLiteral("primary_window"), usageWindowJson(u.primary)},
                {QStringLiteral("secondary_window"), usageWindowJson(u.secondary)},
            });
        }
        printJson(QJsonDocument(arr));
        return ExitOk;
    }
    if (accounts.isEmpty()) {
        out(QStringLiteral("no accounts: add one with 'switchyard accounts import ~/.codex/auth.json'"));
        return ExitOk;
    }
    out(padded(QStringLiteral("ACCOUNT"), 18) + padded(QStringLiteral("ALIAS"), 12) + padded(QStringLiteral("EMAIL"), 26) +
        padded(QStringLiteral("PLAN"), 8) + padded(QStringLiteral("STATUS"), 15) + padded(QStringLiteral("5H"), 5) +
        padded(QStringLiteral("WEEK"), 5) + padded(QStringLiteral("TOKEN EXPIRES"), 22) + QStringLiteral("UNTIL"));
    for (const AccountRecord &a : accounts) {
        const UsageRecord u = usage.value(a.id);
        QString status = a.status;
        if (pin && pin->accountId == a.id)
            status += pin->strict ? QStringLiteral(" (pin!)") : QStringLiteral(" (pin)");
        out(padded(a.id, 18) + padded(optionalText(a.alias), 12) + padded(a.email.isEmpty() ? QStringLiteral("-") : a.email, 26) +
            padded(a.plan.isEmpty() ? QStringLiteral("?") : a.plan, 8) + padded(status, 15) +
            padded(percentText(u.primary.usedPercent), 5) + padded(percentText(u.secondary.usedPercent), 5) +
            padded(timeText(a.tokenExpiresAtMs), 22) + timeText(statusUntil(a, u)));
    }
    return ExitOk;
}

} // namespace

int runAccounts(const Config &config, const CommandLine &cl)
{
    const QString verb = cl.words.value(1);
    static const QStringList verbs = {QStringLiteral("import"), QStringLiteral("login"),  QStringLiteral("list"),
                                      QStringLiteral("pause"),  QStringLiteral("resume"), QStringLiteral("remove"),
                                      QStringLiteral("pin")};
    if (!verbs.contains(verb))
        return fail(QStringLiteral("accounts needs one of: %1").arg(verbs.join(QStringLiteral(", "))));
    auto db = openDatabase(config, false);
    if (!db)
        return ExitFailure;
    if (verb == QLatin1String("import"))
        return importFiles(*db, config, cl);
    if (verb == QLatin1String("login"))
        return loginAccount(*db, config, cl);
    if (verb == QLatin1String("list"))
        return listAccounts(*db, config, cl);

    if (cl.words.size() != 3)
        return fail(QStringLiteral("accounts %1 takes exactly one ACCOUNT (id, alias or email)").arg(verb));
    const QString ref = cl.words.at(2);
    QString error;
    if (verb == QLatin1String("pin") && ref == QLatin1String("auto")) {
        if (!SettingsRepository(*db).clearPin(&error))
            return fail(error);
        out(QStringLiteral("pin cleared: the balancer chooses"));
        return ExitOk;
    }
    AccountRepository repo(*db);
    const AccountRepository::Lookup found = repo.findByRef(ref);
    if (!found.account)
        return fail(found.error);
    const AccountRecord &a = *found.account;
    if (verb == QLatin1String("pause") || verb == QLatin1String("resume")) {
        const QString status = verb == QLatin1String("pause") ? QStringLiteral("paused") : QStringLiteral("active");
        if (!repo.setStatus(a.id, status, verb == QLatin1String("pause") ? QStringLiteral("paused by user") : QString(),
                            &error))
            return fail(error);
        out(QStringLiteral("%1 is now %2").arg(a.displayName(), status));
        return ExitOk;
    }
    if (verb == QLatin1String("pin")) {
        if (!SettingsRepository(*db).setPin(a.id, cl.strict, &error))
            return fail(error);
        out(QStringLiteral("pinned %1%2").arg(a.displayName(), cl.strict ? QStringLiteral(" (strict: no fallback)")
                                                                          : QString()));
        return ExitOk;
    }
    // remove: the stored tokens first, then the record (anchors and affinity go with it; history stays).
    QString storeError;
    const std::unique_ptr<SecretStore> secrets(makeSecretStore(config, &storeError));
    if (!secrets)
        return fail(storeError);
    const SecretOutcome removed = secrets->removeTokensBlocking(a.id);
    if (!removed.ok)
        return fail(QStringLiteral("the stored tokens of %1 were not removed: %2").arg(a.displayName(), removed.errorText));
    if (!repo.remove(a.id, &error))
        return fail(error);
    out(QStringLiteral("removed %1").arg(a.displayName()));
    return ExitOk;
}

} // namespace sy::app
