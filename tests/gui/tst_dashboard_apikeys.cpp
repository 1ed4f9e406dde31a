// SWITCHYARD_NEEDS_KEYRING: the proxy's account is imported into a real gnome-keyring.
//
// The dashboard's API keys page (issue 10 point 3) against a real `switchyard serve` with require_api_key:
// the page says keys are required (from the proxy's /api/status), refuses what `apikeys create` refuses with
// the same words, creates a key and shows it once (copy button, "you will not see it again"), wipes the
// widget's copy when the dialog closes, lists the key as the CLI does, and the database holds only its hash.
// The key is served at once; revoked through the page (after a confirmation), the running proxy answers 401
// on the next request. A second test covers the page's header for a loopback, a non-loopback and an
// unreachable proxy (then the configuration file decides). Offscreen.
#include "DashboardWindow.h"
#include "Format.h"
#include "GuiTestSupport.h"
#include "apikeys/ApiKey.h"
#include "config/ClientConfigText.h"
#include "config/Config.h"
#include "data/StatusPoller.h"
#include "data/StoreClient.h"
#include "lib/CodexRequests.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/ProxyProcess.h"
#include "lib/RawHttpClient.h"
#include "models/ApiKeysModel.h"
#include "pages/ApiKeyDialogs.h"
#include "pages/ApiKeysPage.h"
#include "tray/AccountOnboarding.h"

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDateTime>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSpinBox>
#include <QSqlQuery>
#include <QTableView>
#include <QTest>

using namespace sy;
using namespace sy::test;
using namespace sy::ui;

namespace {

QString errorCode(const RawResponse &r)
{
    return r.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("code")).toString();
}

QString cell(const QAbstractItemModel *m, int row, int column)
{
    return m->index(row, column).data().toString();
}

template <typename T> T *child(QObject *parent, const char *name)
{
    return parent ? parent->findChild<T *>(QLatin1String(name)) : nullptr;
}

bool writeFile(const QString &path, const QByteArray &bytes)
{
    QFile f(path);
    return f.open(QIODevice::WriteOnly | QIODevice::Truncate) && f.write(bytes) == bytes.size();
}

} // namespace

class TestDashboardApiKeys : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    ProxyProcess m_proxy;
    Config m_config;

    // A Codex turn to the running proxy, with `key` as its Bearer key (none when empty).
    RawResponse turn(const QString &key)
    {
        RawHttpClient client;
        if (!client.connectTo(m_proxy.port(), QHostAddress(QHostAddress::LocalHost)))
            return {};
        const QByteArray body = codexBody(QStringLiteral("ECHO: keyed"));
        QByteArray r =
            "POST /backend-api/codex/responses HTTP/1.1\r\nHost: 127.0.0.1:" + QByteArray::number(m_proxy.port()) +
            "\r\nContent-Type: application/json\r\nContent-Length: " + QByteArray::number(body.size()) + "\r\n";
        if (!key.isEmpty())
            r += "Authorization: Bearer " + key.toLatin1() + "\r\n";
        client.send(r + "\r\n" + body);
        const std::optional<RawResponse> response = client.readResponse(30000);
        return response ? *response : RawResponse();
    }

    QJsonArray cliKeys() const
    {
        return m_proxy.cli({QStringLiteral("apikeys"), QStringLiteral("list"), QStringLiteral("--json")})
            .json()
            .array();
    }

    QByteArray databaseBytes() const
    {
        QByteArray bytes;
        const QString path = m_config.databaseLocation();
        for (const QString &suffix : {QString(), QStringLiteral("-wal")}) {
            QFile f(path + suffix);
            if (f.open(QIODevice::ReadOnly))
                bytes += f.readAll();
        }
        return bytes;
    }

