// SWITCHYARD_NEEDS_KEYRING: accounts are imported into a real gnome-keyring (ctest runs this file inside
// tools/with-keyring.sh, a private D-Bus session with a throwaway HOME).
//
// The command line as real processes (DESIGN.md "Command line", issue 2 point 6): `switchyard accounts ...`,
// `requests`, `usage`, `status`, `--version`, `client-config`, each run against its own temporary data dir and
// config file. Every command's stdout/stderr, every file under the data dir and HOME are scanned for the
// imported tokens: a token may live in the keychain and nowhere else.
#include "lib/FakeUpstreamProcess.h"
#include "lib/HttpTestClient.h"
#include "lib/ProxyProcess.h"
#include "lib/RawHttpClient.h"
#include "store/AccountRepository.h"
#include "store/Database.h"
#include "util/Ids.h"

#include <QDateTime>
#include <QDeadlineTimer>
#include <QDir>
#include <QDirIterator>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRandomGenerator>
#include <QRegularExpression>
#include <QTcpServer>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>

using namespace sy;
using namespace sy::test;

// QVERIFY2 with a QByteArray expression as the message (QStringBuilder is on).
#define QVERIFY_B(cond, message) QVERIFY2(cond, QByteArray(message).constData())

namespace {

const QLatin1String kAccountId("account_id");

struct Run
{
    int exitCode = -1;
    QByteArray out;
    QByteArray err;
    qint64 elapsedMs = 0;
    QJsonDocument json() const { return QJsonDocument::fromJson(out); }
    QByteArray both() const { return out + "\n--- stderr ---\n" + err; }
};

// A data dir + config file of its own, and a transcript of everything the CLI printed in it.
class Sandbox
{
public:
    Sandbox()
    {
        QFile f(configPath());
        if (f.open(QIODevice::WriteOnly))
            f.write("{}\n");
    }

    QString root() const { return m_dir.path(); }
    QString dataDir() const { return m_dir.path() + QStringLiteral("/data"); }
    QString configPath() const { return m_dir.path() + QStringLiteral("/config.json"); }

    Run run(const QStringList &args, const QHash<QString, QString> &set = {}, const QStringList &unset = {},
            int timeoutMs = 30000)
    {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        for (const QString &k : env.keys()) {
            if (k.startsWith(QLatin1String("SWITCHYARD_")) && k != QLatin1String("SWITCHYARD_BIN"))
                env.remove(k);
        }
        env.insert(QStringLiteral("SWITCHYARD_DATA_DIR"), dataDir());
        env.insert(QStringLiteral("SWITCHYARD_CONFIG"), configPath());
        env.insert(QStringLiteral("SWITCHYARD_UPSTREAM_URL"), QStringLiteral("http://127.0.0.1:9/backend-api"));
        for (auto it = set.begin(); it != set.end(); ++it)
            env.insert(it.key(), it.value());
        for (const QString &k : unset)
            env.remove(k);
        QProcess p;
        p.setProcessEnvironment(env);
        QElapsedTimer timer;
        timer.start();
        p.start(qEnvironmentVariable("SWITCHYARD_BIN"), args);
        Run r;
        if (!p.waitForFinished(timeoutMs)) {
            p.kill();
            p.waitForFinished();
            r.err = "<timed out after " + QByteArray::number(timeoutMs) + " ms>";
        } else {
            r.exitCode = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
        }
        r.elapsedMs = timer.elapsed();
        r.out = p.readAllStandardOutput();
        r.err += p.readAllStandardError();
        m_transcript += r.out + '\n' + r.err + '\n';
        return r;
    }

    QJsonArray list()
    {
        const Run r = run({QStringLiteral("accounts"), QStringLiteral("list"), QStringLiteral("--json")});
        if (r.exitCode != 0 || !r.json().isArray())
            qWarning("accounts list --json failed: %s", r.both().constData());
        return r.json().array();
    }

