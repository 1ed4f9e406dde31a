// UsagePoller (issue 3 point 6) with a ManualClock and a fake fetch function: the request it builds, one poll
// at a time with the accounts spread over the interval, skipped statuses, capped exponential backoff,
// 401 reported distinctly (and a refreshed token retried at once), time-outs, and the parse into usage.
#include "ManualClock.h"
#include "usage/UsagePoller.h"

#include <QJsonDocument>
#include <QJsonObject>
#include <QSet>
#include <QSignalSpy>
#include <QTest>

using namespace sy;

namespace {

// Records every request and keeps its callback until the test answers it.
class FakeFetch
{
public:
    struct Pending
    {
        UpstreamRequest request;
        UsagePoller::FetchDone done;
        bool cancelled = false;
    };

    UsagePoller::Fetch function()
    {
        return [this](const UpstreamRequest &request, UsagePoller::FetchDone done) -> UsagePoller::Cancel {
            m_requests.append(request);
            const int index = int(m_pending.size());
            m_pending.append(Pending{request, std::move(done), false});
            return [this, index] {
                m_pending[index].cancelled = true;
                ++m_cancels;
            };
        };
    }

    int calls() const { return int(m_requests.size()); }
    QSet<QString> polledAccounts() const
    {
        QSet<QString> out;
        for (const UpstreamRequest &r : m_requests)
            out.insert(accountOf(r));
        return out;
    }
    int cancels() const { return m_cancels; }
    const UpstreamRequest &last() const { return m_requests.constLast(); }
    // The number of requests that are neither answered nor cancelled.
    int open() const
    {
        int n = 0;
        for (const Pending &p : m_pending)
            n += (p.done && !p.cancelled) ? 1 : 0;
        return n;
    }
    // Answers the oldest open request.
    void answer(int status, const QByteArray &body, const QString &error = {})
    {
        for (Pending &p : m_pending) {
            if (p.done && !p.cancelled) {
                const auto done = std::move(p.done);
                p.done = nullptr;
                done(UsageFetchReply{status, body, error});
                return;
            }
        }
        QFAIL("no open request to answer");
    }
    QByteArray header(const UpstreamRequest &request, const QByteArray &name) const
    {
        for (const auto &h : request.headers) {
            if (h.first.toLower() == name)
                return h.second;
        }
        return {};
    }
    QString accountOf(const UpstreamRequest &request) const
    {
        return QString::fromUtf8(header(request, "chatgpt-account-id"));
    }

private:
    QList<UpstreamRequest> m_requests;
    QList<Pending> m_pending;
    int m_cancels = 0;
};

QByteArray whamBody(double primary, double secondary, const QString &plan = QStringLiteral("pro"))
{
    const QJsonObject o{
        {QStringLiteral("plan_type"), plan},
        {QStringLiteral("rate_limit"),
         QJsonObject{{QStringLiteral("primary_window"), QJsonObject{{QStringLiteral("used_percent"), primary},
                                                                    {QStringLiteral("limit_window_seconds"), 18000},
                                                                    {QStringLiteral("reset_after_seconds"), 3600},
                                                                    {QStringLiteral("reset_at"), 1796003600}}},
                     {QStringLiteral("secondary_window"), QJsonObject{{QStringLiteral("used_percent"), secondary},
                                                                      {QStringLiteral("limit_window_seconds"), 604800},
                                                                      {QStringLiteral("reset_after_seconds"), 86400},
                                                                      {QStringLiteral("reset_at"), 1796086400}}}}},
        {QStringLiteral("credits"), QJsonObject{{QStringLiteral("has_credits"), true},
                                                {QStringLiteral("unlimited"), false},
                                                {QStringLiteral("balance"), QStringLiteral("12.5")}}},
    };
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

PollTarget target(int i, const QString &status = QStringLiteral("active"))
{
    return {QStringLiteral("acc_%1").arg(i), QStringLiteral("cgpt-%1").arg(i), QStringLiteral("token-%1").arg(i),
            status};
}

} // namespace

class tst_UsagePoller : public QObject
{
    Q_OBJECT

private slots:
    void requestCarriesTheAccountsCredentials()
    {
        test::ManualClock clock;
        FakeFetch fetch;
        QList<PollTarget> targets{target(1)};
        UsagePoller poller(clock, QUrl(QStringLiteral("http://127.0.0.1:9/backend-api/")), fetch.function(),
                           [&] { return targets; });
        poller.tick();
        QCOMPARE(fetch.calls(), 1);
        const UpstreamRequest &r = fetch.last();
        QCOMPARE(r.method, QByteArray("GET"));
        QCOMPARE(r.url.toString(), QStringLiteral("http://127.0.0.1:9/backend-api/wham/usage"));
        QCOMPARE(fetch.header(r, "authorization"), QByteArray("Bearer token-1"));
        QCOMPARE(fetch.header(r, "chatgpt-account-id"), QByteArray("cgpt-1"));
        QCOMPARE(fetch.header(r, "accept"), QByteArray("application/json"));
        QVERIFY(r.body.isEmpty());
        QVERIFY(poller.isPolling());
        QCOMPARE(poller.pollingAccountId(), QStringLiteral("acc_1"));
    }

