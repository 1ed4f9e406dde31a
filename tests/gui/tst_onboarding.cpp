// "Add account…" end to end against the fake authorization server (tests/support/fake_oauth): the login runs
// on the UI's store thread, the browser is asked to open the authorize URL, and the account is stored the
// way `switchyard accounts login` stores it (database secret backend, no keychain). Cancelling ends the
// login without an account. Offscreen.
#include "GuiTestSupport.h"
#include "data/StoreClient.h"
#include "fake_oauth/FakeOAuthProcess.h"
#include "tray/AccountOnboarding.h"

#include <QSignalSpy>

using namespace sy;
using namespace sy::ui;

class TestOnboarding : public QObject
{
    Q_OBJECT

    test::FakeOAuthProcess m_fake;

private slots:
    void initTestCase() { QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString())); }

    void addAccountLogsInAndStoresTheAccount()
    {
        QVERIFY(m_fake.configure({{QStringLiteral("identity"),
                                   QJsonObject{{QStringLiteral("email"), QStringLiteral("tray@example.com")},
                                               {QStringLiteral("chatgpt_account_id"), QStringLiteral("acct_tray")},
                                               {QStringLiteral("chatgpt_user_id"), QStringLiteral("user-tray")},
                                               {QStringLiteral("chatgpt_plan_type"), QStringLiteral("plus")}}}}));
        test::TempStore store;
        StoreClient client(store.path());
        client.setSecretConfig(store.config());
        AccountOnboarding onboarding(&client, QUrl(m_fake.issuer()));
        onboarding.setQuiet(true);
        onboarding.setCallbackPort(0);
        QUrl opened;
        onboarding.setBrowserOpener([&opened](const QUrl &url) {
            opened = url;
            return true;
        });
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