    const QByteArray &transcript() const { return m_transcript; }

private:
    QTemporaryDir m_dir;
    QByteArray m_transcript;
};

QJsonObject findBy(const QJsonArray &arr, const QString &key, const QString &value)
{
    for (const QJsonValue &v : arr) {
        if (v.toObject().value(key).toString() == value)
            return v.toObject();
    }
    return {};
}

QByteArray b64url(const QJsonObject &o)
{
    return QJsonDocument(o)
        .toJson(QJsonDocument::Compact)
        .toBase64(QByteArray::Base64UrlEncoding | QByteArray::OmitTrailingEquals);
}

QString randomHex()
{
    return QString::number(QRandomGenerator::global()->generate64(), 16);
}

QString fakeJwt(const QJsonObject &payload)
{
    return QString::fromLatin1(
        b64url({{QStringLiteral("alg"), QStringLiteral("none")}}) + '.' + b64url(payload) + '.' +
        randomHex().toLatin1().toBase64(QByteArray::Base64UrlEncoding | QByteArray::OmitTrailingEquals));
}

void writeFile(const QString &path, const QByteArray &bytes)
{
    QFile f(path);
    QVERIFY2(f.open(QIODevice::WriteOnly | QIODevice::Truncate), qPrintable(path));
    f.write(bytes);
}

QJsonObject readJson(const QString &path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    return QJsonDocument::fromJson(f.readAll()).object();
}

// A Codex auth.json with full control over the identity claims (makeFakeAccount() derives them from an index).
// Empty chatgptAccountId: neither tokens.account_id nor the claim is written.
FakeAccount writeAuth(const QString &path, const QString &chatgptAccountId, const QString &userId, const QString &email,
                      const QString &plan = QStringLiteral("plus"))
{
    FakeAccount a;
    a.chatgptAccountId = chatgptAccountId;
    a.userId = userId;
    a.email = email;
    a.plan = plan;
    a.file = path;
    const qint64 exp = QDateTime::currentSecsSinceEpoch() + 10 * 24 * 3600;
    QJsonObject auth{{QStringLiteral("chatgpt_plan_type"), plan}, {QStringLiteral("chatgpt_user_id"), userId}};
    if (!chatgptAccountId.isEmpty())
        auth.insert(QStringLiteral("chatgpt_account_id"), chatgptAccountId);
    a.accessToken = fakeJwt({{QStringLiteral("sub"), userId},
                             {QStringLiteral("exp"), exp},
                             {QStringLiteral("https://api.openai.com/auth"), auth},
                             {QStringLiteral("nonce"), randomHex()}});
    const QString idToken = fakeJwt({{QStringLiteral("sub"), userId},
                                     {QStringLiteral("email"), email},
                                     {QStringLiteral("exp"), exp},
                                     {QStringLiteral("https://api.openai.com/auth"), auth}});
    a.refreshToken = QStringLiteral("rt_custom_") + randomHex() + randomHex();
    QJsonObject tokens{{QStringLiteral("id_token"), idToken},
                       {QStringLiteral("access_token"), a.accessToken},
                       {QStringLiteral("refresh_token"), a.refreshToken}};
    if (!chatgptAccountId.isEmpty())
        tokens.insert(QStringLiteral("account_id"), chatgptAccountId);
    writeFile(path, QJsonDocument(QJsonObject{{QStringLiteral("OPENAI_API_KEY"), QJsonValue()},
                                              {QStringLiteral("tokens"), tokens},
                                              {QStringLiteral("last_refresh"),
                                               QDateTime::currentDateTimeUtc().toString(Qt::ISODate)}})
                        .toJson());
    return a;
}

// Every secret string of an account: the three tokens and each JWT's signature part on its own.
QList<QByteArray> secretsOf(const FakeAccount &a)
{
    QList<QByteArray> s{a.accessToken.toUtf8(), a.refreshToken.toUtf8()};
    const QString idToken =
        readJson(a.file).value(QLatin1String("tokens")).toObject().value(QLatin1String("id_token")).toString();
    if (!idToken.isEmpty())
        s << idToken.toUtf8();
    for (const QString &jwt : {a.accessToken, idToken}) {
        const QStringList parts = jwt.split(QLatin1Char('.'));
        if (parts.size() == 3 && parts.at(2).size() >= 8)
            s << parts.at(2).toUtf8();
    }
    return s;
}

// Names the first secret of `accounts` found in `bytes`, or returns empty.
QByteArray leakIn(const QByteArray &bytes, const QList<FakeAccount> &accounts)
{
    for (const FakeAccount &a : accounts) {
        for (const QByteArray &secret : secretsOf(a)) {
            if (bytes.contains(secret))
                return secret.left(24) + "... (of " + a.file.toUtf8() + ")";
        }
    }
    return {};
}

// Scans every regular file below `dir` (hidden files included). Returns "file: secret" on a hit.
QByteArray leakInFiles(const QString &dir, const QList<FakeAccount> &accounts, int *scanned = nullptr)
{
    QDirIterator it(dir, QDir::Files | QDir::Hidden | QDir::System | QDir::NoSymLinks, QDirIterator::Subdirectories);
    int n = 0;
    while (it.hasNext()) {
        QFile f(it.next());
        if (!f.open(QIODevice::ReadOnly))
            continue;
        ++n;
        const QByteArray hit = leakIn(f.readAll(), accounts);
        if (!hit.isEmpty())
            return f.fileName().toUtf8() + ": " + hit;
    }
    if (scanned)
        *scanned = n;
    return {};
}

QByteArray secretTool(const QStringList &args)
{
    QProcess p;
    p.setProcessChannelMode(QProcess::MergedChannels);
    p.start(QStringLiteral("secret-tool"), args);
    if (!p.waitForFinished(10000)) {
        p.kill();
        p.waitForFinished();
        return "<secret-tool hung>";
    }
    return p.readAll();
}

// The secret the keychain holds for an account (empty when there is none).
QByteArray keychainLookup(const QString &accountId)
{
    QProcess p;
    p.start(QStringLiteral("secret-tool"),
            {QStringLiteral("lookup"), QStringLiteral("server"), QStringLiteral("switchyard"), QStringLiteral("user"),
             QStringLiteral("account/") + accountId});
    if (!p.waitForFinished(10000)) {
        p.kill();
        p.waitForFinished();
        return "<secret-tool hung>";
    }
    return p.readAllStandardOutput();
}

// The "user" attributes of every Switchyard item in the keychain.
QStringList keychainUsers()
{
    const QByteArray text = secretTool(
        {QStringLiteral("search"), QStringLiteral("--all"), QStringLiteral("server"), QStringLiteral("switchyard")});
    QStringList users;
    const QRegularExpression re(QStringLiteral("attribute\\.user\\s*=\\s*(\\S+)"));
    for (auto it = re.globalMatch(QString::fromUtf8(text)); it.hasNext();)
        users << it.next().captured(1);
    users.sort();
    return users;
}

quint16 freePort()
{
    QTcpServer s;
    if (!s.listen(QHostAddress::LocalHost, 0))
        return 0;
    return s.serverPort();
}

QByteArray responsesBody(bool stream)
{
    return QJsonDocument(QJsonObject{{QStringLiteral("model"), QStringLiteral("gpt-5")},
                                     {QStringLiteral("stream"), stream},
                                     {QStringLiteral("input"), QStringLiteral("ECHO: cli test")}})
        .toJson(QJsonDocument::Compact);
}

} // namespace

class TestCliAccounts : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;

