#include "usage/UsageWindows.h"

#include <QJsonDocument>
#include <QtTest>

using namespace sy;

namespace {

constexpr qint64 now = 1796000000000; // 2026-11-29T...Z in ms

using Headers = QList<QPair<QByteArray, QByteArray>>;

QJsonObject json(const char *text)
{
    QJsonParseError error{};
    const QJsonDocument doc = QJsonDocument::fromJson(QByteArray(text), &error);
    if (error.error != QJsonParseError::NoError)
        qFatal("bad test JSON: %s", qPrintable(error.errorString()));
    return doc.object();
}

} // namespace

class TestUsageWindows : public QObject
{
    Q_OBJECT

private slots:
    void headersFullSet()
    {
        const Headers headers{
            {"Content-Type", "text/event-stream"},        {"x-codex-primary-used-percent", "42.5"},
            {"x-codex-primary-window-minutes", "300"},    {"x-codex-primary-reset-at", "1796003600"},
            {"x-codex-secondary-used-percent", "7"},      {"x-codex-secondary-window-minutes", "10080"},
            {"x-codex-secondary-reset-at", "1796500000"}, {"x-codex-credits-has-credits", "true"},
            {"x-codex-credits-unlimited", "False"},       {"x-codex-credits-balance", " 12.25 "},
        };
        const AccountUsage u = usageFromHeaders(headers, now);
        QCOMPARE(u.primary.usedPercent, std::optional<double>(42.5));
        QCOMPARE(u.primary.windowMinutes, std::optional<int>(300));
        QCOMPARE(u.primary.resetAtMs, std::optional<qint64>(1796003600000));
        QCOMPARE(u.secondary.usedPercent, std::optional<double>(7.0));
        QCOMPARE(u.secondary.windowMinutes, std::optional<int>(10080));
        QCOMPARE(u.secondary.resetAtMs, std::optional<qint64>(1796500000000));
        QCOMPARE(u.hasCredits, std::optional<bool>(true));
        QCOMPARE(u.unlimited, std::optional<bool>(false));
        QCOMPARE(u.creditsBalance, std::optional<double>(12.25));
        QCOMPARE(u.observedAtMs, now);
        QVERIFY(!u.isEmpty());
    }

    void headersCaseInsensitive()
    {
        const Headers headers{{"X-Codex-Primary-Used-Percent", "10"}, {"X-CODEX-SECONDARY-RESET-AT", "1796100000"}};
        const AccountUsage u = usageFromHeaders(headers, now);
        QCOMPARE(u.primary.usedPercent, std::optional<double>(10.0));
        QCOMPARE(u.secondary.resetAtMs, std::optional<qint64>(1796100000000));
    }

    void headersGarbageIsUnknown_data()
    {
        QTest::addColumn<QByteArray>("value");
        QTest::addColumn<bool>("balanceKnown"); // a negative balance is a plausible fact, not garbage
        QTest::newRow("text") << QByteArray("abc") << false;
        QTest::newRow("empty") << QByteArray("") << false;
        QTest::newRow("negative") << QByteArray("-5") << true;
        QTest::newRow("nan") << QByteArray("nan") << false;
        QTest::newRow("inf") << QByteArray("inf") << false;
        QTest::newRow("suffix") << QByteArray("12%") << false;
    }

    void headersGarbageIsUnknown()
    {
        QFETCH(QByteArray, value);
        QFETCH(bool, balanceKnown);
        const Headers headers{{"x-codex-primary-used-percent", value},
                              {"x-codex-primary-window-minutes", value},
                              {"x-codex-primary-reset-at", value},
                              {"x-codex-credits-has-credits", value},
                              {"x-codex-credits-balance", value}};
        const AccountUsage u = usageFromHeaders(headers, now);
        QVERIFY(!u.primary.usedPercent);
        QVERIFY(!u.primary.windowMinutes);
        QVERIFY(!u.primary.resetAtMs);
        QVERIFY(!u.hasCredits);
        QCOMPARE(bool(u.creditsBalance), balanceKnown);
        QVERIFY(u.primary.isEmpty());
    }

    void headersPercentAbove100IsClamped()
    {
        const AccountUsage u = usageFromHeaders({{"x-codex-secondary-used-percent", "130"}}, now);
        QCOMPARE(u.secondary.usedPercent, std::optional<double>(100.0));
    }

