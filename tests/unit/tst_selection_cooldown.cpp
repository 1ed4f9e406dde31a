#include "routing/Cooldown.h"

#include <QtTest>

using namespace sy;

namespace {

constexpr qint64 now = 1796000000000;

FailureInfo failure(FailureClass cls, std::optional<qint64> retryAtMs = std::nullopt)
{
    FailureInfo info;
    info.cls = cls;
    info.retryAtMs = retryAtMs;
    return info;
}

} // namespace

class TestCooldown : public QObject
{
    Q_OBJECT

private slots:
    void backoffDoublesFromFloorToCap_data()
    {
        QTest::addColumn<int>("failures");
        QTest::addColumn<qint64>("seconds");
        QTest::newRow("1") << 1 << qint64(30);
        QTest::newRow("2") << 2 << qint64(60);
        QTest::newRow("3") << 3 << qint64(120);
        QTest::newRow("4") << 4 << qint64(240);
        QTest::newRow("5") << 5 << qint64(300);
        QTest::newRow("6") << 6 << qint64(300);
        QTest::newRow("huge streak") << 1000000 << qint64(300);
        QTest::newRow("zero counts as first") << 0 << qint64(30);
        QTest::newRow("negative counts as first") << -3 << qint64(30);
    }

    void backoffDoublesFromFloorToCap()
    {
        QFETCH(int, failures);
        QFETCH(qint64, seconds);
        for (FailureClass cls : {FailureClass::RateLimited, FailureClass::QuotaExceeded, FailureClass::Transient})
            QCOMPARE(cooldownUntil(failure(cls), failures, now), now + seconds * 1000);
    }

    void capIsConfigurable()
    {
        const FailureInfo f = failure(FailureClass::Transient);
        QCOMPARE(cooldownUntil(f, 5, now, 600), now + 480 * 1000);
        QCOMPARE(cooldownUntil(f, 6, now, 600), now + 600 * 1000);
        QCOMPARE(cooldownUntil(f, 40, now, 600), now + 600 * 1000);
        QCOMPARE(cooldownUntil(f, 3, now, 100), now + 100 * 1000);
        // A cap below the floor wins, so recovery is never later than configured.
        QCOMPARE(cooldownUntil(f, 1, now, 10), now + 10 * 1000);
        QCOMPARE(cooldownUntil(f, 4, now, 10), now + 10 * 1000);
    }

    void upstreamRetryTimeIsHonoured()
    {
        // Far beyond the backoff cap: a known weekly reset is the truth, not a guess.
        const qint64 inThreeDays = now + 3LL * 24 * 3600 * 1000;
        QCOMPARE(cooldownUntil(failure(FailureClass::QuotaExceeded, inThreeDays), 1, now), inThreeDays);
        // Shorter than the floor: also honoured as is.
        QCOMPARE(cooldownUntil(failure(FailureClass::RateLimited, now + 1500), 4, now), now + 1500);
        QCOMPARE(cooldownUntil(failure(FailureClass::Transient, now + 45000), 1, now), now + 45000);
    }

    void pastRetryTimeFallsBackToBackoff()
    {
        QCOMPARE(cooldownUntil(failure(FailureClass::RateLimited, now - 1), 2, now), now + 60 * 1000);
        QCOMPARE(cooldownUntil(failure(FailureClass::RateLimited, now), 1, now), now + 30 * 1000);
    }

    void nonAccountFailuresGiveNoCooldown()
    {
        QCOMPARE(cooldownUntil(failure(FailureClass::RequestError), 7, now), qint64(0));
        QCOMPARE(cooldownUntil(failure(FailureClass::RequestError, now + 60000), 1, now), qint64(0));
        QCOMPARE(cooldownUntil(failure(FailureClass::AuthExpired), 3, now), qint64(0));
        QCOMPARE(cooldownUntil(failure(FailureClass::None), 1, now), qint64(0));
    }
};

QTEST_GUILESS_MAIN(TestCooldown)
#include "tst_selection_cooldown.moc"
