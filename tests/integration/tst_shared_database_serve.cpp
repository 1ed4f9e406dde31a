// Two `serve` replicas with their own data directories on one database named by SWITCHYARD_DATABASE_URL, end
// to end: a real PostgreSQL 15 server started by the test (postgresql://...) and one shared SQLite file
// (sqlite:///...). `accounts import` with SWITCHYARD_SECRET_BACKEND=database seals the tokens into the shared
// database, each replica answers a turn against the fake upstream with the right account's token, `accounts
// list --json` and `requests --json` of either read the same rows, no SQLite file appears in a data directory,
// no dump of the PostgreSQL database holds a token, and neither the password of the URL nor a token reaches
// any output. An invalid URL exits 3 naming the variable; an unreachable server fails with the URL redacted.
#include "lib/TestFiles.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/HttpTestClient.h"
#include "lib/PostgresServer.h"
#include "lib/ProxyProcess.h"
#include "lib/RawHttpClient.h"
#include "store/Database.h"

#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>

using namespace sy;
using namespace sy::test;

namespace {

const QString kPassword = QStringLiteral("pw-Never-Shown-7q");

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

bool writeKey(const QString &path)
{
    return writeSecretKeyFile(path);
}

QList<QByteArray> secretsOf(const FakeAccount &a)
{
    QList<QByteArray> out{a.accessToken.toUtf8(), a.refreshToken.toUtf8()};
    const QStringList parts = a.accessToken.split(QLatin1Char('.'));
    if (parts.size() == 3)
        out << parts.at(1).toUtf8() << parts.at(2).toUtf8();
    QList<QByteArray> all = out;
    for (const QByteArray &s : out)
        all << s.toHex();
    return all;
}

} // namespace

class tst_SharedDatabaseServe : public QObject
{
    Q_OBJECT

    PostgresServer m_pg;
    FakeUpstreamProcess m_fake;
    QTemporaryDir m_keys;

    void useSharedDatabase(ProxyProcess &proxy, const QString &url, const QString &keyFile)
    {
        proxy.setEnv(QStringLiteral("SWITCHYARD_DATABASE_URL"), url);
        proxy.setEnv(QStringLiteral("SWITCHYARD_SECRET_BACKEND"), QStringLiteral("database"));
        proxy.setEnv(QStringLiteral("SWITCHYARD_SECRET_KEY_FILE"), keyFile);
        // No keychain anywhere: a single keychain call would fail.
        proxy.setEnv(QStringLiteral("DBUS_SESSION_BUS_ADDRESS"), QStringLiteral("unix:path=/nonexistent/bus"));
        proxy.setEnv(QStringLiteral("DISPLAY"), QString());
        // Every debug line too: a failure has something to show, and no line may carry a token or the password.
        proxy.setEnv(QStringLiteral("QT_LOGGING_RULES"), QStringLiteral("sy.*.debug=true"));
    }

