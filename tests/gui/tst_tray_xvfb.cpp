// The tray with a real tray host: the test runs its own X server (Xvfb) and tray (trayer), starts the
// `switchyard` tray app against the fake upstream with two accounts, and checks that the icon docks in the
// tray, that a right click opens its menu, that pinning the second account from the menu reaches the running
// proxy (every following request is served by it), and that Quit drains and exits cleanly. Every wait is on
// a condition (xdotool --sync, the proxy's /api/status), never a fixed sleep. Skipped when Xvfb, trayer or
// xdotool is missing. With SWITCHYARD_SCREENSHOT_DIR set, the open menu is saved as tray-menu.png there.
#include "GuiTestSupport.h"
#include "lib/CodexRequests.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/HttpTestClient.h"
#include "lib/ProxyProcess.h"
#include "store/SettingsRepository.h"

#include <QDeadlineTimer>
#include <QDir>
#include <QJsonArray>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTcpServer>

using namespace sy;
using namespace sy::test;

namespace {

struct Geometry
{
    int x = 0;
    int y = 0;
    int width = 0;
    int height = 0;
    bool valid = false;
};

class TestTrayXvfb : public QObject
{
    Q_OBJECT

    QProcess m_xvfb;
    QProcess m_trayer;
    QProcess m_app;
    QString m_display;
    QTemporaryDir m_home;

    // Runs xdotool on our display; returns its stdout (empty on failure or timeout).
    QString xdotool(const QStringList &args, int timeoutMs = 15000)
    {
        QProcess p;
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("DISPLAY"), m_display);
        p.setProcessEnvironment(env);
        p.start(QStringLiteral("xdotool"), args);
        if (!p.waitForFinished(timeoutMs)) {
            p.kill();
            p.waitForFinished();
            return {};
        }
        return QString::fromUtf8(p.readAllStandardOutput()).trimmed();
    }

    Geometry geometry(const QString &window)
    {
        Geometry g;
        const QString shell = xdotool({QStringLiteral("getwindowgeometry"), QStringLiteral("--shell"), window});
        const auto value = [&shell](const char *key) {
            const QRegularExpressionMatch m =
                QRegularExpression(QStringLiteral("^%1=(-?\\d+)$").arg(QLatin1String(key)),
                                   QRegularExpression::MultilineOption)
                    .match(shell);
            return m.hasMatch() ? std::optional<int>(m.captured(1).toInt()) : std::nullopt;
        };
        const auto x = value("X"), y = value("Y"), w = value("WIDTH"), h = value("HEIGHT");
        if (x && y && w && h)
            g = {*x, *y, *w, *h, true};
        return g;
    }

