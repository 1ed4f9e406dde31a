#pragma once

#include "store/ApiKeyRepository.h"

#include <QByteArray>
#include <QList>
#include <QString>
#include <QStringList>
#include <optional>

namespace sy {

class Database;

// What a user asked for when creating a key, as typed (`apikeys create` options or the dashboard's dialog):
// both front ends hand the raw text here so they accept and refuse exactly the same input.
struct ApiKeyRequest
{
    std::optional<QString> name;
    std::optional<QString> expiresDays; // whole days, 1 to 3650
    std::optional<QString> limitTokens; // 1 to 10^12, only together with limitWindow
    std::optional<QString> limitWindow; // parseLimitWindow() spelling
};

// The limit windows the dashboard offers (the CLI's usage text names the same; it accepts any
// parseLimitWindow() spelling, and so does apiKeyRecordFor()).
QStringList apiKeyWindowChoices();

// The record `request` describes, created at `nowMs` (no id yet); nullopt with *error naming the bad field.
std::optional<ApiKeyRecord> apiKeyRecordFor(const ApiKeyRequest &request, qint64 nowMs, QString *error);

// A key that was just stored. `secret` is the only copy of the plaintext: the caller shows it once and then
// wipes it (wipeSecret); the store holds its hash only.
struct IssuedApiKey
{
    ApiKeyRecord record;
    QByteArray secret;
};

// Validates `request`, makes a key and stores its hash.
std::optional<IssuedApiKey> issueApiKey(Database &db, const ApiKeyRequest &request, qint64 nowMs, QString *error);

// Overwrite the characters in place (not only free them), in every copy that shares them, and empty the
// string; what was copied elsewhere (a deep copy) is not reached.
void wipeSecret(QByteArray &secret);
void wipeSecret(QString &secret);

// A key as listed: its record, its state and, when it has a limit, the tokens it used in its current window.
struct ApiKeyListing
{
    ApiKeyRecord record;
    ApiKeyRecord::State state = ApiKeyRecord::State::Active;
    std::optional<qint64> tokensUsedInWindow;
};

// Every key, oldest first; nullopt with *error when the store cannot be read.
std::optional<QList<ApiKeyListing>> listApiKeys(Database &db, qint64 nowMs, QString *error);

} // namespace sy
