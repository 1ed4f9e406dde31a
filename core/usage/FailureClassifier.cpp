#include "usage/FailureClassifier.h"

#include "usage/UsageWindows.h"

#include <QDateTime>
#include <QJsonDocument>
#include <QJsonValue>
#include <QLocale>
#include <QRegularExpression>
#include <algorithm>
#include <cmath>

namespace sy {

namespace {

constexpr int maxMessageChars = 500;
constexpr double maxRetrySeconds = 1e9;

bool codeIn(const QString &code, std::initializer_list<const char *> codes)
{
    return std::any_of(codes.begin(), codes.end(), [&](const char *c) { return code == QLatin1String(c); });
}

std::optional<FailureClass> classFromCode(const QString &code)
{
    if (codeIn(code, {"insufficient_quota", "usage_not_included", "quota_exceeded"}))
        return FailureClass::QuotaExceeded;
    if (codeIn(code, {"rate_limit_exceeded", "usage_limit_reached"}))
        return FailureClass::RateLimited;
    if (codeIn(code, {"server_error", "overloaded", "server_is_overloaded", "service_unavailable"}))
        return FailureClass::Transient;
    return std::nullopt;
}

QString stringOf(const QJsonObject &o, const char *key)
{
    const QJsonValue v = o.value(QLatin1String(key));
    return v.isString() ? v.toString().trimmed() : QString();
}

std::optional<double> numberOf(const QJsonObject &o, const char *key)
{
    const QJsonValue v = o.value(QLatin1String(key));
    bool ok = v.isDouble();
    double d = v.toDouble();
    if (v.isString())
        d = v.toString().trimmed().toDouble(&ok);
    if (!ok || !std::isfinite(d))
        return std::nullopt;
    return d;
}

QString bounded(QString text)
{
    text = text.trimmed();
    if (text.size() > maxMessageChars)
        text = text.left(maxMessageChars) + QStringLiteral("...");
    return text;
}

// The parts of an upstream error that classification needs, from whichever envelope carried them.
struct ErrorFacts
{
    QString code; // the known class code when one of code/type is known, else code, else type
    std::optional<FailureClass> codeClass;
    QString message;
    QJsonObject error; // the object holding code/message, where resets_* usually sit too
    QJsonObject outer; // its envelope, where resets_* sometimes sit
};

ErrorFacts factsFrom(const QJsonObject &error, const QJsonObject &outer)
{
    ErrorFacts f;
    f.error = error;
    f.outer = outer;
    const QString code = stringOf(error, "code");
    const QString type = stringOf(error, "type");
    for (const QString &candidate : {code, type}) {
        if (const auto cls = classFromCode(candidate.toLower())) {
            f.code = candidate;
            f.codeClass = cls;
            break;
        }
    }
    if (!f.codeClass)
        f.code = !code.isEmpty() ? code : type;
    f.message = stringOf(error, "message");
    if (f.message.isEmpty())
        f.message = stringOf(outer, "detail");
    if (f.message.isEmpty())
        f.message = stringOf(outer, "message");
    f.message = bounded(f.message);
    return f;
}

ErrorFacts factsFromBody(const QByteArray &body)
{
    const QJsonDocument doc = QJsonDocument::fromJson(body);
    if (!doc.isObject()) {
        ErrorFacts f;
        f.message = bounded(QString::fromUtf8(body));
        return f;
    }
    const QJsonObject root = doc.object();
    const QJsonValue error = root.value(QLatin1String("error"));
    if (error.isObject())
        return factsFrom(error.toObject(), root);
    const QJsonValue detail = root.value(QLatin1String("detail"));
    if (detail.isObject())
        return factsFrom(detail.toObject(), root);
    ErrorFacts f = factsFrom(root, root);
    if (f.message.isEmpty() && error.isString())
        f.message = bounded(error.toString());
    return f;
}

std::optional<qint64> future(std::optional<qint64> atMs, qint64 nowMs)
{
    if (atMs && *atMs > nowMs)
        return atMs;
    return std::nullopt;
}

std::optional<qint64> fromEpochSeconds(std::optional<double> s)
{
    if (!s || *s <= 0 || *s > maxRetrySeconds * 100)
        return std::nullopt;
    return static_cast<qint64>(std::llround(*s * 1000.0));
}

std::optional<qint64> afterSeconds(std::optional<double> s, qint64 nowMs)
{
    if (!s || *s < 0 || *s > maxRetrySeconds)
        return std::nullopt;
    return nowMs + static_cast<qint64>(std::ceil(*s * 1000.0));
}

std::optional<double> numberIn(const ErrorFacts &f, const char *key)
{
    const auto inError = numberOf(f.error, key);
    return inError ? inError : numberOf(f.outer, key);
}

QByteArray headerValue(const QList<QPair<QByteArray, QByteArray>> &headers, const QByteArray &lowerName)
{
    for (const auto &h : headers) {
        if (h.first.trimmed().toLower() == lowerName)
            return h.second.trimmed();
    }
    return {};
}

// The other legal Retry-After form: an HTTP date, "Sun, 06 Nov 1994 08:49:37 GMT". Qt 6.4's RFC 2822 parser
// rejects the "GMT" zone name, so that form is parsed by hand; the weekday is redundant and ignored.
QDateTime httpDate(const QString &value)
{
    QString text = value.trimmed();
    const qsizetype comma = text.indexOf(QLatin1Char(','));
    if (comma >= 0)
        text = text.mid(comma + 1).trimmed();
    if (text.endsWith(QLatin1String("GMT")) || text.endsWith(QLatin1String("UTC"))) {
        text.chop(3);
        const QDateTime local = QLocale::c().toDateTime(text.trimmed(), QStringLiteral("d MMM yyyy hh:mm:ss"));
        if (local.isValid())
            return QDateTime(local.date(), local.time(), Qt::UTC);
    }
    return QDateTime::fromString(value.trimmed(), Qt::RFC2822Date); // numeric zones: "+0000"
}

std::optional<qint64> retryAfterHeader(const QList<QPair<QByteArray, QByteArray>> &headers, qint64 nowMs)
{
    const QByteArray ms = headerValue(headers, "retry-after-ms");
    bool ok = false;
    const double msValue = ms.toDouble(&ok);
    if (ok && std::isfinite(msValue))
        if (const auto at = future(afterSeconds(msValue / 1000.0, nowMs), nowMs))
            return at;

    const QByteArray value = headerValue(headers, "retry-after");
    if (value.isEmpty())
        return std::nullopt;
    const double seconds = value.toDouble(&ok);
    if (ok && std::isfinite(seconds))
        return future(afterSeconds(seconds, nowMs), nowMs);
    const QDateTime date = httpDate(QString::fromLatin1(value));
    if (!date.isValid())
        return std::nullopt;
    return future(date.toMSecsSinceEpoch(), nowMs);
}

// When the headers show a window used up, the account is usable again only once every exhausted
// window has reset, so the latest of their resets counts.
std::optional<qint64> exhaustedWindowReset(const QList<QPair<QByteArray, QByteArray>> &headers, qint64 nowMs)
{
    const AccountUsage usage = usageFromHeaders(headers, nowMs);
    std::optional<qint64> latest;
    for (const QuotaWindow *w : {&usage.primary, &usage.secondary}) {
        if (w->usedPercent && *w->usedPercent >= 100.0 && w->resetAtMs && *w->resetAtMs > nowMs)
            latest = std::max(latest.value_or(0), *w->resetAtMs);
    }
    return latest;
}

std::optional<qint64> retryAt(const ErrorFacts &f, const QList<QPair<QByteArray, QByteArray>> &headers, qint64 nowMs)
{
    if (const auto at = future(fromEpochSeconds(numberIn(f, "resets_at")), nowMs))
        return at;
    if (const auto at = future(afterSeconds(numberIn(f, "resets_in_seconds"), nowMs), nowMs))
        return at;
    if (const auto inMs = parseTryAgainIn(f.message))
        if (const auto at = future(nowMs + *inMs, nowMs))
            return at;
    if (const auto at = retryAfterHeader(headers, nowMs))
        return at;
    return exhaustedWindowReset(headers, nowMs);
}

} // namespace

QString failureClassName(FailureClass cls)
{
    switch (cls) {
    case FailureClass::None:
        return QStringLiteral("none");
    case FailureClass::RateLimited:
        return QStringLiteral("rate_limited");
    case FailureClass::QuotaExceeded:
        return QStringLiteral("quota_exceeded");
    case FailureClass::Transient:
        return QStringLiteral("transient");
    case FailureClass::AuthExpired:
        return QStringLiteral("auth_expired");
    case FailureClass::RequestError:
        return QStringLiteral("request_error");
    }
    return QStringLiteral("none");
}

bool penalisesAccount(FailureClass cls)
{
    return cls == FailureClass::RateLimited || cls == FailureClass::QuotaExceeded || cls == FailureClass::Transient ||
           cls == FailureClass::AuthExpired;
}

bool isQuotaLike(const FailureInfo &info)
{
    return info.cls == FailureClass::QuotaExceeded ||
           info.code.compare(QLatin1String("usage_limit_reached"), Qt::CaseInsensitive) == 0;
}

FailureInfo classifyUpstreamFailure(int httpStatus, const QByteArray &body,
                                    const QList<QPair<QByteArray, QByteArray>> &headers, qint64 nowMs)
{
    FailureInfo info;
    if (httpStatus >= 200 && httpStatus < 400)
        return info;
    const ErrorFacts facts = factsFromBody(body);
    info.code = facts.code;
    info.message = facts.message;
    if (httpStatus == 401)
        info.cls = FailureClass::AuthExpired;
    else if (facts.codeClass)
        info.cls = *facts.codeClass;
    else if (httpStatus == 429)
        info.cls = FailureClass::RateLimited;
    else if (httpStatus >= 500 || httpStatus < 100) // < 100: no HTTP answer at all
        info.cls = FailureClass::Transient;
    else
        info.cls = FailureClass::RequestError;
    info.retryAtMs = retryAt(facts, headers, nowMs);
    return info;
}

FailureInfo classifyStreamError(const QJsonObject &event, qint64 nowMs)
{
    ErrorFacts facts;
    const QJsonObject response = event.value(QLatin1String("response")).toObject();
    const QJsonValue responseError = response.value(QLatin1String("error"));
    const QJsonValue eventError = event.value(QLatin1String("error"));
    if (responseError.isObject())
        facts = factsFrom(responseError.toObject(), response);
    else if (eventError.isObject())
        facts = factsFrom(eventError.toObject(), event);
    else {
        // A bare `error` event ({type: "error", code, message}): its "type" is the event name, not a code.
        QJsonObject bare = event;
        bare.remove(QLatin1String("type"));
        facts = factsFrom(bare, bare);
    }

    FailureInfo info;
    info.code = facts.code;
    info.message = facts.message;
    if (facts.codeClass)
        info.cls = *facts.codeClass;
    else if (facts.code.isEmpty())
        info.cls = FailureClass::Transient;
    else
        info.cls = FailureClass::RequestError;
    info.retryAtMs = retryAt(facts, {}, nowMs);
    return info;
}

std::optional<qint64> parseTryAgainIn(const QString &message)
{
    static const QRegularExpression lead(QStringLiteral("try again in\\s*"), QRegularExpression::CaseInsensitiveOption);
    static const QRegularExpression part(
        QStringLiteral("\\s*(?:,|and)?\\s*(\\d+(?:\\.\\d+)?)\\s*"
                       "(milliseconds?|ms|seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d)(?![a-z])"),
        QRegularExpression::CaseInsensitiveOption);

    const QRegularExpressionMatch start = lead.match(message);
    if (!start.hasMatch())
        return std::nullopt;
    qsizetype pos = start.capturedEnd();
    double totalMs = 0;
    bool any = false;
    for (;;) {
        const QRegularExpressionMatch m =
            part.match(message, pos, QRegularExpression::NormalMatch, QRegularExpression::AnchorAtOffsetMatchOption);
        if (!m.hasMatch())
            break;
        const double value = m.captured(1).toDouble();
        const QString unit = m.captured(2).toLower();
        double unitMs = 1000.0;
        if (unit == QLatin1String("ms") || unit.startsWith(QLatin1String("milli")))
            unitMs = 1.0;
        else if (unit.startsWith(QLatin1Char('m')))
            unitMs = 60'000.0;
        else if (unit.startsWith(QLatin1Char('h')))
            unitMs = 3'600'000.0;
        else if (unit.startsWith(QLatin1Char('d')))
            unitMs = 86'400'000.0;
        totalMs += value * unitMs;
        any = true;
        pos = m.capturedEnd();
    }
    if (!any || totalMs > maxRetrySeconds * 1000.0)
        return std::nullopt;
    return static_cast<qint64>(std::ceil(totalMs));
}

} // namespace sy
