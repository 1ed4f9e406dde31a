// Dashboard pages against a real store: every item model passes QAbstractItemModelTester, and what the pages
// show matches what the repositories hold (accounts, today's totals, pooled windows, the live status, the
// usage charts and the settings file). Offscreen.
#include "DashboardWindow.h"
#include "GuiTestSupport.h"
#include "data/StatusPoller.h"
#include "data/StoreClient.h"
#include "models/AccountsModel.h"
#include "models/JsonTableModel.h"
#include "pages/AccountsPage.h"
#include "pages/LivePage.h"
#include "pages/OverviewPage.h"
#include "pages/SettingsPage.h"
#include "pages/UsagePage.h"
#include "store/SettingsRepository.h"
#include "tray/AccountOnboarding.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QBarSet>
#include <QChart>
#include <QFile>
#include <QIcon>
#include <QItemSelectionModel>
#include <QJsonArray>
#include <QLabel>
#include <QLineSeries>
#include <QPushButton>
#include <QSignalSpy>
#include <QSpinBox>
#include <QStackedBarSeries>
#include <QTabWidget>
#include <QTableView>
#include <QTranslator>

using namespace sy;
using namespace sy::ui;

namespace {

constexpr qint64 kHour = 3600 * 1000;

QString cell(const QAbstractItemModel *m, int row, int column)
{
    return m->index(row, column).data().toString();
}

int rowOf(const QAbstractItemModel *m, const QString &id)
{
    for (int r = 0; r < m->rowCount(); ++r) {
        if (m->index(r, 0).data(AccountsModel::AccountIdRole).toString() == id)
            return r;
    }
    return -1;
}

struct Fixture
{
    test::TempStore store;
    test::FakeStatusServer proxy;
    StoreClient client{store.path()};
    StatusPoller status;
    AccountOnboarding onboarding{&client, QUrl(QStringLiteral("http://127.0.0.1:1"))};
    QHash<QString, QString> env;

    Fixture()
    {
        client.setSecretConfig(store.config());
        client.setPollIntervalMs(100);
        status.setBaseUrl(proxy.baseUrl());
        status.setIntervalMs(100);
        onboarding.setQuiet(true);
        env.insert(QStringLiteral("HOME"), store.dir());
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), store.dir() + QStringLiteral("/config"));
    }
    void start()
    {
        client.start();
        status.start();
    }
};

} // namespace

