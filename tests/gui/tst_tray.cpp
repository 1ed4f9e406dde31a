// The tray: icon variants per state, tray state and number from store snapshots, notifications derived from
// successive snapshots, and the controller's menu against a real store (pin, automatic, pause, tray number,
// client configs) with a stand-in for the proxy's /api/status. Offscreen, so the "no tray host" path (the
// dashboard instead, the icon once a host appears) is driven through the controller's probe.
#include "GuiTestSupport.h"
#include "data/PoolSummary.h"
#include "data/StatusPoller.h"
#include "data/StoreClient.h"
#include "store/SettingsRepository.h"
#include "tray/NoticeDiff.h"
#include "tray/TrayController.h"
#include "tray/TrayIconPainter.h"

#include <QAction>
#include <QApplication>
#include <QClipboard>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMenu>
#include <QSignalSpy>
#include <QSystemTrayIcon>
#include <QTemporaryDir>

using namespace sy;
using namespace sy::ui;

Q_DECLARE_METATYPE(sy::ui::Notice)

namespace {

constexpr qint64 kNow = 1796000000000;
constexpr qint64 kHour = 3600 * 1000;

AccountView account(const QString &id, const QString &status, std::optional<double> fiveHour,
                    std::optional<double> weekly, std::optional<qint64> reset = kNow + kHour)
{
    AccountView a;
    a.record.id = id;
    a.record.alias = id;
    a.record.status = status;
    a.usage.accountId = id;
    a.usage.primary = {fiveHour, 300, reset};
    a.usage.secondary = {weekly, 10080, kNow + 100 * kHour};
    return a;
}

StoreSnapshot snapshot(QList<AccountView> accounts, qint64 at = kNow)
{
    StoreSnapshot s;
    s.takenAtMs = at;
    s.accounts = std::move(accounts);
    return s;
}

bool isGrey(QRgb p)
{
    return qRed(p) == qGreen(p) && qGreen(p) == qBlue(p);
}

} // namespace

