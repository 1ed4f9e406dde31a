#pragma once

#include "http/HttpRequest.h"

#include <QByteArray>
#include <QJsonArray>
#include <QJsonObject>
#include <QList>
#include <QString>

// Builders for what the fake ChatGPT Codex backend sends: SSE events of a turn, usage and rate-limit
// headers, /wham/usage, /codex/models and /codex/responses/compact bodies. Pure functions of their input.
namespace sy::fake {

struct UsageState
{
    QString planType = QStringLiteral("plus");
    double primaryUsedPercent = 12.0;
    int primaryWindowMinutes = 300;
    qint64 primaryResetAfterSeconds = 2 * 3600;
    double secondaryUsedPercent = 35.0;
    int secondaryWindowMinutes = 10080;
    qint64 secondaryResetAfterSeconds = 3 * 86400;
    bool hasCredits = false;
    bool unlimited = false;
    QString balance = QStringLiteral("0");
};

// Applies the keys present in a /__control/usage body; returns an error text for a bad value.
QString applyUsageUpdate(UsageState &state, const QJsonObject &update);

HttpHeaderList rateLimitHeaders(const UsageState &usage, qint64 nowSeconds);
QJsonObject whamUsageJson(const UsageState &usage, qint64 nowSeconds);
QJsonObject rateLimitsEvent(const UsageState &usage, qint64 nowSeconds);
QJsonObject modelsJson();
QJsonObject compactJson(const QJsonObject &requestBody, const QString &accountId);

struct SseFrame
{
    QByteArray bytes;
    bool isDelta = false;
};
QByteArray sseFrame(const QByteArray &type, const QJsonObject &data);

struct TurnSpec
{
    QString responseId;
    QString accountId;
    QJsonObject body;
    qint64 createdAtSeconds = 0;
    qint64 cachedTokens = 0;
    UsageState usage;
};

// Input tokens the fake charges for a request body (deterministic estimate).
qint64 inputTokensFor(const QJsonObject &body);
// Text of the last user message in input (string input counts as one user message).
QString lastUserText(const QJsonObject &body);

// Every frame of a successful turn, response.created through response.completed.
QList<SseFrame> buildTurnFrames(const TurnSpec &spec);
// response.created, response.in_progress, then response.failed with a server_error.
QList<SseFrame> buildFailedTurnFrames(const TurnSpec &spec);

} // namespace sy::fake
