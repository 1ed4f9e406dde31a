// SWITCHYARD_NEEDS_KEYRING: egress credentials are stored in a real gnome-keyring.
//
// `switchyard egress list|set-credentials|clear-credentials`: the password comes from stdin only, lands in
// the keychain (where `serve` finds it and authenticates to the proxy), and never appears in what the CLI
// prints, the database files or serve's log. Unknown proxy names and missing input are errors (exit 1).
#include "accounts/KeychainSecretStore.h"
#include "lib/CodexRequests.h"
#include "lib/FakeEgressProxy.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/ProxyProcess.h"
#include "upstream/egress/EgressConfig.h"
#include "upstream/egress/EgressCredentials.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QTest>

using namespace sy;
using namespace sy::test;
using Kind = FakeEgressProxy::Kind;

namespace {

const QByteArray kPassword = "pw-egress-Zq81-never-shown";

QJsonObject findRow(const QJsonArray &rows, const QString &name)
{
    for (const QJsonValue &v : rows) {
        if (v.toObject().value(QLatin1String("name")).toString() == name)
            return v.toObject();
    }
    return {};
}

} // namespace

class TestCliEgress : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    FakeEgressFleet m_fleet;
    ProxyProcess m_proxy;
    QByteArray m_printed; // everything the CLI printed in this test

    CliResult cli(const QStringList &args, const QByteArray &input = {})
    {
        const CliResult r = m_proxy.cliOf(qEnvironmentVariable("SWITCHYARD_BIN"), args, input);
        m_printed += r.out + r.err;
        return r;
    }

    QJsonArray list()
    {
        const CliResult r = cli({QStringLiteral("egress"), QStringLiteral("list"), QStringLiteral("--json")});
        return r.exitCode == 0 ? r.json().array() : QJsonArray();
    }