class TestTray : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase() { qRegisterMetaType<Notice>(); }

    void iconShowsStateAndNumber()
    {
        const int size = 64;
        const QPoint badge = TrayIconPainter::badgeCenter(size).toPoint();
        for (TrayState s :
             {TrayState::Serving, TrayState::Degraded, TrayState::AllLimited, TrayState::Paused, TrayState::Stopped}) {
            const QImage image = TrayIconPainter::render(s, std::nullopt, size);
            // Sample beside the centre: paused and stopped draw a white mark through it.
            const QColor sampled = image.pixelColor(badge + QPoint(int(size * 0.16), 0));
            QCOMPARE(sampled.name(), TrayIconPainter::badgeColor(s).name());
        }
        // Paused and stopped grey the app icon; serving keeps its blue.
        const QPoint body(size / 2, size / 8); // the blue background, clear of strokes and badge
        QVERIFY(!isGrey(TrayIconPainter::render(TrayState::Serving, std::nullopt, size).pixel(body)));
        QVERIFY(isGrey(TrayIconPainter::render(TrayState::Paused, std::nullopt, size).pixel(body)));
        QVERIFY(isGrey(TrayIconPainter::render(TrayState::Stopped, std::nullopt, size).pixel(body)));
        // The number band covers the top; different numbers draw differently.
        const QImage plain = TrayIconPainter::render(TrayState::Serving, std::nullopt, size);
        const QImage n42 = TrayIconPainter::render(TrayState::Serving, 42, size);
        const QImage n97 = TrayIconPainter::render(TrayState::Serving, 97, size);
        QVERIFY(plain != n42);
        QVERIFY(n42 != n97);
        QVERIFY(!TrayIconPainter::icon(TrayState::Degraded, 5).pixmap(22, 22).isNull());
    }

    void stateFollowsTheAccounts()
    {
        using pool::trayState;
        QCOMPARE(
            trayState(snapshot({account("a", "active", 10, 20), account("b", "active", 50, 60)}), true, true, kNow),
            TrayState::Serving);
        // One account needs a login: still serving, but degraded.
        QCOMPARE(trayState(snapshot({account("a", "active", 10, 20), account("b", "reauth_required", 0, 0)}), true,
                           true, kNow),
                 TrayState::Degraded);
        // Every account that may serve is limited (a paused one does not count).
        QCOMPARE(trayState(snapshot({account("a", "rate_limited", 100, 20), account("b", "active", 100, 30),
                                     account("c", "paused", 0, 0)}),
                           true, true, kNow),
                 TrayState::AllLimited);
        // ... until the reset has passed.
        QCOMPARE(trayState(snapshot({account("a", "active", 100, 20, kNow - 1)}), true, true, kNow),
                 TrayState::Serving);
        QCOMPARE(trayState(snapshot({account("a", "active", 10, 20)}), true, false, kNow), TrayState::Degraded);
        StoreSnapshot paused = snapshot({account("a", "active", 10, 20)});
        paused.proxyPaused = true;
        QCOMPARE(trayState(paused, true, true, kNow), TrayState::Paused);
        QCOMPARE(trayState(paused, false, true, kNow), TrayState::Stopped);
        QCOMPARE(trayState(snapshot({}), true, true, kNow), TrayState::Degraded); // nothing to serve with
    }

    void numberFollowsTheSetting()
    {
        StoreSnapshot s = snapshot({account("a", "active", 20, 70), account("b", "active", 60, 10)});
        s.trayNumber = TrayNumber::FiveHour; // remaining 80 and 40
        QCOMPARE(pool::trayNumber(s, kNow), std::optional<int>(60));
        s.trayNumber = TrayNumber::Weekly; // remaining 30 and 90
        QCOMPARE(pool::trayNumber(s, kNow), std::optional<int>(60));
        s.accounts[1].usage.secondary.usedPercent = 50; // weekly remaining 30 and 50
        s.trayNumber = TrayNumber::Lowest;
        QCOMPARE(pool::trayNumber(s, kNow), std::optional<int>(40));
        s.trayNumber = TrayNumber::Pinned;
        s.pin = PinSetting{QStringLiteral("a"), false};
        QCOMPARE(pool::trayNumber(s, kNow), std::optional<int>(30));
        s.trayNumber = TrayNumber::None;
        QCOMPARE(pool::trayNumber(s, kNow), std::nullopt);
    }

    void noticesComeFromSnapshotDifferences()
    {
        const StoreSnapshot before = snapshot({account("a", "active", 50, 20), account("b", "active", 10, 10)});
        // a hits its limit while b can still serve: a failover notice naming a.
        StoreSnapshot after = snapshot({account("a", "rate_limited", 100, 20), account("b", "active", 10, 10)});
        QList<Notice> notices = NoticeDiff::between(before, after, kNow);
        QCOMPARE(notices.size(), 1);
        QCOMPARE(notices.first().kind, Notice::Kind::Failover);
        QVERIFY(notices.first().title.contains(QLatin1String("a")));
        // Nothing new: no notice.
        QVERIFY(NoticeDiff::between(after, after, kNow).isEmpty());
        // Then b too: one "all limited" notice with the earliest reset, no separate failover.
        StoreSnapshot all = snapshot({account("a", "rate_limited", 100, 20, kNow + 2 * kHour),
                                      account("b", "quota_exceeded", 100, 10, kNow + kHour)});
        notices = NoticeDiff::between(after, all, kNow);
        QCOMPARE(notices.size(), 1);
        QCOMPARE(notices.first().kind, Notice::Kind::AllLimited);
        QVERIFY2(notices.first().text.contains(
                     QDateTime::fromMSecsSinceEpoch(kNow + kHour).toString(QStringLiteral("yyyy-MM-dd HH:mm"))),
                 qPrintable(notices.first().text));
        // An account that needs a new login.
        StoreSnapshot reauth = snapshot({account("a", "active", 50, 20), account("b", "reauth_required", 10, 10)});
        notices = NoticeDiff::between(before, reauth, kNow);
        QCOMPARE(notices.size(), 1);
        QCOMPARE(notices.first().kind, Notice::Kind::Reauth);
        QVERIFY(notices.first().title.contains(QLatin1String("b")));
    }

    void controllerDrivesTheStore()
    {
        test::TempStore store;
        QVERIFY(store.ok());
        const qint64 now = QDateTime::currentMSecsSinceEpoch();
        const QString work = store.addAccount(QStringLiteral("work"), QStringLiteral("work@example.test"));
        const QString home = store.addAccount(QStringLiteral("home"), QStringLiteral("home@example.test"), "pro");
        store.setUsage(work, 42, now + kHour, 13, now + 50 * kHour, now);
        store.setUsage(home, 10, now + kHour, 5, now + 50 * kHour, now);
        test::FakeStatusServer proxy;
        QVERIFY(proxy.listening());

        StoreClient client(store.path());
        client.setPollIntervalMs(100);
        StatusPoller status;
        status.setBaseUrl(proxy.baseUrl());
        status.setIntervalMs(100);
        TrayController tray(&client, &status);
        tray.setBaseUrl(QStringLiteral("http://127.0.0.1:2455"));
        bool host = false;
        tray.setTrayProbe([&host] { return host; });
        tray.setHostPollIntervalMs(50);
        QSignalSpy availability(&tray, &TrayController::trayAvailableChanged);
        QSignalSpy notified(&tray, &TrayController::notified);
        client.start();
        status.start();
        tray.start();

        // No tray host: said at once (the app shows the dashboard), and the icon appears once a host does.
        QCOMPARE(availability.size(), 1);
        QCOMPARE(availability.first().first().toBool(), false);
        QVERIFY(!tray.trayIcon());
        host = true;
        QTRY_COMPARE(availability.size(), 2);
        QCOMPARE(availability.last().first().toBool(), true);
        QVERIFY(tray.trayIcon());

        // One entry per account with status and both windows, in the pin radio group with "Automatic".
        QTRY_VERIFY(tray.pinAction(work) && tray.pinAction(home));
        QTRY_VERIFY(tray.pinAction(work)->text().contains(QLatin1String("42%")));
        QVERIFY2(tray.pinAction(work)->text().contains(QLatin1String("13%")), qPrintable(tray.pinAction(work)->text()));
        QVERIFY(tray.pinAction(work)->text().contains(QLatin1String("Active")));
        QVERIFY(tray.pinAction({})->isChecked());
        QTRY_COMPARE(tray.state(), TrayState::Serving);

        // Pin from the menu: the setting the proxy reads, then the radio group and the tooltip follow.
        tray.pinAction(work)->trigger();
        QTRY_COMPARE(SettingsRepository(store.db()).pin().value_or(PinSetting{}).accountId, work);
        QTRY_VERIFY(tray.pinAction(work)->isChecked());
        QTRY_VERIFY2(tray.toolTip().contains(QLatin1String("work (pinned): 5 h 42% used, weekly 13% used")),
                     qPrintable(tray.toolTip()));
        QCOMPARE(tray.trayIcon()->toolTip(), tray.toolTip());
        tray.pinAction({})->trigger();
        QTRY_VERIFY(!SettingsRepository(store.db()).pin().has_value());
        QTRY_VERIFY(tray.pinAction({})->isChecked());

        // Tray number: lowest remaining by default (weekly pool: 87 and 95 -> 91; 5 h: 58 and 90 -> 74).
        QTRY_COMPARE(tray.number(), std::optional<int>(74));
        QAction *weekly = tray.menu()->findChild<QAction *>(QStringLiteral("number:weekly"));
        QVERIFY(weekly);
        weekly->trigger();
        QTRY_COMPARE(tray.number(), std::optional<int>(91));
        QCOMPARE(SettingsRepository(store.db()).value(uikeys::trayNumber).value_or(QString()),
                 QStringLiteral("weekly"));

        // The proxy's store stops taking writes: degraded, and the tooltip says why; then it recovers.
        proxy.setStatus(
            QJsonObject{{QStringLiteral("listen"), QStringLiteral("127.0.0.1:2455")},
                        {QStringLiteral("store_writable"), false},
                        {QStringLiteral("store_problem"), QStringLiteral("disk full (database or disk is full)")}});
        QTRY_COMPARE(tray.state(), TrayState::Degraded);
        QTRY_VERIFY2(tray.toolTip().contains(QLatin1String("Store unavailable: disk full (database or disk is full)")),
                     qPrintable(tray.toolTip()));
        proxy.setStatus(QJsonObject{{QStringLiteral("listen"), QStringLiteral("127.0.0.1:2455")},
                                    {QStringLiteral("store_writable"), true}});
        QTRY_COMPARE(tray.state(), TrayState::Serving);
        QVERIFY2(!tray.toolTip().contains(QLatin1String("Store unavailable")), qPrintable(tray.toolTip()));

        // Pause and resume (a setting the proxy honours; the icon says paused meanwhile).
        QAction *pause = tray.menu()->findChild<QAction *>(QStringLiteral("pause"));
        pause->trigger();
        QTRY_COMPARE(tray.state(), TrayState::Paused);
        QCOMPARE(pause->text(), QStringLiteral("Resume proxy"));
        pause->trigger();
        QTRY_COMPARE(tray.state(), TrayState::Serving);

        // Client configurations go to the clipboard with this proxy's address.
        tray.menu()->findChild<QAction *>(QStringLiteral("copyCodex"))->trigger();
        QVERIFY(QGuiApplication::clipboard()->text().contains(
            QLatin1String("base_url = \"http://127.0.0.1:2455/backend-api/codex\"")));
        tray.menu()->findChild<QAction *>(QStringLiteral("copyOpenCode"))->trigger();
        QVERIFY(
            QGuiApplication::clipboard()->text().contains(QLatin1String("\"baseURL\": \"http://127.0.0.1:2455/v1\"")));

        // "Write Codex CLI config" puts this proxy into the Codex config file, keeping what was there; "Undo"
        // takes it out again.
        QTemporaryDir codexHome;
        const QString codexConfig = codexHome.filePath(QStringLiteral("config.toml"));
        {
            QFile f(codexConfig);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("# mine\nmodel = \"o3\"\n");
        }
        tray.setCodexConfigPath(codexConfig);
        QSignalSpy edited(&tray, &TrayController::clientConfigEdited);
        tray.menu()->findChild<QAction *>(QStringLiteral("writeCodexConfig"))->trigger();
        QCOMPARE(edited.size(), 1);
        QVERIFY2(edited.first().at(0).toBool(), qPrintable(edited.first().at(1).toString()));
        QFile written(codexConfig);
        QVERIFY(written.open(QIODevice::ReadOnly));
        const QByteArray text = written.readAll();
        QVERIFY2(text.contains("base_url = \"http://127.0.0.1:2455/backend-api/codex\""), text.constData());
        QVERIFY2(text.contains("# mine\nmodel = \"o3\"\n") && text.contains("model_provider = \"switchyard\""),
                 text.constData());
        tray.menu()->findChild<QAction *>(QStringLiteral("undoCodexConfig"))->trigger();
        QCOMPARE(edited.size(), 2);
        QVERIFY(edited.last().at(0).toBool());
        QFile undone(codexConfig);
        QVERIFY(undone.open(QIODevice::ReadOnly));
        QCOMPARE(undone.readAll(), QByteArray("# mine\nmodel = \"o3\"\n"));

        // The same for OpenCode's opencode.json: our provider goes in beside the user's, and out again.
        const QString openCodeConfig = codexHome.filePath(QStringLiteral("opencode.json"));
        const QByteArray mine = "{\n  \"theme\": \"dark\"\n}\n";
        {
            QFile f(openCodeConfig);
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write(mine);
        }
        tray.setOpenCodeConfigPath(openCodeConfig);
        tray.menu()->findChild<QAction *>(QStringLiteral("writeOpenCodeConfig"))->trigger();
        QCOMPARE(edited.size(), 3);
        QVERIFY2(edited.last().at(0).toBool(), qPrintable(edited.last().at(1).toString()));
        QCOMPARE(edited.last().at(2).toString(), openCodeConfig);
        {
            QFile f(openCodeConfig);
            QVERIFY(f.open(QIODevice::ReadOnly));
            const QJsonObject json = QJsonDocument::fromJson(f.readAll()).object();
            QCOMPARE(json.value(QLatin1String("theme")).toString(), QStringLiteral("dark"));
            const QJsonObject provider =
                json.value(QLatin1String("provider")).toObject().value(QLatin1String("switchyard")).toObject();
            QCOMPARE(provider.value(QLatin1String("options")).toObject().value(QLatin1String("baseURL")).toString(),
                     QStringLiteral("http://127.0.0.1:2455/v1"));
        }
        tray.menu()->findChild<QAction *>(QStringLiteral("writeOpenCodeConfig"))->trigger();
        QCOMPARE(edited.size(), 4);
        QVERIFY2(edited.last().at(1).toString().contains(QLatin1String("already uses Switchyard")),
                 qPrintable(edited.last().at(1).toString()));
        tray.menu()->findChild<QAction *>(QStringLiteral("undoOpenCodeConfig"))->trigger();
        QCOMPARE(edited.size(), 5);
        QVERIFY(edited.last().at(0).toBool());
        {
            QFile f(openCodeConfig);
            QVERIFY(f.open(QIODevice::ReadOnly));
            // The user's keys stay; ours go (the "$schema" a write adds is OpenCode's own and stays).
            QJsonObject json = QJsonDocument::fromJson(f.readAll()).object();
            QVERIFY(!json.contains(QLatin1String("provider")));
            json.remove(QStringLiteral("$schema"));
            QCOMPARE(json, QJsonDocument::fromJson(mine).object());
        }

        // Another process limits an account: a failover notification; the entry says so.
        store.setStatus(home, QStringLiteral("rate_limited"));
        store.setUsage(home, 100, now + kHour, 5, now + 50 * kHour, now);
        QTRY_COMPARE(notified.size(), 1);
        QCOMPARE(qvariant_cast<Notice>(notified.first().first()).kind, Notice::Kind::Failover);
        QTRY_VERIFY(tray.pinAction(home)->text().contains(QLatin1String("Rate limited")));
        QTRY_COMPARE(tray.state(), TrayState::Degraded);

        // The proxy stops answering: stopped.
        QSignalSpy quit(&tray, &TrayController::quitRequested);
        status.setBaseUrl(QStringLiteral("http://127.0.0.1:1"));
        QTRY_COMPARE(tray.state(), TrayState::Stopped);
        tray.menu()->findChild<QAction *>(QStringLiteral("quit"))->trigger();
        QCOMPARE(quit.size(), 1);
    }
};

QTEST_MAIN(TestTray)
#include "tst_tray.moc"
