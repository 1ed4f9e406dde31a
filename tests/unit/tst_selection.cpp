#include "routing/Selection.h"
#include "util/Ids.h"

#include <QtTest>

using namespace sy;

Q_DECLARE_METATYPE(sy::AccountStatus)

namespace {

constexpr qint64 now = 1796000000000;
constexpr qint64 minute = 60 * 1000;

Candidate account(const QString &id, const QString &plan = QStringLiteral("plus"))
{
    Candidate c;
    c.accountId = id;
    c.alias = id + QStringLiteral("-alias");
    c.plan = plan;
    c.freeSlots = 4;
    return c;
}

Candidate withUsage(Candidate c, std::optional<double> weekly, std::optional<double> fiveHour = std::nullopt)
{
    c.usage.secondary.usedPercent = weekly;
    c.usage.primary.usedPercent = fiveHour;
    return c;
}

QString reasonFor(const SelectionResult &r, const QString &id)
{
    for (const auto &s : r.skipped) {
        if (s.first == id)
            return s.second;
    }
    return QStringLiteral("<not skipped>");
}

SelectionResult select(const QList<Candidate> &cs, const SelectionRequest &req = {},
                       Strategy strategy = Strategy::UsageWeighted, qint64 at = now)
{
    QRandomGenerator rng(42);
    return selectAccount(cs, req, strategy, at, rng);
}

} // namespace

class TestSelection : public QObject
{
    Q_OBJECT

private slots:
    void eligibilityReasons_data()
    {
        QTest::addColumn<AccountStatus>("status");
        QTest::addColumn<qint64>("cooldownUntil");
        QTest::addColumn<int>("freeSlots");
        QTest::addColumn<bool>("excluded");
        QTest::addColumn<QString>("reason");
        const QString none;
        QTest::newRow("active") << AccountStatus::Active << qint64(0) << 4 << false << none;
        QTest::newRow("paused") << AccountStatus::Paused << qint64(0) << 4 << false << "paused";
        QTest::newRow("reauth") << AccountStatus::ReauthRequired << qint64(0) << 4 << false << "reauth_required";
        QTest::newRow("deactivated") << AccountStatus::Deactivated << qint64(0) << 4 << false << "deactivated";
        QTest::newRow("cooling") << AccountStatus::Active << now + minute << 4 << false
                                 << QStringLiteral("cooldown_until=") + isoUtc(now + minute);
        QTest::newRow("cooldown ends now") << AccountStatus::Active << now << 4 << false << none;
        QTest::newRow("rate limited, cooldown passed") << AccountStatus::RateLimited << now - 1 << 4 << false << none;
        QTest::newRow("rate limited, cooling") << AccountStatus::RateLimited << now + 1 << 4 << false
                                               << QStringLiteral("cooldown_until=") + isoUtc(now + 1);
        QTest::newRow("quota exceeded, cooldown passed")
            << AccountStatus::QuotaExceeded << qint64(0) << 4 << false << none;
        QTest::newRow("no slot") << AccountStatus::Active << qint64(0) << 0 << false << "no_free_slot";
        QTest::newRow("negative slots") << AccountStatus::Active << qint64(0) << -1 << false << "no_free_slot";
        QTest::newRow("excluded") << AccountStatus::Active << qint64(0) << 4 << true << "excluded";
        QTest::newRow("excluded wins over paused") << AccountStatus::Paused << qint64(0) << 4 << true << "excluded";
        QTest::newRow("paused wins over cooldown") << AccountStatus::Paused << now + minute << 4 << false << "paused";
        QTest::newRow("cooldown wins over no slot") << AccountStatus::Active << now + minute << 0 << false
                                                    << QStringLiteral("cooldown_until=") + isoUtc(now + minute);
    }

    void eligibilityReasons()
    {
        QFETCH(AccountStatus, status);
        QFETCH(qint64, cooldownUntil);
        QFETCH(int, freeSlots);
        QFETCH(bool, excluded);
        QFETCH(QString, reason);
        Candidate c = account(QStringLiteral("a"));
        c.status = status;
        c.cooldownUntilMs = cooldownUntil;
        c.freeSlots = freeSlots;
        SelectionRequest req;
        if (excluded)
            req.excluded.insert(QStringLiteral("a"));
        QCOMPARE(ineligibilityReason(c, req, now), reason);

        const SelectionResult r = select({c}, req);
        QCOMPARE(r.ok(), reason.isEmpty());
        if (!reason.isEmpty()) {
            QCOMPARE(r.errorCode, QStringLiteral("no_eligible_account"));
            QCOMPARE(reasonFor(r, QStringLiteral("a")), reason);
        }
    }

