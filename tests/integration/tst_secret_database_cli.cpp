// SWITCHYARD_SECRET_BACKEND=database end to end, with no keychain reachable at all (D-Bus pointed nowhere):
// `accounts import` seals the tokens into the database, `serve` reads them and a turn reaches the fake
// upstream with the right account's token, `accounts remove` deletes the sealed row, a key file others can
// read stops every command with exit 3, and a different key file leaves the accounts without credentials.
#include "lib/TestFiles.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/HttpTestClient.h"
#include "lib/ProxyProcess.h"
#include "store/Database.h"

#include <QDirIterator>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRandomGenerator>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>

using namespace sy;
using namespace sy::test;

namespace {

QByteArray codexBody(const QString &text)
{
    const QJsonObject message{
        {QStringLiteral("type"), QStringLiteral("message")},
        {QStringLiteral("role"), QStringLiteral("user")},
        {QStringLiteral("content"), QJsonArray{QJsonObject{{QStringLiteral("type"), QStringLiteral("input_text")},
                                                           {QStringLiteral("text"), text}}}}};
    return QJsonDocument(QJsonObject{{QStringLiteral("model"), QStringLiteral("gpt-5-codex")},
                                     {QStringLiteral("stream"), true},
                                     {QStringLiteral("store"), false},
                                     {QStringLiteral("input"), QJsonArray{message}}})
        .toJson(QJsonDocument::Compact);
}

const HttpHeaderList kCodexHeaders{{"content-type", "application/json"}, {"authorization", "Bearer client-key"}};

bool writeKey(const QString &path, QFile::Permissions perms)
{
    return writeSecretKeyFile(path, perms);
}

QList<QByteArray> secretsOf(const FakeAccount &a)
{
    QFile f(a.file);
    f.open(QIODevice::ReadOnly);
    const QString idToken = QJsonDocument::fromJson(f.readAll())
                                .object()
                                .value(QLatin1String("tokens"))
                                .toObject()
                                .value(QLatin1String("id_token"))
                                .toString();
    QList<QByteArray> out{a.accessToken.toUtf8(), a.refreshToken.toUtf8(), idToken.toUtf8()};
    for (const QString &jwt : {a.accessToken, idToken}) {
        const QStringList parts = jwt.split(QLatin1Char('.'));
        if (parts.size() == 3)
            out << parts.at(1).toUtf8() << parts.at(2).toUtf8();
    }
    return out;
}

// "file: secret..." for the first token byte sequence found under dir, or empty.
QByteArray leakInDir(const QString &dir, const QList<FakeAccount> &accounts, int *scanned)
{
    QDirIterator it(dir, QDir::Files | QDir::Hidden | QDir::System, QDirIterator::Subdirectories);
    *scanned = 0;
    while (it.hasNext()) {
        QFile f(it.next());
        if (!f.open(QIODevice::ReadOnly))
            continue;
        ++*scanned;
        const QByteArray bytes = f.readAll();
        for (const FakeAccount &a : accounts) {
            for (const QByteArray &s : secretsOf(a)) {
                if (bytes.contains(s))
                    return f.fileName().toUtf8() + ": " + s.left(16) + "...";
            }
        }
    }
    return {};
}

int sealedRows(const QString &sqlitePath)
{
    Database db;
    QString error;
    if (!db.open(sqlitePath, &error, Database::OpenMode::ReadOnly))
        return -1;
    QSqlQuery q = db.query();
    if (!q.exec(QStringLiteral("SELECT count(*) FROM account_secrets")) || !q.next())
        return -1;
    return q.value(0).toInt();
}

} // namespace

class tst_SecretDatabaseCli : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    QTemporaryDir m_keys;

    void useDatabaseBackend(ProxyProcess &proxy, const QString &keyFile)
    {
        proxy.setEnv(QStringLiteral("SWITCHYARD_SECRET_BACKEND"), QStringLiteral("database"));
        proxy.setEnv(QStringLiteral("SWITCHYARD_SECRET_KEY_FILE"), keyFile);
        // No keychain anywhere: a single keychain call would fail the import.
        proxy.setEnv(QStringLiteral("DBUS_SESSION_BUS_ADDRESS"), QStringLiteral("unix:path=/nonexistent/bus"));
        proxy.setEnv(QStringLiteral("DISPLAY"), QString());
    }

