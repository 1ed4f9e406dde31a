#include "usage/FailureClassifier.h"

#include <QDateTime>
#include <QJsonDocument>
#include <QtTest>

using namespace sy;

Q_DECLARE_METATYPE(sy::FailureClass)

namespace {

constexpr qint64 now = 1796000000000;
using Headers = QList<QPair<QByteArray, QByteArray>>;

QJsonObject json(const char *text)
{
    return QJsonDocument::fromJson(QByteArray(text)).object();
}

} // namespace

class TestFailureClassifier : public QObject
{
    Q_OBJECT

private slots:
    void classifiesHttpAnswers_data()
    {
        QTest::addColumn<int>("status");
        QTest::addColumn<QByteArray>("body");
        QTest::addColumn<FailureClass>("cls");
        QTest::addColumn<QString>("code");

        const auto err = [](const char *type, const char *code) {
            QJsonObject error{{QStringLiteral("type"), QLatin1String(type)}, {QStringLiteral("message"), "m"}};
            error.insert(QStringLiteral("code"), code ? QJsonValue(QLatin1String(code)) : QJsonValue());
            return QJsonDocument(QJsonObject{{QStringLiteral("error"), error}}).toJson(QJsonDocument::Compact);
        };
        QTest::newRow("200") << 200 << QByteArray() << FailureClass::None << QString();
        QTest::newRow("429 bare") << 429 << QByteArray("Too Many Requests") << FailureClass::RateLimited << QString();
        QTest::newRow("429 rate_limit_exceeded")
            << 429 << err("requests", "rate_limit_exceeded") << FailureClass::RateLimited << "rate_limit_exceeded";
        QTest::newRow("429 usage_limit_reached type")
            << 429 << err("usage_limit_reached", nullptr) << FailureClass::RateLimited << "usage_limit_reached";
        QTest::newRow("400 usage_limit_reached")
            << 400 << err("usage_limit_reached", nullptr) << FailureClass::RateLimited << "usage_limit_reached";
        QTest::newRow("429 insufficient_quota") << 429 << err("insufficient_quota", "insufficient_quota")
                                                << FailureClass::QuotaExceeded << "insufficient_quota";
        QTest::newRow("403 usage_not_included") << 403 << err("invalid_request_error", "usage_not_included")
                                                << FailureClass::QuotaExceeded << "usage_not_included";
        QTest::newRow("402 quota_exceeded") << 402 << QByteArray(R"({"detail":{"code":"quota_exceeded"}})")
                                            << FailureClass::QuotaExceeded << "quota_exceeded";
        QTest::newRow("500") << 500 << QByteArray("<html>oops</html>") << FailureClass::Transient << QString();
        QTest::newRow("502 server_error")
            << 502 << err("server_error", nullptr) << FailureClass::Transient << "server_error";
        QTest::newRow("529 overloaded") << 529 << err("overloaded", nullptr) << FailureClass::Transient << "overloaded";
        QTest::newRow("no answer") << 0 << QByteArray() << FailureClass::Transient << QString();
        QTest::newRow("401") << 401 << err("invalid_request_error", "token_expired") << FailureClass::AuthExpired
                             << "token_expired";
        QTest::newRow("400 invalid") << 400 << err("invalid_request_error", "context_length_exceeded")
                                     << FailureClass::RequestError << "context_length_exceeded";
        QTest::newRow("404") << 404 << QByteArray(R"({"detail":"Not Found"})") << FailureClass::RequestError
                             << QString();
        QTest::newRow("413") << 413 << QByteArray() << FailureClass::RequestError << QString();
    }

    void classifiesHttpAnswers()
    {
        QFETCH(int, status);
        QFETCH(QByteArray, body);
        QFETCH(FailureClass, cls);
        QFETCH(QString, code);
        const FailureInfo info = classifyUpstreamFailure(status, body, {}, now);
        QCOMPARE(failureClassName(info.cls), failureClassName(cls));
        QCOMPARE(info.code, code);
    }

    void requestErrorsNeverPenaliseTheAccount()
    {
        QVERIFY(!penalisesAccount(FailureClass::RequestError));
        QVERIFY(!penalisesAccount(FailureClass::None));
        QVERIFY(penalisesAccount(FailureClass::RateLimited));
        QVERIFY(penalisesAccount(FailureClass::QuotaExceeded));
        QVERIFY(penalisesAccount(FailureClass::Transient));
    }

    void usageLimitReachedIsQuotaLike()
    {
        const FailureInfo info = classifyUpstreamFailure(
            429, R"({"error":{"type":"usage_limit_reached","message":"The usage limit has been reached"}})", {}, now);
        QCOMPARE(info.cls, FailureClass::RateLimited);
        QVERIFY(isQuotaLike(info));
        QCOMPARE(info.message, QStringLiteral("The usage limit has been reached"));
        QVERIFY(!isQuotaLike(classifyUpstreamFailure(429, R"({"error":{"code":"rate_limit_exceeded"}})", {}, now)));
        QVERIFY(isQuotaLike(classifyUpstreamFailure(429, R"({"error":{"code":"insufficient_quota"}})", {}, now)));
    }