    void limitedAccountWaitsForKnownReset()
    {
        Candidate c = account(QStringLiteral("q"));
        c.status = AccountStatus::QuotaExceeded;
        c.usage.secondary = QuotaWindow{100.0, 10080, now + 2 * minute};
        QCOMPARE(ineligibilityReason(c, {}, now), QStringLiteral("quota_exceeded_until=") + isoUtc(now + 2 * minute));
        QCOMPARE(availableAgainAtMs(c, now), std::optional<qint64>(now + 2 * minute));
        // Once the reset passes the window counts as 0 % and the account is eligible again.
        QVERIFY(ineligibilityReason(c, {}, now + 2 * minute).isEmpty());
        QVERIFY(!availableAgainAtMs(c, now + 2 * minute));

        c.status = AccountStatus::RateLimited;
        c.usage.primary = QuotaWindow{100.0, 300, now + minute};
        QCOMPARE(ineligibilityReason(c, {}, now), QStringLiteral("rate_limited_until=") + isoUtc(now + 2 * minute));
    }

    void activeAccountAtFullUsageStaysEligible()
    {
        Candidate c = withUsage(account(QStringLiteral("a")), 100.0, 100.0);
        c.usage.secondary.resetAtMs = now + minute;
        QVERIFY(ineligibilityReason(c, {}, now).isEmpty());
        QCOMPARE(select({c}, {}, Strategy::CapacityWeighted).accountId, QStringLiteral("a"));
    }

    void continuationGoesToOwner()
    {
        const QList<Candidate> cs{account(QStringLiteral("a")), account(QStringLiteral("b")),
                                  account(QStringLiteral("c"))};
        SelectionRequest req;
        req.continuationAccountId = QStringLiteral("c");
        req.affinityAccountId = QStringLiteral("a");
        req.pinnedAccountId = QStringLiteral("b");
        req.pinStrict = true;
        const SelectionResult r = select(cs, req);
        QCOMPARE(r.accountId, QStringLiteral("c"));
        QCOMPARE(r.reason, QStringLiteral("continuation"));
        QCOMPARE(reasonFor(r, QStringLiteral("a")), QStringLiteral("not_selected"));
    }

    void continuationNeverRedirected_data()
    {
        QTest::addColumn<AccountStatus>("status");
        QTest::addColumn<qint64>("cooldownUntil");
        QTest::addColumn<int>("freeSlots");
        QTest::addColumn<bool>("excluded");
        QTest::addColumn<bool>("present");
        QTest::addColumn<qint64>("earliestReset"); // 0 = none
        QTest::newRow("cooling") << AccountStatus::RateLimited << now + 5 * minute << 4 << false << true
                                 << now + 5 * minute;
        QTest::newRow("paused") << AccountStatus::Paused << qint64(0) << 4 << false << true << qint64(0);
        QTest::newRow("reauth") << AccountStatus::ReauthRequired << qint64(0) << 4 << false << true << qint64(0);
        QTest::newRow("no slot") << AccountStatus::Active << qint64(0) << 0 << false << true << qint64(0);
        QTest::newRow("already tried") << AccountStatus::Active << qint64(0) << 4 << true << true << qint64(0);
        QTest::newRow("unknown account") << AccountStatus::Active << qint64(0) << 4 << false << false << qint64(0);
    }

    void continuationNeverRedirected()
    {
        QFETCH(AccountStatus, status);
        QFETCH(qint64, cooldownUntil);
        QFETCH(int, freeSlots);
        QFETCH(bool, excluded);
        QFETCH(bool, present);
        QFETCH(qint64, earliestReset);
        Candidate owner = account(QStringLiteral("owner"));
        owner.status = status;
        owner.cooldownUntilMs = cooldownUntil;
        owner.freeSlots = freeSlots;
        QList<Candidate> cs{account(QStringLiteral("free1")), account(QStringLiteral("free2"), QStringLiteral("pro"))};
        if (present)
            cs.append(owner);
        // Another account with an earlier reset must not leak into the owner's answer.
        Candidate other = account(QStringLiteral("other"));
        other.cooldownUntilMs = now + minute;
        cs.append(other);
        SelectionRequest req;
        req.continuationAccountId = QStringLiteral("owner");
        if (excluded)
            req.excluded.insert(QStringLiteral("owner"));
        for (Strategy s :
             {Strategy::CapacityWeighted, Strategy::UsageWeighted, Strategy::RoundRobin, Strategy::FillFirst}) {
            const SelectionResult r = select(cs, req, s);
            QVERIFY(r.accountId.isEmpty());
            QCOMPARE(r.errorCode, QStringLiteral("previous_response_owner_unavailable"));
            QCOMPARE(r.earliestResetMs.value_or(0), earliestReset);
            QCOMPARE(r.skipped.size(), cs.size());
        }
    }