    void parsesTheAnswerIntoUsageAndPlan()
    {
        test::ManualClock clock;
        FakeFetch fetch;
        QList<PollTarget> targets{target(1)};
        UsagePoller poller(clock, QUrl(QStringLiteral("http://up/backend-api")), fetch.function(),
                           [&] { return targets; });
        QSignalSpy polled(&poller, &UsagePoller::usagePolled);
        QSignalSpy failed(&poller, &UsagePoller::pollFailed);
        poller.tick();
        fetch.answer(200, whamBody(42.5, 77));
        QCOMPARE(polled.size(), 1);
        QCOMPARE(failed.size(), 0);
        QCOMPARE(polled.at(0).at(0).toString(), QStringLiteral("acc_1"));
        const AccountUsage usage = polled.at(0).at(1).value<AccountUsage>();
        QCOMPARE(usage.primary.usedPercent, std::optional<double>(42.5));
        QCOMPARE(usage.primary.windowMinutes, std::optional<int>(300));
        QCOMPARE(usage.primary.resetAtMs, std::optional<qint64>(1796003600000));
        QCOMPARE(usage.secondary.usedPercent, std::optional<double>(77));
        QCOMPARE(usage.secondary.windowMinutes, std::optional<int>(10080));
        QCOMPARE(usage.hasCredits, std::optional<bool>(true));
        QCOMPARE(usage.creditsBalance, std::optional<double>(12.5));
        QCOMPARE(usage.observedAtMs, clock.nowMs());
        QCOMPARE(polled.at(0).at(2).toString(), QStringLiteral("pro"));
        QVERIFY(!poller.isPolling());
        QCOMPARE(poller.nextDueMs(QStringLiteral("acc_1")), clock.monotonicMs() + poller.intervalMs());

        // Unusable answers are failures, not empty usage.
        const QList<QByteArray> bad{QByteArray("<html>oops</html>"), QByteArray("[1,2]"), QByteArray("{\"x\":1}")};
        for (const QByteArray &body : bad) {
            poller.pollSoon(QStringLiteral("acc_1"));
            poller.tick();
            fetch.answer(200, body);
        }
        QCOMPARE(polled.size(), 1);
        QCOMPARE(failed.size(), 3);
        QCOMPARE(failed.at(0).at(1).toInt(), 200);
        QVERIFY(failed.at(0).at(2).toString().contains(QLatin1String("not a JSON object")));
        QVERIFY(failed.at(2).at(2).toString().contains(QLatin1String("no usage facts")));
    }

