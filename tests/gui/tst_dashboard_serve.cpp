// SWITCHYARD_NEEDS_KEYRING: accounts are imported into a real gnome-keyring.
//
// The dashboard against a real `switchyard serve` fed by the fake upstream (issue 6 point 4): three imported
// accounts, real traffic (completed turns that teach the proxy each account's windows from the usage headers,
// a 429 that fails over to another account, a 500 and a 400 that fail, a slow stream held open), then the
// window GuiMain builds, pointed at the instance the way GuiMain finds it (Config::databaseLocation() and
// localBaseUrl of its listen address). Every page is compared with the store read independently: the CLI
// (`requests --json`, `accounts list --json`, `usage --json`, `status --json`) and SQL on the database file.
// Offscreen.
#include "DashboardWindow.h"
#include "Format.h"
#include "config/ClientConfigText.h"
#include "config/Config.h"
#include "data/StatusPoller.h"
#include "data/StoreClient.h"
#include "lib/CodexRequests.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/HttpTestClient.h"
#include "lib/ProxyProcess.h"
#include "lib/TurnTraffic.h"
#include "models/AccountsModel.h"
#include "models/JsonTableModel.h"
#include "models/RequestsModel.h"
#include "pages/AccountsPage.h"
#include "pages/LivePage.h"
#include "pages/OverviewPage.h"
#include "pages/RequestDetailView.h"
#include "pages/RequestsPage.h"
#include "pages/UsagePage.h"
#include "store/Database.h"
#include "tray/AccountOnboarding.h"

#include <QAbstractItemModelTester>
#include <QBarSet>
#include <QChart>
#include <QComboBox>
#include <QDateTime>
#include <QLabel>
#include <QSet>
#include <QSignalSpy>
#include <QSqlQuery>
#include <QStackedBarSeries>
#include <QTableView>
#include <QTest>
#include <QTreeWidgetItem>
#include <algorithm>
#include <numeric>

using namespace sy;
using namespace sy::test;
using namespace sy::ui;

namespace {

constexpr int kTurnTimeoutMs = 20000;

QString cell(const QAbstractItemModel *m, int row, int column)
{
    return m->index(row, column).data().toString();
}

int columnOf(const JsonTableModel *m, const char *key)
{
    return int(m->columnKeys().indexOf(QLatin1String(key)));
}

qint64 msOf(const QJsonValue &iso)
{
    return QDateTime::fromString(iso.toString(), Qt::ISODateWithMs).toMSecsSinceEpoch();
}

// The remaining % of a window as the store holds it (used_percent, resets_at): 100 once the reset passed.
std::optional<double> remainingOf(const QJsonObject &window, qint64 now)
{
    if (window.value(QLatin1String("resets_at")).isString() && msOf(window.value(QLatin1String("resets_at"))) <= now)
        return 100.0;
    if (!window.value(QLatin1String("used_percent")).isDouble())
        return std::nullopt;
    return std::clamp(100.0 - window.value(QLatin1String("used_percent")).toDouble(), 0.0, 100.0);
}

} // namespace

class TestDashboardServe : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    ProxyProcess m_proxy;
    Config m_config;
    QString m_failedOverId; // the turn whose first attempt met a 429
    QStringList m_failedIds;
    AsyncTurn *m_held = nullptr;

    const FakeAccount &acct(int n) const { return m_proxy.accounts().at(n - 1); }

    SseResult turn(const QString &text)
    {
        return sseRequest("POST", QUrl(m_proxy.url(QStringLiteral("/backend-api/codex/responses"))), kCodexHeaders,
                          codexBody(text), kTurnTimeoutMs);
    }

    QJsonObject liveStatus() const
    {
        const CliResult r = m_proxy.cli({QStringLiteral("status"), QStringLiteral("--json")});
        return r.exitCode == 0 ? r.json().object() : QJsonObject();
    }

    QJsonArray cliArray(const QStringList &args) const
    {
        const CliResult r = m_proxy.cli(args);
        if (r.exitCode != 0)
            qWarning("%s: %s", qPrintable(args.join(QLatin1Char(' '))), r.err.constData());
        return r.json().array();
    }

    // Pins through the CLI and waits until the running proxy has picked the pin up.
    bool pin(const FakeAccount &a, bool strict)
    {
        QStringList args{QStringLiteral("accounts"), QStringLiteral("pin"), a.alias};
        if (strict)
            args << QStringLiteral("--strict");
        if (m_proxy.cli(args).exitCode != 0)
            return false;
        return QTest::qWaitFor(
            [&] {
                const QJsonObject s = liveStatus();
                return s.value(QLatin1String("pinned_account_id")).toString() == a.id &&
                       s.value(QLatin1String("pin_strict")).toBool() == strict;
            },
            10000);
    }