    void continuationWithUnknownOwnerFails()
    {
        SelectionRequest req;
        req.continuationOwnerUnknown = true;
        const SelectionResult r = select({account(QStringLiteral("a"))}, req);
        QVERIFY(!r.ok());
        QCOMPARE(r.errorCode, QStringLiteral("previous_response_owner_unavailable"));
        QCOMPARE(reasonFor(r, QStringLiteral("a")), QStringLiteral("not_selected"));
    }

    void affinityKeepsSessionWhileEligible()
    {
        // "b" is the worst choice for the strategy; affinity still wins, and beats a pin.
        const QList<Candidate> cs{withUsage(account(QStringLiteral("a")), 0.0),
                                  withUsage(account(QStringLiteral("b")), 90.0),
                                  withUsage(account(QStringLiteral("c")), 0.0)};
        SelectionRequest req;
        req.affinityAccountId = QStringLiteral("b");
        req.pinnedAccountId = QStringLiteral("c");
        req.pinStrict = true;
        SelectionResult r = select(cs, req);
        QCOMPARE(r.accountId, QStringLiteral("b"));
        QCOMPARE(r.reason, QStringLiteral("affinity"));
        QVERIFY(!r.pinFallback);

        // Once the bound account is not eligible, the next rule (the pin) decides.
        req.excluded.insert(QStringLiteral("b"));
        r = select(cs, req);
        QCOMPARE(r.accountId, QStringLiteral("c"));
        QCOMPARE(r.reason, QStringLiteral("pin"));
        QCOMPARE(reasonFor(r, QStringLiteral("b")), QStringLiteral("excluded"));

        // Without a pin, the strategy.
        req.pinnedAccountId.clear();
        r = select(cs, req);
        QCOMPARE(r.accountId, QStringLiteral("a"));
        QCOMPARE(r.reason, QStringLiteral("strategy:usage_weighted"));
    }

    void affinityToUnknownAccountFallsThrough()
    {
        SelectionRequest req;
        req.affinityAccountId = QStringLiteral("gone");
        const SelectionResult r = select({account(QStringLiteral("a"))}, req);
        QCOMPARE(r.accountId, QStringLiteral("a"));
        QCOMPARE(r.reason, QStringLiteral("strategy:usage_weighted"));
    }

    void pinPreferredWhenEligible()
    {
        const QList<Candidate> cs{withUsage(account(QStringLiteral("a")), 0.0),
                                  withUsage(account(QStringLiteral("b")), 95.0)};
        SelectionRequest req;
        req.pinnedAccountId = QStringLiteral("b");
        const SelectionResult r = select(cs, req);
        QCOMPARE(r.accountId, QStringLiteral("b"));
        QCOMPARE(r.reason, QStringLiteral("pin"));
        QVERIFY(!r.pinFallback);
        QCOMPARE(reasonFor(r, QStringLiteral("a")), QStringLiteral("not_selected"));
    }

    void pinFallsBackUnlessStrict()
    {
        Candidate pinned = account(QStringLiteral("p"));
        pinned.status = AccountStatus::RateLimited;
        pinned.cooldownUntilMs = now + 3 * minute;
        Candidate other = account(QStringLiteral("o"));
        other.cooldownUntilMs = now + minute; // earlier, but not the pinned account
        const QList<Candidate> cs{pinned, other, account(QStringLiteral("x"))};
        SelectionRequest req;
        req.pinnedAccountId = QStringLiteral("p");

        SelectionResult r = select(cs, req);
        QCOMPARE(r.accountId, QStringLiteral("x"));
        QVERIFY(r.pinFallback);
        QCOMPARE(r.reason, QStringLiteral("strategy:usage_weighted"));
        QCOMPARE(reasonFor(r, QStringLiteral("p")), QStringLiteral("cooldown_until=") + isoUtc(now + 3 * minute));

        req.pinStrict = true;
        r = select(cs, req);
        QVERIFY(!r.ok());
        QVERIFY(!r.pinFallback);
        QCOMPARE(r.errorCode, QStringLiteral("pinned_account_unavailable"));
        QCOMPARE(r.earliestResetMs, std::optional<qint64>(now + 3 * minute));

        req.pinnedAccountId = QStringLiteral("removed");
        r = select(cs, req);
        QCOMPARE(r.errorCode, QStringLiteral("pinned_account_unavailable"));
        QVERIFY(!r.earliestResetMs);
    }

    void pinFallbackWithNothingEligible()
    {
        Candidate pinned = account(QStringLiteral("p"));
        pinned.status = AccountStatus::Paused;
        SelectionRequest req;
        req.pinnedAccountId = QStringLiteral("p");
        const SelectionResult r = select({pinned}, req);
        QCOMPARE(r.errorCode, QStringLiteral("no_eligible_account"));
        QVERIFY(r.pinFallback);
    }