    void pollsOneAtATimeSpreadOverTheInterval()
    {
        test::ManualClock clock;
        FakeFetch fetch;
        QList<PollTarget> targets{target(1), target(2), target(3), target(4)};
        UsagePoller poller(clock, QUrl(QStringLiteral("http://up/backend-api")), fetch.function(),
                           [&] { return targets; });
        poller.setIntervalMs(60000);
        QHash<QString, QList<qint64>> startsByAccount;
        QList<qint64> starts;
        int maxOpen = 0;
        // Three intervals in 500 ms steps; each answer takes 2 s, so a tick often finds a poll in flight.
        for (qint64 t = 0; t < 180000; t += 500) {
            const int before = fetch.calls();
            poller.tick();
            maxOpen = qMax(maxOpen, fetch.open());
            if (fetch.calls() > before) {
                QCOMPARE(fetch.calls(), before + 1);
                starts.append(clock.monotonicMs());
                startsByAccount[fetch.accountOf(fetch.last())].append(clock.monotonicMs());
            }
            if (fetch.open() > 0 && clock.monotonicMs() - starts.constLast() >= 2000)
                fetch.answer(200, whamBody(10, 20));
            clock.advance(500);
        }
        QCOMPARE(maxOpen, 1);
        QCOMPARE(starts.size(), 12);
        for (int i = 1; i < starts.size(); ++i)
            QCOMPARE(starts.at(i) - starts.at(i - 1), qint64(15000));
        QCOMPARE(startsByAccount.size(), 4);
        for (auto it = startsByAccount.cbegin(); it != startsByAccount.cend(); ++it) {
            QCOMPARE(it->size(), 3);
            QCOMPARE(it->at(1) - it->at(0), qint64(60000));
            QCOMPARE(it->at(2) - it->at(1), qint64(60000));
        }
    }

    void aSlowAnswerHoldsBackTheNextPoll()
    {
        test::ManualClock clock;
        FakeFetch fetch;
        QList<PollTarget> targets{target(1), target(2)};
        UsagePoller poller(clock, QUrl(QStringLiteral("http://up/backend-api")), fetch.function(),
                           [&] { return targets; });
        poller.setIntervalMs(10000);
        poller.setRequestTimeoutMs(60000);
        poller.tick();
        QCOMPARE(fetch.calls(), 1);
        clock.advance(20000); // both accounts are long due, but the first poll is still open
        poller.tick();
        QCOMPARE(fetch.calls(), 1);
        fetch.answer(200, whamBody(1, 2));
        poller.tick();
        QCOMPARE(fetch.calls(), 2);
        QCOMPARE(fetch.accountOf(fetch.last()), QStringLiteral("cgpt-2"));
    }

    void skipsPausedReauthDeactivatedAndTokenlessAccounts()
    {
        test::ManualClock clock;
        FakeFetch fetch;
        PollTarget noToken = target(5);
        noToken.accessToken.clear();
        QList<PollTarget> targets{target(1, QStringLiteral("paused")),
                                  target(2, QStringLiteral("reauth_required")),
                                  target(3, QStringLiteral("deactivated")),
                                  target(4, QStringLiteral("rate_limited")),
                                  noToken,
                                  target(6, QStringLiteral("quota_exceeded")),
                                  target(7, QStringLiteral("active"))};
        UsagePoller poller(clock, QUrl(QStringLiteral("http://up/backend-api")), fetch.function(),
                           [&] { return targets; });
        poller.setIntervalMs(30000);
        for (qint64 t = 0; t < 120000; t += 1000) {
            poller.tick();
            while (fetch.open() > 0)
                fetch.answer(200, whamBody(1, 2));
            clock.advance(1000);
        }
        QCOMPARE(fetch.polledAccounts(),
                 (QSet<QString>{QStringLiteral("cgpt-4"), QStringLiteral("cgpt-6"), QStringLiteral("cgpt-7")}));
        QCOMPARE(fetch.calls(), 12); // 3 eligible accounts, 4 intervals
        QVERIFY(poller.nextDueMs(QStringLiteral("acc_1")) < 0);
        QVERIFY(poller.nextDueMs(QStringLiteral("acc_2")) < 0);
        QVERIFY(poller.nextDueMs(QStringLiteral("acc_3")) < 0);
        QVERIFY(poller.nextDueMs(QStringLiteral("acc_5")) < 0);
        QVERIFY(poller.nextDueMs(QStringLiteral("acc_4")) >= 0);
        QVERIFY(poller.nextDueMs(QStringLiteral("acc_6")) >= 0);
        QVERIFY(poller.nextDueMs(QStringLiteral("acc_7")) >= 0);

        // Resuming an account brings it back into the rotation.
        targets[0].status = QStringLiteral("active");
        const int before = fetch.calls();
        for (qint64 t = 0; t < 30000; t += 1000) {
            poller.tick();
            while (fetch.open() > 0)
                fetch.answer(200, whamBody(1, 2));
            clock.advance(1000);
        }
        QCOMPARE(fetch.calls() - before, 4);
        QVERIFY(poller.nextDueMs(QStringLiteral("acc_1")) >= 0);
    }

