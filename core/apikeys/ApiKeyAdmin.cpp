#include "apikeys/ApiKeyAdmin.h"

#include "apikeys/ApiKey.h"

#include <algorithm>
#include <sodium.h>

namespace sy {

namespace {

constexpr int kMaxNameChars = 64;
constexpr int kMaxExpiryDays = 3650;
constexpr qint64 kMaxLimitTokens = 1000000000000LL;

} // namespace

QStringList apiKeyWindowChoices()
{
    return {QStringLiteral("5h"), QStringLiteral("1d"), QStringLiteral("7d")};
}

std::optional<ApiKeyRecord> apiKeyRecordFor(const ApiKeyRequest &request, qint64 nowMs, QString *error)
{
    const auto refuse = [error](const QString &why) {
        if (error)
            *error = why;
        return std::nullopt;
    };
    ApiKeyRecord key;
    key.createdAtMs = nowMs;
    if (request.name) {
        key.name = request.name->trimmed();
        if (key.name.isEmpty() || key.name.size() > kMaxNameChars ||
            std::any_of(key.name.cbegin(), key.name.cend(), [](QChar c) { return !c.isPrint(); }))
            return refuse(QStringLiteral("the name must be 1 to %1 printable characters").arg(kMaxNameChars));
    }
    if (request.expiresDays) {
        bool ok = false;
        const int days = request.expiresDays->trimmed().toInt(&ok);
        if (!ok || days < 1 || days > kMaxExpiryDays)
            return refuse(QStringLiteral("the expiry must be a number of days from 1 to %1").arg(kMaxExpiryDays));
        key.expiresAtMs = nowMs + qint64(days) * 86400 * 1000;
    }
    if (request.limitTokens.has_value() != request.limitWindow.has_value())
        return refuse(QStringLiteral("a token limit and its window go together"));
    if (request.limitTokens) {
        bool ok = false;
        const qint64 tokens = request.limitTokens->trimmed().toLongLong(&ok);
        if (!ok || tokens < 1 || tokens > kMaxLimitTokens)
            return refuse(QStringLiteral("the token limit must be a number from 1 to %1").arg(kMaxLimitTokens));
        QString why;
        const std::optional<qint64> window = parseLimitWindow(*request.limitWindow, &why);
        if (!window)
            return refuse(QStringLiteral("the limit window: ") + why);
        key.limitTokens = tokens;
        key.limitWindowS = window;
    }
    return key;
}

std::optional<IssuedApiKey> issueApiKey(Database &db, const ApiKeyRequest &request, qint64 nowMs, QString *error)
{
    std::optional<ApiKeyRecord> record = apiKeyRecordFor(request, nowMs, error);
    if (!record)
        return std::nullopt;
    NewApiKey made = generateApiKey();
    record->id = made.id;
    IssuedApiKey issued{*record, made.secret.toLatin1()};
    wipeSecret(made.secret);
    if (!ApiKeyRepository(db).insert(issued.record, made.hash, error)) {
        wipeSecret(issued.secret);
        return std::nullopt;
    }
    return issued;
}

void wipeSecret(QByteArray &secret)
{
    // Through constData(): data() would detach a shared array and wipe only a fresh copy. Every array that
    // shares these bytes is meant to be wiped as well; static (unallocated) data holds no secret.
    if (!secret.isEmpty() && secret.data_ptr().isMutable())
        sodium_memzero(const_cast<char *>(secret.constData()), size_t(secret.size()));
    secret.clear();
}

void wipeSecret(QString &secret)
{
    if (!secret.isEmpty() && secret.data_ptr().isMutable())
        sodium_memzero(const_cast<QChar *>(secret.constData()), size_t(secret.size()) * sizeof(QChar));
    secret.clear();
}

std::optional<QList<ApiKeyListing>> listApiKeys(Database &db, qint64 nowMs, QString *error)
{
    ApiKeyRepository repo(db);
    QString why;
    const QList<ApiKeyRecord> keys = repo.list(&why);
    if (!why.isEmpty()) {
        if (error)
            *error = why;
        return std::nullopt;
    }
    QList<ApiKeyListing> out;
    out.reserve(keys.size());
    for (const ApiKeyRecord &k : keys) {
        ApiKeyListing row{k, k.state(nowMs), std::nullopt};
        if (k.limitWindowS) {
            row.tokensUsedInWindow = repo.tokensUsedSince(k.id, nowMs - *k.limitWindowS * 1000, &why);
            if (!row.tokensUsedInWindow) {
                if (error)
                    *error = why;
                return std::nullopt;
            }
        }
        out.append(row);
    }
    return out;
}

} // namespace sy
