// API keys (docs/SECURITY.md "API keys"): the key's format and randomness, its hash, how a request presents it,
// limit windows, and the repository with expiry, revocation and token limits summed from the request log, on
// SQLite and on a real PostgreSQL 15 server. The key itself never reaches the database. The create/list code
// the CLI and the dashboard share (ApiKeyAdmin): one validation for both, and secrets wiped in place.
#include "apikeys/ApiKey.h"
#include "apikeys/ApiKeyAdmin.h"
#include "lib/PostgresServer.h"
#include "store/ApiKeyRepository.h"
#include "store/Database.h"
#include "store/RequestLogRepository.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QRegularExpression>
#include <QSet>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>

using namespace sy;

namespace {

constexpr qint64 kNow = 1'800'000'000'000;

RequestLogRecord logRow(const QString &requestId, qint64 startedAtMs, std::optional<qint64> total,
                        std::optional<qint64> input = std::nullopt, std::optional<qint64> output = std::nullopt)
{
    RequestLogRecord r;
    r.requestId = requestId;
    r.startedAtMs = startedAtMs;
    r.route = QStringLiteral("/v1/responses");
    r.status = QStringLiteral("completed");
    r.tokens.total = total;
    r.tokens.input = input;
    r.tokens.output = output;
    return r;
}

} // namespace

class TestApiKeys : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    test::PostgresServer m_pg;
    int m_counter = 0;

    // A fresh database of the row's dialect.
    std::unique_ptr<Database> openFresh()
    {
        QFETCH_GLOBAL(QString, dialect);
        QString location;
        QString error;
        if (dialect == QLatin1String("postgres")) {
            const QString name = QStringLiteral("k%1").arg(++m_counter);
            if (!m_pg.createDatabase(name, &error))
                qFatal("createdb: %s", qPrintable(error));
            location = m_pg.url(name);
        } else {
            location = m_dir.filePath(QStringLiteral("k%1.sqlite").arg(++m_counter));
        }
        auto db = std::make_unique<Database>();
        if (!db->open(location, &error))
            qFatal("open: %s", qPrintable(error));
        return db;
    }

