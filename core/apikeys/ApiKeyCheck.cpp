#include "apikeys/ApiKeyCheck.h"

#include "apikeys/ApiKey.h"
#include "http/HttpResponse.h"
#include "store/StoreWorker.h"

#include <QObject>
#include <QTimer>
#include <memory>

namespace sy {

void checkApiKey(StoreWorker *store, const QByteArray &presented, qint64 nowMs, QObject *context,
                 std::function<void(const ApiKeyCheck &check)> done)
{
    if (presented.isEmpty()) {
        QTimer::singleShot(0, context, [done] { done(ApiKeyCheck{}); });
        return;
    }
    auto result = std::make_shared<ApiKeyCheck>();
    // Only the hash leaves this function: the key itself is never captured by the store job.
    const QString hash = hashApiKey(presented);
    store->submitRead(
        [result, hash, nowMs](Database &db, QString *error) {
            ApiKeyRepository keys(db);
            const std::optional<ApiKeyRecord> key = keys.findByHash(hash, error);
            if (!error->isEmpty())
                return false;
            qint64 used = 0;
            if (key && key->limitTokens && key->limitWindowS && key->state(nowMs) == ApiKeyRecord::State::Active) {
                const std::optional<qint64> sum = keys.tokensUsedSince(key->id, nowMs - *key->limitWindowS * 1000, error);
                if (!sum)
                    return false;
                used = *sum;
            }
            result->verdict = judgeApiKey(key, nowMs, used);
            result->tokensUsed = used;
            if (key) {
                result->keyId = key->id;
                result->limitTokens = key->limitTokens;
                result->limitWindowS = key->limitWindowS;
            }
            return true;
        },
        context,
        [result, done](bool ok, const QString &error) {
            if (!ok)
                result->storeError = error.isEmpty() ? QStringLiteral("the store did not answer") : error;
            done(*result);
        });
}

void refuseApiKey(const ApiKeyCheck &check, bool presented, HttpResponse *response)
{
    if (!check.storeError.isEmpty()) {
        response->setHeader("Retry-After", "5");
        response->sendJsonError(503, "server_error", "store_unavailable",
                                QStringLiteral("API keys cannot be checked: the store is unavailable"));
        return;
    }
    auto unauthorized = [response](QByteArray code, QString message) {
        response->setHeader("WWW-Authenticate", "Bearer realm=\"switchyard\"");
        response->sendJsonError(401, "authentication_error", std::move(code), std::move(message));
    };
    switch (check.verdict) {
    case ApiKeyVerdict::Valid:
        return;
    case ApiKeyVerdict::Unknown:
        if (!presented)
            unauthorized("missing_api_key",
                         QStringLiteral("this proxy requires an API key: send \"Authorization: Bearer sy-...\" "
                                        "(create one with `switchyard apikeys create`)"));
        else
            unauthorized("invalid_api_key", QStringLiteral("the API key is not valid"));
        return;
    case ApiKeyVerdict::Revoked:
        unauthorized("api_key_revoked", QStringLiteral("the API key %1 was revoked").arg(check.keyId));
        return;
    case ApiKeyVerdict::Expired:
        unauthorized("api_key_expired", QStringLiteral("the API key %1 has expired").arg(check.keyId));
        return;
    case ApiKeyVerdict::OverLimit:
        response->sendJsonError(429, "rate_limit_error", "api_key_token_limit",
                                QStringLiteral("the API key %1 used %2 of its %3 tokens per %4")
                                    .arg(check.keyId)
                                    .arg(check.tokensUsed)
                                    .arg(check.limitTokens.value_or(0))
                                    .arg(limitWindowText(check.limitWindowS.value_or(0))));
        return;
    }
}

} // namespace sy