class TestDashboard : public QObject
{
    Q_OBJECT
private slots:
    void accountsPageShowsTheStoreAndActs()
    {
        Fixture f;
        const qint64 now = QDateTime::currentMSecsSinceEpoch();
        const QString work = f.store.addAccount(QStringLiteral("work"), QStringLiteral("work@example.test"), "pro");
        const QString home = f.store.addAccount(QStringLiteral("home"), QStringLiteral("home@example.test"));
        f.store.setUsage(work, 42, now + 2 * kHour, 13, now + 50 * kHour, now);
        AccountsPage page(&f.client, &f.onboarding);
        QAbstractItemModelTester tester(page.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        page.show();
        f.start();
        QTRY_COMPARE(page.model()->rowCount(), 2);
        const int w = rowOf(page.model(), work);
        QVERIFY(w >= 0);
        QCOMPARE(cell(page.model(), w, AccountsModel::Name), QStringLiteral("work"));
        QCOMPARE(cell(page.model(), w, AccountsModel::Email), QStringLiteral("work@example.test"));
        QCOMPARE(cell(page.model(), w, AccountsModel::Plan), QStringLiteral("pro"));
        QCOMPARE(cell(page.model(), w, AccountsModel::Status), QStringLiteral("Active"));
        QVERIFY(
            cell(page.model(), w, AccountsModel::FiveHour).startsWith(QStringLiteral("42% · resets in 1 h 59 min")) ||
            cell(page.model(), w, AccountsModel::FiveHour).startsWith(QStringLiteral("42% · resets in 2 h 0 min")));
        QCOMPARE(page.model()->index(w, AccountsModel::Weekly).data(AccountsModel::UsedPercentRole).toDouble(), 13.0);
        QVERIFY(!page.model()
                     ->index(rowOf(page.model(), home), AccountsModel::FiveHour)
                     .data(AccountsModel::UsedPercentRole)
                     .isValid());

        // Pause, resume and pin go through the repositories the CLI uses.
        page.view()->selectRow(w);
        auto *pause = page.findChild<QPushButton *>(QStringLiteral("pauseButton"));
        QVERIFY(pause->isEnabled());
        pause->click();
        QTRY_COMPARE(AccountRepository(f.store.db()).find(work)->status, QStringLiteral("paused"));
        QCOMPARE(AccountRepository(f.store.db()).find(work)->statusReason, QStringLiteral("paused by user"));
        QTRY_COMPARE(cell(page.model(), rowOf(page.model(), work), AccountsModel::Status), QStringLiteral("Paused"));
        auto *resume = page.findChild<QPushButton *>(QStringLiteral("resumeButton"));
        QTRY_VERIFY(resume->isEnabled());
        resume->click();
        QTRY_COMPARE(AccountRepository(f.store.db()).find(work)->status, QStringLiteral("active"));
        page.findChild<QPushButton *>(QStringLiteral("pinButton"))->click();
        QTRY_COMPARE(SettingsRepository(f.store.db()).pin().value_or(PinSetting{}).accountId, work);
        QTRY_COMPARE(cell(page.model(), rowOf(page.model(), work), AccountsModel::Name),
                     QStringLiteral("work (pinned)"));

        // Import through the same code as `accounts import`, then remove (tokens and row) after confirming.
        QSignalSpy imported(&f.onboarding, &AccountOnboarding::finished);
        f.onboarding.importFiles({test::testDataDir() + QStringLiteral("/auth/personal-alice.json")});
        QTRY_COMPARE(imported.size(), 1);
        QVERIFY2(imported.first().first().toBool(), qPrintable(imported.first().last().toString()));
        QTRY_COMPARE(page.model()->rowCount(), 3);
        QString alice;
        for (const AccountRecord &a : AccountRepository(f.store.db()).list())
            if (a.id != work && a.id != home)
                alice = a.id;
        QVERIFY(!alice.isEmpty());
        QString asked;
        page.setConfirm([&asked](const QString &q) {
            asked = q;
            return true;
        });
        page.view()->selectRow(rowOf(page.model(), alice));
        page.findChild<QPushButton *>(QStringLiteral("removeButton"))->click();
        QVERIFY(asked.contains(QLatin1String("stored tokens")));
        QTRY_COMPARE(page.model()->rowCount(), 2);
        QVERIFY(!AccountRepository(f.store.db()).find(alice));
    }

    void overviewShowsTodayAndThePool()
    {
        Fixture f;
        const qint64 now = QDateTime::currentMSecsSinceEpoch();
        const QString a = f.store.addAccount(QStringLiteral("a"), QStringLiteral("a@example.test"));
        const QString b = f.store.addAccount(QStringLiteral("b"), QStringLiteral("b@example.test"));
        f.store.setUsage(a, 20, now + kHour, 70, now + 90 * kHour, now);
        f.store.setUsage(b, 60, now + kHour, 10, now + 90 * kHour, now);
        QVERIFY(f.store.insert(test::TempStore::request(QStringLiteral("req_1"), now - 1000, a)));
        QVERIFY(f.store.insert(test::TempStore::request(QStringLiteral("req_2"), now - 900, b, "failed", 40)));
        QVERIFY(f.store.insert(test::TempStore::request(QStringLiteral("req_3"), now - 800, a, "completed", 1000)));
        {
            QString error;
            QVERIFY(SettingsRepository(f.store.db()).setPin(b, false, &error));
            QVERIFY(SettingsRepository(f.store.db()).setStrategy(QStringLiteral("round_robin"), &error));
        }
        OverviewPage page(&f.client, &f.status);
        f.start();
        const auto label = [&page](const char *name) { return page.findChild<QLabel *>(QLatin1String(name))->text(); };
        QTRY_COMPARE(label("requestsToday"), QStringLiteral("3"));
        QCOMPARE(label("errorsToday"), QStringLiteral("1"));
        QVERIFY2(label("tokensToday").startsWith(QLatin1String("1.1 k")), qPrintable(label("tokensToday")));
        QCOMPARE(label("fiveHourRemaining"), QStringLiteral("60%")); // (80 + 40) / 2
        QCOMPARE(label("weeklyRemaining"), QStringLiteral("60%"));   // (30 + 90) / 2
        QCOMPARE(label("strategy"), QStringLiteral("Round robin"));
        QCOMPARE(label("pin"), QStringLiteral("b"));
        QTRY_VERIFY(label("proxy").contains(QLatin1String("127.0.0.1:2455")));
    }

    void overviewShowsPaceAndExhaustion()
    {
        Fixture f;
        const qint64 now = QDateTime::currentMSecsSinceEpoch();
        const QString a = f.store.addAccount(QStringLiteral("a"), QStringLiteral("a@example.test"));
        // 10 % more used in the last 40 minutes: 15 %/h; 60 % left runs out in 4 h, before the reset in 10 h.
        f.store.setUsage(a, 30, now + 10 * kHour, 5, now + 90 * kHour, now - 40 * 60000);
        f.store.setUsage(a, 40, now + 10 * kHour, 5, now + 90 * kHour, now);
        OverviewPage page(&f.client, &f.status);
        f.start();
        QLabel *pace = page.findChild<QLabel *>(QStringLiteral("fiveHourPace"));
        QTRY_VERIFY2(pace->text().startsWith(QStringLiteral("15.0 % per hour · runs out in 4 h 0 min")) ||
                         pace->text().startsWith(QStringLiteral("15.0 % per hour · runs out in 3 h 59 min")),
                     qPrintable(pace->text()));
        QVERIFY2(
            page.findChild<QLabel *>(QStringLiteral("weeklyPace"))->text().contains(QLatin1String("no exhaustion")),
            qPrintable(page.findChild<QLabel *>(QStringLiteral("weeklyPace"))->text()));
    }

    void livePageRendersStatusAndSlots()
    {
        Fixture f;
        const QJsonObject turn{{QStringLiteral("request_id"), QStringLiteral("req_live")},
                               {QStringLiteral("route"), QStringLiteral("/v1/responses")},
                               {QStringLiteral("model"), QStringLiteral("gpt-5")},
                               {QStringLiteral("stage"), QStringLiteral("pre_response")},
                               {QStringLiteral("account_id"), QStringLiteral("acc_1")},
                               {QStringLiteral("account_alias"), QStringLiteral("work")},
                               {QStringLiteral("elapsed_ms"), 2500},
                               {QStringLiteral("next_deadline"), QStringLiteral("pre_response")},
                               {QStringLiteral("remaining_ms"), QJsonObject{{QStringLiteral("pre_response"), 57500},
                                                                            {QStringLiteral("request_total"), 597500}}},
                               {QStringLiteral("attempts"), 1},
                               {QStringLiteral("extra_field"), QStringLiteral("shown too")}};
        const qint64 leaseAt = QDateTime::currentMSecsSinceEpoch() + 45000;
        const QJsonObject slot{{QStringLiteral("account_id"), QStringLiteral("acc_1")},
                               {QStringLiteral("slot"), 0},
                               {QStringLiteral("epoch"), 7},
                               {QStringLiteral("owner_replica"), QStringLiteral("rep-a")},
                               {QStringLiteral("lease_expires_at"),
                                QDateTime::fromMSecsSinceEpoch(leaseAt, Qt::UTC).toString(Qt::ISODateWithMs)},
                               {QStringLiteral("state"), QStringLiteral("held")}};
        f.proxy.setStatus({{QStringLiteral("listen"), QStringLiteral("127.0.0.1:2455")},
                           {QStringLiteral("version"), QStringLiteral("0.1.0")},
                           {QStringLiteral("in_flight"), QJsonArray{turn}},
                           {QStringLiteral("slots"), QJsonArray{slot}}});
        LivePage page(&f.status);
        QAbstractItemModelTester turnsTester(page.turnsModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester slotsTester(page.slotsModel(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        page.show();
        f.start();
        QTRY_COMPARE(page.turnsModel()->rowCount(), 1);
        const QStringList keys = page.turnsModel()->columnKeys();
        const auto turnCell = [&](const char *key) {
            return cell(page.turnsModel(), 0, int(keys.indexOf(QLatin1String(key))));
        };
        QCOMPARE(turnCell("request_id"), QStringLiteral("req_live"));
        QCOMPARE(turnCell("account_id"), QStringLiteral("work"));
        QCOMPARE(turnCell("stage"), QStringLiteral("Waiting for response"));
        QCOMPARE(turnCell("remaining_ms"), QStringLiteral("pre_response 57 s · request_total 9 min"));
        QCOMPARE(turnCell("extra_field"), QStringLiteral("shown too"));
        QCOMPARE(page.slotsModel()->rowCount(), 1);
        const QStringList slotKeys = page.slotsModel()->columnKeys();
        QCOMPARE(cell(page.slotsModel(), 0, int(slotKeys.indexOf(QLatin1String("owner_replica")))),
                 QStringLiteral("rep-a"));
        QCOMPARE(cell(page.slotsModel(), 0, int(slotKeys.indexOf(QLatin1String("epoch")))), QStringLiteral("7"));
        QVERIFY(cell(page.slotsModel(), 0, int(slotKeys.indexOf(QLatin1String("lease_expires_at"))))
                    .contains(QLatin1String("in 4")));

        // The turn moves on: same row, new values; then it ends.
        QJsonObject streaming = turn;
        streaming.insert(QStringLiteral("stage"), QStringLiteral("streaming"));
        f.proxy.setStatus({{QStringLiteral("in_flight"), QJsonArray{streaming}}});
        QTRY_COMPARE(cell(page.turnsModel(), 0, int(keys.indexOf(QLatin1String("stage")))),
                     QStringLiteral("Streaming"));
        QCOMPARE(page.slotsModel()->rowCount(), 0); // no slots reported any more
        f.proxy.setStatus({{QStringLiteral("in_flight"), QJsonArray{}}});
        QTRY_COMPARE(page.turnsModel()->rowCount(), 0);
    }

    void usageChartsMatchTheRollups()
    {
        Fixture f;
        const qint64 now = QDateTime::currentMSecsSinceEpoch();
        const QString a = f.store.addAccount(QStringLiteral("a"), QStringLiteral("a@example.test"));
        const QString b = f.store.addAccount(QStringLiteral("b"), QStringLiteral("b@example.test"));
        QVERIFY(
            f.store.insert(test::TempStore::request(QStringLiteral("req_a1"), now - 5 * kHour, a, "completed", 400)));
        QVERIFY(f.store.insert(test::TempStore::request(QStringLiteral("req_a2"), now - 1000, a, "completed", 600)));
        QVERIFY(f.store.insert(test::TempStore::request(QStringLiteral("req_b1"), now - 2000, b, "completed", 300)));
        QVERIFY(f.store.insert(test::TempStore::request(QStringLiteral("req_old"), now - 40 * 24 * kHour, b)));
        f.store.setUsage(a, 10, now + kHour, 5, now + 50 * kHour, now - 30 * 60000);
        f.store.setUsage(a, 20, now + kHour, 6, now + 50 * kHour, now);
        UsagePage page(&f.client);
        QSignalSpy shown(&page, &UsagePage::seriesShown);
        page.show();
        QTRY_VERIFY(shown.size() >= 1);
        QCOMPARE(page.series().accountIds, QStringList({a, b}));
        const auto sumOf = [](const QList<qint64> &v) {
            qint64 s = 0;
            for (qint64 x : v)
                s += x;
            return s;
        };
        QCOMPARE(sumOf(page.series().tokens.value(a)), 1000);
        QCOMPARE(sumOf(page.series().tokens.value(b)), 300); // the 40-day-old row is outside 24 h
        auto *stack = qobject_cast<QStackedBarSeries *>(page.tokensChart()->series().first());
        QVERIFY(stack);
        QCOMPARE(stack->count(), 2);
        double drawn = 0;
        for (int i = 0; i < stack->barSets().first()->count(); ++i)
            drawn += stack->barSets().first()->at(i);
        QCOMPARE(drawn, 1000.0);
        QCOMPARE(stack->barSets().first()->label(), QStringLiteral("a"));
        // Cached vs uncached input: each request has input tokens/2 of which tokens/4 cached.
        QCOMPARE(sumOf(page.series().cachedInput), 100 + 150 + 75);
        QCOMPARE(sumOf(page.series().uncachedInput), 100 + 150 + 75);
        // Used % over time: the two observations of a.
        auto *line = qobject_cast<QLineSeries *>(page.usedChart()->series().first());
        QVERIFY(line);
        QCOMPARE(line->count(), 2);
        QCOMPARE(line->at(1).y(), 20.0);

        page.setRange(UsageRange::Month);
        QTRY_VERIFY(shown.size() >= 2 && page.series().range == UsageRange::Month);
        QCOMPARE(page.series().bucketStarts.size(), 30);
        QCOMPARE(sumOf(page.series().tokens.value(b)), 300); // still not the 40-day-old row
        qInfo("charts drawn in %lld ms (informational)", page.lastDrawMs());
    }

    void settingsRefuseContradictionsAndSaveAtomically()
    {
        Fixture f;
        f.start();
        const QString file = f.store.dir() + QStringLiteral("/config/switchyard/config.json");
        SettingsPage page(&f.client, QString(), f.env);
        QCOMPARE(page.validationError(), QString());
        // Defaults: pre_response = min(gate_retire 300, 10 x 6 = 60, stream_idle 300, request_total 600) = 60 s.
        QVERIFY(
            page.findChild<QLabel *>(QStringLiteral("derivedPreResponse"))->text().startsWith(QLatin1String("60 s")));
        page.budgetBox(QStringLiteral("keepalive_max"))->setValue(3);
        QVERIFY(
            page.findChild<QLabel *>(QStringLiteral("derivedPreResponse"))->text().startsWith(QLatin1String("30 s")));

        // gate_wait_s above request_total_s is refused by the loader itself, naming both keys.
        page.budgetBox(QStringLiteral("gate_wait_s"))->setValue(900);
        QVERIFY(page.validationError().contains(QLatin1String("gate_wait_s (900) exceeds request_total_s (600)")));
        QVERIFY(!page.findChild<QPushButton *>(QStringLiteral("saveButton"))->isEnabled());
        QVERIFY(!page.save());
        QVERIFY(!QFile::exists(file));

        page.budgetBox(QStringLiteral("gate_wait_s"))->setValue(20);
        QVERIFY(page.validationError().isEmpty());
        QVERIFY(page.save());
        ConfigOverrides o;
        o.configFile = file;
        const ConfigResult reread = loadConfig(o, f.env);
        QVERIFY2(reread.ok(), qPrintable(reread.error));
        QCOMPARE(reread.config.budgets.gateWaitS, 20);
        QCOMPARE(reread.config.budgets.keepaliveMax, 3);
        // Only what differs from the defaults was written.
        QFile saved(file);
        QVERIFY(saved.open(QIODevice::ReadOnly));
        const QJsonObject written = QJsonDocument::fromJson(saved.readAll()).object();
        QCOMPARE(written.keys(), QStringList({QStringLiteral("gate_wait_s"), QStringLiteral("keepalive_max")}));
    }

    void dashboardHasEveryPage()
    {
        Fixture f;
        DashboardWindow window(&f.client, &f.status, &f.onboarding, QString(), f.env);
        QStringList names;
        for (int i = 0; i < window.tabs()->count(); ++i)
            names << window.tabs()->widget(i)->objectName();
        QCOMPARE(names, QStringList({"overviewPage", "accountsPage", "livePage", "usagePage", "requestsPage",
                                     "apiKeysPage", "settingsPage"}));
    }

    void embeddedChineseTranslationApplies()
    {
        QTranslator translator;
        QVERIFY(translator.load(QStringLiteral(":/i18n/switchyard_zh_CN.qm")));
        QApplication::installTranslator(&translator);
        Fixture f;
        AccountsModel model;
        QCOMPARE(model.headerData(AccountsModel::Name, Qt::Horizontal).toString(), QStringLiteral("账户"));
        DashboardWindow window(&f.client, &f.status, &f.onboarding, QString(), f.env);
        QCOMPARE(window.tabs()->tabText(0), QStringLiteral("概览"));
        QApplication::removeTranslator(&translator);
    }

    void iconResourceIsEmbedded()
    {
        QVERIFY(QFile::exists(QStringLiteral(":/icons/switchyard.svg")));
        QVERIFY(!QIcon(QStringLiteral(":/icons/switchyard.svg")).pixmap(32, 32).isNull());
    }
};

QTEST_MAIN(TestDashboard)
#include "tst_dashboard.moc"