private slots:
    void initTestCase()
    {
        QVERIFY(m_dir.isValid());
        QString error;
        QVERIFY2(m_pg.start(&error), qPrintable(error));
    }

    void initTestCase_data()
    {
        QTest::addColumn<QString>("dialect");
        QTest::newRow("sqlite") << QStringLiteral("sqlite");
        QTest::newRow("postgres") << QStringLiteral("postgres");
    }

    void keysAreRandomAndWellFormed()
    {
        static const QRegularExpression format(QStringLiteral("^sy-[A-Za-z0-9_-]{43}$"));
        static const QRegularExpression id(QStringLiteral("^key_[0-9a-f]{12}$"));
        QSet<QString> secrets;
        QSet<QString> hashes;
        for (int i = 0; i < 200; ++i) {
            const NewApiKey k = generateApiKey();
            QVERIFY2(format.match(k.secret).hasMatch(), qPrintable(k.id));
            QVERIFY(id.match(k.id).hasMatch());
            QCOMPARE(k.hash, hashApiKey(k.secret.toLatin1()));
            QCOMPARE(k.hash.size(), 64);
            QVERIFY(!k.hash.contains(k.secret.mid(3, 8)));
            secrets.insert(k.secret);
            hashes.insert(k.hash);
        }
        QCOMPARE(secrets.size(), 200);
        QCOMPARE(hashes.size(), 200);
        // BLAKE2b-256 of the exact bytes: one changed character is another hash.
        QCOMPARE(hashApiKey("sy-abc"), hashApiKey(QByteArray("sy-abc")));
        QVERIFY(hashApiKey("sy-abc") != hashApiKey("sy-abd"));
        QCOMPARE(hashApiKey(""), QStringLiteral("0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8"));
    }

    void requestsPresentKeys()
    {
        HttpRequest r;
        QCOMPARE(presentedApiKey(r), QByteArray());
        r.headers = {{"authorization", "Bearer sy-one"}};
        QCOMPARE(presentedApiKey(r), QByteArray("sy-one"));
        r.headers = {{"authorization", "bearer   sy-two  "}};
        QCOMPARE(presentedApiKey(r), QByteArray("sy-two"));
        r.headers = {{"x-api-key", "sy-three"}};
        QCOMPARE(presentedApiKey(r), QByteArray("sy-three"));
        r.headers = {{"authorization", "Bearer sy-four"}, {"x-api-key", "sy-five"}};
        QCOMPARE(presentedApiKey(r), QByteArray("sy-four"));
        r.headers = {{"authorization", "Basic dXNlcjpwYXNz"}, {"x-api-key", "sy-six"}};
        QCOMPARE(presentedApiKey(r), QByteArray("sy-six"));
        r.headers = {{"authorization", "Bearer "}};
        QCOMPARE(presentedApiKey(r), QByteArray());
    }

    void limitWindows()
    {
        QString error;
        QCOMPARE(parseLimitWindow(QStringLiteral("5h"), &error), std::optional<qint64>(5 * 3600));
        QCOMPARE(parseLimitWindow(QStringLiteral("1d"), &error), std::optional<qint64>(86400));
        QCOMPARE(parseLimitWindow(QStringLiteral("7d"), &error), std::optional<qint64>(7 * 86400));
        QCOMPARE(parseLimitWindow(QStringLiteral("90m"), &error), std::optional<qint64>(5400));
        QCOMPARE(parseLimitWindow(QStringLiteral("30d"), &error), std::optional<qint64>(30 * 86400));
        for (const char *bad : {"31d", "0m", "5", "h", "5w", "-1h", "1.5h", "", "5 h", "1000000d"}) {
            error.clear();
            QVERIFY2(!parseLimitWindow(QString::fromLatin1(bad), &error), bad);
            QVERIFY(!error.isEmpty());
        }
        QCOMPARE(limitWindowText(5 * 3600), QStringLiteral("5h"));
        QCOMPARE(limitWindowText(7 * 86400), QStringLiteral("7d"));
        QCOMPARE(limitWindowText(5400), QStringLiteral("90m"));
    }

    void verdicts()
    {
        ApiKeyRecord k;
        k.id = QStringLiteral("key_000000000001");
        k.createdAtMs = kNow - 1000;
        QCOMPARE(judgeApiKey(std::nullopt, kNow, 0), ApiKeyVerdict::Unknown);
        QCOMPARE(judgeApiKey(k, kNow, 1'000'000), ApiKeyVerdict::Valid); // no limit
        k.expiresAtMs = kNow + 1;
        QCOMPARE(judgeApiKey(k, kNow, 0), ApiKeyVerdict::Valid);
        k.expiresAtMs = kNow;
        QCOMPARE(judgeApiKey(k, kNow, 0), ApiKeyVerdict::Expired);
        k.expiresAtMs.reset();
        k.limitTokens = 100;
        k.limitWindowS = 3600;
        QCOMPARE(judgeApiKey(k, kNow, 99), ApiKeyVerdict::Valid);
        QCOMPARE(judgeApiKey(k, kNow, 100), ApiKeyVerdict::OverLimit);
        k.revokedAtMs = kNow - 5;
        k.expiresAtMs = kNow - 10;
        QCOMPARE(judgeApiKey(k, kNow, 100), ApiKeyVerdict::Revoked); // revocation wins
    }

    void storesOnlyTheHash()
    {
        const auto db = openFresh();
        ApiKeyRepository repo(*db);
        const NewApiKey made = generateApiKey();
        ApiKeyRecord k;
        k.id = made.id;
        k.name = QStringLiteral("laptop");
        k.createdAtMs = kNow;
        k.expiresAtMs = kNow + 86400000;
        k.limitTokens = 5'000'000'000LL; // beyond 32 bits: BIGINT on PostgreSQL
        k.limitWindowS = 5 * 3600;
        QString error;
        QVERIFY2(repo.insert(k, made.hash, &error), qPrintable(error));

        const std::optional<ApiKeyRecord> found = repo.findByHash(hashApiKey(made.secret.toLatin1()), &error);
        QVERIFY2(found, qPrintable(error));
        QCOMPARE(found->id, made.id);
        QCOMPARE(found->name, QStringLiteral("laptop"));
        QCOMPARE(found->createdAtMs, kNow);
        QCOMPARE(found->expiresAtMs, k.expiresAtMs);
        QCOMPARE(found->limitTokens, k.limitTokens);
        QCOMPARE(found->limitWindowS, k.limitWindowS);
        QVERIFY(!found->revokedAtMs);
        QVERIFY(!found->lastUsedMs);
        QVERIFY(!repo.findByHash(hashApiKey(QByteArray(made.secret.toLatin1() + "x")), &error));
        QVERIFY(error.isEmpty());
        QVERIFY(!repo.findByHash(made.secret, &error)); // the key itself is no lookup value

        // A second key with the same hash cannot exist.
        ApiKeyRecord twin = k;
        twin.id = QStringLiteral("key_twin00000000");
        QVERIFY(!repo.insert(twin, made.hash, &error));
        error.clear();

        if (db->dialect() == SqlDialect::Sqlite) {
            const QString path = db->location();
            db->close();
            QByteArray bytes;
            for (const QString &suffix : {QString(), QStringLiteral("-wal")}) {
                QFile f(path + suffix);
                if (f.open(QIODevice::ReadOnly))
                    bytes += f.readAll();
            }
            QVERIFY(bytes.contains(made.hash.toLatin1()));
            QVERIFY(!bytes.contains(made.secret.toLatin1()));
            QVERIFY(!bytes.contains(made.secret.mid(3).toLatin1()));
        }
    }

    void createRequestsAreValidatedOnce()
    {
        using R = ApiKeyRequest;
        const auto opt = [](const char *s) { return std::optional<QString>(QString::fromUtf8(s)); };
        QString error;
        const std::optional<ApiKeyRecord> plain = apiKeyRecordFor(R{}, kNow, &error);
        QVERIFY2(plain, qPrintable(error));
        QVERIFY(plain->name.isEmpty() && !plain->expiresAtMs && !plain->limitTokens && !plain->limitWindowS);
        const std::optional<ApiKeyRecord> full =
            apiKeyRecordFor(R{opt("  laptop "), opt("30"), opt("250000"), opt("1d")}, kNow, &error);
        QVERIFY2(full, qPrintable(error));
        QCOMPARE(full->name, QStringLiteral("laptop"));
        QCOMPARE(full->createdAtMs, kNow);
        QCOMPARE(full->expiresAtMs, std::optional<qint64>(kNow + 30LL * 86400 * 1000));
        QCOMPARE(full->limitTokens, std::optional<qint64>(250000));
        QCOMPARE(full->limitWindowS, std::optional<qint64>(86400));
        QCOMPARE(apiKeyWindowChoices(), QStringList({"5h", "1d", "7d"}));
        for (const QString &w : apiKeyWindowChoices())
            QVERIFY(apiKeyRecordFor(R{{}, {}, opt("1"), w}, kNow, &error));

        const std::pair<R, const char *> bad[] = {
            {R{opt(""), {}, {}, {}}, "name"},
            {R{opt("   "), {}, {}, {}}, "name"},
            {R{QString(65, QLatin1Char('x')), {}, {}, {}}, "name"},
            {R{opt("tab\there"), {}, {}, {}}, "name"},
            {R{{}, opt("0"), {}, {}}, "expiry"},
            {R{{}, opt("3651"), {}, {}}, "expiry"},
            {R{{}, opt("ten"), {}, {}}, "expiry"},
            {R{{}, {}, opt("5"), {}}, "go together"},
            {R{{}, {}, {}, opt("5h")}, "go together"},
            {R{{}, {}, opt("0"), opt("5h")}, "token limit"},
            {R{{}, {}, opt("1000000000001"), opt("5h")}, "token limit"},
            {R{{}, {}, opt(""), opt("5h")}, "token limit"},
            {R{{}, {}, opt("5"), opt("2w")}, "window"},
        };
        for (const auto &[request, field] : bad) {
            error.clear();
            QVERIFY2(!apiKeyRecordFor(request, kNow, &error), field);
            QVERIFY2(error.contains(QLatin1String(field)), qPrintable(error));
        }
    }

    void issuedKeysAreStoredAsHashesAndListed()
    {
        const auto db = openFresh();
        QString error;
        QVERIFY(!issueApiKey(*db, ApiKeyRequest{{}, QStringLiteral("0"), {}, {}}, kNow, &error));
        QVERIFY(error.contains(QLatin1String("expiry")));
        QCOMPARE(ApiKeyRepository(*db).list(&error).size(), 0); // refused before anything was stored
        std::optional<IssuedApiKey> issued = issueApiKey(
            *db, ApiKeyRequest{QStringLiteral("ci"), {}, QStringLiteral("1000"), QStringLiteral("5h")}, kNow, &error);
        QVERIFY2(issued, qPrintable(error));
        QVERIFY(issued->secret.startsWith("sy-"));
        QCOMPARE(issued->secret.size(), 46);
        const std::optional<ApiKeyRecord> found = ApiKeyRepository(*db).findByHash(hashApiKey(issued->secret), &error);
        QVERIFY2(found, qPrintable(error));
        QCOMPARE(found->id, issued->record.id);
        QCOMPARE(found->name, QStringLiteral("ci"));

        QVERIFY(RequestLogRepository(*db).insert(logRow(QStringLiteral("r1"), kNow + 5, 321), &error));
        QVERIFY(ApiKeyRepository(*db).recordUse(issued->record.id, QStringLiteral("r1"), kNow + 5, &error));
        const std::optional<QList<ApiKeyListing>> listed = listApiKeys(*db, kNow + 10, &error);
        QVERIFY2(listed, qPrintable(error));
        QCOMPARE(listed->size(), 1);
        QCOMPARE(listed->first().state, ApiKeyRecord::State::Active);
        QCOMPARE(listed->first().tokensUsedInWindow, std::optional<qint64>(321));

        // Wiping overwrites the bytes every sharing copy sees, not just this array's.
        const QByteArray shared = issued->secret;
        wipeSecret(issued->secret);
        QVERIFY(issued->secret.isEmpty());
        QCOMPARE(shared, QByteArray(46, '\0'));
        QString text = QStringLiteral("sy-") + QString(43, QLatin1Char('k'));
        const QString textCopy = text;
        wipeSecret(text);
        QVERIFY(text.isEmpty());
        QCOMPARE(textCopy, QString(46, QChar(0)));
    }

    void listCountAndRevoke()
    {
        const auto db = openFresh();
        ApiKeyRepository repo(*db);
        QString error;
        QCOMPARE(repo.countActive(kNow, &error), std::optional<int>(0));
        QStringList ids;
        for (int i = 0; i < 3; ++i) {
            const NewApiKey made = generateApiKey();
            ApiKeyRecord k;
            k.id = made.id;
            k.createdAtMs = kNow + i;
            if (i == 2)
                k.expiresAtMs = kNow - 1; // already expired
            QVERIFY2(repo.insert(k, made.hash, &error), qPrintable(error));
            ids << made.id;
        }
        const QList<ApiKeyRecord> all = repo.list(&error);
        QCOMPARE(all.size(), 3);
        QCOMPARE(all.at(0).id, ids.at(0)); // oldest first
        QCOMPARE(all.at(2).state(kNow), ApiKeyRecord::State::Expired);
        QCOMPARE(repo.countActive(kNow, &error), std::optional<int>(2));

        QVERIFY2(repo.revoke(ids.at(0), kNow + 10, &error), qPrintable(error));
        QCOMPARE(repo.find(ids.at(0), &error)->revokedAtMs, std::optional<qint64>(kNow + 10));
        // Revoking again keeps the first time; an unknown id is no key.
        QVERIFY(repo.revoke(ids.at(0), kNow + 20, &error));
        QCOMPARE(repo.find(ids.at(0), &error)->revokedAtMs, std::optional<qint64>(kNow + 10));
        QVERIFY(!repo.revoke(QStringLiteral("key_nosuchkey000"), kNow, &error));
        QVERIFY(error.isEmpty());
        QCOMPARE(repo.countActive(kNow, &error), std::optional<int>(1));
        QCOMPARE(repo.find(ids.at(0), &error)->state(kNow + 30), ApiKeyRecord::State::Revoked);
    }

    void tokensInTheWindowComeFromTheRequestLog()
    {
        const auto db = openFresh();
        ApiKeyRepository repo(*db);
        RequestLogRepository log(*db);
        QString error;
        const NewApiKey a = generateApiKey();
        const NewApiKey b = generateApiKey();
        for (const NewApiKey *made : {&a, &b}) {
            ApiKeyRecord k;
            k.id = made->id;
            k.createdAtMs = kNow - 10 * 3600000;
            k.limitTokens = 1000;
            k.limitWindowS = 5 * 3600;
            QVERIFY2(repo.insert(k, made->hash, &error), qPrintable(error));
        }
        const qint64 windowStart = kNow - 5 * 3600000;
        // Key a: one request before the window, two inside (one without a total), one still in flight.
        QVERIFY(repo.recordUse(a.id, QStringLiteral("req_old"), windowStart - 1, &error));
        QVERIFY(log.insert(logRow(QStringLiteral("req_old"), windowStart - 1, 5000), &error));
        QVERIFY(repo.recordUse(a.id, QStringLiteral("req_in1"), windowStart, &error));
        QVERIFY(log.insert(logRow(QStringLiteral("req_in1"), windowStart, 600), &error));
        QVERIFY(repo.recordUse(a.id, QStringLiteral("req_in2"), kNow - 1000, &error));
        QVERIFY(log.insert(logRow(QStringLiteral("req_in2"), kNow - 1000, std::nullopt, 300, 50), &error));
        QVERIFY(repo.recordUse(a.id, QStringLiteral("req_flying"), kNow, &error));
        // Key b: a request of its own; a model list (no request id) books nothing.
        QVERIFY(repo.recordUse(b.id, QStringLiteral("req_b"), kNow - 1000, &error));
        QVERIFY(log.insert(logRow(QStringLiteral("req_b"), kNow - 1000, 999), &error));
        QVERIFY2(repo.recordUse(b.id, {}, kNow, &error), qPrintable(error));

        QCOMPARE(repo.tokensUsedSince(a.id, windowStart, &error), std::optional<qint64>(950));
        QCOMPARE(repo.tokensUsedSince(b.id, windowStart, &error), std::optional<qint64>(999));
        QCOMPARE(judgeApiKey(repo.find(a.id, &error), kNow, 950), ApiKeyVerdict::Valid);
        QVERIFY(log.insert(logRow(QStringLiteral("req_flying"), kNow, 50), &error)); // it settled
        const qint64 used = *repo.tokensUsedSince(a.id, windowStart, &error);
        QCOMPARE(used, 1000);
        QCOMPARE(judgeApiKey(repo.find(a.id, &error), kNow, used), ApiKeyVerdict::OverLimit);
        QCOMPARE(repo.find(b.id, &error)->lastUsedMs, std::optional<qint64>(kNow));

        // Bookings older than the longest window go away with the key's next use.
        const qint64 later = kNow + kMaxLimitWindowS * 1000;
        QVERIFY(repo.recordUse(a.id, QStringLiteral("req_later"), later, &error));
        QSqlQuery q = db->query();
        QVERIFY(q.exec(QStringLiteral("SELECT count(*) FROM api_key_requests WHERE key_id = '%1'").arg(a.id)));
        QVERIFY(q.next());
        QCOMPARE(q.value(0).toLongLong(), 2); // req_flying (exactly at the edge) and req_later
    }
};

QTEST_GUILESS_MAIN(TestApiKeys)
#include "tst_apikeys.moc"