private slots:
    void initTestCase()
    {
        QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString()));
        m_proxy.setConfig({{QStringLiteral("require_api_key"), true}});
        QVERIFY2(m_proxy.addAccounts(1), qPrintable(m_proxy.errorString()));
        QVERIFY2(m_proxy.start(m_fake.baseUrl()), qPrintable(m_proxy.errorString()));
        // Where GuiMain looks: the configuration the instance loads.
        ConfigOverrides overrides;
        overrides.configFile = m_proxy.configPath();
        overrides.dataDir = m_proxy.dataDir();
        const ConfigResult loaded = loadConfig(overrides, processEnvironment());
        QVERIFY2(loaded.ok(), qPrintable(loaded.error));
        m_config = loaded.config;
    }

    void cleanupTestCase() { m_proxy.stop(); }

    void pageCreatesShowsOnceAndRevokes()
    {
        StoreClient store(m_config.databaseLocation());
        store.setSecretConfig(m_config);
        store.setPollIntervalMs(200);
        StatusPoller status;
        status.setBaseUrl(localBaseUrl(m_config.listenAddress, m_proxy.port()));
        status.setIntervalMs(200);
        AccountOnboarding onboarding(&store, m_config.authUrl);
        onboarding.setQuiet(true);
        DashboardWindow window(&store, &status, &onboarding, m_config.configFile, processEnvironment());
        ApiKeysPage *page = window.pages().apiKeys;
        QVERIFY(page);
        QAbstractItemModelTester tester(page->model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        window.show();
        window.showPage(page);
        store.start();
        status.start();

        // The running proxy says keys are needed (loopback, require_api_key), and none exists yet. Until its first
        // status arrives, the configuration file (which says the same) is the source, and the page says so.
        QTRY_VERIFY_WITH_TIMEOUT(status.answering(), 15000);
        QVERIFY(status.lastStatus().value(QLatin1String("api_keys_required")).toBool());
        QVERIFY2(!page->requirementText().contains(QLatin1String("configuration file")),
                 qPrintable(page->requirementText()));
        QVERIFY2(page->requirementText().contains(QLatin1String("require_api_key is set")),
                 qPrintable(page->requirementText()));
        QCOMPARE(page->keysRequired(), std::optional<bool>(true));
        QVERIFY2(page->requirementText().contains(QLatin1String("No key is active")),
                 qPrintable(page->requirementText()));
        RawResponse r = turn({});
        QCOMPARE(r.status, 401);
        QCOMPARE(errorCode(r), QStringLiteral("missing_api_key"));

        // What `apikeys create` refuses, the dialog refuses, with the same reason; nothing is stored.
        QTest::mouseClick(child<QPushButton>(page, "createApiKeyButton"), Qt::LeftButton);
        CreateApiKeyDialog *create = page->createDialog();
        QVERIFY(create);
        QVERIFY(create->isVisible());
        child<QLineEdit>(create, "apiKeyName")->setText(QStringLiteral("dashboard"));
        child<QCheckBox>(create, "apiKeyLimit")->setChecked(true);
        child<QLineEdit>(create, "apiKeyLimitTokens")->setText(QStringLiteral("0"));
        auto *window1d = child<QComboBox>(create, "apiKeyLimitWindow");
        QCOMPARE(window1d->count(), 3);
        window1d->setCurrentIndex(window1d->findData(QStringLiteral("1d")));
        QTest::mouseClick(child<QPushButton>(create, "apiKeyCreateOk"), Qt::LeftButton);
        QVERIFY(create->isVisible());
        QVERIFY2(create->error().contains(QLatin1String("token limit")), qPrintable(create->error()));
        const CliResult refused =
            m_proxy.cli({QStringLiteral("apikeys"), QStringLiteral("create"), QStringLiteral("--name"),
                         QStringLiteral("dashboard"), QStringLiteral("--limit-tokens"), QStringLiteral("0"),
                         QStringLiteral("--limit-window"), QStringLiteral("1d")});
        QCOMPARE(refused.exitCode, 1);
        const QString reason = create->error().section(QStringLiteral(": "), 1);
        QVERIFY(!reason.isEmpty());
        QVERIFY2(QString::fromUtf8(refused.err).contains(reason), refused.err.constData());
        QCOMPARE(cliKeys().size(), 0);

        // Corrected: a key with a 30-day expiry and 1,000,000 tokens per day.
        child<QLineEdit>(create, "apiKeyLimitTokens")->setText(QStringLiteral("1000000"));
        child<QCheckBox>(create, "apiKeyExpires")->setChecked(true);
        child<QSpinBox>(create, "apiKeyExpiryDays")->setValue(30);
        QTest::mouseClick(child<QPushButton>(create, "apiKeyCreateOk"), Qt::LeftButton);
        QTRY_VERIFY(!page->createDialog());

        // Shown once, with the warning and a copy button.
        QTRY_VERIFY_WITH_TIMEOUT(page->shownDialog(), 10000);
        ShownApiKeyDialog *shown = page->shownDialog();
        QVERIFY(shown->isVisible());
        QVERIFY(
            child<QLabel>(shown, "apiKeyShownWarning")->text().contains(QLatin1String("you will not see it again")));
        auto *edit = child<QLineEdit>(shown, "apiKeyShownEdit");
        QVERIFY(edit->isReadOnly());
        const QString sharedWithWidget = edit->text();                            // shares the widget's buffer
        const QString key(sharedWithWidget.constData(), sharedWithWidget.size()); // a deep copy for the test
        QVERIFY2(QRegularExpression(QStringLiteral("^sy-[A-Za-z0-9_-]{43}$")).match(key).hasMatch(), qPrintable(key));
        QApplication::clipboard()->clear();
        QTest::mouseClick(child<QPushButton>(shown, "apiKeyCopyButton"), Qt::LeftButton);
        QCOMPARE(QApplication::clipboard()->text(), key);
        QApplication::clipboard()->clear();
        QTest::mouseClick(child<QPushButton>(shown, "apiKeyShownClose"), Qt::LeftButton);
        QTRY_VERIFY(!page->shownDialog());
        // Closing wiped the widget's copy in place (not merely freed it).
        QCOMPARE(sharedWithWidget, QString(key.size(), QChar(0)));

        // Listed as the CLI lists it.
        const QJsonArray listed = cliKeys();
        QCOMPARE(listed.size(), 1);
        const QJsonObject row = listed.first().toObject();
        const QString id = row.value(QLatin1String("id")).toString();
        QVERIFY(id.startsWith(QLatin1String("key_")));
        QCOMPARE(row.value(QLatin1String("name")).toString(), QStringLiteral("dashboard"));
        QCOMPARE(row.value(QLatin1String("limit_tokens")).toInteger(), 1000000);
        QCOMPARE(row.value(QLatin1String("limit_window")).toString(), QStringLiteral("1d"));
        const qint64 expires =
            QDateTime::fromString(row.value(QLatin1String("expires_at")).toString(), Qt::ISODateWithMs)
                .toMSecsSinceEpoch();
        QVERIFY(qAbs(expires - QDateTime::currentMSecsSinceEpoch() - 30LL * 86400 * 1000) < 600 * 1000);
        ApiKeysModel *model = page->model();
        QTRY_COMPARE(model->rowCount(), 1);
        QCOMPARE(model->keyId(0), id);
        QCOMPARE(cell(model, 0, ApiKeysModel::Name), QStringLiteral("dashboard"));
        QCOMPARE(cell(model, 0, ApiKeysModel::Id), id);
        QCOMPARE(model->index(0, 0).data(ApiKeysModel::StateRole).toString(), QStringLiteral("active"));
        QCOMPARE(cell(model, 0, ApiKeysModel::Expires), Format::dateTime(expires));
        QCOMPARE(cell(model, 0, ApiKeysModel::Limit), QStringLiteral("1000000 tokens per 1d"));
        QCOMPARE(cell(model, 0, ApiKeysModel::LastUsed), QStringLiteral("Never"));
        QVERIFY(!model->index(0, 0).data(ApiKeysModel::TokensUsedRole).isValid()); // other columns carry none
        QCOMPARE(model->index(0, ApiKeysModel::UsedInWindow).data(ApiKeysModel::TokensUsedRole).toLongLong(), 0);
        QTRY_VERIFY(!page->requirementText().contains(QLatin1String("No key is active")));

        // Only the hash is in the database file.
        {
            Database db;
            QString error;
            QVERIFY2(db.open(m_config.databaseLocation(), &error, Database::OpenMode::ReadOnly), qPrintable(error));
            QSqlQuery q = db.query();
            QVERIFY(q.prepare(QStringLiteral("SELECT key_hash FROM api_keys WHERE id = ?")));
            q.addBindValue(id);
            QVERIFY(q.exec() && q.next());
            QCOMPARE(q.value(0).toString(), hashApiKey(key.toLatin1()));
        }
        const QByteArray bytes = databaseBytes();
        QVERIFY(bytes.contains(hashApiKey(key.toLatin1()).toLatin1()));
        QVERIFY2(!bytes.contains(key.toLatin1()), "the key is in the database file");
        QVERIFY2(!bytes.contains(key.mid(3, 20).toLatin1()), "a part of the key is in the database file");

        // The running proxy serves the key at once; the page shows its use.
        r = turn(key);
        QCOMPARE(r.status, 200);
        QVERIFY(!m_proxy.waitForRequest(QString::fromLatin1(r.header("x-request-id"))).isEmpty());
        QTRY_VERIFY_WITH_TIMEOUT(
            model->index(0, ApiKeysModel::UsedInWindow).data(ApiKeysModel::TokensUsedRole).toLongLong() > 0, 15000);
        QTRY_VERIFY(cell(model, 0, ApiKeysModel::LastUsed) != QLatin1String("Never"));
        const qint64 used = cliKeys().first().toObject().value(QLatin1String("tokens_used_in_window")).toInteger();
        QCOMPARE(model->index(0, ApiKeysModel::UsedInWindow).data(ApiKeysModel::TokensUsedRole).toLongLong(), used);

        // Revoke asks first; "no" keeps the key.
        page->view()->selectRow(0);
        QCOMPARE(page->selectedKeyId(), id);
        auto *revoke = child<QPushButton>(page, "revokeApiKeyButton");
        QVERIFY(revoke->isEnabled());
        QStringList questions;
        page->setConfirm([&questions](const QString &q) {
            questions << q;
            return false;
        });
        QTest::mouseClick(revoke, Qt::LeftButton);
        QCOMPARE(questions.size(), 1);
        QVERIFY2(questions.first().contains(id) && questions.first().contains(QLatin1String("dashboard")),
                 qPrintable(questions.first()));
        QCOMPARE(cliKeys().first().toObject().value(QLatin1String("state")).toString(), QStringLiteral("active"));
        QCOMPARE(turn(key).status, 200);

        // "Yes": revoked in the store, shown as revoked, and the running proxy refuses the key from now on.
        page->setConfirm([](const QString &) { return true; });
        QTest::mouseClick(revoke, Qt::LeftButton);
        QTRY_COMPARE_WITH_TIMEOUT(model->index(0, 0).data(ApiKeysModel::StateRole).toString(),
                                  QStringLiteral("revoked"), 10000);
        QCOMPARE(cell(model, 0, ApiKeysModel::State), QStringLiteral("Revoked"));
        QVERIFY(!revoke->isEnabled());
        QCOMPARE(cliKeys().first().toObject().value(QLatin1String("state")).toString(), QStringLiteral("revoked"));
        r = turn(key);
        QCOMPARE(r.status, 401);
        QCOMPARE(errorCode(r), QStringLiteral("api_key_revoked"));
        QTRY_VERIFY(page->requirementText().contains(QLatin1String("No key is active")));
        QVERIFY(!databaseBytes().contains(key.toLatin1()));
    }

    void headerSaysWhenKeysAreNeeded()
    {
        TempStore temp;
        QVERIFY(temp.ok());
        FakeStatusServer fakeStatus;
        QVERIFY(fakeStatus.listening());
        StoreClient store(temp.path());
        StatusPoller status;
        status.setIntervalMs(100);
        const QString configFile = temp.dir() + QStringLiteral("/config.json");
        QHash<QString, QString> env{{QStringLiteral("HOME"), temp.dir()}};
        QVERIFY(writeFile(configFile, "{\"listen\": \"0.0.0.0:2455\"}"));
        ApiKeysPage page(&store, &status, configFile, env);
        page.show();

        // No proxy answers: the configuration file decides.
        QCOMPARE(page.keysRequired(), std::optional<bool>(true));
        QVERIFY2(page.requirementText().contains(QLatin1String("0.0.0.0:2455, which other computers can reach")),
                 qPrintable(page.requirementText()));
        QVERIFY(page.requirementText().contains(QLatin1String("From the configuration file")));
        QVERIFY(writeFile(configFile, "{}"));
        page.hide();
        page.show(); // showing the page reads the file again
        QCOMPARE(page.keysRequired(), std::optional<bool>(false));
        QVERIFY2(page.requirementText().startsWith(
                     QLatin1String("No API key is needed: the proxy listens on 127.0.0.1:2455")),
                 qPrintable(page.requirementText()));
        QVERIFY(writeFile(configFile, "{\"require_api_key\": true}"));
        page.hide();
        page.show();
        QCOMPARE(page.keysRequired(), std::optional<bool>(true));
        QVERIFY(page.requirementText().contains(QLatin1String("require_api_key is set")));
        QVERIFY(writeFile(configFile, "{\"listen\": "));
        page.hide();
        page.show();
        QCOMPARE(page.keysRequired(), std::nullopt);
        QVERIFY(page.requirementText().contains(QLatin1String("not known")));

        // The running proxy's status wins over the file.
        status.setBaseUrl(fakeStatus.baseUrl());
        fakeStatus.setStatus({{QStringLiteral("listen"), QStringLiteral("127.0.0.1:2455")},
                              {QStringLiteral("api_keys_required"), false}});
        status.start();
        QTRY_COMPARE(page.keysRequired(), std::optional<bool>(false));
        QVERIFY(page.requirementText().startsWith(QLatin1String("No API key is needed")));
        QVERIFY(!page.requirementText().contains(QLatin1String("configuration file")));
        fakeStatus.setStatus({{QStringLiteral("listen"), QStringLiteral("192.168.1.5:2455")},
                              {QStringLiteral("api_keys_required"), true}});
        QTRY_VERIFY(
            page.requirementText().contains(QLatin1String("192.168.1.5:2455, which other computers can reach")));
        fakeStatus.setStatus(
            {{QStringLiteral("listen"), QStringLiteral("::1:2455")}, {QStringLiteral("api_keys_required"), true}});
        QTRY_VERIFY(page.requirementText().contains(QLatin1String("require_api_key is set")));
        QVERIFY(page.requirementText().contains(QLatin1String("No key is active")));
        status.stop();
    }
};

QTEST_MAIN(TestDashboardApiKeys)
#include "tst_dashboard_apikeys.moc"