    void verifyNothingLeaks(const QByteArray &text, const QList<FakeAccount> &accounts, const char *where)
    {
        QVERIFY2(!text.contains(kPassword.toUtf8()), where);
        for (const FakeAccount &a : accounts) {
            for (const QByteArray &s : secretsOf(a))
                QVERIFY2(!text.contains(s), where);
        }
    }

private slots:
    void initTestCase()
    {
        QVERIFY2(!qEnvironmentVariableIsEmpty("SWITCHYARD_BIN"), "run through ctest (SWITCHYARD_BIN)");
        QString error;
        QVERIFY2(m_pg.start(&error, QStringLiteral("team")), qPrintable(error));
        QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString()));
    }

    void twoReplicasServeFromOneDatabase_data()
    {
        QTest::addColumn<bool>("postgres");
        QTest::newRow("postgresql") << true;
        QTest::newRow("sqlite file") << false;
    }

    void twoReplicasServeFromOneDatabase()
    {
        QFETCH(bool, postgres);
        // Trust authentication ignores the password; it is there to prove that nothing prints it.
        const QString sqliteFile = m_keys.filePath(QStringLiteral("shared/switchyard.sqlite"));
        const QString url = postgres ? m_pg.url(QStringLiteral("team"), kPassword)
                                     : QStringLiteral("sqlite://") + sqliteFile;
        const QString keyFile = m_keys.filePath(QStringLiteral("team.key"));
        QVERIFY(writeKey(keyFile));

        ProxyProcess first;
        useSharedDatabase(first, url, keyFile);
        QVERIFY2(first.addAccounts(2, {QStringLiteral("plus"), QStringLiteral("pro")}), qPrintable(first.errorString()));
        QVERIFY2(first.start(m_fake.baseUrl()), qPrintable(first.errorString()));
        QVERIFY(!QFileInfo::exists(first.dataDir() + QStringLiteral("/switchyard.sqlite")));
        QCOMPARE(QFileInfo::exists(sqliteFile), !postgres);

        ProxyProcess second; // another replica: its own data directory, the same database and key
        useSharedDatabase(second, url, keyFile);
        QVERIFY(second.addAccounts(0)); // writes its config file only
        QVERIFY2(second.start(m_fake.baseUrl()), qPrintable(second.errorString()));
        QVERIFY(!QFileInfo::exists(second.dataDir() + QStringLiteral("/switchyard.sqlite")));

        QVERIFY(m_fake.reset());
        QStringList requestIds;
        for (ProxyProcess *replica : {&first, &second}) {
            const SseResult r = sseRequest("POST", QUrl(replica->url(QStringLiteral("/backend-api/codex/responses"))),
                                           kCodexHeaders, codexBody(QStringLiteral("ECHO: from postgres")));
            QVERIFY2(r.status == 200, r.body.constData());
            QCOMPARE(r.eventTypes().constLast(), QByteArray("response.completed"));
            const QByteArray id = r.header("x-request-id");
            QVERIFY(!id.isEmpty());
            requestIds << QString::fromLatin1(id);
        }
        int turns = 0;
        for (const QJsonValue &v : m_fake.log()) {
            const QJsonObject e = v.toObject();
            if (!e.value(QLatin1String("path")).toString().endsWith(QLatin1String("/codex/responses")))
                continue;
            ++turns;
            const FakeAccount *a = first.accountByChatgptId(e.value(QLatin1String("chatgpt_account_id")).toString());
            QVERIFY2(a, qPrintable(e.value(QLatin1String("chatgpt_account_id")).toString()));
            QCOMPARE(e.value(QLatin1String("authorization")).toString(), a->accessToken);
        }
        QCOMPARE(turns, 2);
        // Both replicas booked their turn in the one request log.
        for (const QString &id : std::as_const(requestIds)) {
            const QJsonObject row = second.waitForRequest(id);
            QCOMPARE(row.value(QLatin1String("status")).toString(), QStringLiteral("completed"));
        }

        // The CLI of either replica reads the same database.
        const CliResult listed = second.cli({QStringLiteral("accounts"), QStringLiteral("list"), QStringLiteral("--json")});
        QVERIFY2(listed.exitCode == 0, listed.err.constData());
        const QJsonArray accounts = listed.json().array();
        QCOMPARE(accounts.size(), 2);
        QStringList aliases;
        for (const QJsonValue &v : accounts)
            aliases << v.toObject().value(QLatin1String("account_alias")).toString();
        aliases.sort();
        QCOMPARE(aliases, (QStringList{QStringLiteral("acct1"), QStringLiteral("acct2")}));

        // Generous: the drain may wait for in-flight turns up to request_total_s / 20 + 5 s (35 s by default).
        // A failure shows the replica's debug log.
        const int firstExit = first.stop(60000);
        QVERIFY2(
            firstExit == 0,
            QByteArray("exit " + QByteArray::number(firstExit) + ": " + first.serveStderr().right(4000)).constData());
        const int secondExit = second.stop(60000);
        QVERIFY2(
            secondExit == 0,
            QByteArray("exit " + QByteArray::number(secondExit) + ": " + second.serveStderr().right(4000)).constData());
        verifyNothingLeaks(first.serveStderr(), first.accounts(), "first replica's stderr");
        verifyNothingLeaks(second.serveStderr(), first.accounts(), "second replica's stderr");
        verifyNothingLeaks(listed.out + listed.err, first.accounts(), "accounts list");

        // The rows are in the shared database, sealed.
        Database db;
        QString error;
        QVERIFY2(db.open(url, &error, Database::OpenMode::ReadOnly), qPrintable(error));
        QSqlQuery q = db.query();
        QVERIFY(q.exec(QStringLiteral("SELECT count(*) FROM account_secrets")) && q.next());
        QCOMPARE(q.value(0).toInt(), 2);
        QVERIFY(q.exec(QStringLiteral("SELECT count(*) FROM request_log")) && q.next());
        QCOMPARE(q.value(0).toInt(), 2);
        QCOMPARE(db.dialect(), postgres ? Database::Dialect::Postgres : Database::Dialect::Sqlite);
        if (!postgres) {
            for (const QString &suffix : {QString(), QStringLiteral("-wal")}) {
                QFile f(sqliteFile + suffix);
                if (f.open(QIODevice::ReadOnly))
                    verifyNothingLeaks(f.readAll(), first.accounts(), "the shared SQLite file");
            }
            return;
        }
        // A dump of the whole PostgreSQL database shows no token.
        QByteArray dump;
        QVERIFY2(m_pg.dump(QStringLiteral("team"), &dump, &error), qPrintable(error));
        QVERIFY(dump.contains("COPY public.account_secrets"));
        verifyNothingLeaks(dump, first.accounts(), "pg_dump");
    }

    void continuationOfAResponseStillStreamingOnTheOtherReplica()
    {
        // docs/OWNERSHIP.md: a response's anchor is written by its settlement, so while it streams on one
        // replica another replica cannot place it and answers previous_response_not_found (nothing is
        // dispatched); once it has completed, the other replica continues it on the account that served it.
        const QString sqliteFile = m_keys.filePath(QStringLiteral("streaming/switchyard.sqlite"));
        const QString url = QStringLiteral("sqlite://") + sqliteFile;
        const QString keyFile = m_keys.filePath(QStringLiteral("streaming.key"));
        QVERIFY(writeKey(keyFile));
        ProxyProcess first;
        useSharedDatabase(first, url, keyFile);
        QVERIFY2(first.addAccounts(2), qPrintable(first.errorString()));
        QVERIFY2(first.start(m_fake.baseUrl()), qPrintable(first.errorString()));
        ProxyProcess second;
        useSharedDatabase(second, url, keyFile);
        QVERIFY(second.addAccounts(0));
        QVERIFY2(second.start(m_fake.baseUrl()), qPrintable(second.errorString()));

        QVERIFY(m_fake.reset());
        for (const FakeAccount &a : first.accounts())
            QVERIFY(m_fake.script(a.chatgptAccountId, {QStringLiteral("slow:300")}));
        RawHttpClient busy;
        QVERIFY(busy.connectTo(first.port()));
        busy.send(RawHttpClient::buildRequest("POST", "/backend-api/codex/responses", kCodexHeaders,
                                              codexBody(QStringLiteral("ECHO: a slow answer of several words"))));
        QVERIFY(busy.waitForBodyContaining("response.output_text.delta", 15000));
        const QRegularExpressionMatch id = QRegularExpression(QStringLiteral("\"id\":\"(resp_[A-Za-z0-9_-]+)\""))
                                               .match(QString::fromUtf8(busy.partial().body));
        QVERIFY2(id.hasMatch(), busy.partial().body.constData());
        const QByteArray owner = busy.partial().header("x-switchyard-account");
        QVERIFY(!owner.isEmpty());
        const int upstreamTurns = int(m_fake.log().size());

        const QByteArray continuation =
            QJsonDocument(QJsonObject{{QStringLiteral("model"), QStringLiteral("gpt-5")},
                                      {QStringLiteral("input"), QStringLiteral("ECHO: continued")},
                                      {QStringLiteral("previous_response_id"), id.captured(1)}})
                .toJson(QJsonDocument::Compact);
        const HttpResult refused = httpRequest("POST", QUrl(second.url(QStringLiteral("/v1/responses"))),
                                               kCodexHeaders, continuation);
        QVERIFY2(refused.status == 400, refused.body.constData());
        QCOMPARE(refused.json().value(QLatin1String("error")).toObject().value(QLatin1String("code")).toString(),
                 QStringLiteral("previous_response_not_found"));
        QCOMPARE(int(m_fake.log().size()), upstreamTurns); // nothing was dispatched for it

        const std::optional<RawResponse> done = busy.readResponse(30000);
        QVERIFY(done);
        QVERIFY2(done->body.contains("response.completed"), done->body.right(400).constData());
        first.waitForRequest(QString::fromLatin1(done->header("x-request-id")));
        const HttpResult continued = httpRequest("POST", QUrl(second.url(QStringLiteral("/v1/responses"))),
                                                 kCodexHeaders, continuation);
        QVERIFY2(continued.status == 200, continued.body.constData());
        QCOMPARE(continued.header("x-switchyard-account"), owner);
        QCOMPARE(first.stop(60000), 0);
        QCOMPARE(second.stop(60000), 0);
    }

    void invalidUrlExitsThreeAndUnreachableServerIsNamedWithoutPassword()
    {
        const QString keyFile = m_keys.filePath(QStringLiteral("other.key"));
        QVERIFY(writeKey(keyFile));
        ProxyProcess proxy;
        useSharedDatabase(proxy, QStringLiteral("postgresql://sy:%1@127.0.0.1/").arg(kPassword), keyFile);
        QVERIFY(proxy.addAccounts(0));
        for (const QStringList &args :
             {QStringList{QStringLiteral("accounts"), QStringLiteral("list")},
              QStringList{QStringLiteral("serve"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0")}}) {
            const CliResult r = proxy.cli(args, 15000);
            QVERIFY2(r.exitCode == 3, r.err.constData());
            QVERIFY2(r.err.contains("SWITCHYARD_DATABASE_URL"), r.err.constData());
            verifyNothingLeaks(r.out + r.err, {}, "invalid URL");
        }

        // Port 1: nothing listens, the connection is refused at once.
        useSharedDatabase(proxy, QStringLiteral("postgresql://sy:%1@127.0.0.1:1/sy").arg(kPassword), keyFile);
        const CliResult r = proxy.cli({QStringLiteral("accounts"), QStringLiteral("list")}, 30000);
        QVERIFY2(r.exitCode != 0, r.out.constData());
        QVERIFY2(r.err.contains("postgresql://sy:***@127.0.0.1:1/sy"), r.err.constData());
        verifyNothingLeaks(r.out + r.err, {}, "unreachable server");
    }
};

QTEST_GUILESS_MAIN(tst_SharedDatabaseServe)
#include "tst_shared_database_serve.moc"