    void failuresBackOffExponentiallyUpToTheCap()
    {
        test::ManualClock clock;
        FakeFetch fetch;
        QList<PollTarget> targets{target(1)};
        UsagePoller poller(clock, QUrl(QStringLiteral("http://up/backend-api")), fetch.function(),
                           [&] { return targets; });
        poller.setIntervalMs(60000);
        poller.setBackoff(60000, 300000);
        QCOMPARE(poller.backoffFor(0), qint64(0));
        QCOMPARE(poller.backoffFor(1), qint64(60000));
        QCOMPARE(poller.backoffFor(3), qint64(240000));
        QCOMPARE(poller.backoffFor(4), qint64(300000));
        QCOMPARE(poller.backoffFor(40), qint64(300000));

        QSignalSpy failed(&poller, &UsagePoller::pollFailed);
        const QList<qint64> expected{60000, 120000, 240000, 300000, 300000};
        for (int i = 0; i < expected.size(); ++i) {
            poller.tick();
            QCOMPARE(fetch.calls(), i + 1);
            if (i % 2 == 0)
                fetch.answer(503, QByteArray("{}"));
            else
                fetch.answer(0, {}, QStringLiteral("connection_failed: Connection refused"));
            QCOMPARE(failed.size(), i + 1);
            QCOMPARE(failed.at(i).at(3).toLongLong(), expected.at(i));
            QCOMPARE(poller.consecutiveFailures(QStringLiteral("acc_1")), i + 1);
            // Nothing happens before the backoff ends, then the poll comes at once.
            clock.advance(expected.at(i) - 1);
            poller.tick();
            QCOMPARE(fetch.calls(), i + 1);
            clock.advance(1);
        }
        QCOMPARE(failed.at(0).at(1).toInt(), 503);
        QCOMPARE(failed.at(1).at(1).toInt(), 0);
        QVERIFY(failed.at(1).at(2).toString().contains(QLatin1String("Connection refused")));

        // Success resets the count; the next poll is one interval later.
        poller.tick();
        fetch.answer(200, whamBody(5, 6));
        QCOMPARE(poller.consecutiveFailures(QStringLiteral("acc_1")), 0);
        QCOMPARE(poller.nextDueMs(QStringLiteral("acc_1")), clock.monotonicMs() + 60000);
    }

    void aPollWithoutAnswerTimesOut()
    {
        test::ManualClock clock;
        FakeFetch fetch;
        QList<PollTarget> targets{target(1), target(2)};
        UsagePoller poller(clock, QUrl(QStringLiteral("http://up/backend-api")), fetch.function(),
                           [&] { return targets; });
        poller.setRequestTimeoutMs(5000);
        poller.setBackoff(60000, 600000);
        QSignalSpy failed(&poller, &UsagePoller::pollFailed);
        poller.tick();
        clock.advance(4999);
        poller.tick();
        QCOMPARE(fetch.cancels(), 0);
        clock.advance(1);
        poller.tick();
        QCOMPARE(fetch.cancels(), 1);
        QCOMPARE(failed.size(), 1);
        QCOMPARE(failed.at(0).at(0).toString(), QStringLiteral("acc_1"));
        QCOMPARE(failed.at(0).at(1).toInt(), 0);
        QVERIFY(failed.at(0).at(2).toString().contains(QLatin1String("no answer")));
        QVERIFY(!poller.isPolling());
        QCOMPARE(poller.nextDueMs(QStringLiteral("acc_1")), clock.monotonicMs() + 60000);
    }

