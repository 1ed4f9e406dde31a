// UsagePoller against the fake upstream process through the real UpstreamClient: GET /backend-api/wham/usage
// with each account's credentials, the fake's numbers parsed into usage and plan, a scripted 401 reported as
// unauthorized, a scripted 500 and an unreachable upstream reported as failures with backoff.
#include "ManualClock.h"
#include "lib/FakeUpstreamProcess.h"
#include "upstream/UpstreamClient.h"
#include "usage/UsagePoller.h"

#include <QJsonArray>
#include <QSignalSpy>
#include <QTcpServer>
#include <QTest>

using namespace sy;
using namespace sy::test;

namespace {

// Ticks the poller (its clock is manual) until `done` holds or the real-time timeout passes.
template <typename Pred> bool drive(UsagePoller &poller, Pred done, int timeoutMs = 10000)
{
    QElapsedTimer timer;
    timer.start();
    while (!done()) {
        if (timer.elapsed() > timeoutMs)
            return false;
        poller.tick();
        QTest::qWait(10);
    }
    return true;
}

QJsonArray usageRequests(FakeUpstreamProcess &fake)
{
    QJsonArray out;
    for (const QJsonValue &v : fake.log()) {
        if (v.toObject().value(QLatin1String("path")).toString().endsWith(QLatin1String("/wham/usage")))
            out.append(v);
    }
    return out;
}

} // namespace

class tst_UsagePollerUpstream : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;

