// `switchyard apikeys create|list|revoke`: keys for clients of a non-loopback listen address (docs/SECURITY.md).
#include "CliSupport.h"
#include "Commands.h"
#include "apikeys/ApiKey.h"
#include "apikeys/ApiKeyAdmin.h"
#include "store/ApiKeyRepository.h"
#include "util/Ids.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonObject>

namespace sy::app {

namespace {

QJsonValue optTime(const std::optional<qint64> &ms)
{
    return ms ? QJsonValue(isoUtc(*ms)) : QJsonValue();
}

QString limitText(const ApiKeyRecord &k)
{
    if (!k.limitTokens || !k.limitWindowS)
        return QStringLiteral("-");
    return QStringLiteral("%1/%2").arg(*k.limitTokens).arg(limitWindowText(*k.limitWindowS));
}

int createKey(Database &db, const CommandLine &cl)
{
    if (cl.words.size() != 2)
        return fail(QStringLiteral("apikeys create takes no arguments besides its options"));
    // The dashboard's create dialog goes through the same validation and store write (apikeys/ApiKeyAdmin).
    const ApiKeyRequest request{cl.name, cl.expiresDays, cl.limitTokens, cl.limitWindow};
    QString error;
    std::optional<IssuedApiKey> issued = issueApiKey(db, request, QDateTime::currentMSecsSinceEpoch(), &error);
    if (!issued)
        return fail(QStringLiteral("apikeys create: ") + error);
    const ApiKeyRecord &key = issued->record;
    const QString secret = QString::fromLatin1(issued->secret);
    if (cl.json) {
        printJson(QJsonDocument(QJsonObject{
            {QStringLiteral("id"), key.id},
            {QStringLiteral("key"), secret},
            {QStringLiteral("name"), key.name.isEmpty() ? QJsonValue() : QJsonValue(key.name)},
            {QStringLiteral("expires_at"), optTime(key.expiresAtMs)},
            {QStringLiteral("limit_tokens"), key.limitTokens ? QJsonValue(double(*key.limitTokens)) : QJsonValue()},
            {QStringLiteral("limit_window"),
             key.limitWindowS ? QJsonValue(limitWindowText(*key.limitWindowS)) : QJsonValue()},
        }));
        return ExitOk;
    }
    out(secret);
    out(QStringLiteral("API key %1 created%2%3%4. It is shown only this once: store it now. Clients send it as "
                       "\"Authorization: Bearer <key>\".")
            .arg(key.id, key.name.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(key.name),
                 key.expiresAtMs ? QStringLiteral(", expires %1").arg(isoUtc(*key.expiresAtMs)) : QString(),
                 key.limitTokens ? QStringLiteral(", limit %1 tokens").arg(limitText(key)) : QString()));
    return ExitOk;
}

int listKeys(Database &db, const CommandLine &cl)
{
    if (cl.words.size() != 2)
        return fail(QStringLiteral("apikeys list takes no arguments"));
    QString error;
    const std::optional<QList<ApiKeyListing>> keys = listApiKeys(db, QDateTime::currentMSecsSinceEpoch(), &error);
    if (!keys)
        return fail(QStringLiteral("cannot read the API keys: ") + error);
    QJsonArray rows;
    QStringList lines;
    lines << padded(QStringLiteral("ID"), 16) + padded(QStringLiteral("NAME"), 16) +
                 padded(QStringLiteral("STATE"), 8) + padded(QStringLiteral("CREATED"), 24) +
                 padded(QStringLiteral("EXPIRES"), 24) + padded(QStringLiteral("LAST USED"), 24) +
                 QStringLiteral("TOKENS USED/LIMIT");
    for (const ApiKeyListing &listing : *keys) {
        const ApiKeyRecord &k = listing.record;
        const std::optional<qint64> &used = listing.tokensUsedInWindow;
        const QString state = ApiKeyRecord::stateName(listing.state);
        rows.append(QJsonObject{
            {QStringLiteral("id"), k.id},
            {QStringLiteral("name"), k.name.isEmpty() ? QJsonValue() : QJsonValue(k.name)},
            {QStringLiteral("state"), state},
            {QStringLiteral("created_at"), isoUtc(k.createdAtMs)},
            {QStringLiteral("expires_at"), optTime(k.expiresAtMs)},
            {QStringLiteral("revoked_at"), optTime(k.revokedAtMs)},
            {QStringLiteral("last_used_at"), optTime(k.lastUsedMs)},
            {QStringLiteral("limit_tokens"), k.limitTokens ? QJsonValue(double(*k.limitTokens)) : QJsonValue()},
            {QStringLiteral("limit_window"),
             k.limitWindowS ? QJsonValue(limitWindowText(*k.limitWindowS)) : QJsonValue()},
            {QStringLiteral("tokens_used_in_window"), used ? QJsonValue(double(*used)) : QJsonValue()},
        });
        lines << padded(k.id, 16) + padded(k.name.isEmpty() ? QStringLiteral("-") : k.name, 16) + padded(state, 8) +
                     padded(isoUtc(k.createdAtMs), 24) + padded(timeText(k.expiresAtMs), 24) +
                     padded(timeText(k.lastUsedMs), 24) +
                     (used ? QStringLiteral("%1/%2").arg(*used).arg(limitText(k)) : QStringLiteral("-"));
    }
    if (cl.json) {
        printJson(QJsonDocument(rows));
        return ExitOk;
    }
    if (keys->isEmpty()) {
        out(QStringLiteral("no API keys (create one with `switchyard apikeys create`)"));
        return ExitOk;
    }
    out(lines.join(QLatin1Char('\n')));
    return ExitOk;
}

int revokeKey(Database &db, const CommandLine &cl)
{
    if (cl.words.size() != 3)
        return fail(QStringLiteral("apikeys revoke takes exactly one KEY_ID (see apikeys list)"));
    const QString id = cl.words.at(2);
    QString error;
    if (!ApiKeyRepository(db).revoke(id, QDateTime::currentMSecsSinceEpoch(), &error))
        return fail(error.isEmpty() ? QStringLiteral("no API key %1").arg(id) : error);
    out(QStringLiteral("API key %1 revoked: requests with it get 401 from now on").arg(id));
    return ExitOk;
}

} // namespace

int runApiKeys(const Config &config, const CommandLine &cl)
{
    const QString verb = cl.words.value(1);
    if (verb != QLatin1String("create") && verb != QLatin1String("list") && verb != QLatin1String("revoke"))
        return fail(QStringLiteral("apikeys needs one of: create, list, revoke"));
    auto db = openDatabase(config, false);
    if (!db)
        return ExitFailure;
    if (verb == QLatin1String("create"))
        return createKey(*db, cl);
    if (verb == QLatin1String("list"))
        return listKeys(*db, cl);
    return revokeKey(*db, cl);
}

} // namespace sy::app