    void unauthorizedIsReportedAndARefreshedTokenIsPolledAtOnce()
    {
        test::ManualClock clock;
        FakeFetch fetch;
        QList<PollTarget> targets{target(1)};
        UsagePoller poller(clock, QUrl(QStringLiteral("http://up/backend-api")), fetch.function(),
                           [&] { return targets; });
        QSignalSpy unauthorized(&poller, &UsagePoller::unauthorized);
        QSignalSpy failed(&poller, &UsagePoller::pollFailed);
        QList<QByteArray> order;
        connect(&poller, &UsagePoller::unauthorized, this, [&] { order << "unauthorized"; });
        connect(&poller, &UsagePoller::pollFailed, this, [&] { order << "failed"; });

        poller.tick();
        fetch.answer(401, QByteArray(R"({"error":{"code":"token_expired"}})"));
        QCOMPARE(unauthorized.size(), 1);
        QCOMPARE(unauthorized.at(0).at(0).toString(), QStringLiteral("acc_1"));
        QCOMPARE(failed.size(), 1);
        QCOMPARE(failed.at(0).at(1).toInt(), 401);
        QCOMPARE(order, (QList<QByteArray>{"unauthorized", "failed"}));

        // Same token: it waits out the backoff.
        clock.advance(1000);
        poller.tick();
        QCOMPARE(fetch.calls(), 1);
        // A refreshed token is tried at the next tick.
        targets[0].accessToken = QStringLiteral("token-1-refreshed");
        poller.tick();
        QCOMPARE(fetch.calls(), 2);
        QCOMPARE(fetch.header(fetch.last(), "authorization"), QByteArray("Bearer token-1-refreshed"));
        fetch.answer(200, whamBody(1, 2));
        QCOMPARE(poller.consecutiveFailures(QStringLiteral("acc_1")), 0);

        // Other failures never claim the token was refused.
        poller.pollSoon(QStringLiteral("acc_1"));
        poller.tick();
        fetch.answer(403, QByteArray("{}"));
        QCOMPARE(unauthorized.size(), 1);
    }

    void pollSoonSkipsBackoffAndSpacing()
    {
        test::ManualClock clock;
        FakeFetch fetch;
        QList<PollTarget> targets{target(1), target(2)};
        UsagePoller poller(clock, QUrl(QStringLiteral("http://up/backend-api")), fetch.function(),
                           [&] { return targets; });
        poller.tick();
        fetch.answer(500, {});
        poller.tick(); // spacing: the second account waits interval / 2
        QCOMPARE(fetch.calls(), 1);
        poller.pollSoon(QStringLiteral("acc_1"));
        QCOMPARE(poller.consecutiveFailures(QStringLiteral("acc_1")), 0);
        poller.tick();
        QCOMPARE(fetch.calls(), 2);
        QCOMPARE(fetch.accountOf(fetch.last()), QStringLiteral("cgpt-1"));
    }

    void removedAccountsAreForgottenAndStopCancels()
    {
        test::ManualClock clock;
        FakeFetch fetch;
        QList<PollTarget> targets{target(1), target(2)};
        UsagePoller poller(clock, QUrl(QStringLiteral("http://up/backend-api")), fetch.function(),
                           [&] { return targets; });
        QSignalSpy polled(&poller, &UsagePoller::usagePolled);
        QSignalSpy failed(&poller, &UsagePoller::pollFailed);
        poller.start();
        QVERIFY(poller.isRunning());
        QCOMPARE(fetch.calls(), 1);
        fetch.answer(200, whamBody(1, 2));
        targets.removeFirst();
        poller.tick();
        QCOMPARE(poller.nextDueMs(QStringLiteral("acc_1")), qint64(-1));

        clock.advance(poller.intervalMs());
        poller.tick();
        QCOMPARE(fetch.open(), 1);
        poller.stop();
        QVERIFY(!poller.isRunning());
        QVERIFY(!poller.isPolling());
        QCOMPARE(fetch.cancels(), 1);
        QCOMPARE(polled.size(), 1);
        QCOMPARE(failed.size(), 0);
    }
};

QTEST_GUILESS_MAIN(tst_UsagePoller)
#include "tst_usage_poller.moc"