private slots:
    void initTestCase()
    {
        QVERIFY2(!qEnvironmentVariableIsEmpty("SWITCHYARD_FAKE_UPSTREAM"), "run through ctest");
        QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString()));
    }

    void init() { QVERIFY(m_fake.reset()); }

    void pollsEachAccountAndParsesTheFakesNumbers()
    {
        QVERIFY(m_fake.setUsage(QStringLiteral("cgpt-a"), {{QStringLiteral("plan_type"), QStringLiteral("pro")},
                                                           {QStringLiteral("primary_used_percent"), 61.5},
                                                           {QStringLiteral("secondary_used_percent"), 22},
                                                           {QStringLiteral("primary_reset_after_seconds"), 1800}}));
        QVERIFY(m_fake.setUsage(QStringLiteral("cgpt-b"), {{QStringLiteral("plan_type"), QStringLiteral("team")},
                                                           {QStringLiteral("primary_used_percent"), 5},
                                                           {QStringLiteral("secondary_used_percent"), 99}}));
        ManualClock clock;
        UpstreamClient client;
        const QList<PollTarget> targets{
            {QStringLiteral("acc_a"), QStringLiteral("cgpt-a"), QStringLiteral("tok-a"), QStringLiteral("active")},
            {QStringLiteral("acc_b"), QStringLiteral("cgpt-b"), QStringLiteral("tok-b"),
             QStringLiteral("rate_limited")},
            {QStringLiteral("acc_c"), QStringLiteral("cgpt-c"), QStringLiteral("tok-c"), QStringLiteral("paused")}};
        UsagePoller poller(clock, QUrl(m_fake.baseUrl()), &client, [&] { return targets; });
        poller.setIntervalMs(60000);
        QSignalSpy polled(&poller, &UsagePoller::usagePolled);
        QSignalSpy failed(&poller, &UsagePoller::pollFailed);

        QVERIFY(drive(poller, [&] { return polled.size() == 1; }));
        // The second account waits its turn (interval / 2 eligible accounts), then comes.
        QTest::qWait(100);
        poller.tick();
        QCOMPARE(polled.size(), 1);
        clock.advance(30000);
        QVERIFY(drive(poller, [&] { return polled.size() == 2; }));
        QCOMPARE(failed.size(), 0);

        QHash<QString, QList<QVariant>> byAccount;
        for (const QList<QVariant> &args : std::as_const(polled))
            byAccount.insert(args.at(0).toString(), args);
        const AccountUsage a = byAccount.value(QStringLiteral("acc_a")).at(1).value<AccountUsage>();
        QCOMPARE(a.primary.usedPercent, std::optional<double>(61.5));
        QCOMPARE(a.primary.windowMinutes, std::optional<int>(300));
        QVERIFY(a.primary.resetAtMs.has_value());
        QCOMPARE(a.secondary.usedPercent, std::optional<double>(22));
        QCOMPARE(a.secondary.windowMinutes, std::optional<int>(10080));
        QCOMPARE(byAccount.value(QStringLiteral("acc_a")).at(2).toString(), QStringLiteral("pro"));
        const AccountUsage b = byAccount.value(QStringLiteral("acc_b")).at(1).value<AccountUsage>();
        QCOMPARE(b.secondary.usedPercent, std::optional<double>(99));
        QCOMPARE(byAccount.value(QStringLiteral("acc_b")).at(2).toString(), QStringLiteral("team"));

        // The upstream saw one GET per eligible account, with that account's credentials, never the paused one.
        const QJsonArray requests = usageRequests(m_fake);
        QCOMPARE(requests.size(), 2);
        QSet<QString> seen;
        for (const QJsonValue &v : requests) {
            const QJsonObject r = v.toObject();
            QCOMPARE(r.value(QLatin1String("method")).toString(), QStringLiteral("GET"));
            QCOMPARE(r.value(QLatin1String("path")).toString(), QStringLiteral("/backend-api/wham/usage"));
            const QString account = r.value(QLatin1String("chatgpt_account_id")).toString();
            QCOMPARE(r.value(QLatin1String("authorization")).toString(),
                     QStringLiteral("tok-") + account.mid(int(qstrlen("cgpt-"))));
            seen.insert(account);
        }
        QCOMPARE(seen, (QSet<QString>{QStringLiteral("cgpt-a"), QStringLiteral("cgpt-b")}));
    }

    void unauthorizedAndServerErrorsAreReported()
    {
        QVERIFY(m_fake.script(QStringLiteral("cgpt-a"), {QStringLiteral("401")}, false, QStringLiteral("usage")));
        QVERIFY(m_fake.script(QStringLiteral("cgpt-b"), {QStringLiteral("500")}, false, QStringLiteral("usage")));
        ManualClock clock;
        UpstreamClient client;
        QList<PollTarget> targets{
            {QStringLiteral("acc_a"), QStringLiteral("cgpt-a"), QStringLiteral("tok-a"), QStringLiteral("active")},
            {QStringLiteral("acc_b"), QStringLiteral("cgpt-b"), QStringLiteral("tok-b"), QStringLiteral("active")}};
        UsagePoller poller(clock, QUrl(m_fake.baseUrl()), &client, [&] { return targets; });
        poller.setBackoff(60000, 1800000);
        QSignalSpy polled(&poller, &UsagePoller::usagePolled);
        QSignalSpy failed(&poller, &UsagePoller::pollFailed);
        QSignalSpy unauthorized(&poller, &UsagePoller::unauthorized);

        QVERIFY(drive(poller, [&] { return failed.size() == 1; }));
        QCOMPARE(unauthorized.size(), 1);
        QCOMPARE(unauthorized.at(0).at(0).toString(), QStringLiteral("acc_a"));
        QCOMPARE(failed.at(0).at(1).toInt(), 401);
        clock.advance(30000);
        QVERIFY(drive(poller, [&] { return failed.size() == 2; }));
        QCOMPARE(failed.at(1).at(0).toString(), QStringLiteral("acc_b"));
        QCOMPARE(failed.at(1).at(1).toInt(), 500);
        QCOMPARE(failed.at(1).at(3).toLongLong(), qint64(60000));
        QCOMPARE(unauthorized.size(), 1);

        // The refreshed token is used at once and succeeds (the script is used up).
        targets[0].accessToken = QStringLiteral("tok-a2");
        QVERIFY(drive(poller, [&] { return polled.size() == 1; }));
        QCOMPARE(polled.at(0).at(0).toString(), QStringLiteral("acc_a"));
        const QJsonArray requests = usageRequests(m_fake);
        QCOMPARE(requests.last().toObject().value(QLatin1String("authorization")).toString(), QStringLiteral("tok-a2"));
    }

    void unreachableUpstreamBacksOff()
    {
        quint16 port = 0;
        {
            QTcpServer probe;
            QVERIFY(probe.listen(QHostAddress::LocalHost, 0));
            port = probe.serverPort();
        }
        ManualClock clock;
        UpstreamClient client;
        const QList<PollTarget> targets{
            {QStringLiteral("acc_a"), QStringLiteral("cgpt-a"), QStringLiteral("tok-a"), QStringLiteral("active")}};
        UsagePoller poller(clock, QUrl(QStringLiteral("http://127.0.0.1:%1/backend-api").arg(port)), &client,
                           [&] { return targets; });
        poller.setBackoff(1000, 4000);
        poller.setIntervalMs(1000);
        QSignalSpy failed(&poller, &UsagePoller::pollFailed);
        QList<qint64> retries;
        for (int i = 0; i < 4; ++i) {
            QVERIFY(drive(poller, [&] { return failed.size() == i + 1; }));
            QCOMPARE(failed.at(i).at(1).toInt(), 0);
            retries << failed.at(i).at(3).toLongLong();
            clock.advance(retries.last());
        }
        QCOMPARE(retries, (QList<qint64>{1000, 2000, 4000, 4000}));
    }
};

QTEST_GUILESS_MAIN(tst_UsagePollerUpstream)
#include "tst_usage_poller_upstream.moc"