private slots:
    void initTestCase()
    {
        QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString()));
        const FakeEgressProxy *locked =
            m_fleet.add(QStringLiteral("locked"), Kind::Socks5, FakeEgressProxy::Mode::Healthy, 0,
                        QStringLiteral("alice"), QString::fromLatin1(kPassword));
        const FakeEgressProxy *open = m_fleet.add(QStringLiteral("open"), Kind::HttpConnect);
        QVERIFY(locked && open);
        m_proxy.setConfig({{QStringLiteral("egress_proxies"),
                            QJsonArray{QJsonObject{{QStringLiteral("name"), QStringLiteral("locked")},
                                                   {QStringLiteral("url"), locked->url()},
                                                   {QStringLiteral("has_credentials"), true}},
                                       QJsonObject{{QStringLiteral("name"), QStringLiteral("open")},
                                                   {QStringLiteral("url"), open->url()}}}},
                           {QStringLiteral("egress_pools"),
                            QJsonArray{QJsonObject{{QStringLiteral("name"), QStringLiteral("main")},
                                                   {QStringLiteral("strategy"), QStringLiteral("ordered")},
                                                   {QStringLiteral("proxies"), QJsonArray{QStringLiteral("locked")}},
                                                   {QStringLiteral("request_budget_ms"), 2000},
                                                   {QStringLiteral("max_attempts"), 2}},
                                       QJsonObject{{QStringLiteral("name"), QStringLiteral("spare")},
                                                   {QStringLiteral("strategy"), QStringLiteral("random")},
                                                   {QStringLiteral("proxies"),
                                                    QJsonArray{QStringLiteral("open"), QStringLiteral("locked")}},
                                                   {QStringLiteral("request_budget_ms"), 2000},
                                                   {QStringLiteral("max_attempts"), 2}}}},
                           {QStringLiteral("egress_default_pool"), QStringLiteral("main")}});
        QVERIFY2(m_proxy.addAccounts(1), qPrintable(m_proxy.errorString()));
        KeychainSecretStore keychain;
        keychain.removeTokensBlocking(egressSecretKey(QStringLiteral("locked")));
    }

    void listShowsProxiesPoolsAndCredentialState()
    {
        const QJsonArray rows = list();
        QCOMPARE(rows.size(), 2);
        const QJsonObject locked = findRow(rows, QStringLiteral("locked"));
        QCOMPARE(locked.value(QLatin1String("type")).toString(), QStringLiteral("socks5"));
        QCOMPARE(locked.value(QLatin1String("host")).toString(), QStringLiteral("127.0.0.1"));
        QCOMPARE(locked.value(QLatin1String("port")).toInt(), int(m_fleet.proxy(QStringLiteral("locked"))->port()));
        QCOMPARE(locked.value(QLatin1String("has_credentials")).toBool(), true);
        QCOMPARE(locked.value(QLatin1String("credentials_stored")), QJsonValue(false));
        QCOMPARE(locked.value(QLatin1String("pools")).toArray(),
                 (QJsonArray{QStringLiteral("main"), QStringLiteral("spare")}));
        const QJsonObject open = findRow(rows, QStringLiteral("open"));
        QCOMPARE(open.value(QLatin1String("type")).toString(), QStringLiteral("http"));
        QCOMPARE(open.value(QLatin1String("pools")).toArray(), QJsonArray{QStringLiteral("spare")});
        const CliResult text = cli({QStringLiteral("egress"), QStringLiteral("list")});
        QCOMPARE(text.exitCode, 0);
        QVERIFY2(text.out.contains("locked") && text.out.contains("unusable without them"), text.out.constData());
    }

    void badInputIsAnError()
    {
        CliResult r = cli({QStringLiteral("egress"), QStringLiteral("set-credentials"), QStringLiteral("nope"),
                           QStringLiteral("--username"), QStringLiteral("u")},
                          kPassword + '\n');
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("no egress proxy named \"nope\""), r.err.constData());
        r = cli({QStringLiteral("egress"), QStringLiteral("clear-credentials"), QStringLiteral("nope")});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("nope"), r.err.constData());
        // A password on the command line is refused (and not stored).
        r = cli({QStringLiteral("egress"), QStringLiteral("set-credentials"), QStringLiteral("locked"),
                 QStringLiteral("hunter2"), QStringLiteral("--username"), QStringLiteral("alice")});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("stdin"), r.err.constData());
        // Nothing on stdin, and no user name yet.
        r = cli({QStringLiteral("egress"), QStringLiteral("set-credentials"), QStringLiteral("locked"),
                 QStringLiteral("--username"), QStringLiteral("alice")});
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("no password"), r.err.constData());
        r = cli({QStringLiteral("egress"), QStringLiteral("set-credentials"), QStringLiteral("locked")}, kPassword);
        QCOMPARE(r.exitCode, 1);
        QVERIFY2(r.err.contains("--username"), r.err.constData());
        r = cli({QStringLiteral("egress"), QStringLiteral("frobnicate")});
        QCOMPARE(r.exitCode, 1);
        QCOMPARE(findRow(list(), QStringLiteral("locked")).value(QLatin1String("credentials_stored")),
                 QJsonValue(false));
    }

    void storedCredentialsAreUsedAndNeverShown()
    {
        const CliResult set = cli({QStringLiteral("egress"), QStringLiteral("set-credentials"),
                                   QStringLiteral("locked"), QStringLiteral("--username"), QStringLiteral("alice")},
                                  kPassword + '\n');
        QVERIFY2(set.exitCode == 0, set.err.constData());
        QCOMPARE(findRow(list(), QStringLiteral("locked")).value(QLatin1String("credentials_stored")),
                 QJsonValue(true));
        // What the keychain holds is exactly what was typed, without the newline.
        KeychainSecretStore keychain;
        AuthTokens blob;
        QVERIFY(keychain.readTokensBlocking(egressSecretKey(QStringLiteral("locked")), &blob).ok);
        const std::optional<EgressCredentials> creds = unpackEgressCredentials(blob);
        QVERIFY(creds);
        QCOMPARE(creds->user, QStringLiteral("alice"));
        QCOMPARE(creds->password.toUtf8(), kPassword);

        // serve authenticates to the proxy with them.
        QVERIFY2(m_proxy.start(m_fake.baseUrl()), qPrintable(m_proxy.errorString()));
        const SseResult r = sseRequest("POST", QUrl(m_proxy.url(QStringLiteral("/backend-api/codex/responses"))),
                                       kCodexHeaders, codexBody(QStringLiteral("hello")), 20000);
        QCOMPARE(r.status, 200);
        const QJsonObject row = m_proxy.waitForRequest(QString::fromLatin1(r.header("x-request-id")));
        const QJsonObject attempt = row.value(QLatin1String("attempts")).toArray().first().toObject();
        QCOMPARE(attempt.value(QLatin1String("egress_proxy")), QJsonValue(QStringLiteral("locked")));
        bool authenticated = false;
        for (const QJsonValue &c :
             m_fleet.proxy(QStringLiteral("locked"))->record().value(QLatin1String("connections")).toArray())
            authenticated = authenticated || str(c.toObject(), "user") == QLatin1String("alice");
        QVERIFY(authenticated);
        QCOMPARE(m_proxy.stop(), 0);

        // Changing only the password keeps the user name.
        const QByteArray second = kPassword + "-2";
        QCOMPARE(cli({QStringLiteral("egress"), QStringLiteral("set-credentials"), QStringLiteral("locked")}, second)
                     .exitCode,
                 0);
        QVERIFY(keychain.readTokensBlocking(egressSecretKey(QStringLiteral("locked")), &blob).ok);
        QCOMPARE(unpackEgressCredentials(blob)->user, QStringLiteral("alice"));
        QCOMPARE(unpackEgressCredentials(blob)->password.toUtf8(), second);

        // Never in what was printed, the database files or serve's log.
        QVERIFY(!m_printed.contains(kPassword));
        QVERIFY(!m_proxy.serveStderr().contains(kPassword));
        const QDir data(m_proxy.dataDir());
        int files = 0;
        for (const QString &name : data.entryList(QDir::Files)) {
            QFile f(data.filePath(name));
            QVERIFY(f.open(QIODevice::ReadOnly));
            QVERIFY2(!f.readAll().contains(kPassword), qPrintable(name));
            ++files;
        }
        QVERIFY(files > 0);
    }

    void clearRemovesThem()
    {
        const CliResult r =
            cli({QStringLiteral("egress"), QStringLiteral("clear-credentials"), QStringLiteral("locked")});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        QVERIFY(r.out.contains("removed"));
        QCOMPARE(findRow(list(), QStringLiteral("locked")).value(QLatin1String("credentials_stored")),
                 QJsonValue(false));
        KeychainSecretStore keychain;
        AuthTokens blob;
        QCOMPARE(keychain.readTokensBlocking(egressSecretKey(QStringLiteral("locked")), &blob).error,
                 SecretError::NotFound);
        // Again: nothing to remove is not an error.
        QCOMPARE(
            cli({QStringLiteral("egress"), QStringLiteral("clear-credentials"), QStringLiteral("locked")}).exitCode, 0);
        QVERIFY(!m_printed.contains(kPassword));
    }
};

QTEST_GUILESS_MAIN(TestCliEgress)
#include "tst_cli_egress.moc"