    void excludedAccountsAreSkipped()
    {
        const QList<Candidate> cs{account(QStringLiteral("a")), account(QStringLiteral("b"))};
        SelectionRequest req;
        req.excluded = {QStringLiteral("a")};
        for (Strategy s :
             {Strategy::CapacityWeighted, Strategy::UsageWeighted, Strategy::RoundRobin, Strategy::FillFirst}) {
            const SelectionResult r = select(cs, req, s);
            QCOMPARE(r.accountId, QStringLiteral("b"));
            QCOMPARE(r.skipped, (QList<QPair<QString, QString>>{{QStringLiteral("a"), QStringLiteral("excluded")}}));
        }
        req.excluded.insert(QStringLiteral("b"));
        const SelectionResult none = select(cs, req);
        QCOMPARE(none.errorCode, QStringLiteral("no_eligible_account"));
        QCOMPARE(none.skipped.size(), 2);
        QVERIFY(!none.earliestResetMs);
    }

    void noEligibleAccountReportsEarliestReset()
    {
        Candidate limited = account(QStringLiteral("limited"));
        limited.status = AccountStatus::QuotaExceeded;
        limited.usage.secondary = QuotaWindow{100.0, 10080, now + 90 * minute};
        Candidate cooling = account(QStringLiteral("cooling"));
        cooling.status = AccountStatus::RateLimited;
        cooling.cooldownUntilMs = now + 20 * minute;
        Candidate tried = account(QStringLiteral("tried"));
        tried.cooldownUntilMs = now + 5 * minute; // failed earlier in this request, then cooled down
        Candidate paused = account(QStringLiteral("paused"));
        paused.status = AccountStatus::Paused;
        paused.cooldownUntilMs = now + minute; // paused accounts do not come back by themselves
        Candidate busy = account(QStringLiteral("busy"));
        busy.freeSlots = 0;
        SelectionRequest req;
        req.excluded.insert(QStringLiteral("tried"));

        const QList<Candidate> cs{limited, cooling, tried, paused, busy};
        SelectionResult r = select(cs, req, Strategy::CapacityWeighted);
        QVERIFY(!r.ok());
        QCOMPARE(r.errorCode, QStringLiteral("no_eligible_account"));
        QCOMPARE(r.earliestResetMs, std::optional<qint64>(now + 5 * minute));
        const QList<QPair<QString, QString>> expected{
            {QStringLiteral("limited"), QStringLiteral("quota_exceeded_until=") + isoUtc(now + 90 * minute)},
            {QStringLiteral("cooling"), QStringLiteral("cooldown_until=") + isoUtc(now + 20 * minute)},
            {QStringLiteral("tried"), QStringLiteral("excluded")},
            {QStringLiteral("paused"), QStringLiteral("paused")},
            {QStringLiteral("busy"), QStringLiteral("no_free_slot")},
        };
        QCOMPARE(r.skipped, expected);

        r = select({limited, cooling, paused, busy}, {}, Strategy::RoundRobin);
        QCOMPARE(r.earliestResetMs, std::optional<qint64>(now + 20 * minute));
        r = select({paused, busy}, {});
        QVERIFY(!r.earliestResetMs);
    }

    void skippedListsEveryOtherCandidateInOrder()
    {
        Candidate paused = account(QStringLiteral("p"));
        paused.status = AccountStatus::Deactivated;
        const QList<Candidate> cs{account(QStringLiteral("z")), paused, account(QStringLiteral("a"))};
        const SelectionResult r = select(cs);
        QCOMPARE(r.accountId, QStringLiteral("a"));
        const QList<QPair<QString, QString>> expected{{QStringLiteral("z"), QStringLiteral("not_selected")},
                                                      {QStringLiteral("p"), QStringLiteral("deactivated")}};
        QCOMPARE(r.skipped, expected);
        QVERIFY(r.errorCode.isEmpty());
        QVERIFY(!r.earliestResetMs);
    }

    void emptyCandidateList()
    {
        const SelectionResult r = select({}, {}, Strategy::CapacityWeighted);
        QCOMPARE(r.errorCode, QStringLiteral("no_eligible_account"));
        QVERIFY(r.skipped.isEmpty());
    }

    void accountStatusNames()
    {
        for (AccountStatus s : {AccountStatus::Active, AccountStatus::RateLimited, AccountStatus::QuotaExceeded,
                                AccountStatus::Paused, AccountStatus::ReauthRequired, AccountStatus::Deactivated})
            QCOMPARE(parseAccountStatus(accountStatusName(s)), std::optional<AccountStatus>(s));
        QCOMPARE(accountStatusName(AccountStatus::ReauthRequired), QStringLiteral("reauth_required"));
        QVERIFY(!parseAccountStatus(QStringLiteral("banned")));
    }
};

QTEST_GUILESS_MAIN(TestSelection)
#include "tst_selection.moc"
