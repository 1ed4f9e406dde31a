#pragma once

#include <QByteArray>
#include <QJsonObject>
#include <QList>
#include <QPair>
#include <QString>
#include <optional>

namespace sy {

enum class FailureClass
{
    None,          // not a failure
    RateLimited,   // 429, rate_limit_exceeded, usage_limit_reached: the account is limited until a reset
    QuotaExceeded, // insufficient_quota, usage_not_included, quota_exceeded: the account's quota is used up
    Transient,     // >= 500, server_error, overloaded, no HTTP answer: try elsewhere, back off this account
    AuthExpired,   // 401: refresh the token once, then retry
    RequestError,  // any other 4xx: the request's own fault; never penalises the account
};

struct FailureInfo
{
    FailureClass cls = FailureClass::None;
    QString code;                    // upstream error code/type when given (e.g. "usage_limit_reached"), else empty
    QString message;                 // upstream error text (trimmed, bounded), else empty
    std::optional<qint64> retryAtMs; // epoch ms when the upstream says trying again makes sense (> now)
};

// "rate_limited", "quota_exceeded", ... (stable strings for logs and JSON).
QString failureClassName(FailureClass cls);

// Whether the failure says something about the account (cooldown, status change, failover) rather than
// about the request.
bool penalisesAccount(FailureClass cls);

// Quota exhaustion in any spelling. Codex treats a 429 with usage_limit_reached as fatal, so the proxy must
// never pass such an answer through to it while another account might serve.
bool isQuotaLike(const FailureInfo &info);

// An upstream HTTP answer before any event: status, body (JSON error object or anything else) and headers.
// Retry time, first known and in the future wins: body resets_at (epoch s), body resets_in_seconds,
// "try again in ..." in the message, Retry-After (seconds or HTTP date), x-codex-*-reset-at of a window
// at 100 %.
FailureInfo classifyUpstreamFailure(int httpStatus, const QByteArray &body,
                                    const QList<QPair<QByteArray, QByteArray>> &headers, qint64 nowMs);

// An in-stream `error` event or `response.failed` event (the event's JSON data). Without an error code the
// failure is treated as Transient: the upstream broke off without saying why.
FailureInfo classifyStreamError(const QJsonObject &event, qint64 nowMs);

// Duration in "try again in 1h2m3s" / "45s" / "1.5s" / "250ms" / "2 minutes" message text, in ms.
std::optional<qint64> parseTryAgainIn(const QString &message);

} // namespace sy