    static quint16 freePort()
    {
        QTcpServer server;
        return server.listen(QHostAddress::LocalHost, 0) ? server.serverPort() : 0;
    }

private slots:
    void initTestCase()
    {
        for (const char *tool : {"Xvfb", "trayer", "xdotool"}) {
            if (QStandardPaths::findExecutable(QLatin1String(tool)).isEmpty())
                QFAIL(qPrintable(QStringLiteral("%1 is not installed (tools/dev.sh test installs it)")
                                     .arg(QLatin1String(tool))));
        }
        // Xvfb picks a free display and writes its number to stdout once it accepts connections.
        m_xvfb.start(QStringLiteral("Xvfb"),
                     {QStringLiteral("-displayfd"), QStringLiteral("1"), QStringLiteral("-screen"), QStringLiteral("0"),
                      QStringLiteral("1024x768x24"), QStringLiteral("-nolisten"), QStringLiteral("tcp")});
        QDeadlineTimer deadline(20000);
        QByteArray out;
        while (!out.contains('\n') && !deadline.hasExpired() && m_xvfb.state() != QProcess::NotRunning) {
            m_xvfb.waitForReadyRead(200);
            out += m_xvfb.readAllStandardOutput();
        }
        QVERIFY2(out.contains('\n'), "Xvfb did not report a display");
        m_display = QLatin1Char(':') + QString::fromLatin1(out.trimmed());
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("DISPLAY"), m_display);
        m_trayer.setProcessEnvironment(env);
        m_trayer.start(QStringLiteral("trayer"),
                       {QStringLiteral("--edge"), QStringLiteral("top"), QStringLiteral("--align"),
                        QStringLiteral("right"), QStringLiteral("--widthtype"), QStringLiteral("pixel"),
                        QStringLiteral("--width"), QStringLiteral("120"), QStringLiteral("--heighttype"),
                        QStringLiteral("pixel"), QStringLiteral("--height"), QStringLiteral("32")});
        QVERIFY(m_trayer.waitForStarted(5000));
        // The tray host owns its window once it can take icons.
        QVERIFY2(!xdotool({QStringLiteral("search"), QStringLiteral("--sync"), QStringLiteral("--classname"),
                           QStringLiteral("trayer")})
                      .isEmpty(),
                 "trayer did not come up");
    }

    void cleanupTestCase()
    {
        for (QProcess *p : {&m_app, &m_trayer, &m_xvfb}) {
            if (p->state() != QProcess::NotRunning) {
                p->terminate();
                if (!p->waitForFinished(5000)) {
                    p->kill();
                    p->waitForFinished();
                }
            }
        }
    }

    void pinFromTheTrayMenuRoutesTheNextRequests()
    {
        FakeUpstreamProcess upstream;
        QVERIFY2(upstream.start(), qPrintable(upstream.errorString()));
        ProxyProcess proxy; // holds the data dir, the config and the CLI; the tray app serves from it
        test::TempStore keys;
        const Config secrets = keys.config();
        proxy.setEnv(QStringLiteral("SWITCHYARD_SECRET_BACKEND"), QStringLiteral("database"));
        proxy.setEnv(QStringLiteral("SWITCHYARD_SECRET_KEY_FILE"), secrets.secretKeyFile);
        QVERIFY2(proxy.addAccounts(2), qPrintable(proxy.errorString()));
        // The menu lists accounts in the store's order; the second one is the one to pin.
        const QJsonArray listed =
            proxy.cli({QStringLiteral("accounts"), QStringLiteral("list"), QStringLiteral("--json")}).json().array();
        QCOMPARE(listed.size(), 2);
        const QString target = listed.at(1).toObject().value(QLatin1String("account_id")).toString();
        const QString targetAlias = listed.at(1).toObject().value(QLatin1String("account_alias")).toString();
        {
            // Only the tray icon: no dashboard window to confuse the window search.
            Database db;
            QString error;
            QVERIFY2(db.open(proxy.dataDir() + QStringLiteral("/switchyard.sqlite"), &error), qPrintable(error));
            QVERIFY(SettingsRepository(db).setValue(QStringLiteral("ui.start_hidden"), QStringLiteral("true"), &error));
        }

        const quint16 port = freePort();
        QVERIFY(port != 0);
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("DISPLAY"), m_display);
        env.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("xcb"));
        env.insert(QStringLiteral("HOME"), m_home.path());
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), m_home.path() + QStringLiteral("/config"));
        env.insert(QStringLiteral("SWITCHYARD_DATA_DIR"), proxy.dataDir());
        env.insert(QStringLiteral("SWITCHYARD_CONFIG"), proxy.configPath());
        env.insert(QStringLiteral("SWITCHYARD_UPSTREAM_URL"), upstream.baseUrl());
        env.insert(QStringLiteral("SWITCHYARD_AUTH_URL"), QStringLiteral("http://127.0.0.1:9"));
        env.insert(QStringLiteral("SWITCHYARD_SECRET_BACKEND"), QStringLiteral("database"));
        env.insert(QStringLiteral("SWITCHYARD_SECRET_KEY_FILE"), secrets.secretKeyFile);
        m_app.setProcessEnvironment(env);
        m_app.setProcessChannelMode(QProcess::ForwardedErrorChannel);
        m_app.start(qEnvironmentVariable("SWITCHYARD_BIN"),
                    {QStringLiteral("--listen"), QStringLiteral("127.0.0.1:%1").arg(port)});
        QVERIFY(m_app.waitForStarted(10000));
        const QUrl status(QStringLiteral("http://127.0.0.1:%1/api/status").arg(port));
        QTRY_VERIFY_WITH_TIMEOUT(httpRequest("GET", status, {}, {}, 1000).status == 200, 20000);

        // Docked: the icon is a small window of the app inside trayer's strip (top right, 120 x 32).
        const QString pid = QString::number(m_app.processId());
        QString icon;
        Geometry g;
        QTRY_VERIFY_WITH_TIMEOUT(
            [&] {
                const QStringList windows =
                    xdotool({QStringLiteral("search"), QStringLiteral("--onlyvisible"), QStringLiteral("--pid"), pid})
                        .split(QLatin1Char('\n'), Qt::SkipEmptyParts);
                for (const QString &w : windows) {
                    const Geometry candidate = geometry(w);
                    if (candidate.valid && candidate.width <= 64 && candidate.height <= 64 &&
                        candidate.x >= 1024 - 120 && candidate.y + candidate.height <= 40) {
                        icon = w;
                        g = candidate;
                        return true;
                    }
                }
                return false;
            }(),
            20000);

        // A right click opens the menu (a new visible window of the app).
        const QString cx = QString::number(g.x + g.width / 2), cy = QString::number(g.y + g.height / 2);
        const auto windowCount = [&] {
            return xdotool({QStringLiteral("search"), QStringLiteral("--onlyvisible"), QStringLiteral("--pid"), pid})
                .split(QLatin1Char('\n'), Qt::SkipEmptyParts)
                .size();
        };
        const qsizetype before = windowCount();
        xdotool({QStringLiteral("mousemove"), QStringLiteral("--sync"), cx, cy, QStringLiteral("click"),
                 QStringLiteral("3")});
        QTRY_VERIFY_WITH_TIMEOUT(windowCount() > before, 10000);
        if (qEnvironmentVariableIsSet("SWITCHYARD_SCREENSHOT_DIR")) {
            QProcess shot;
            QProcessEnvironment shotEnv = QProcessEnvironment::systemEnvironment();
            shotEnv.insert(QStringLiteral("DISPLAY"), m_display);
            shot.setProcessEnvironment(shotEnv);
            shot.start(QStringLiteral("import"),
                       {QStringLiteral("-window"), QStringLiteral("root"),
                        qEnvironmentVariable("SWITCHYARD_SCREENSHOT_DIR") + QStringLiteral("/tray-menu.png")});
            QVERIFY(shot.waitForFinished(20000));
        }
        // Keyboard through the open menu: "Automatic", the first account, the second account.
        xdotool({QStringLiteral("key"), QStringLiteral("--delay"), QStringLiteral("50"), QStringLiteral("Down"),
                 QStringLiteral("Down"), QStringLiteral("Down"), QStringLiteral("Return")});

        // The running proxy takes the pin within its change poll, and serves every new request with it.
        QTRY_COMPARE_WITH_TIMEOUT(
            httpRequest("GET", status).jsonDocument().object().value(QLatin1String("pinned_account_id")).toString(),
            target, 10000);
        const QUrl responses(QStringLiteral("http://127.0.0.1:%1/backend-api/codex/responses").arg(port));
        for (int i = 0; i < 6; ++i) {
            const HttpResult r =
                httpRequest("POST", responses, kCodexHeaders, codexBody(QStringLiteral("hi %1").arg(i)));
            QCOMPARE(r.status, 200);
            QCOMPARE(QString::fromUtf8(r.header("x-switchyard-account")), targetAlias);
        }

        // Quit from the menu (the last entry): the app drains and exits with 0. (--sync waits for the pointer
        // to move, so it leaves the icon first.)
        xdotool({QStringLiteral("mousemove"), QStringLiteral("--sync"), QStringLiteral("200"), QStringLiteral("300")});
        xdotool({QStringLiteral("mousemove"), QStringLiteral("--sync"), cx, cy, QStringLiteral("click"),
                 QStringLiteral("3")});
        QTRY_VERIFY_WITH_TIMEOUT(windowCount() > before, 10000);
        xdotool({QStringLiteral("key"), QStringLiteral("--delay"), QStringLiteral("50"), QStringLiteral("Up"),
                 QStringLiteral("Return")});
        QVERIFY(m_app.waitForFinished(20000));
        QCOMPARE(m_app.exitStatus(), QProcess::NormalExit);
        QCOMPARE(m_app.exitCode(), 0);
    }
};

} // namespace

QTEST_GUILESS_MAIN(TestTrayXvfb)
#include "tst_tray_xvfb.moc"
