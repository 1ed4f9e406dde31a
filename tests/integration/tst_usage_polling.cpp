// SWITCHYARD_NEEDS_KEYRING: accounts are imported into a real gnome-keyring.
#include "lib/FakeUpstreamProcess.h"
#include "lib/ProxyProcess.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

using namespace sy::test;

// The running proxy polls GET /wham/usage for every account without any client traffic, one account at a
// time, and what it learns (windows, plan) reaches the store that the CLI reads.
class TestUsagePolling : public QObject
{
    Q_OBJECT

    static QJsonObject accountRow(const ProxyProcess &proxy, const QString &id)
    {
        for (const QJsonValue &v : proxy.cli({QStringLiteral("accounts"), QStringLiteral("list"), QStringLiteral("--json")})
                                       .json()
                                       .array()) {
            if (v.toObject().value(QLatin1String("account_id")).toString() == id)
                return v.toObject();
        }
        return {};
    }

private slots:
    void idleAccountsGetFreshWindowsAndPlan()
    {
        FakeUpstreamProcess fake;
        QVERIFY2(fake.start(), qPrintable(fake.errorString()));
        ProxyProcess proxy;
        proxy.setConfig({{QStringLiteral("usage_poll_interval_s"), 5}});
        QVERIFY2(proxy.addAccounts(2, {QStringLiteral("plus")}), qPrintable(proxy.errorString()));
        const FakeAccount a = proxy.accounts().at(0);
        const FakeAccount b = proxy.accounts().at(1);
        QVERIFY(fake.setUsage(a.chatgptAccountId, {{QStringLiteral("plan_type"), QStringLiteral("pro")},
                                                   {QStringLiteral("primary_used_percent"), 37},
                                                   {QStringLiteral("secondary_used_percent"), 64}}));
        QVERIFY(fake.setUsage(b.chatgptAccountId, {{QStringLiteral("plan_type"), QStringLiteral("team")},
                                                   {QStringLiteral("primary_used_percent"), 5},
                                                   {QStringLiteral("secondary_used_percent"), 11}}));
        QVERIFY2(proxy.start(fake.baseUrl()), qPrintable(proxy.errorString()));

        // No client request at all: only the poller can have produced these numbers.
        QTRY_VERIFY_WITH_TIMEOUT(accountRow(proxy, a.id).value(QLatin1String("primary_window")).toObject()
                                         .value(QLatin1String("used_percent")).toDouble() == 37,
                                 15000);
        QTRY_VERIFY_WITH_TIMEOUT(accountRow(proxy, b.id).value(QLatin1String("secondary_window")).toObject()
                                         .value(QLatin1String("used_percent")).toDouble() == 11,
                                 15000);
        QCOMPARE(accountRow(proxy, a.id).value(QLatin1String("secondary_window")).toObject()
                     .value(QLatin1String("used_percent")).toDouble(), 64.0);
        QTRY_COMPARE_WITH_TIMEOUT(accountRow(proxy, a.id).value(QLatin1String("plan")).toString(), QStringLiteral("pro"),
                                  10000);
        QCOMPARE(accountRow(proxy, b.id).value(QLatin1String("plan")).toString(), QStringLiteral("team"));

        // Every poll carried the polled account's own credentials, and no turn was made.
        int polls = 0;
        for (const QJsonValue &v : fake.log()) {
            const QJsonObject e = v.toObject();
            QVERIFY2(e.value(QLatin1String("path")).toString().endsWith(QLatin1String("/wham/usage")),
                     qPrintable(e.value(QLatin1String("path")).toString()));
            const ProxyProcess &p = proxy;
            const FakeAccount *owner = p.accountByChatgptId(e.value(QLatin1String("chatgpt_account_id")).toString());
            QVERIFY(owner);
            QCOMPARE(e.value(QLatin1String("authorization")).toString(), owner->accessToken);
            ++polls;
        }
        QVERIFY(polls >= 2);
        // A paused account is no longer polled.
        QCOMPARE(proxy.cli({QStringLiteral("accounts"), QStringLiteral("pause"), a.alias}).exitCode, 0);
        QTest::qWait(1500); // the instance notices CLI changes within a second
        fake.reset();
        QTest::qWait(6000);
        for (const QJsonValue &v : fake.log())
            QVERIFY(v.toObject().value(QLatin1String("chatgpt_account_id")).toString() != a.chatgptAccountId);
    }
};

QTEST_GUILESS_MAIN(TestUsagePolling)
#include "tst_usage_polling.moc"