private slots:
    void initTestCase()
    {
        QVERIFY2(!qEnvironmentVariableIsEmpty("SWITCHYARD_BIN"), "run through ctest (SWITCHYARD_BIN)");
        QVERIFY2(!qEnvironmentVariableIsEmpty("DBUS_SESSION_BUS_ADDRESS"), "run through tools/with-keyring.sh");
        QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString()));
    }

    void init() { QVERIFY(m_fake.reset()); }

    // 1. import prints the id; list --json shows the record; no token anywhere but the keychain.
    void importPrintsIdAndNoTokenLeaks()
    {
        Sandbox box;
        const FakeAccount a = makeFakeAccount(box.root(), 1, QStringLiteral("pro"));
        const Run imported = box.run({QStringLiteral("accounts"), QStringLiteral("import"), a.file,
                                      QStringLiteral("--alias"), QStringLiteral("work")});
        QVERIFY2(imported.exitCode == 0, imported.both().constData());

        const Run listed = box.run({QStringLiteral("accounts"), QStringLiteral("list"), QStringLiteral("--json")});
        QVERIFY2(listed.exitCode == 0, listed.both().constData());
        QVERIFY2(listed.json().isArray(), listed.out.constData());
        const QJsonArray list = listed.json().array();
        QCOMPARE(list.size(), 1);
        const QJsonObject acct = list.first().toObject();
        const QString id = acct.value(kAccountId).toString();
        QVERIFY2(!id.isEmpty(), listed.out.constData());
        QVERIFY2(imported.out.contains(id.toUtf8()), imported.both().constData()); // the import printed the id
        QCOMPARE(acct.value(QLatin1String("account_alias")).toString(), QStringLiteral("work"));
        QCOMPARE(acct.value(QLatin1String("email")).toString(), a.email);
        QCOMPARE(acct.value(QLatin1String("plan")).toString(), QStringLiteral("pro"));
        QCOMPARE(acct.value(QLatin1String("status")).toString(), QStringLiteral("active"));
        QCOMPARE(acct.value(QLatin1String("chatgpt_account_id")).toString(), a.chatgptAccountId);
        QVERIFY2(acct.value(QLatin1String("pinned")).isBool() && !acct.value(QLatin1String("pinned")).toBool(),
                 listed.out.constData());

        // The other read commands print the account too, still without a token.
        const Run text = box.run({QStringLiteral("accounts"), QStringLiteral("list")});
        QVERIFY2(text.exitCode == 0 && text.out.contains(id.toUtf8()), text.both().constData());
        QCOMPARE(box.run({QStringLiteral("usage"), QStringLiteral("--json")}).exitCode, 0);
        QCOMPARE(box.run({QStringLiteral("usage")}).exitCode, 0);
        QCOMPARE(box.run({QStringLiteral("requests"), QStringLiteral("--json")}).exitCode, 0);

        // The tokens went to the keychain ...
        const QByteArray stored = keychainLookup(id);
        QVERIFY2(stored.contains(a.refreshToken.toUtf8()), "the keychain holds no refresh token for the account");
        QVERIFY2(stored.contains(a.accessToken.toUtf8()), "the keychain holds no access token for the account");

        // ... and nowhere else: not on stdout/stderr, not in the database, not in any file of the data dir or HOME.
        // (Positive control: the scanner does find the tokens in the auth.json we wrote.)
        QVERIFY2(!leakInFiles(box.root(), {a}).isEmpty(), "the file scan cannot find a token even in auth.json");
        const QByteArray printed = leakIn(box.transcript(), {a});
        QVERIFY_B(printed.isEmpty(), "a token was printed: " + printed);
        QVERIFY2(QFileInfo::exists(box.dataDir() + QStringLiteral("/switchyard.sqlite")),
                 "no SQLite database in the data dir, the scan would prove nothing");
        int scanned = 0;
        const QByteArray inData = leakInFiles(box.dataDir(), {a}, &scanned);
        QVERIFY_B(inData.isEmpty(), "a token is stored in the data dir: " + inData);
        QVERIFY(scanned >= 1);
        const QByteArray inHome = leakInFiles(qEnvironmentVariable("HOME"), {a});
        QVERIFY_B(inHome.isEmpty(), "a token is stored in plain text under HOME: " + inHome);
        QVERIFY(box.run({QStringLiteral("accounts"), QStringLiteral("remove"), id}).exitCode == 0);
    }

    // 2. several files at once; --alias with two files; re-import updates; one workspace, two users.
    void importSeveralReimportAndIdentity()
    {
        Sandbox box;
        QList<FakeAccount> accts;
        for (int i = 1; i <= 3; ++i)
            accts << makeFakeAccount(box.root(), i);
        const Run imported = box.run(
            {QStringLiteral("accounts"), QStringLiteral("import"), accts[0].file, accts[1].file, accts[2].file});
        QVERIFY2(imported.exitCode == 0, imported.both().constData());
        QJsonArray list = box.list();
        QCOMPARE(list.size(), 3);
        QHash<QString, QString> idOf; // file -> id
        for (const FakeAccount &a : accts) {
            const QJsonObject o = findBy(list, QStringLiteral("chatgpt_account_id"), a.chatgptAccountId);
            QVERIFY2(!o.isEmpty(), qPrintable(a.chatgptAccountId));
            QCOMPARE(o.value(QLatin1String("email")).toString(), a.email);
            QCOMPARE(o.value(QLatin1String("status")).toString(), QStringLiteral("active"));
            idOf.insert(a.file, o.value(kAccountId).toString());
            QVERIFY2(imported.out.contains(o.value(kAccountId).toString().toUtf8()), imported.both().constData());
        }

        // --alias names one account: with two files it is refused and nothing changes.
        const FakeAccount extra = makeFakeAccount(box.root(), 4);
        const Run twoWithAlias = box.run({QStringLiteral("accounts"), QStringLiteral("import"), accts[0].file,
                                          extra.file, QStringLiteral("--alias"), QStringLiteral("both")});
        QVERIFY2(twoWithAlias.exitCode != 0, twoWithAlias.both().constData());
        QVERIFY2(twoWithAlias.err.toLower().contains("alias"), twoWithAlias.both().constData());
        QVERIFY2(
            QRegularExpression(QStringLiteral("one|single|1")).match(QString::fromUtf8(twoWithAlias.err)).hasMatch(),
            twoWithAlias.both().constData());
        list = box.list();
        QCOMPARE(list.size(), 3);
        QVERIFY(findBy(list, QStringLiteral("account_alias"), QStringLiteral("both")).isEmpty());
        QVERIFY(findBy(list, QStringLiteral("chatgpt_account_id"), extra.chatgptAccountId).isEmpty());

        // Re-importing the same file updates the record (same id, no duplicate) and can set the alias.
        const Run again = box.run({QStringLiteral("accounts"), QStringLiteral("import"), accts[0].file,
                                   QStringLiteral("--alias"), QStringLiteral("first")});
        QVERIFY2(again.exitCode == 0, again.both().constData());
        QVERIFY2(again.out.contains(idOf.value(accts[0].file).toUtf8()), again.both().constData());
        list = box.list();
        QCOMPARE(list.size(), 3);
        QCOMPARE(findBy(list, QStringLiteral("account_alias"), QStringLiteral("first")).value(kAccountId).toString(),
                 idOf.value(accts[0].file));

        // A re-import with rotated tokens (Codex refreshed them) replaces the keychain item's tokens.
        QJsonObject file = readJson(accts[1].file);
        QJsonObject tokens = file.value(QLatin1String("tokens")).toObject();
        const QString rotated = QStringLiteral("rt_rotated_") + randomHex() + randomHex();
        tokens.insert(QStringLiteral("refresh_token"), rotated);
        file.insert(QStringLiteral("tokens"), tokens);
        writeFile(accts[1].file, QJsonDocument(file).toJson());
        const Run rotatedRun = box.run({QStringLiteral("accounts"), QStringLiteral("import"), accts[1].file});
        QVERIFY2(rotatedRun.exitCode == 0, rotatedRun.both().constData());
        QCOMPARE(box.list().size(), 3);
        const QByteArray stored = keychainLookup(idOf.value(accts[1].file));
        QVERIFY2(stored.contains(rotated.toUtf8()), "re-import did not update the keychain item");
        QVERIFY2(!stored.contains(accts[1].refreshToken.toUtf8()), "the keychain still holds the old refresh token");
        FakeAccount rotatedAcct = accts[1];
        rotatedAcct.refreshToken = rotated;

        // One workspace (chatgpt_account_id), two members (user ids): two accounts.
        const QString workspace = QStringLiteral("cgpt-shared-") + randomHex();
        const FakeAccount alice = writeAuth(box.root() + QStringLiteral("/alice.json"), workspace,
                                            QStringLiteral("user-alice-") + randomHex(),
                                            QStringLiteral("alice@example.test"), QStringLiteral("team"));
        const FakeAccount bob =
            writeAuth(box.root() + QStringLiteral("/bob.json"), workspace, QStringLiteral("user-bob-") + randomHex(),
                      QStringLiteral("bob@example.test"), QStringLiteral("team"));
        const Run members = box.run({QStringLiteral("accounts"), QStringLiteral("import"), alice.file, bob.file});
        QVERIFY2(members.exitCode == 0, members.both().constData());
        list = box.list();
        QCOMPARE(list.size(), 5);
        const QJsonObject a = findBy(list, QStringLiteral("email"), alice.email);
        const QJsonObject b = findBy(list, QStringLiteral("email"), bob.email);
        QVERIFY(!a.isEmpty() && !b.isEmpty());
        QVERIFY(a.value(kAccountId).toString() != b.value(kAccountId).toString());
        QCOMPARE(a.value(QLatin1String("chatgpt_account_id")).toString(), workspace);
        QCOMPARE(b.value(QLatin1String("chatgpt_account_id")).toString(), workspace);
        // Each member's own tokens are stored under their own account.
        QVERIFY(keychainLookup(a.value(kAccountId).toString()).contains(alice.refreshToken.toUtf8()));
        QVERIFY(keychainLookup(b.value(kAccountId).toString()).contains(bob.refreshToken.toUtf8()));

        const QList<FakeAccount> all{accts[0], accts[1], rotatedAcct, accts[2], extra, alice, bob};
        const QByteArray printed = leakIn(box.transcript(), all);
        QVERIFY_B(printed.isEmpty(), "a token was printed: " + printed);
        const QByteArray stored2 = leakInFiles(box.dataDir(), all);
        QVERIFY_B(stored2.isEmpty(), "a token is stored in the data dir: " + stored2);
        for (const QJsonValue &v : list)
            box.run({QStringLiteral("accounts"), QStringLiteral("remove"), v.toObject().value(kAccountId).toString()});
    }

    void malformedFileImportsNothing_data()
    {
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<QString>("reason"); // a regular expression the message must match (case-insensitive)

        QTest::newRow("not json") << QByteArray("this is { not json") << QStringLiteral("json");
        QTest::newRow("empty file") << QByteArray() << QStringLiteral("json|empty");
        QTest::newRow("no tokens") << QByteArray(R"({"OPENAI_API_KEY": null, "last_refresh": "2026-01-01T00:00:00Z"})")
                                   << QStringLiteral("tokens");
        QTest::newRow("api key only") << QByteArray(R"({"OPENAI_API_KEY": "sk-not-a-login"})")
                                      << QStringLiteral("tokens|api key");
        QTest::newRow("no account id") << QByteArray("NO_ACCOUNT_ID") << QStringLiteral("account.?id");
    }

    // 2b. A malformed file: exit 1 with the reason and nothing imported, even next to valid files.
    void malformedFileImportsNothing()
    {
        QFETCH(QByteArray, content);
        QFETCH(QString, reason);
        Sandbox box;
        const FakeAccount existing = makeFakeAccount(box.root(), 1);
        QCOMPARE(box.run({QStringLiteral("accounts"), QStringLiteral("import"), existing.file}).exitCode, 0);
        const QJsonArray before = box.list();
        QCOMPARE(before.size(), 1);
        const QStringList keychainBefore = keychainUsers();

        const QString bad = box.root() + QStringLiteral("/bad-auth.json");
        if (content == "NO_ACCOUNT_ID")
            writeAuth(bad, QString(), QStringLiteral("user-x"), QStringLiteral("x@example.test"));
        else
            writeFile(bad, content);
        const FakeAccount good1 = makeFakeAccount(box.root(), 2);
        const FakeAccount good2 = makeFakeAccount(box.root(), 3);
        const QRegularExpression why(reason, QRegularExpression::CaseInsensitiveOption);

        const QList<QStringList> attempts{
            {bad},
            {good1.file, bad},
            {bad, good1.file},
            {good1.file, bad, good2.file},
        };
        for (const QStringList &files : attempts) {
            const Run r = box.run(QStringList{QStringLiteral("accounts"), QStringLiteral("import")} + files);
            QVERIFY2(r.exitCode == 1, r.both().constData());
            QVERIFY_B(r.err.contains(bad.toUtf8()), "the message does not name the bad file: " + r.err);
            QVERIFY_B(why.match(QString::fromUtf8(r.err)).hasMatch(), "the message does not say why: " + r.err);
            QCOMPARE(box.list(), before);
            QCOMPARE(keychainUsers(), keychainBefore);
        }
        const QByteArray printed = leakIn(box.transcript(), {existing, good1, good2});
        QVERIFY_B(printed.isEmpty(), "a token was printed: " + printed);
        box.run({QStringLiteral("accounts"), QStringLiteral("remove"),
                 before.first().toObject().value(kAccountId).toString()});
    }

    // 3. pause / resume by id, alias and email; unknown and ambiguous ACCOUNT.
    void pauseResumeByIdAliasEmail()
    {
        Sandbox box;
        const FakeAccount a1 = makeFakeAccount(box.root(), 1);
        const FakeAccount a2 = makeFakeAccount(box.root(), 2);
        QCOMPARE(box.run({QStringLiteral("accounts"), QStringLiteral("import"), a1.file, QStringLiteral("--alias"),
                          QStringLiteral("alpha")})
                     .exitCode,
                 0);
        QCOMPARE(box.run({QStringLiteral("accounts"), QStringLiteral("import"), a2.file}).exitCode, 0);
        QJsonArray list = box.list();
        const QString id1 = findBy(list, QStringLiteral("email"), a1.email).value(kAccountId).toString();
        const QString id2 = findBy(list, QStringLiteral("email"), a2.email).value(kAccountId).toString();
        QVERIFY(!id1.isEmpty() && !id2.isEmpty());
        auto statusOf = [&](const QString &id) {
            return findBy(box.list(), QStringLiteral("account_id"), id).value(QLatin1String("status")).toString();
        };
        auto verb = [&](const QString &v, const QString &ref) { return box.run({QStringLiteral("accounts"), v, ref}); };

        Run r = verb(QStringLiteral("pause"), id1);
        QVERIFY2(r.exitCode == 0, r.both().constData());
        QCOMPARE(statusOf(id1), QStringLiteral("paused"));
        QCOMPARE(statusOf(id2), QStringLiteral("active"));
        r = verb(QStringLiteral("resume"), QStringLiteral("alpha"));
        QVERIFY2(r.exitCode == 0, r.both().constData());
        QCOMPARE(statusOf(id1), QStringLiteral("active"));
        r = verb(QStringLiteral("pause"), a2.email);
        QVERIFY2(r.exitCode == 0, r.both().constData());
        QCOMPARE(statusOf(id2), QStringLiteral("paused"));
        QCOMPARE(statusOf(id1), QStringLiteral("active"));
        r = verb(QStringLiteral("pause"), QStringLiteral("alpha"));
        QVERIFY2(r.exitCode == 0, r.both().constData());
        QCOMPARE(statusOf(id1), QStringLiteral("paused"));
        r = verb(QStringLiteral("resume"), id2);
        QVERIFY2(r.exitCode == 0, r.both().constData());
        QCOMPARE(statusOf(id2), QStringLiteral("active"));
        r = verb(QStringLiteral("resume"), a1.email);
        QVERIFY2(r.exitCode == 0, r.both().constData());
        QCOMPARE(statusOf(id1), QStringLiteral("active"));

        // Unknown: exit 1, says so, changes nothing.
        const QJsonArray beforeUnknown = box.list();
        for (const QString &v :
             {QStringLiteral("pause"), QStringLiteral("resume"), QStringLiteral("remove"), QStringLiteral("pin")}) {
            r = verb(v, QStringLiteral("nobody@nowhere.test"));
            QVERIFY2(r.exitCode == 1, r.both().constData());
            QVERIFY2(r.err.contains("nobody@nowhere.test"), r.both().constData());
            QVERIFY2(QRegularExpression(QStringLiteral("not found|no account|unknown|no such"),
                                        QRegularExpression::CaseInsensitiveOption)
                         .match(QString::fromUtf8(r.err))
                         .hasMatch(),
                     r.both().constData());
        }
        QCOMPARE(box.list(), beforeUnknown);

        // Ambiguous: the same person (email) in a second workspace is a second account.
        QDir().mkpath(box.root() + QStringLiteral("/other"));
        const FakeAccount twin = makeFakeAccount(box.root() + QStringLiteral("/other"), 1);
        QCOMPARE(twin.email, a1.email);
        QCOMPARE(box.run({QStringLiteral("accounts"), QStringLiteral("import"), twin.file}).exitCode, 0);
        list = box.list();
        QCOMPARE(list.size(), 3);
        const QString twinId =
            findBy(list, QStringLiteral("chatgpt_account_id"), twin.chatgptAccountId).value(kAccountId).toString();
        QVERIFY(!twinId.isEmpty() && twinId != id1);
        for (const QString &v : {QStringLiteral("pause"), QStringLiteral("remove"), QStringLiteral("pin")}) {
            r = verb(v, a1.email);
            QVERIFY2(r.exitCode == 1, r.both().constData());
            QVERIFY_B(r.err.contains(id1.toUtf8()) && r.err.contains(twinId.toUtf8()),
                      "an ambiguous ACCOUNT must list the matches: " + r.err);
            QCOMPARE(box.list(), list);
        }
        QVERIFY(keychainLookup(id1).contains(a1.refreshToken.toUtf8()));
        QVERIFY(keychainLookup(twinId).contains(twin.refreshToken.toUtf8()));
        // The alias still names exactly one of them.
        r = verb(QStringLiteral("pause"), QStringLiteral("alpha"));
        QVERIFY2(r.exitCode == 0, r.both().constData());
        QCOMPARE(statusOf(id1), QStringLiteral("paused"));
        QCOMPARE(statusOf(twinId), QStringLiteral("active"));

        const QByteArray printed = leakIn(box.transcript(), {a1, a2, twin});
        QVERIFY_B(printed.isEmpty(), "a token was printed: " + printed);
        for (const QString &id : {id1, id2, twinId})
            box.run({QStringLiteral("accounts"), QStringLiteral("remove"), id});
    }

    // 3b. remove (by alias, email and id) deletes the keychain item and keeps the request history.
    // Statuses come with their deadlines: a limited or cooling-down account says when it serves again (its
    // cooldown, or the reset of its exhausted window); one that only a person can change says nothing.
    void statusesShowWhenTheyEnd()
    {
        Sandbox box;
        const FakeAccount a1 = makeFakeAccount(box.root(), 1);
        const FakeAccount a2 = makeFakeAccount(box.root(), 2);
        const FakeAccount a3 = makeFakeAccount(box.root(), 3);
        for (const FakeAccount *a : {&a1, &a2, &a3})
            QCOMPARE(box.run({QStringLiteral("accounts"), QStringLiteral("import"), a->file}).exitCode, 0);
        QJsonArray list = box.list();
        const QString limited = findBy(list, QStringLiteral("email"), a1.email).value(kAccountId).toString();
        const QString cooling = findBy(list, QStringLiteral("email"), a2.email).value(kAccountId).toString();
        const QString paused = findBy(list, QStringLiteral("email"), a3.email).value(kAccountId).toString();
        const qint64 now = QDateTime::currentMSecsSinceEpoch();
        const qint64 weeklyReset = now + 3 * 3600 * 1000;
        const qint64 cooldown = now + 90 * 1000;
        {
            Database db;
            QString error;
            QVERIFY2(db.open(box.dataDir() + QStringLiteral("/switchyard.sqlite"), &error), qPrintable(error));
            AccountRepository repo(db);
            QVERIFY2(repo.setStatus(limited, QStringLiteral("quota_exceeded"), QStringLiteral("usage_limit_reached"),
                                    &error),
                     qPrintable(error));
            UsageRecord u;
            u.accountId = limited;
            u.secondary = {100.0, 10080, weeklyReset};
            u.observedAtMs = now;
            QVERIFY2(repo.saveUsage(u, &error), qPrintable(error));
            QVERIFY2(repo.setCooldown(cooling, cooldown, 2, &error), qPrintable(error));
            QVERIFY2(repo.setStatus(paused, QStringLiteral("paused"), QStringLiteral("paused by user"), &error),
                     qPrintable(error));
        }
        list = box.list();
        auto until = [&](const QString &id) {
            return QDateTime::fromString(findBy(list, QStringLiteral("account_id"), id).value(QLatin1String("status_until"))
                                             .toString(),
                                         Qt::ISODateWithMs);
        };
        QCOMPARE(until(limited).toMSecsSinceEpoch(), weeklyReset);
        QCOMPARE(until(cooling).toMSecsSinceEpoch(), cooldown);
        QVERIFY(findBy(list, QStringLiteral("account_id"), paused).value(QLatin1String("status_until")).isNull());
        const Run text = box.run({QStringLiteral("accounts"), QStringLiteral("list")});
        QVERIFY2(text.out.contains("UNTIL") && text.out.contains(isoUtc(weeklyReset).toUtf8()), text.out.constData());
    }

    void removeDeletesKeychainItemKeepsHistory()
    {
        ProxyProcess proxy;
        QVERIFY2(proxy.addAccounts(3), qPrintable(proxy.errorString()));
        for (const FakeAccount &a : proxy.accounts())
            QVERIFY(m_fake.setUsage(a.chatgptAccountId, {{QStringLiteral("primary_used_percent"), 42},
                                                         {QStringLiteral("secondary_used_percent"), 17}}));
        QVERIFY2(proxy.start(m_fake.baseUrl()), qPrintable(proxy.errorString()));
        const HttpResult served = httpRequest("POST", QUrl(proxy.url(QStringLiteral("/v1/responses"))),
                                              {{"content-type", "application/json"}}, responsesBody(false));
        QVERIFY2(served.status == 200, served.body.constData());
        const QString requestId = QString::fromLatin1(served.header("x-request-id"));
        QVERIFY(!requestId.isEmpty());
        const QJsonObject row = proxy.waitForRequest(requestId);
        QVERIFY2(!row.isEmpty(), "the request was never logged");
        const QString servedId = row.value(kAccountId).toString();
        QVERIFY(proxy.accountById(servedId));

        // usage --json shows the served account's windows as the upstream reported them.
        QJsonObject usage;
        QDeadlineTimer deadline(10000);
        do {
            const CliResult u = proxy.cli({QStringLiteral("usage"), QStringLiteral("--json")});
            QVERIFY2(u.exitCode == 0, u.err.constData());
            usage = findBy(u.json().array(), QStringLiteral("account_id"), servedId);
            if (usage.value(QLatin1String("primary_window")).toObject().value(QLatin1String("used_percent")).isDouble())
                break;
            QThread::msleep(200);
        } while (!deadline.hasExpired());
        QCOMPARE(
            usage.value(QLatin1String("primary_window")).toObject().value(QLatin1String("used_percent")).toDouble(),
            42.0);
        QCOMPARE(
            usage.value(QLatin1String("secondary_window")).toObject().value(QLatin1String("used_percent")).toDouble(),
            17.0);
        QVERIFY2(usage.value(QLatin1String("tokens_all_time")).isObject() ||
                     usage.value(QLatin1String("tokens_24h")).isObject(),
                 "usage --json has no token totals");

        QCOMPARE(proxy.stop(), 0);

        const QList<FakeAccount> accts = proxy.accounts();
        QVERIFY2(keychainUsers().size() >= 3, qPrintable(keychainUsers().join(QLatin1Char(' '))));
        const QStringList refs{accts[0].alias, accts[1].email, accts[2].id};
        QStringList remaining{accts[0].id, accts[1].id, accts[2].id};
        for (int i = 0; i < 3; ++i) {
            const FakeAccount &a = accts[i];
            QVERIFY2(keychainLookup(a.id).contains(a.refreshToken.toUtf8()), qPrintable(a.id));
            const CliResult r = proxy.cli({QStringLiteral("accounts"), QStringLiteral("remove"), refs[i]});
            QVERIFY2(r.exitCode == 0, QByteArray(r.out + r.err).constData());
            QVERIFY2(leakIn(r.out + r.err, accts).isEmpty(), "remove printed a token");
            remaining.removeAll(a.id);
            QVERIFY2(keychainLookup(a.id).isEmpty(),
                     qPrintable(QStringLiteral("keychain item of %1 still there").arg(a.id)));
            const QStringList users = keychainUsers();
            QVERIFY2(!users.contains(QStringLiteral("account/") + a.id), qPrintable(users.join(QLatin1Char(' '))));
            for (const QString &other : remaining)
                QVERIFY2(users.contains(QStringLiteral("account/") + other), qPrintable(users.join(QLatin1Char(' '))));
            const QJsonArray list =
                proxy.cli({QStringLiteral("accounts"), QStringLiteral("list"), QStringLiteral("--json")})
                    .json()
                    .array();
            QCOMPARE(list.size(), int(remaining.size()));
            QVERIFY(findBy(list, QStringLiteral("account_id"), a.id).isEmpty());
            // Removing it again: not found.
            const CliResult again = proxy.cli({QStringLiteral("accounts"), QStringLiteral("remove"), a.id});
            QVERIFY2(again.exitCode == 1, QByteArray(again.out + again.err).constData());
        }

        // The history stays: the row still names the account that served it.
        const QJsonObject kept = findBy(proxy.requestLog(), QStringLiteral("request_id"), requestId);
        QVERIFY2(!kept.isEmpty(), "removing the account deleted its request history");
        QCOMPARE(kept.value(kAccountId).toString(), servedId);
        QCOMPARE(kept.value(QLatin1String("status")).toString(), QStringLiteral("completed"));
        const QByteArray inData = leakInFiles(proxy.dataDir(), accts);
        QVERIFY_B(inData.isEmpty(), "a token is stored in the data dir: " + inData);
    }

    // 4. pin ACCOUNT, pin ACCOUNT --strict, pin auto.
    void pinAndAuto()
    {
        Sandbox box;
        const FakeAccount a1 = makeFakeAccount(box.root(), 1);
        const FakeAccount a2 = makeFakeAccount(box.root(), 2);
        QCOMPARE(box.run({QStringLiteral("accounts"), QStringLiteral("import"), a1.file, QStringLiteral("--alias"),
                          QStringLiteral("acct1")})
                     .exitCode,
                 0);
        QCOMPARE(box.run({QStringLiteral("accounts"), QStringLiteral("import"), a2.file, QStringLiteral("--alias"),
                          QStringLiteral("acct2")})
                     .exitCode,
                 0);
        auto pinned = [&]() {
            QStringList names;
            for (const QJsonValue &v : box.list()) {
                const QJsonValue p = v.toObject().value(QLatin1String("pinned"));
                if (!p.isBool())
                    return QStringList{QStringLiteral("<pinned is not a boolean>")};
                if (p.toBool())
                    names << v.toObject().value(QLatin1String("account_alias")).toString();
            }
            return names;
        };
        QCOMPARE(pinned(), QStringList());
        Run r = box.run({QStringLiteral("accounts"), QStringLiteral("pin"), QStringLiteral("acct1")});
        QVERIFY2(r.exitCode == 0, r.both().constData());
        QCOMPARE(pinned(), QStringList{QStringLiteral("acct1")});
        r = box.run(
            {QStringLiteral("accounts"), QStringLiteral("pin"), QStringLiteral("acct1"), QStringLiteral("--strict")});
        QVERIFY2(r.exitCode == 0, r.both().constData());
        QCOMPARE(pinned(), QStringList{QStringLiteral("acct1")});
        r = box.run({QStringLiteral("accounts"), QStringLiteral("pin"), a2.email});
        QVERIFY2(r.exitCode == 0, r.both().constData());
        QCOMPARE(pinned(), QStringList{QStringLiteral("acct2")});
        r = box.run({QStringLiteral("accounts"), QStringLiteral("pin"), QStringLiteral("nobody")});
        QVERIFY2(r.exitCode == 1, r.both().constData());
        QCOMPARE(pinned(), QStringList{QStringLiteral("acct2")});
        r = box.run({QStringLiteral("accounts"), QStringLiteral("pin"), QStringLiteral("auto")});
        QVERIFY2(r.exitCode == 0, r.both().constData());
        QCOMPARE(pinned(), QStringList());
        for (const QJsonValue &v : box.list())
            box.run({QStringLiteral("accounts"), QStringLiteral("remove"), v.toObject().value(kAccountId).toString()});
    }

    // 5. No keychain reachable: refuse, say so, store nothing anywhere.
    void importWithoutKeychainStoresNothing()
    {
        Sandbox box;
        const FakeAccount a = makeFakeAccount(box.root(), 1);
        const Run r = box.run({QStringLiteral("accounts"), QStringLiteral("import"), a.file, QStringLiteral("--alias"),
                               QStringLiteral("nokeychain")},
                              {{QStringLiteral("DBUS_SESSION_BUS_ADDRESS"), QStringLiteral("unix:path=/nonexistent")}},
                              {QStringLiteral("DISPLAY"), QStringLiteral("WAYLAND_DISPLAY")}, 30000);
        QVERIFY2(r.exitCode != 0 && r.exitCode != -1, r.both().constData());
        QVERIFY2(r.elapsedMs < 8000, qPrintable(QStringLiteral("took %1 ms").arg(r.elapsedMs)));
        const QString err = QString::fromUtf8(r.err).toLower();
        QVERIFY2(err.contains(QLatin1String("keychain")) &&
                     QRegularExpression(QStringLiteral("no secure|not reachable|unavailable|not available"))
                         .match(err)
                         .hasMatch(),
                 r.both().constData());
        QVERIFY2(!r.out.contains("imported"), r.both().constData());

        const QJsonArray list = box.list();
        QVERIFY2(list.isEmpty(), QJsonDocument(list).toJson().constData());
        const QByteArray printed = leakIn(box.transcript(), {a});
        QVERIFY_B(printed.isEmpty(), "a token was printed: " + printed);
        if (QFileInfo::exists(box.dataDir())) {
            const QByteArray inData = leakInFiles(box.dataDir(), {a});
            QVERIFY_B(inData.isEmpty(), "a token is stored in the data dir: " + inData);
        }
        const QByteArray inHome = leakInFiles(qEnvironmentVariable("HOME"), {a});
        QVERIFY_B(inHome.isEmpty(), "a token is stored in plain text under HOME: " + inHome);
        // And the real keychain did not get it either.
        const QStringList users = keychainUsers();
        for (const QString &u : users)
            QVERIFY2(!keychainLookup(u.mid(int(qstrlen("account/")))).contains(a.refreshToken.toUtf8()), qPrintable(u));
    }

    // 6. requests / usage JSON on an empty or fresh database; --limit validation.
    void requestsAndUsageJson()
    {
        Sandbox box;
        Run r = box.run({QStringLiteral("requests"), QStringLiteral("--json")});
        QVERIFY2(r.exitCode == 0, r.both().constData());
        QVERIFY2(r.json().isArray() && r.json().array().isEmpty(), r.out.constData());
        QCOMPARE(r.out.simplified().replace(' ', QByteArray()), QByteArray("[]"));
        r = box.run(
            {QStringLiteral("requests"), QStringLiteral("--json"), QStringLiteral("--limit"), QStringLiteral("5")});
        QVERIFY2(r.exitCode == 0 && r.json().isArray(), r.both().constData());

        for (const QString &bad : {QStringLiteral("0"), QStringLiteral("-3"), QStringLiteral("abc")}) {
            r = box.run({QStringLiteral("requests"), QStringLiteral("--limit"), bad});
            QVERIFY2(r.exitCode == 1, r.both().constData());
            QVERIFY2(r.err.contains("limit"), r.both().constData());
            QVERIFY2(r.out.isEmpty(), r.both().constData());
        }

        r = box.run({QStringLiteral("usage"), QStringLiteral("--json")});
        QVERIFY2(r.exitCode == 0, r.both().constData());
        QVERIFY2(r.json().isArray() && r.json().array().isEmpty(), r.out.constData());

        const FakeAccount a1 = makeFakeAccount(box.root(), 1);
        const FakeAccount a2 = makeFakeAccount(box.root(), 2);
        QCOMPARE(box.run({QStringLiteral("accounts"), QStringLiteral("import"), a1.file, QStringLiteral("--alias"),
                          QStringLiteral("one")})
                     .exitCode,
                 0);
        QCOMPARE(box.run({QStringLiteral("accounts"), QStringLiteral("import"), a2.file}).exitCode, 0);
        r = box.run({QStringLiteral("usage"), QStringLiteral("--json")});
        QVERIFY2(r.exitCode == 0, r.both().constData());
        const QJsonArray usage = r.json().array();
        QCOMPARE(usage.size(), 2);
        for (const QJsonValue &v : usage) {
            const QJsonObject o = v.toObject();
            QVERIFY2(o.value(kAccountId).isString(), r.out.constData());
            QVERIFY2(o.contains(QLatin1String("account_alias")), r.out.constData());
            for (const QLatin1String key : {QLatin1String("primary_window"), QLatin1String("secondary_window")}) {
                QVERIFY2(o.contains(key), qPrintable(QStringLiteral("no %1 in %2").arg(key, QString::fromUtf8(r.out))));
                const QJsonValue w = o.value(key);
                // Unknown: null, or an object whose numbers and times are null (never 0).
                if (!w.isNull()) {
                    QVERIFY2(w.isObject(), r.out.constData());
                    QVERIFY2(w.toObject().value(QLatin1String("used_percent")).isNull(), r.out.constData());
                    QVERIFY2(w.toObject().value(QLatin1String("resets_at")).isNull(), r.out.constData());
                }
            }
        }
        const QJsonObject one = findBy(usage, QStringLiteral("account_alias"), QStringLiteral("one"));
        QVERIFY2(!one.isEmpty(), r.out.constData());
        const QJsonObject two =
            findBy(usage, QStringLiteral("account_id"),
                   findBy(box.list(), QStringLiteral("email"), a2.email).value(kAccountId).toString());
        QVERIFY2(!two.isEmpty(), r.out.constData());
        QVERIFY2(two.value(QLatin1String("account_alias")).isNull(), r.out.constData());

        r = box.run({QStringLiteral("usage")});
        QVERIFY2(r.exitCode == 0 && r.out.contains("one"), r.both().constData());
        const QByteArray printed = leakIn(box.transcript(), {a1, a2});
        QVERIFY_B(printed.isEmpty(), "a token was printed: " + printed);
        for (const QJsonValue &v : box.list())
            box.run({QStringLiteral("accounts"), QStringLiteral("remove"), v.toObject().value(kAccountId).toString()});
    }

    // 7a. status without a running instance names the address it tried.
    void statusWithoutInstance()
    {
        Sandbox box;
        const quint16 port = freePort();
        QVERIFY(port != 0);
        const QString address = QStringLiteral("127.0.0.1:%1").arg(port);
        for (const QStringList &args :
             {QStringList{QStringLiteral("status")}, QStringList{QStringLiteral("status"), QStringLiteral("--json")}}) {
            const Run r = box.run(args + QStringList{QStringLiteral("--listen"), address}, {}, {}, 20000);
            QVERIFY2(r.exitCode == 1, r.both().constData());
            QVERIFY2(r.err.contains(address.toUtf8()), r.both().constData());
            QVERIFY2(r.elapsedMs < 10000, qPrintable(QString::number(r.elapsedMs)));
        }
    }

    // 7b. status against a running instance: accounts with slots and in_flight, and the in-flight turns.
    void statusFromRunningInstance()
    {
        ProxyProcess proxy;
        proxy.setConfig({{QStringLiteral("request_total_s"), 20}});
        QVERIFY2(proxy.addAccounts(2), qPrintable(proxy.errorString()));
        QVERIFY2(proxy.start(m_fake.baseUrl()), qPrintable(proxy.errorString()));
        const QStringList listen{QStringLiteral("--listen"), QStringLiteral("127.0.0.1:%1").arg(proxy.port())};
        auto status = [&]() {
            const CliResult r = proxy.cli(QStringList{QStringLiteral("status"), QStringLiteral("--json")} + listen);
            if (r.exitCode != 0)
                qWarning("status failed (%d): %s", r.exitCode, r.err.constData());
            return r.json().object();
        };

        QJsonObject s = status();
        QVERIFY2(!s.isEmpty(), "status --json printed no JSON object");
        QJsonArray accounts = s.value(QLatin1String("accounts")).toArray();
        QCOMPARE(accounts.size(), 2);
        for (const FakeAccount &a : proxy.accounts()) {
            const QJsonObject o = findBy(accounts, QStringLiteral("account_id"), a.id);
            QVERIFY2(!o.isEmpty(), qPrintable(a.id));
            QCOMPARE(o.value(QLatin1String("account_alias")).toString(), a.alias);
            QCOMPARE(o.value(QLatin1String("status")).toString(), QStringLiteral("active"));
            QVERIFY2(o.value(QLatin1String("slots")).toInt(-1) >= 1, QJsonDocument(o).toJson().constData());
            QVERIFY2(o.value(QLatin1String("in_flight")).isDouble(), QJsonDocument(o).toJson().constData());
            QCOMPARE(o.value(QLatin1String("in_flight")).toInt(), 0);
        }
        QVERIFY(s.value(QLatin1String("in_flight")).isArray());
        QCOMPARE(s.value(QLatin1String("in_flight")).toArray().size(), 0);
        const CliResult text = proxy.cli(QStringList{QStringLiteral("status")} + listen);
        QVERIFY2(text.exitCode == 0 && text.out.contains("acct1") && text.out.contains("acct2"), text.out.constData());

        // A turn held by a silent upstream shows up as in flight, on its account.
        for (const FakeAccount &a : proxy.accounts())
            QVERIFY(m_fake.script(a.chatgptAccountId, {QStringLiteral("silent")}, true));
        RawHttpClient client;
        QVERIFY(client.connectTo(proxy.port()));
        client.send(RawHttpClient::buildRequest("POST", "/v1/responses", {{"content-type", "application/json"}},
                                                responsesBody(true)));
        auto responsesSeen = [&]() {
            int n = 0;
            for (const QJsonValue &v : m_fake.log())
                n += v.toObject().value(QLatin1String("path")).toString().endsWith(QLatin1String("/responses")) ? 1 : 0;
            return n;
        };
        QTRY_VERIFY_WITH_TIMEOUT(responsesSeen() >= 1, 10000);
        s = status();
        const QJsonArray turns = s.value(QLatin1String("in_flight")).toArray();
        QCOMPARE(turns.size(), 1);
        const QJsonObject turn = turns.first().toObject();
        QVERIFY2(turn.value(QLatin1String("request_id")).toString().startsWith(QLatin1String("req_")),
                 QJsonDocument(turn).toJson().constData());
        QVERIFY2(!turn.value(QLatin1String("stage")).toString().isEmpty(), QJsonDocument(turn).toJson().constData());
        const QString busy = turn.value(kAccountId).toString();
        QVERIFY2(proxy.accountById(busy), QJsonDocument(turn).toJson().constData());
        QCOMPARE(turn.value(QLatin1String("account_alias")).toString(), proxy.accountById(busy)->alias);
        accounts = s.value(QLatin1String("accounts")).toArray();
        QCOMPARE(findBy(accounts, QStringLiteral("account_id"), busy).value(QLatin1String("in_flight")).toInt(), 1);

        // The client goes away: the turn ends and leaves the live view.
        client.socket()->abort();
        QDeadlineTimer deadline(15000);
        do {
            s = status();
            if (s.value(QLatin1String("in_flight")).isArray() &&
                s.value(QLatin1String("in_flight")).toArray().isEmpty())
                break;
            QThread::msleep(200);
        } while (!deadline.hasExpired());
        QCOMPARE(s.value(QLatin1String("in_flight")).toArray().size(), 0);
        QCOMPARE(findBy(s.value(QLatin1String("accounts")).toArray(), QStringLiteral("account_id"), busy)
                     .value(QLatin1String("in_flight"))
                     .toInt(-1),
                 0);
        m_fake.reset();
        QCOMPARE(proxy.stop(), 0);
        for (const FakeAccount &a : proxy.accounts())
            proxy.cli({QStringLiteral("accounts"), QStringLiteral("remove"), a.id});
    }

    // 7c. The owner slots per account follow the configuration file's slots_per_account (DESIGN.md: "Each
    // account has N owner slots (default 4, per-account setting)"), in the running instance and in the CLI.
    void statusSlotsFollowConfig()
    {
        ProxyProcess proxy;
        proxy.setConfig({{QStringLiteral("slots_per_account"), 3}});
        QVERIFY2(proxy.addAccounts(1), qPrintable(proxy.errorString()));
        QVERIFY2(proxy.start(m_fake.baseUrl()), qPrintable(proxy.errorString()));
        const CliResult r = proxy.cli({QStringLiteral("status"), QStringLiteral("--json"), QStringLiteral("--listen"),
                                       QStringLiteral("127.0.0.1:%1").arg(proxy.port())});
        QVERIFY2(r.exitCode == 0, r.err.constData());
        const QJsonArray accounts = r.json().object().value(QLatin1String("accounts")).toArray();
        QCOMPARE(accounts.size(), 1);
        const int liveSlots = accounts.first().toObject().value(QLatin1String("slots")).toInt(-1);
        QCOMPARE(proxy.stop(), 0);
        const QJsonArray list =
            proxy.cli({QStringLiteral("accounts"), QStringLiteral("list"), QStringLiteral("--json")}).json().array();
        for (const FakeAccount &a : proxy.accounts())
            proxy.cli({QStringLiteral("accounts"), QStringLiteral("remove"), a.id});
        QCOMPARE(liveSlots, 3);
        QCOMPARE(list.size(), 1);
        QCOMPARE(list.first().toObject().value(QLatin1String("slots")).toInt(-1), 3);
    }

    // 8. --version, unknown command, client-config.
    void versionUnknownAndClientConfig()
    {
        Sandbox box;
        Run r = box.run({QStringLiteral("--version")});
        QCOMPARE(r.exitCode, 0);
        QVERIFY2(QRegularExpression(QStringLiteral("^switchyard \\d+\\.\\d+\\.\\d+\\s*$"))
                     .match(QString::fromUtf8(r.out))
                     .hasMatch(),
                 r.both().constData());

        r = box.run({QStringLiteral("frobnicate")});
        QVERIFY2(r.exitCode == 1, r.both().constData());
        QVERIFY2(r.err.contains("frobnicate"), r.both().constData());
        r = box.run({QStringLiteral("accounts"), QStringLiteral("frobnicate")});
        QVERIFY2(r.exitCode == 1 && !r.err.isEmpty(), r.both().constData());
        r = box.run({QStringLiteral("--no-such-option")});
        QVERIFY2(r.exitCode == 1 && !r.err.isEmpty(), r.both().constData());
        r = box.run({QStringLiteral("client-config"), QStringLiteral("vim")});
        QVERIFY2(r.exitCode == 1 && !r.err.isEmpty(), r.both().constData());

        // Codex: a config.toml snippet (parsed loosely: key = "value" lines).
        auto tomlValues = [](const QByteArray &text) {
            QHash<QString, QString> values;
            const QRegularExpression re(QStringLiteral("^\\s*([A-Za-z_]+)\\s*=\\s*\"([^\"]*)\"\\s*$"),
                                        QRegularExpression::MultilineOption);
            for (auto it = re.globalMatch(QString::fromUtf8(text)); it.hasNext();) {
                const auto m = it.next();
                values.insert(m.captured(1), m.captured(2));
            }
            return values;
        };
        r = box.run({QStringLiteral("client-config"), QStringLiteral("codex")});
        QVERIFY2(r.exitCode == 0, r.both().constData());
        QHash<QString, QString> toml = tomlValues(r.out);
        QCOMPARE(toml.value(QStringLiteral("base_url")), QStringLiteral("http://127.0.0.1:2455/backend-api/codex"));
        QCOMPARE(toml.value(QStringLiteral("wire_api")), QStringLiteral("responses"));
        QVERIFY2(r.out.contains("[model_providers."), r.out.constData());

        r = box.run({QStringLiteral("client-config"), QStringLiteral("codex"), QStringLiteral("--listen"),
                     QStringLiteral("127.0.0.1:34567")});
        QVERIFY2(r.exitCode == 0, r.both().constData());
        toml = tomlValues(r.out);
        QVERIFY2(toml.value(QStringLiteral("base_url")).endsWith(QLatin1String("/backend-api/codex")),
                 r.out.constData());
        QVERIFY2(toml.value(QStringLiteral("base_url")).contains(QLatin1String(":34567/")), r.out.constData());
        QCOMPARE(toml.value(QStringLiteral("wire_api")), QStringLiteral("responses"));

        // OpenCode: JSON with provider.switchyard.options.baseURL ending in /v1.
        r = box.run({QStringLiteral("client-config"), QStringLiteral("opencode"), QStringLiteral("--listen"),
                     QStringLiteral("127.0.0.1:34567")});
        QVERIFY2(r.exitCode == 0, r.both().constData());
        QJsonParseError pe{};
        const QJsonDocument doc = QJsonDocument::fromJson(r.out, &pe);
        QVERIFY2(pe.error == QJsonParseError::NoError && doc.isObject(), r.out.constData());
        const QString baseUrl = doc.object()
                                    .value(QLatin1String("provider"))
                                    .toObject()
                                    .value(QLatin1String("switchyard"))
                                    .toObject()
                                    .value(QLatin1String("options"))
                                    .toObject()
                                    .value(QLatin1String("baseURL"))
                                    .toString();
        QVERIFY2(baseUrl.endsWith(QLatin1String("/v1")), r.out.constData());
        QVERIFY2(baseUrl.startsWith(QLatin1String("http://127.0.0.1:34567")), r.out.constData());
    }
};

QTEST_GUILESS_MAIN(TestCliAccounts)
#include "tst_cli_accounts.moc"
