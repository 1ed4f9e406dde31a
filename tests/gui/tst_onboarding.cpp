// "Add account…" end to end against the fake authorization server (tests/support/fake_oauth): the login runs
// on the UI's store thread, the browser is asked to open the authorize URL, and the account is stored the
// way `switchyard accounts login` stores it (database secret backend, no keychain). Cancelling ends the
// login without an account. Offscreen.
#include "GuiTestSupport.h"
#include "data/StoreClient.h"
#include "fake_oauth/FakeOAuthProcess.h"
#include "lib/FakeEgressProxy.h"
#include "tray/AccountOnboarding.h"
#include "upstream/egress/EgressConfig.h"

#include <QJsonArray>
#include <QSignalSpy>

using namespace sy;
using namespace sy::ui;

class TestOnboarding : public QObject
{
    Q_OBJECT

    test::FakeOAuthProcess m_fake;

    // The fake issuer's next login is NAME@example.com, account acct_NAME, user user-NAME, plan plus.
    bool useIdentity(const QString &name)
    {
        return m_fake.configure(
            {{QStringLiteral("identity"),
              QJsonObject{{QStringLiteral("email"), QString(name + QStringLiteral("@example.com"))},
                          {QStringLiteral("chatgpt_account_id"), QString(QStringLiteral("acct_") + name)},
                          {QStringLiteral("chatgpt_user_id"), QString(QStringLiteral("user-") + name)},
                          {QStringLiteral("chatgpt_plan_type"), QStringLiteral("plus")}}}});
    }

