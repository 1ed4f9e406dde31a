// SWITCHYARD_SECRET_BACKEND=database on a real PostgreSQL 15 server (PostgresServer): sealed tokens round-trip
// through BYTEA columns, rotate and are removed, another replica with the same key reads them and one with
// another key is told so, and a pg_dump of the whole database never shows a token, neither as text nor as
// the hex of a BYTEA value (the scan is shown to find tokens stored in clear).
#include "accounts/DatabaseSecretStore.h"
#include "accounts/SecretCipher.h"
#include "lib/PostgresServer.h"
#include "store/Database.h"

#include <QSqlError>
#include <QSqlQuery>
#include <QTest>

using namespace sy;

namespace {

QVariant scalar(Database &db, const QString &sql)
{
    QSqlQuery q = db.query();
    if (!q.exec(sql) || !q.next())
        return {};
    return q.value(0);
}

SecretKey testKey(char seed)
{
    QByteArray k(SecretKey::kBytes, Qt::Uninitialized);
    for (int i = 0; i < k.size(); ++i)
        k[i] = char(seed * 31 + i * 7 + 1);
    return *SecretKey::fromBytes(k);
}

AuthTokens sampleTokens(const QString &tag)
{
    const auto part = [&](const QString &what) {
        return (what + tag).toUtf8().toBase64(QByteArray::Base64UrlEncoding | QByteArray::OmitTrailingEquals);
    };
    AuthTokens t;
    t.accessToken = QString::fromLatin1(part(QStringLiteral("{\"alg\":\"RS256\"}")) + '.' +
                                        part(QStringLiteral("{\"sub\":\"access\"}")) + '.' +
                                        part(QStringLiteral("access-signature-")));
    t.idToken = QString::fromLatin1(part(QStringLiteral("{\"typ\":\"JWT\"}")) + '.' +
                                    part(QStringLiteral("{\"email\":\"id\"}")) + '.' + part(QStringLiteral("id-sig-")));
    t.refreshToken = QStringLiteral("rt_refresh_token_value_") + tag;
    return t;
}

// Each token and JWT part, raw and hex-encoded (a BYTEA column holding clear text dumps as hex).
QList<QByteArray> needles(const AuthTokens &t)
{
    QList<QByteArray> raw{t.accessToken.toUtf8(), t.refreshToken.toUtf8(), t.idToken.toUtf8()};
    for (const QString &jwt : {t.accessToken, t.idToken}) {
        for (const QString &p : jwt.split(QLatin1Char('.')))
            raw << p.toUtf8();
    }
    QList<QByteArray> out = raw;
    for (const QByteArray &r : raw)
        out << r.toHex();
    return out;
}

QByteArray firstHit(const QByteArray &haystack, const QList<QByteArray> &needles)
{
    for (const QByteArray &n : needles) {
        if (haystack.contains(n))
            return n;
    }
    return {};
}

} // namespace

class tst_SecretDatabasePostgres : public QObject
{
    Q_OBJECT

    test::PostgresServer m_pg;
    QString m_database = QStringLiteral("secrets");
    QString m_url;
    std::unique_ptr<Database> m_db;

private slots:
    void initTestCase()
    {
        QString error;
        QVERIFY2(m_pg.start(&error, m_database), qPrintable(error));
        m_url = m_pg.url();
        m_db = std::make_unique<Database>();
        QVERIFY2(m_db->open(m_url, &error), qPrintable(error));
    }

    void cleanupTestCase() { m_db.reset(); }

    // Sealed tokens round-trip through BYTEA, and a full dump of the database never shows a token.
    void secretStoreRoundTripAndNoTokenInClear()
    {
        QList<QByteArray> secrets;
        {
            DatabaseSecretStore store(m_url, testKey(6));
            AuthTokens read;
            QCOMPARE(store.readTokensBlocking(QStringLiteral("acc_1"), &read).error, SecretError::NotFound);
            for (int i = 0; i < 4; ++i) {
                const AuthTokens t = sampleTokens(QStringLiteral("first%1").arg(i));
                secrets << needles(t);
                const SecretOutcome o = store.writeTokensBlocking(QStringLiteral("acc_%1").arg(i), t);
                QVERIFY2(o.ok, qPrintable(o.errorText));
            }
            const AuthTokens rotated = sampleTokens(QStringLiteral("rotated"));
            secrets << needles(rotated);
            QVERIFY(store.writeTokensBlocking(QStringLiteral("acc_1"), rotated).ok);
            SecretOutcome o = store.readTokensBlocking(QStringLiteral("acc_1"), &read);
            QVERIFY2(o.ok, qPrintable(o.errorText));
            QCOMPARE(read, rotated);
            QVERIFY(store.removeTokensBlocking(QStringLiteral("acc_0")).ok);
            QCOMPARE(store.readTokensBlocking(QStringLiteral("acc_0"), &read).error, SecretError::NotFound);
            // Another replica with the same key reads it; one with another key is told so.
            DatabaseSecretStore replica(m_url, testKey(6));
            QVERIFY(replica.readTokensBlocking(QStringLiteral("acc_2"), &read).ok);
            QCOMPARE(read, sampleTokens(QStringLiteral("first2")));
            DatabaseSecretStore stranger(m_url, testKey(7));
            o = stranger.readTokensBlocking(QStringLiteral("acc_2"), &read);
            QVERIFY(!o.ok);
            QVERIFY2(o.errorText.contains(QLatin1String("another key")), qPrintable(o.errorText));
        }
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT count(*) FROM account_secrets")).toInt(), 3);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT octet_length(nonce) FROM account_secrets "
                                              "WHERE account_id = 'acc_1'"))
                     .toInt(),
                 24);
        QCOMPARE(scalar(*m_db, QStringLiteral("SELECT nonce FROM account_secrets WHERE account_id = 'acc_1'"))
                     .metaType()
                     .id(),
                 QMetaType::QByteArray);

        QByteArray dump;
        QString error;
        QVERIFY2(m_pg.dump(m_database, &dump, &error), qPrintable(error));
        QVERIFY2(dump.contains("COPY public.account_secrets"), dump.left(2000).constData());
        const QByteArray hit = firstHit(dump, secrets);
        QVERIFY2(hit.isEmpty(), hit.constData());
        // The scan has teeth: the same token stored in clear (text, and bytes in a BYTEA column) is found.
        QSqlQuery q = m_db->query();
        QVERIFY(q.prepare(QStringLiteral("INSERT INTO settings (key, value) VALUES ('leak', ?)")));
        q.addBindValue(sampleTokens(QStringLiteral("first3")).refreshToken);
        QVERIFY(q.exec());
        QVERIFY(q.prepare(QStringLiteral("INSERT INTO account_secrets VALUES ('acc_leak', 1, 'k', ?, ?, 0)")));
        q.addBindValue(QByteArray("n"));
        q.addBindValue(sampleTokens(QStringLiteral("first1")).accessToken.toUtf8());
        QVERIFY2(q.exec(), qPrintable(q.lastError().text()));
        QVERIFY2(m_pg.dump(m_database, &dump, &error), qPrintable(error));
        QVERIFY(!firstHit(dump, secrets).isEmpty());
        QVERIFY(dump.contains(sampleTokens(QStringLiteral("first3")).refreshToken.toUtf8()));
        QVERIFY(dump.contains(sampleTokens(QStringLiteral("first1")).accessToken.toUtf8().toHex()));
    }
};

QTEST_GUILESS_MAIN(tst_SecretDatabasePostgres)
#include "tst_secret_database_postgres.moc"