    void headersMissingStayUnknown()
    {
        const AccountUsage u = usageFromHeaders({{"x-codex-primary-used-percent", "3"}}, now);
        QCOMPARE(u.primary.usedPercent, std::optional<double>(3.0));
        QVERIFY(u.secondary.isEmpty());
        QVERIFY(!u.creditsBalance);
        QVERIFY(!u.unlimited);
    }

    void headersRelativeResetWhenNoAbsolute()
    {
        const AccountUsage u = usageFromHeaders({{"x-codex-primary-reset-after-seconds", "90"}}, now);
        QCOMPARE(u.primary.resetAtMs, std::optional<qint64>(now + 90000));
        const AccountUsage both = usageFromHeaders(
            {{"x-codex-primary-reset-after-seconds", "90"}, {"x-codex-primary-reset-at", "1796000500"}}, now);
        QCOMPARE(both.primary.resetAtMs, std::optional<qint64>(1796000500000));
    }

    void rateLimitsEventNested()
    {
        const QJsonObject event = json(R"({"type":"codex.rate_limits","rate_limits":{
            "primary":{"used_percent":55,"window_minutes":300,"reset_at":1796004000},
            "secondary":{"used_percent":12.5,"window_minutes":10080,"reset_after_seconds":3600}},
            "credits":{"has_credits":false,"unlimited":true,"balance":"0"}})");
        const auto u = usageFromRateLimitsEvent(event, now);
        QVERIFY(u);
        QCOMPARE(u->primary.usedPercent, std::optional<double>(55.0));
        QCOMPARE(u->primary.windowMinutes, std::optional<int>(300));
        QCOMPARE(u->primary.resetAtMs, std::optional<qint64>(1796004000000));
        QCOMPARE(u->secondary.usedPercent, std::optional<double>(12.5));
        QCOMPARE(u->secondary.resetAtMs, std::optional<qint64>(now + 3600000));
        QCOMPARE(u->hasCredits, std::optional<bool>(false));
        QCOMPARE(u->unlimited, std::optional<bool>(true));
        QCOMPARE(u->creditsBalance, std::optional<double>(0.0));
        QCOMPARE(u->observedAtMs, now);
    }

    void rateLimitsEventAbsoluteResetWins()
    {
        const auto u = usageFromRateLimitsEvent(
            json(R"({"rate_limits":{"primary":{"reset_at":1796009000,"reset_after_seconds":5}}})"), now);
        QVERIFY(u);
        QCOMPARE(u->primary.resetAtMs, std::optional<qint64>(1796009000000));
    }

    void rateLimitsEventTopLevelAndNulls()
    {
        const auto u = usageFromRateLimitsEvent(json(R"({"primary":{"used_percent":1},"secondary":null})"), now);
        QVERIFY(u);
        QCOMPARE(u->primary.usedPercent, std::optional<double>(1.0));
        QVERIFY(u->secondary.isEmpty());
    }

    void rateLimitsEventWithoutFactsIsNullopt()
    {
        QVERIFY(!usageFromRateLimitsEvent(json(R"({"type":"codex.rate_limits"})"), now));
        QVERIFY(!usageFromRateLimitsEvent(json(R"({"rate_limits":{"primary":null,"secondary":{}}})"), now));
        QVERIFY(!usageFromRateLimitsEvent(json(R"({"rate_limits":{"primary":{"used_percent":"x"}}})"), now));
    }

    void whamUsageFull()
    {
        const auto w = usageFromWhamUsage(json(R"({"plan_type":"pro","rate_limit":{
            "primary_window":{"used_percent":20,"limit_window_seconds":18000,"reset_after_seconds":600,
                              "reset_at":1796000600},
            "secondary_window":{"used_percent":80,"limit_window_seconds":604800,"reset_after_seconds":7200}},
            "credits":{"has_credits":true,"unlimited":false,"balance":"150.5"}})"),
                                          now);
        QVERIFY(w);
        QCOMPARE(w->planType, QStringLiteral("pro"));
        QCOMPARE(w->usage.primary.usedPercent, std::optional<double>(20.0));
        QCOMPARE(w->usage.primary.windowMinutes, std::optional<int>(300));
        QCOMPARE(w->usage.primary.resetAtMs, std::optional<qint64>(1796000600000));
        QCOMPARE(w->usage.secondary.usedPercent, std::optional<double>(80.0));
        QCOMPARE(w->usage.secondary.windowMinutes, std::optional<int>(10080));
        QCOMPARE(w->usage.secondary.resetAtMs, std::optional<qint64>(now + 7200000));
        QCOMPARE(w->usage.hasCredits, std::optional<bool>(true));
        QCOMPARE(w->usage.creditsBalance, std::optional<double>(150.5));
        QCOMPARE(w->usage.observedAtMs, now);
    }

    void whamUsagePartial()
    {
        const auto planOnly = usageFromWhamUsage(json(R"({"plan_type":"free","rate_limit":null})"), now);
        QVERIFY(planOnly);
        QCOMPARE(planOnly->planType, QStringLiteral("free"));
        QVERIFY(planOnly->usage.isEmpty());
        QVERIFY(!usageFromWhamUsage(json(R"({})"), now));
        QVERIFY(!usageFromWhamUsage(json(R"({"rate_limit":{"primary_window":"oops"}})"), now));
    }

    void mergeNewerKnownWins()
    {
        AccountUsage older;
        older.primary = {50.0, 300, now + 1000};
        older.secondary = {10.0, 10080, now + 5000};
        older.hasCredits = true;
        older.creditsBalance = 5.0;
        older.observedAtMs = now - 10;

        AccountUsage newer;
        newer.primary.usedPercent = 60.0;
        newer.primary.resetAtMs = now + 2000;
        newer.unlimited = false;
        newer.observedAtMs = now;

        const AccountUsage m = merge(older, newer);
        QCOMPARE(m.primary.usedPercent, std::optional<double>(60.0));
        QCOMPARE(m.primary.windowMinutes, std::optional<int>(300));
        QCOMPARE(m.primary.resetAtMs, std::optional<qint64>(now + 2000));
        QCOMPARE(m.secondary, older.secondary);
        QCOMPARE(m.hasCredits, std::optional<bool>(true));
        QCOMPARE(m.unlimited, std::optional<bool>(false));
        QCOMPARE(m.creditsBalance, std::optional<double>(5.0));
        QCOMPARE(m.observedAtMs, now);
        // observedAtMs never goes backwards, whichever side is newer on paper.
        QCOMPARE(merge(newer, older).observedAtMs, now);
    }

    void mergeDropsFactsOfAnEndedWindow()
    {
        AccountUsage older;
        older.primary = {90.0, 300, now - 1000}; // window ended before the new reading
        older.observedAtMs = now - 60000;

        AccountUsage freshPercent;
        freshPercent.primary.usedPercent = 5.0;
        freshPercent.observedAtMs = now;
        const AccountUsage a = merge(older, freshPercent);
        QCOMPARE(a.primary.usedPercent, std::optional<double>(5.0));
        QVERIFY(!a.primary.resetAtMs); // the old reset would have turned 5 % into 0 %
        QCOMPARE(effectiveUsedPercent(a.primary, now), std::optional<double>(5.0));

        AccountUsage freshReset;
        freshReset.primary.resetAtMs = now + 300 * 60000;
        freshReset.observedAtMs = now;
        const AccountUsage b = merge(older, freshReset);
        QCOMPARE(b.primary.resetAtMs, std::optional<qint64>(now + 300 * 60000));
        QVERIFY(!b.primary.usedPercent); // 90 % belonged to the ended window

        // A window that has not ended keeps both facts.
        older.primary.resetAtMs = now + 1000;
        const AccountUsage c = merge(older, freshReset);
        QCOMPARE(c.primary.usedPercent, std::optional<double>(90.0));
    }

    void effectiveUsedPercentAfterReset()
    {
        const QuotaWindow w{80.0, 300, now + 1000};
        QCOMPARE(effectiveUsedPercent(w, now), std::optional<double>(80.0));
        QCOMPARE(effectiveUsedPercent(w, now + 999), std::optional<double>(80.0));
        QCOMPARE(effectiveUsedPercent(w, now + 1000), std::optional<double>(0.0));
        QCOMPARE(effectiveUsedPercent(w, now + 1000000), std::optional<double>(0.0));
        QVERIFY(!effectiveUsedPercent(QuotaWindow{}, now));
        const QuotaWindow noReset{70.0, std::nullopt, std::nullopt};
        QCOMPARE(effectiveUsedPercent(noReset, now + 100000000), std::optional<double>(70.0));
    }

    void exhaustion()
    {
        const QuotaWindow full{100.0, 10080, now + 5000};
        QVERIFY(isExhausted(full, now));
        QVERIFY(!isExhausted(full, now + 5000));
        QVERIFY(!isExhausted(QuotaWindow{99.9, 300, now + 5000}, now));
        QVERIFY(!isExhausted(QuotaWindow{}, now));
    }
};

QTEST_GUILESS_MAIN(TestUsageWindows)
#include "tst_usage_windows.moc"