    // A quiet onboarding on any free callback port whose "browser" only records the URL it is asked to open.
    static void openBrowserInto(AccountOnboarding *onboarding, QUrl *opened)
    {
        onboarding->setQuiet(true);
        onboarding->setCallbackPort(0);
        onboarding->setBrowserOpener([opened](const QUrl &url) {
            *opened = url;
            return true;
        });
    }

private slots:
    void initTestCase() { QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString())); }

    void addAccountLogsInAndStoresTheAccount()
    {
        QVERIFY(useIdentity(QStringLiteral("tray")));
        test::TempStore store;
        StoreClient client(store.path());
        client.setSecretConfig(store.config());
        AccountOnboarding onboarding(&client, QUrl(m_fake.issuer()));
        QUrl opened;
        openBrowserInto(&onboarding, &opened);
        QSignalSpy finished(&onboarding, &AccountOnboarding::finished);
        onboarding.addAccount();
        QVERIFY(client.loginRunning());
        QTRY_VERIFY(opened.isValid());
        QCOMPARE(opened.path(), QStringLiteral("/oauth/authorize"));

        const test::BrowserVisit visit = test::visitAsBrowser(opened);
        QCOMPARE(visit.authorize.status, 302);
        QCOMPARE(visit.page.status, 200);
        QTRY_COMPARE(finished.size(), 1);
        QVERIFY2(finished.first().first().toBool(), qPrintable(finished.first().last().toString()));
        QCOMPARE(finished.first().last().toString(), QStringLiteral("Logged in: tray@example.com"));
        QVERIFY(!client.loginRunning());
        const QList<AccountRecord> accounts = AccountRepository(store.db()).list();
        QCOMPARE(accounts.size(), 1);
        QCOMPARE(accounts.first().email, QStringLiteral("tray@example.com"));
        QCOMPARE(accounts.first().chatgptAccountId, QStringLiteral("acct_tray"));
        QCOMPARE(accounts.first().plan, QStringLiteral("plus"));
        // The tokens went to the configured secret store (sealed in the database), never in clear.
        QCOMPARE(test::TempStore::count(store.db(), QStringLiteral("account_secrets")), 1);
    }

    // With a default egress pool the dashboard's login (which names no alias) exchanges the code through that
    // pool: the member that refuses its SOCKS5 handshake first, then the next, never directly. A pool that cannot
    // be used (its proxy's credentials are not stored) refuses the login before the browser is asked to open.
    void addAccountExchangesTheCodeThroughTheDefaultPool()
    {
        test::FakeEgressFleet fleet;
        test::FakeEgressProxy *down =
            fleet.add(QStringLiteral("down"), test::FakeEgressProxy::Kind::Socks5, test::FakeEgressProxy::Mode::Down);
        test::FakeEgressProxy *up = fleet.add(QStringLiteral("up"), test::FakeEgressProxy::Kind::HttpConnect);
        QVERIFY(down && up);
        const auto carried = [this](test::FakeEgressProxy *p) { return p->carriedTo(m_fake.port()); };
        const auto egress = [&](bool upNeedsCredentials) {
            const QJsonObject root{{QStringLiteral("egress_proxies"),
                                    QJsonArray{QJsonObject{{QStringLiteral("name"), QStringLiteral("down")},
                                                           {QStringLiteral("url"), down->url()}},
                                               QJsonObject{{QStringLiteral("name"), QStringLiteral("up")},
                                                           {QStringLiteral("url"), up->url()},
                                                           {QStringLiteral("has_credentials"), upNeedsCredentials}}}},
                                   {QStringLiteral("egress_pools"),
                                    QJsonArray{QJsonObject{{QStringLiteral("name"), QStringLiteral("via")},
                                                           {QStringLiteral("strategy"), QStringLiteral("ordered")},
                                                           {QStringLiteral("proxies"),
                                                            QJsonArray{QStringLiteral("down"), QStringLiteral("up")}},
                                                           {QStringLiteral("request_budget_ms"), 5000},
                                                           {QStringLiteral("max_attempts"), 2}}}},
                                   {QStringLiteral("egress_default_pool"), QStringLiteral("via")}};
            EgressSettings settings;
            const QString problem = parseEgressSettings(QStringLiteral("test"), root, &settings);
            return std::pair{settings, problem};
        };
        QVERIFY(m_fake.reset());
        QVERIFY(useIdentity(QStringLiteral("pool")));
        test::TempStore store;
        StoreClient client(store.path());
        Config config = store.config();
        config.budgets.connectS = 2; // how long the refusing member may hold the exchange
        auto [settings, problem] = egress(false);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        config.egress = settings;
        client.setSecretConfig(config);
        AccountOnboarding onboarding(&client, QUrl(m_fake.issuer()));
        QUrl opened;
        openBrowserInto(&onboarding, &opened);
        QSignalSpy finished(&onboarding, &AccountOnboarding::finished);
        onboarding.addAccount();
        QTRY_VERIFY(opened.isValid());
        QCOMPARE(test::visitAsBrowser(opened).page.status, 200);
        QTRY_COMPARE(finished.size(), 1);
        QVERIFY2(finished.first().first().toBool(), qPrintable(finished.first().last().toString()));
        QVERIFY(down->connectionCount() >= 1); // tried first
        QCOMPARE(carried(down), std::pair(0, 0));
        QCOMPARE(carried(up), std::pair(1, 1)); // the one POST /oauth/token
        QCOMPARE(AccountRepository(store.db()).list().size(), 1);

        // The pool's second member needs credentials the store does not hold: the pool is unusable.
        QVERIFY(m_fake.reset());
        std::tie(settings, problem) = egress(true);
        QVERIFY2(problem.isEmpty(), qPrintable(problem));
        config.egress = settings;
        client.setSecretConfig(config);
        opened = QUrl();
        finished.clear();
        onboarding.addAccount();
        QTRY_COMPARE(finished.size(), 1);
        QVERIFY(!finished.first().first().toBool());
        const QString message = finished.first().last().toString();
        QVERIFY2(message.contains(QLatin1String("cannot carry the code exchange")), qPrintable(message));
        QVERIFY(!opened.isValid()); // the browser was never asked to open
        QCOMPARE(m_fake.log().size(), 0);
        QCOMPARE(carried(up), std::pair(1, 1));
        QCOMPARE(AccountRepository(store.db()).list().size(), 1);
    }

    void cancelEndsTheLogin()
    {
        test::TempStore store;
        StoreClient client(store.path());
        client.setSecretConfig(store.config());
        AccountOnboarding onboarding(&client, QUrl(m_fake.issuer()));
        onboarding.setQuiet(true);
        onboarding.setCallbackPort(0);
        bool asked = false;
        onboarding.setBrowserOpener([&asked](const QUrl &) {
            asked = true;
            return false;
        });
        QSignalSpy finished(&onboarding, &AccountOnboarding::finished);
        onboarding.addAccount();
        QTRY_VERIFY(asked);
        client.cancelLogin();
        QTRY_COMPARE(finished.size(), 1);
        QVERIFY(!finished.first().first().toBool());
        QVERIFY(AccountRepository(store.db()).list().isEmpty());
        QVERIFY(!client.loginRunning());
    }
};

QTEST_MAIN(TestOnboarding)
#include "tst_onboarding.moc"