    void messagesAreBounded()
    {
        const QJsonObject error{{QStringLiteral("message"), QString(5000, QLatin1Char('x'))}};
        const QByteArray body = QJsonDocument(QJsonObject{{QStringLiteral("error"), error}}).toJson();
        QVERIFY(classifyUpstreamFailure(400, body, {}, now).message.size() <= 510);
    }

    void retryFromBodyResetsAt()
    {
        const FailureInfo info = classifyUpstreamFailure(
            429, R"({"error":{"type":"usage_limit_reached","resets_at":1796007200,"resets_in_seconds":5}})",
            {{"Retry-After", "1"}}, now);
        QCOMPARE(info.retryAtMs, std::optional<qint64>(1796007200000));
    }

    void retryFromBodyResetsInSeconds()
    {
        const FailureInfo info = classifyUpstreamFailure(
            429, R"({"error":{"type":"usage_limit_reached","resets_in_seconds":"120"}})", {{"Retry-After", "1"}}, now);
        QCOMPARE(info.retryAtMs, std::optional<qint64>(now + 120000));
    }

    void pastResetFallsThroughToNextSource()
    {
        const FailureInfo info = classifyUpstreamFailure(
            429, R"({"error":{"code":"rate_limit_exceeded","resets_at":1700000000}})", {{"retry-after", "7"}}, now);
        QCOMPARE(info.retryAtMs, std::optional<qint64>(now + 7000));
    }

    void retryFromMessageText()
    {
        const FailureInfo info = classifyUpstreamFailure(
            429,
            R"({"error":{"code":"rate_limit_exceeded","message":"Rate limit reached. Please try again in 1h2m3s."}})",
            {{"Retry-After", "1"}}, now);
        QCOMPARE(info.retryAtMs, std::optional<qint64>(now + 3723000));
    }

    void retryAfterSeconds()
    {
        const FailureInfo info = classifyUpstreamFailure(429, {}, {{"Retry-After", "30"}}, now);
        QCOMPARE(info.retryAtMs, std::optional<qint64>(now + 30000));
    }

    void retryAfterMsBeatsRetryAfter()
    {
        const FailureInfo info =
            classifyUpstreamFailure(429, {}, {{"retry-after-ms", "1500"}, {"Retry-After", "2"}}, now);
        QCOMPARE(info.retryAtMs, std::optional<qint64>(now + 1500));
    }

    void retryAfterHttpDate()
    {
        const QDateTime at = QDateTime::fromMSecsSinceEpoch(now, Qt::UTC).addSecs(600);
        const QByteArray date = QLocale::c().toString(at, QStringLiteral("ddd, dd MMM yyyy hh:mm:ss 'GMT'")).toLatin1();
        const FailureInfo info = classifyUpstreamFailure(503, {}, {{"Retry-After", date}}, now);
        QCOMPARE(info.cls, FailureClass::Transient);
        QCOMPARE(info.retryAtMs, std::optional<qint64>(now + 600000));
        QVERIFY(!classifyUpstreamFailure(503, {}, {{"Retry-After", "soon"}}, now).retryAtMs);
        // A wrong weekday does not matter; a numeric zone works too.
        const QByteArray otherDay = "Fri" + date.mid(3);
        QCOMPARE(classifyUpstreamFailure(503, {}, {{"Retry-After", otherDay}}, now).retryAtMs,
                 std::optional<qint64>(now + 600000));
        const QByteArray numericZone = date.left(date.size() - 3) + "-0100"; // 1 h behind UTC
        QCOMPARE(classifyUpstreamFailure(503, {}, {{"Retry-After", numericZone}}, now).retryAtMs,
                 std::optional<qint64>(now + 600000 + 3600000));
    }

    void retryFromExhaustedWindowHeaders()
    {
        const Headers headers{{"x-codex-primary-used-percent", "100"},
                              {"x-codex-primary-reset-at", "1796000900"},
                              {"x-codex-secondary-used-percent", "100"},
                              {"x-codex-secondary-reset-at", "1796090000"}};
        // Both windows are used up: usable again only when the later one resets.
        QCOMPARE(classifyUpstreamFailure(429, {}, headers, now).retryAtMs, std::optional<qint64>(1796090000000));

        const Headers notFull{{"x-codex-primary-used-percent", "99"}, {"x-codex-primary-reset-at", "1796000900"}};
        QVERIFY(!classifyUpstreamFailure(429, {}, notFull, now).retryAtMs);
    }

    void noRetryHintMeansUnknown()
    {
        QVERIFY(!classifyUpstreamFailure(429, R"({"error":{"code":"rate_limit_exceeded"}})", {}, now).retryAtMs);
    }

