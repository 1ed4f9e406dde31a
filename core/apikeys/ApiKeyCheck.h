#pragma once

#include "store/ApiKeyRepository.h"

#include <QByteArray>
#include <QString>
#include <functional>

class QObject;

namespace sy {

class HttpResponse;
class StoreWorker;

// The outcome of checking a presented key against the store.
struct ApiKeyCheck
{
    ApiKeyVerdict verdict = ApiKeyVerdict::Unknown;
    QString keyId;                     // set when the key is known
    qint64 tokensUsed = 0;             // in the key's window, when it has a limit
    std::optional<qint64> limitTokens;
    std::optional<qint64> limitWindowS;
    QString storeError;                // non-empty: the store could not answer
};

// Looks the key up (by its hash) and sums its window's tokens in one read on the store thread; `done` runs
// in `context`'s thread. An empty `presented` key is Unknown without a store read.
void checkApiKey(StoreWorker *store, const QByteArray &presented, qint64 nowMs, QObject *context,
                 std::function<void(const ApiKeyCheck &check)> done);

// Answers a request whose key was not accepted: 401 (missing, unknown, revoked, expired; with
// WWW-Authenticate: Bearer), 429 api_key_token_limit, or 503 store_unavailable. `presented` tells a missing key
// from a wrong one.
void refuseApiKey(const ApiKeyCheck &check, bool presented, HttpResponse *response);

} // namespace sy