private slots:
    void initTestCase()
    {
        QVERIFY2(!qEnvironmentVariableIsEmpty("SWITCHYARD_BIN"), "run through ctest (SWITCHYARD_BIN)");
        QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString()));
    }

    void importServeAndRemoveWithoutKeychain()
    {
        const QString keyFile = m_keys.filePath(QStringLiteral("replica.key"));
        QVERIFY(writeKey(keyFile, QFile::ReadOwner | QFile::WriteOwner));
        ProxyProcess proxy;
        useDatabaseBackend(proxy, keyFile);
        QVERIFY2(proxy.addAccounts(2, {QStringLiteral("plus"), QStringLiteral("pro")}),
                 qPrintable(proxy.errorString()));
        const QString sqlite = proxy.dataDir() + QStringLiteral("/switchyard.sqlite");
        QCOMPARE(sealedRows(sqlite), 2);
        int scanned = 0;
        QByteArray leak = leakInDir(proxy.dataDir(), proxy.accounts(), &scanned);
        QVERIFY2(leak.isEmpty(), leak.constData());
        QVERIFY(scanned >= 1);

        QVERIFY2(proxy.start(m_fake.baseUrl()), qPrintable(proxy.errorString()));
        QVERIFY(m_fake.reset());
        for (int i = 0; i < 4; ++i) {
            const SseResult r = sseRequest("POST", QUrl(proxy.url(QStringLiteral("/backend-api/codex/responses"))),
                                           kCodexHeaders, codexBody(QStringLiteral("ECHO: sealed %1").arg(i)));
            QVERIFY2(r.status == 200, r.body.constData());
            QCOMPARE(r.eventTypes().constLast(), QByteArray("response.completed"));
        }
        const QJsonArray log = m_fake.log();
        int turns = 0;
        for (const QJsonValue &v : log) {
            const QJsonObject e = v.toObject();
            if (!e.value(QLatin1String("path")).toString().endsWith(QLatin1String("/codex/responses")))
                continue;
            ++turns;
            const FakeAccount *a = proxy.accountByChatgptId(e.value(QLatin1String("chatgpt_account_id")).toString());
            QVERIFY2(a, qPrintable(e.value(QLatin1String("chatgpt_account_id")).toString()));
            QCOMPARE(e.value(QLatin1String("authorization")).toString(), a->accessToken);
        }
        QCOMPARE(turns, 4);
        QCOMPARE(proxy.stop(), 0);
        const QByteArray stderrText = proxy.serveStderr();
        for (const FakeAccount &a : proxy.accounts()) {
            for (const QByteArray &s : secretsOf(a))
                QVERIFY2(!stderrText.contains(s), "serve printed a token");
        }
        leak = leakInDir(proxy.dataDir(), proxy.accounts(), &scanned);
        QVERIFY2(leak.isEmpty(), leak.constData());

        // remove deletes the sealed row with the account.
        const CliResult removed =
            proxy.cli({QStringLiteral("accounts"), QStringLiteral("remove"), QStringLiteral("acct1")});
        QVERIFY2(removed.exitCode == 0, removed.err.constData());
        QCOMPARE(sealedRows(sqlite), 1);

        // Another replica's key cannot open the rows: the account has no credentials, and says why.
        const QString otherKey = m_keys.filePath(QStringLiteral("other.key"));
        QVERIFY(writeKey(otherKey, QFile::ReadOwner | QFile::WriteOwner));
        useDatabaseBackend(proxy, otherKey);
        QVERIFY2(proxy.start(m_fake.baseUrl()), qPrintable(proxy.errorString()));
        const HttpResult status = httpRequest("GET", QUrl(proxy.url(QStringLiteral("/api/status"))));
        QCOMPARE(status.status, 200);
        const QJsonArray accounts = status.json().value(QLatin1String("accounts")).toArray();
        QCOMPARE(accounts.size(), 1);
        QVERIFY2(accounts.at(0)
                     .toObject()
                     .value(QLatin1String("credentials"))
                     .toString()
                     .contains(QLatin1String("another key")),
                 status.body.constData());
        QVERIFY(m_fake.reset());
        const SseResult refused = sseRequest("POST", QUrl(proxy.url(QStringLiteral("/backend-api/codex/responses"))),
                                             kCodexHeaders, codexBody(QStringLiteral("ECHO: wrong key")));
        QVERIFY2(refused.status >= 400, refused.body.constData());
        QCOMPARE(m_fake.log().size(), 0);
        QCOMPARE(proxy.stop(), 0);
    }

    void unsafeOrMissingKeyFileExitsThree()
    {
        const QString keyFile = m_keys.filePath(QStringLiteral("shared.key"));
        QVERIFY(writeKey(keyFile, QFile::ReadOwner | QFile::WriteOwner | QFile::ReadGroup | QFile::ReadOther));
        QFile f(keyFile);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray keyText = f.readAll().trimmed();
        ProxyProcess proxy;
        useDatabaseBackend(proxy, keyFile);
        QVERIFY(proxy.addAccounts(0)); // writes the config file only
        for (const QStringList &args :
             {QStringList{QStringLiteral("accounts"), QStringLiteral("list")},
              QStringList{QStringLiteral("serve"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0")}}) {
            const CliResult r = proxy.cli(args, 15000);
            const QByteArray what = QByteArray(args.join(QLatin1Char(' ')).toUtf8() + ": " + r.err);
            QVERIFY2(r.exitCode == 3, what.constData());
            QVERIFY2(r.err.contains("SWITCHYARD_SECRET_KEY_FILE") && r.err.contains("group or others"),
                     r.err.constData());
            QVERIFY(!r.err.contains(keyText.left(16)) && !r.out.contains(keyText.left(16)));
        }
        useDatabaseBackend(proxy, m_keys.filePath(QStringLiteral("absent.key")));
        const CliResult missing = proxy.cli({QStringLiteral("accounts"), QStringLiteral("list")}, 15000);
        QVERIFY2(missing.exitCode == 3 && missing.err.contains("does not exist"), missing.err.constData());
        QVERIFY(!QFileInfo::exists(proxy.dataDir() + QStringLiteral("/switchyard.sqlite")));
    }
};

QTEST_GUILESS_MAIN(tst_SecretDatabaseCli)
#include "tst_secret_database_cli.moc"