    void parsesTryAgainIn_data()
    {
        QTest::addColumn<QString>("message");
        QTest::addColumn<qint64>("ms"); // -1 = no duration
        QTest::newRow("h m s") << "Please try again in 1h2m3s." << qint64(3723000);
        QTest::newRow("seconds") << "try again in 45s" << qint64(45000);
        QTest::newRow("fraction") << "Try again in 1.5s." << qint64(1500);
        QTest::newRow("openai fraction") << "Please try again in 11.054s. Visit ..." << qint64(11054);
        QTest::newRow("ms") << "Please try again in 250ms." << qint64(250);
        QTest::newRow("m and zero s") << "try again in 20m0s" << qint64(1200000);
        QTest::newRow("words") << "You can try again in 2 minutes." << qint64(120000);
        QTest::newRow("words and") << "try again in 1 hour and 5 minutes" << qint64(3900000);
        QTest::newRow("days hours") << "try again in 1d 2h" << qint64(93600000);
        QTest::newRow("commas") << "try again in 3 days, 4 hours, 5 minutes" << qint64(273900000);
        QTest::newRow("upper case") << "TRY AGAIN IN 10S" << qint64(10000);
        QTest::newRow("later") << "Please try again later." << qint64(-1);
        QTest::newRow("no phrase") << "Rate limit reached for 45s" << qint64(-1);
        QTest::newRow("number without unit") << "try again in 45" << qint64(-1);
        QTest::newRow("unit glued to word") << "try again in 5seconds" << qint64(5000);
        QTest::newRow("not a unit") << "try again in 5 sheep" << qint64(-1);
    }

    void parsesTryAgainIn()
    {
        QFETCH(QString, message);
        QFETCH(qint64, ms);
        const auto parsed = parseTryAgainIn(message);
        QCOMPARE(parsed, ms < 0 ? std::optional<qint64>() : std::optional<qint64>(ms));
    }

    void streamBareErrorEvent()
    {
        const FailureInfo info = classifyStreamError(
            json(R"({"type":"error","code":"rate_limit_exceeded","message":"Rate limit. Try again in 11.054s."})"),
            now);
        QCOMPARE(info.cls, FailureClass::RateLimited);
        QCOMPARE(info.code, QStringLiteral("rate_limit_exceeded"));
        QCOMPARE(info.retryAtMs, std::optional<qint64>(now + 11054));
    }

    void streamNestedErrorEvent()
    {
        const FailureInfo info = classifyStreamError(
            json(R"({"type":"error","error":{"type":"usage_limit_reached","resets_in_seconds":120}})"), now);
        QCOMPARE(info.cls, FailureClass::RateLimited);
        QVERIFY(isQuotaLike(info));
        QCOMPARE(info.retryAtMs, std::optional<qint64>(now + 120000));
    }

    void streamResponseFailed_data()
    {
        QTest::addColumn<QByteArray>("event");
        QTest::addColumn<FailureClass>("cls");
        QTest::addColumn<QString>("code");
        QTest::newRow("server_error") << QByteArray(R"({"type":"response.failed","response":{"id":"r","status":"failed",
            "error":{"code":"server_error","message":"An error occurred"}}})")
                                      << FailureClass::Transient << "server_error";
        QTest::newRow("quota")
            << QByteArray(R"({"type":"response.failed","response":{"error":{"code":"insufficient_quota"}}})")
            << FailureClass::QuotaExceeded << "insufficient_quota";
        QTest::newRow("request fault")
            << QByteArray(R"({"type":"response.failed","response":{"error":{"code":"context_length_exceeded"}}})")
            << FailureClass::RequestError << "context_length_exceeded";
        QTest::newRow("no error object") << QByteArray(R"({"type":"response.failed","response":{"error":null}})")
                                         << FailureClass::Transient << QString();
        QTest::newRow("bare error without code")
            << QByteArray(R"({"type":"error","message":"stream broke"})") << FailureClass::Transient << QString();
    }

    void streamResponseFailed()
    {
        QFETCH(QByteArray, event);
        QFETCH(FailureClass, cls);
        QFETCH(QString, code);
        const FailureInfo info = classifyStreamError(QJsonDocument::fromJson(event).object(), now);
        QCOMPARE(failureClassName(info.cls), failureClassName(cls));
        QCOMPARE(info.code, code);
    }

    void classNames()
    {
        QCOMPARE(failureClassName(FailureClass::RateLimited), QStringLiteral("rate_limited"));
        QCOMPARE(failureClassName(FailureClass::QuotaExceeded), QStringLiteral("quota_exceeded"));
        QCOMPARE(failureClassName(FailureClass::Transient), QStringLiteral("transient"));
        QCOMPARE(failureClassName(FailureClass::AuthExpired), QStringLiteral("auth_expired"));
        QCOMPARE(failureClassName(FailureClass::RequestError), QStringLiteral("request_error"));
        QCOMPARE(failureClassName(FailureClass::None), QStringLiteral("none"));
    }
};

QTEST_GUILESS_MAIN(TestFailureClassifier)
#include "tst_failure_classifier.moc"