private slots:
    void initTestCase()
    {
        QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString()));
        m_proxy.setConfig({{QStringLiteral("strategy"), QStringLiteral("round_robin")}});
        QVERIFY2(m_proxy.addAccounts(3, {QStringLiteral("plus"), QStringLiteral("pro")}),
                 qPrintable(m_proxy.errorString()));
        const double used[][2] = {{12, 31}, {47, 8}, {73, 55}};
        for (int i = 0; i < 3; ++i) {
            QVERIFY(m_fake.setUsage(acct(i + 1).chatgptAccountId,
                                    {{QStringLiteral("primary_used_percent"), used[i][0]},
                                     {QStringLiteral("secondary_used_percent"), used[i][1]},
                                     {QStringLiteral("primary_reset_after_seconds"), 3600 + 600 * i}}));
        }
        QVERIFY2(m_proxy.start(m_fake.baseUrl()), qPrintable(m_proxy.errorString()));

        // Where GuiMain looks: the configuration the instance loads, with its data dir and config file.
        ConfigOverrides overrides;
        overrides.configFile = m_proxy.configPath();
        overrides.dataDir = m_proxy.dataDir();
        const ConfigResult loaded = loadConfig(overrides, processEnvironment());
        QVERIFY2(loaded.ok(), qPrintable(loaded.error));
        m_config = loaded.config;

        // Round robin: six completed turns visit every account twice, so each learns its windows.
        for (int i = 0; i < 6; ++i) {
            const SseResult r = turn(QStringLiteral("hello %1").arg(i));
            QCOMPARE(r.status, 200);
        }
        // The pinned account answers 429: the turn fails over to another account and completes.
        QVERIFY(pin(acct(1), false));
        QVERIFY(m_fake.script(acct(1).chatgptAccountId, {QStringLiteral("429")}));
        const SseResult failedOver = turn(QStringLiteral("fail over"));
        QCOMPARE(failedOver.status, 200);
        m_failedOverId = QString::fromLatin1(failedOver.header("x-request-id"));
        // Strictly pinned accounts that fail: a 500 (no other account may take it) and a 400 passed through.
        QVERIFY(pin(acct(3), true));
        // Sticky: a retry on the same account meets the 500 again (acct3 serves nothing after this).
        QVERIFY(m_fake.script(acct(3).chatgptAccountId, {QStringLiteral("500")}, true));
        const SseResult fiveHundred = turn(QStringLiteral("server error"));
        QVERIFY2(fiveHundred.status >= 500, qPrintable(QString::number(fiveHundred.status)));
        m_failedIds << QString::fromLatin1(fiveHundred.header("x-request-id"));
        QVERIFY(pin(acct(2), true));
        QVERIFY(m_fake.script(acct(2).chatgptAccountId, {QStringLiteral("400")}));
        const SseResult badRequest = turn(QStringLiteral("bad request"));
        QCOMPARE(badRequest.status, 400);
        m_failedIds << QString::fromLatin1(badRequest.header("x-request-id"));
        for (const QString &id : std::as_const(m_failedIds))
            QVERIFY(!m_proxy.waitForRequest(id).isEmpty());
        QVERIFY(!m_proxy.waitForRequest(m_failedOverId).isEmpty());

        // A slow stream on acct2 stays open while the pages look (about a minute of deltas).
        QVERIFY(m_fake.script(acct(2).chatgptAccountId, {QStringLiteral("ok+slow:1500")}));
        QStringList words;
        for (int i = 0; i < 40; ++i)
            words << QStringLiteral("w%1").arg(i);
        m_held = new AsyncTurn(
            m_proxy.port(),
            turnRequestBytes("/backend-api/codex/responses", codexTurnBody(words.join(QLatin1Char(' ')))), this);
        m_held->start(120000);
        QTRY_VERIFY_WITH_TIMEOUT(!m_held->outcome().outputAtMs.isEmpty(), 15000);
        QVERIFY(!m_held->outcome().requestId.isEmpty());
    }

    void cleanupTestCase()
    {
        if (m_held)
            m_held->cancel();
        m_proxy.stop();
    }

    void pagesShowWhatTheStoreHolds()
    {
        // As GuiMain builds the window.
        StoreClient store(m_config.databaseLocation());
        store.setSecretConfig(m_config);
        store.setPollIntervalMs(200);
        StatusPoller status;
        status.setBaseUrl(localBaseUrl(m_config.listenAddress, m_proxy.port()));
        status.setIntervalMs(200);
        AccountOnboarding onboarding(&store, m_config.authUrl);
        onboarding.setQuiet(true);
        DashboardWindow window(&store, &status, &onboarding, m_config.configFile, processEnvironment());
        const DashboardWindow::Pages &pages = window.pages();
        QAbstractItemModelTester accountsTester(pages.accounts->model(),
                                                QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester turnsTester(pages.live->turnsModel(),
                                             QAbstractItemModelTester::FailureReportingMode::QtTest);
        QAbstractItemModelTester slotsTester(pages.live->slotsModel(),
                                             QAbstractItemModelTester::FailureReportingMode::QtTest);
        window.show();
        store.start();
        status.start();

        // The store, read independently while the slow stream is still open (nothing else runs meanwhile).
        const QJsonArray log = cliArray(
            {QStringLiteral("requests"), QStringLiteral("--json"), QStringLiteral("--limit"), QStringLiteral("1000")});
        const QJsonArray accounts =
            cliArray({QStringLiteral("accounts"), QStringLiteral("list"), QStringLiteral("--json")});
        const QJsonArray usage = cliArray({QStringLiteral("usage"), QStringLiteral("--json")});
        QCOMPARE(log.size(), 9);
        QCOMPARE(accounts.size(), 3);
        QCOMPARE(usage.size(), 3);
        const qint64 now = QDateTime::currentMSecsSinceEpoch();
        QHash<QString, QString> aliasOf;
        for (const QJsonValue &v : accounts)
            aliasOf.insert(str(v.toObject(), "account_id"), str(v.toObject(), "account_alias"));

        // A failed check returns from its helper only: stop there (later QTRY_* would not wait any more).
        checkOverview(pages.overview, log, usage, aliasOf, now);
        if (QTest::currentTestFailed())
            return;
        checkAccounts(pages.accounts, accounts, now);
        if (QTest::currentTestFailed())
            return;
        checkLive(pages.live);
        if (QTest::currentTestFailed())
            return;
        checkRequests(pages.requests, &window, log, aliasOf);
        if (QTest::currentTestFailed())
            return;
        checkUsage(pages.usage, &window, usage);
    }

private:
    void checkOverview(OverviewPage *page, const QJsonArray &log, const QJsonArray &usage,
                       const QHash<QString, QString> &aliasOf, qint64 now)
    {
        const auto label = [page](const char *name) { return page->findChild<QLabel *>(QLatin1String(name))->text(); };
        int errors = 0;
        qint64 tokens = 0;
        for (const QJsonValue &v : log) {
            errors += str(v.toObject(), "status") != QLatin1String("completed");
            tokens += v.toObject().value(QLatin1String("tokens")).toObject().value(QLatin1String("total")).toInteger();
        }
        QCOMPARE(errors, 2);
        QVERIFY(tokens > 0);
        QTRY_COMPARE(label("requestsToday"), QString::number(log.size()));
        QCOMPARE(label("errorsToday"), QString::number(errors));
        QVERIFY2(label("tokensToday").startsWith(Format::tokens(tokens) + QLatin1String(" (")),
                 qPrintable(label("tokensToday") + QStringLiteral(" vs ") + Format::tokens(tokens)));
        // Pooled remaining: the mean over the accounts (none paused) of what each window has left.
        for (const auto &[key, name] :
             {std::pair{"primary_window", "fiveHourRemaining"}, std::pair{"secondary_window", "weeklyRemaining"}}) {
            double sum = 0;
            int n = 0;
            for (const QJsonValue &v : usage) {
                if (const auto r = remainingOf(v.toObject().value(QLatin1String(key)).toObject(), now)) {
                    sum += *r;
                    ++n;
                }
            }
            QCOMPARE(n, 3);
            QCOMPARE(label(name), Format::percent(sum / n));
        }
        const QJsonObject live = liveStatus();
        QCOMPARE(str(live, "strategy"), QStringLiteral("round_robin"));
        QCOMPARE(label("strategy"), QStringLiteral("Round robin"));
        QCOMPARE(label("pin"), aliasOf.value(str(live, "pinned_account_id")));
        QCOMPARE(label("pin"), acct(2).alias);
        QTRY_VERIFY2(label("proxy").contains(QStringLiteral("1 turn(s) in flight")), qPrintable(label("proxy")));
    }

    void checkAccounts(AccountsPage *page, const QJsonArray &accounts, qint64 now)
    {
        AccountsModel *model = page->model();
        QTRY_COMPARE(model->rowCount(), 3);
        QSet<QString> statuses;
        for (const QJsonValue &v : accounts) {
            const QJsonObject a = v.toObject();
            int row = -1;
            for (int r = 0; r < model->rowCount(); ++r)
                if (model->accountId(r) == str(a, "account_id"))
                    row = r;
            QVERIFY2(row >= 0, qPrintable(str(a, "account_id")));
            const QString alias = str(a, "account_alias");
            QCOMPARE(cell(model, row, AccountsModel::Name),
                     a.value(QLatin1String("pinned")).toBool() ? alias + QStringLiteral(" (pinned)") : alias);
            QCOMPARE(cell(model, row, AccountsModel::Email), str(a, "email"));
            QCOMPARE(cell(model, row, AccountsModel::Plan), str(a, "plan"));
            QCOMPARE(model->index(row, AccountsModel::Status).data(AccountsModel::StatusRole).toString(),
                     str(a, "status"));
            QVERIFY(cell(model, row, AccountsModel::Status).startsWith(Format::accountStatus(str(a, "status"))));
            // A backoff shows while the stored cooldown lies ahead (one ending within seconds is left alone).
            const qint64 cooldown = a.value(QLatin1String("cooldown_until")).isString()
                                        ? msOf(a.value(QLatin1String("cooldown_until")))
                                        : 0;
            if (qAbs(cooldown - now) > 5000)
                QCOMPARE(cell(model, row, AccountsModel::Status).contains(QLatin1String("backoff")), cooldown > now);
            statuses.insert(str(a, "status"));
            for (const auto &[key, column] : {std::pair{"primary_window", int(AccountsModel::FiveHour)},
                                              std::pair{"secondary_window", int(AccountsModel::Weekly)}}) {
                const std::optional<double> remaining =
                    remainingOf(a.value(QLatin1String(key)).toObject(), QDateTime::currentMSecsSinceEpoch());
                QVERIFY2(remaining, qPrintable(alias + QLatin1Char(' ') + QLatin1String(key)));
                QCOMPARE(model->index(row, column).data(AccountsModel::UsedPercentRole).toDouble(), 100.0 - *remaining);
                QVERIFY(cell(model, row, column).startsWith(Format::percent(100.0 - *remaining)));
            }
            QCOMPARE(cell(model, row, AccountsModel::TokenExpiry),
                     Format::dateTime(msOf(a.value(QLatin1String("token_expires_at")))));
        }
        // The 429 left its mark on acct1: the page shows a status other than plain active for it.
        QVERIFY2(statuses.size() > 1, qPrintable(QStringList(statuses.values()).join(QLatin1Char(','))));
        // The learnt windows are the fake upstream's (acct2: 47 % of 5 h, 8 % of the week).
        for (int r = 0; r < model->rowCount(); ++r) {
            if (model->accountId(r) == acct(2).id) {
                QCOMPARE(model->index(r, AccountsModel::FiveHour).data(AccountsModel::UsedPercentRole).toDouble(),
                         47.0);
                QCOMPARE(model->index(r, AccountsModel::Weekly).data(AccountsModel::UsedPercentRole).toDouble(), 8.0);
            }
        }
    }

    void checkLive(LivePage *page)
    {
        JsonTableModel *turns = page->turnsModel();
        const QString heldId = m_held->outcome().requestId;
        QTRY_COMPARE(turns->rowCount(), 1);
        QCOMPARE(cell(turns, 0, columnOf(turns, "request_id")), heldId);
        QCOMPARE(cell(turns, 0, columnOf(turns, "account_id")), acct(2).alias);
        QCOMPARE(cell(turns, 0, columnOf(turns, "stage")), Format::stage(QStringLiteral("streaming")));
        // While streaming, the running budgets are the stream's own (idle gap, whole stream).
        const QString remaining = cell(turns, 0, columnOf(turns, "remaining_ms"));
        QVERIFY2(remaining.contains(QLatin1String("stream_idle ")), qPrintable(remaining));

        // The same turn in the status the CLI reads.
        const QJsonObject live = liveStatus();
        const QJsonArray inFlight = live.value(QLatin1String("in_flight")).toArray();
        QCOMPARE(inFlight.size(), 1);
        const QJsonObject t = inFlight.first().toObject();
        QCOMPARE(str(t, "request_id"), heldId);
        QCOMPARE(str(t, "account_id"), acct(2).id);
        QCOMPARE(Format::stage(str(t, "stage")), cell(turns, 0, columnOf(turns, "stage")));
        const QStringList budgets = t.value(QLatin1String("remaining_ms")).toObject().keys();
        QVERIFY(!budgets.isEmpty());
        for (const QString &budget : budgets)
            QVERIFY2(remaining.contains(budget + QLatin1Char(' ')),
                     qPrintable(budget + QStringLiteral(" in ") + remaining));
        QCOMPARE(remaining.count(QStringLiteral(" · ")), budgets.size() - 1);

        // Owner slots: the one held for this turn, by this replica with the epoch in owner_slots.
        JsonTableModel *slotModel = page->slotsModel();
        const QString replica =
            live.value(QLatin1String("replica")).toObject().value(QLatin1String("replica_id")).toString();
        QVERIFY(!replica.isEmpty());
        Database db;
        QString error;
        QVERIFY2(db.open(m_config.databaseLocation(), &error, Database::OpenMode::ReadOnly), qPrintable(error));
        QSqlQuery q = db.query();
        QVERIFY(q.prepare(QStringLiteral("SELECT slot_index, owner_epoch, owner_replica FROM owner_slots "
                                         "WHERE owner_request_id = ?")));
        q.addBindValue(heldId);
        QVERIFY(q.exec() && q.next());
        const int slot = q.value(0).toInt();
        const qint64 epoch = q.value(1).toLongLong();
        QCOMPARE(q.value(2).toString(), replica);
        QVERIFY(!q.next());
        QTRY_VERIFY(slotModel->rowCount() > 0);
        int held = -1;
        for (int r = 0; r < slotModel->rowCount(); ++r) {
            if (cell(slotModel, r, columnOf(slotModel, "request_id")) == heldId)
                held = r;
        }
        QVERIFY(held >= 0);
        QCOMPARE(cell(slotModel, held, columnOf(slotModel, "account_id")), acct(2).alias);
        QCOMPARE(cell(slotModel, held, columnOf(slotModel, "slot")), QString::number(slot));
        QCOMPARE(cell(slotModel, held, columnOf(slotModel, "epoch")), QString::number(epoch));
        QCOMPARE(cell(slotModel, held, columnOf(slotModel, "owner_replica")), replica);
        QCOMPARE(cell(slotModel, held, columnOf(slotModel, "state")), QStringLiteral("held"));
        QVERIFY(cell(slotModel, held, columnOf(slotModel, "lease_expires_at")).contains(QLatin1String("(in ")));
        QVERIFY(page->findChild<QLabel *>(QStringLiteral("slotsHeader"))->text().contains(replica));
    }

    void checkRequests(RequestsPage *page, DashboardWindow *window, const QJsonArray &log,
                       const QHash<QString, QString> &aliasOf)
    {
        window->showPage(page);
        RequestsModel *model = page->model();
        QAbstractItemModelTester tester(model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QTRY_VERIFY(model->rowCount() == log.size() && !model->isLoading());
        QCOMPARE(model->matchingCount(), std::optional<qint64>(log.size()));
        // Newest first, as the CLI lists them; every row shows the stored values.
        for (int row = 0; row < log.size(); ++row) {
            const QJsonObject r = log.at(row).toObject();
            QCOMPARE(cell(model, row, RequestsModel::RequestId), str(r, "request_id"));
            QCOMPARE(cell(model, row, RequestsModel::Status).section(QLatin1Char(' '), 0, 0), str(r, "status"));
            QCOMPARE(cell(model, row, RequestsModel::Account), str(r, "account_alias"));
            QCOMPARE(cell(model, row, RequestsModel::Attempts),
                     QString::number(r.value(QLatin1String("attempts")).toArray().size()));
            const QJsonValue total = r.value(QLatin1String("tokens")).toObject().value(QLatin1String("total"));
            QCOMPARE(cell(model, row, RequestsModel::Tokens),
                     total.isNull() ? QStringLiteral("-") : QString::number(total.toInteger()));
        }
        for (const QString &id : m_failedIds) {
            bool found = false;
            for (int row = 0; row < model->rowCount(); ++row)
                found = found ||
                        (model->record(row).requestId == id && model->record(row).status != QLatin1String("completed"));
            QVERIFY2(found, qPrintable(id));
        }

        // The failed-over request explains its routing decision as the store recorded it.
        QJsonObject stored;
        int row = -1;
        for (int i = 0; i < log.size(); ++i) {
            if (str(log.at(i).toObject(), "request_id") == m_failedOverId) {
                stored = log.at(i).toObject();
                row = i;
            }
        }
        QVERIFY(row >= 0);
        const QJsonArray attempts = stored.value(QLatin1String("attempts")).toArray();
        QCOMPARE(attempts.size(), 2);
        QCOMPARE(str(attempts.at(0).toObject(), "account_id"), acct(1).id);
        QVERIFY(str(stored, "account_id") != acct(1).id);
        const auto named = [&aliasOf](const QString &id) {
            return QStringLiteral("%1 (%2)").arg(aliasOf.value(id), id);
        };
        page->view()->selectRow(row);
        RequestDetailView *detail = page->detail();
        QCOMPARE(detail->value(QStringLiteral("Request"), QStringLiteral("Request id")), m_failedOverId);
        QCOMPARE(detail->value(QStringLiteral("Request"), QStringLiteral("Status")), str(stored, "status"));
        QCOMPARE(detail->value(QStringLiteral("Routing decision"), QStringLiteral("Served by")),
                 named(str(stored, "account_id")));
        for (const QJsonValue &b : stored.value(QLatin1String("blocked_by")).toArray()) {
            const QString entry = b.toString();
            const int colon = entry.indexOf(QLatin1Char(':'));
            QCOMPARE(detail->value(QStringLiteral("Routing decision"),
                                   QStringLiteral("Skipped %1").arg(named(entry.left(colon)))),
                     entry.mid(colon + 1));
        }
        QCOMPARE(detail->value(QStringLiteral("Attempts"), QStringLiteral("#1")), named(acct(1).id));
        QCOMPARE(detail->value(QStringLiteral("Attempts"), QStringLiteral("#2")),
                 named(str(attempts.at(1).toObject(), "account_id")));
        QCOMPARE(str(attempts.at(1).toObject(), "account_id"), str(stored, "account_id"));
        // Attempt outcomes sit one level down, under each attempt.
        const QTreeWidgetItem *attemptsItem = nullptr;
        for (int i = 0; i < detail->topLevelItemCount(); ++i)
            if (detail->topLevelItem(i)->text(0).startsWith(QLatin1String("Attempts")))
                attemptsItem = detail->topLevelItem(i);
        QVERIFY(attemptsItem);
        QCOMPARE(attemptsItem->childCount(), 2);
        for (int i = 0; i < 2; ++i) {
            const QJsonObject a = attempts.at(i).toObject();
            const QTreeWidgetItem *item = attemptsItem->child(i);
            QCOMPARE(item->child(0)->text(1), str(a, "outcome"));
            const QJsonValue elapsed = a.value(QLatin1String("elapsed_ms"));
            QCOMPARE(item->child(2)->text(1),
                     elapsed.isNull() ? QStringLiteral("-") : QStringLiteral("%1 ms").arg(elapsed.toInteger()));
        }
        QCOMPARE(str(attempts.at(1).toObject(), "outcome"), QStringLiteral("completed"));
        QCOMPARE(detail->value(QStringLiteral("Tokens"), QStringLiteral("Total")),
                 QString::number(
                     stored.value(QLatin1String("tokens")).toObject().value(QLatin1String("total")).toInteger()));

        // The status filter narrows in SQL to what the store holds as failed.
        auto *statusFilter = page->findChild<QComboBox *>(QStringLiteral("statusFilter"));
        statusFilter->setCurrentIndex(statusFilter->findData(QStringLiteral("failed")));
        int failed = 0;
        for (const QJsonValue &v : log)
            failed += str(v.toObject(), "status") == QLatin1String("failed");
        QTRY_VERIFY(!model->isLoading() && model->matchingCount() == std::optional<qint64>(failed));
        QCOMPARE(model->rowCount(), failed);
    }

    void checkUsage(UsagePage *page, DashboardWindow *window, const QJsonArray &usage)
    {
        QSignalSpy shown(page, &UsagePage::seriesShown);
        window->showPage(page);
        QTRY_VERIFY(shown.size() >= 1 || !page->series().accountIds.isEmpty());
        const UsageSeries &s = page->series();
        const auto sumOf = [](const QList<qint64> &v) { return std::accumulate(v.begin(), v.end(), qint64(0)); };
        qint64 input = 0, cached = 0;
        for (const QJsonValue &v : usage) {
            const QJsonObject a = v.toObject();
            const QJsonObject day = a.value(QLatin1String("tokens_24h")).toObject();
            // Rollups (what the chart reads) against the raw request log (what `usage` sums).
            QCOMPARE(sumOf(s.tokens.value(str(a, "account_id"))), day.value(QLatin1String("total")).toInteger());
            input += day.value(QLatin1String("input")).toInteger();
            cached += day.value(QLatin1String("cached")).toInteger();
        }
        QVERIFY(input > 0);
        QCOMPARE(sumOf(s.cachedInput), cached);
        QCOMPARE(sumOf(s.uncachedInput), input - cached);
        // What the stacked bars draw is the series.
        auto *stack = qobject_cast<QStackedBarSeries *>(page->tokensChart()->series().first());
        QVERIFY(stack);
        QCOMPARE(stack->count(), int(s.accountIds.size()));
        for (int set = 0; set < stack->count(); ++set) {
            double drawn = 0;
            for (int i = 0; i < stack->barSets().at(set)->count(); ++i)
                drawn += stack->barSets().at(set)->at(i);
            QCOMPARE(qint64(drawn), sumOf(s.tokens.value(s.accountIds.at(set))));
        }
    }
};

QTEST_MAIN(TestDashboardServe)
#include "tst_dashboard_serve.moc"
