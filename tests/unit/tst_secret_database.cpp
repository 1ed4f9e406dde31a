// SWITCHYARD_SECRET_BACKEND=database (issue 3 point 1): the key file rules, XChaCha20-Poly1305 sealing bound
// to the account id, DatabaseSecretStore round trips and refusals (wrong key, tampering, a blob moved to
// another account), the database files never holding a token in clear, use from another thread, the
// factory and the configuration check.
#include "accounts/DatabaseSecretStore.h"
#include "accounts/KeychainSecretStore.h"
#include "accounts/SecretCipher.h"
#include "accounts/SecretStoreFactory.h"
#include "config/Config.h"
#include "store/Database.h"

#include <QFile>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>
#include <QThread>
#include <sys/prctl.h>
#include <sys/resource.h>

using namespace sy;

namespace {

const QFile::Permissions kOwnerOnly = QFile::ReadOwner | QFile::WriteOwner;

QByteArray randomKeyBytes(char seed)
{
    QByteArray k(SecretKey::kBytes, Qt::Uninitialized);
    for (int i = 0; i < k.size(); ++i)
        k[i] = char(seed * 31 + i * 7 + 1);
    return k;
}

bool writeFile(const QString &path, const QByteArray &bytes, QFile::Permissions perms = kOwnerOnly)
{
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
        return false;
    f.write(bytes);
    f.close();
    return f.setPermissions(perms);
}

// Realistic token shapes: two JWTs (header.payload.signature) and an opaque refresh token.
AuthTokens sampleTokens(const QString &tag)
{
    const auto part = [&](const char *what) {
        return QString(QLatin1String(what) + tag)
            .toUtf8()
            .toBase64(QByteArray::Base64UrlEncoding | QByteArray::OmitTrailingEquals);
    };
    AuthTokens t;
    t.accessToken = QString::fromLatin1(part("{\"alg\":\"RS256\"}") + '.' + part("{\"sub\":\"access-payload\"}") + '.' +
                                        part("access-signature-bytes-"));
    t.idToken = QString::fromLatin1(part("{\"typ\":\"JWT\"}") + '.' + part("{\"email\":\"id-payload\"}") + '.' +
                                    part("id-signature-bytes-"));
    t.refreshToken = QStringLiteral("rt_refresh_token_value_") + tag;
    return t;
}

// Every byte sequence of the tokens worth looking for: each whole token and each JWT part.
QList<QByteArray> needles(const AuthTokens &t)
{
    QList<QByteArray> out{t.accessToken.toUtf8(), t.refreshToken.toUtf8(), t.idToken.toUtf8()};
    for (const QString &jwt : {t.accessToken, t.idToken}) {
        for (const QString &p : jwt.split(QLatin1Char('.')))
            out << p.toUtf8();
    }
    return out;
}

// Names the first needle found in the file, or returns empty.
QByteArray findIn(const QString &path, const QList<QByteArray> &secrets)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return {};
    const QByteArray bytes = f.readAll();
    for (const QByteArray &s : secrets) {
        if (bytes.contains(s))
            return s;
    }
    return {};
}

} // namespace

class tst_SecretDatabase : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    int m_counter = 0;

    QString freshDb() { return m_dir.filePath(QStringLiteral("db%1.sqlite").arg(++m_counter)); }
    SecretKey key(char seed) { return *SecretKey::fromBytes(randomKeyBytes(seed)); }

private slots:
    void keyFileAcceptsRawAndHexOwnerOnly()
    {
        const QByteArray raw = randomKeyBytes(1);
        const QString rawPath = m_dir.filePath(QStringLiteral("raw.key"));
        const QString hexPath = m_dir.filePath(QStringLiteral("hex.key"));
        QVERIFY(writeFile(rawPath, raw));
        QVERIFY(writeFile(hexPath, raw.toHex() + "\n", QFile::ReadOwner)); // 0400 is stricter: fine
        QString error;
        const auto fromRaw = SecretKey::fromFile(rawPath, &error);
        QVERIFY2(fromRaw, qPrintable(error));
        const auto fromHex = SecretKey::fromFile(hexPath, &error);
        QVERIFY2(fromHex, qPrintable(error));
        QCOMPARE(fromRaw->id(), fromHex->id());
        QCOMPARE(fromRaw->id().size(), 16);
        QVERIFY(fromRaw->id() != key(2).id());
        QCOMPARE(QByteArray(reinterpret_cast<const char *>(fromHex->data()), SecretKey::kBytes), raw);
    }

    void keyFileRefusals_data()
    {
        QTest::addColumn<QByteArray>("content");
        QTest::addColumn<int>("perms");
        QTest::addColumn<QString>("expected");
        const int owner = int(kOwnerOnly);
        const QByteArray good = randomKeyBytes(3);
        QTest::newRow("0644") << good << int(kOwnerOnly | QFile::ReadGroup | QFile::ReadOther) << "group or others";
        QTest::newRow("0640") << good << int(kOwnerOnly | QFile::ReadGroup) << "group or others";
        QTest::newRow("0604") << good << int(kOwnerOnly | QFile::ReadOther) << "group or others";
        QTest::newRow("0620") << good << int(kOwnerOnly | QFile::WriteGroup) << "group or others";
        QTest::newRow("31 bytes") << good.left(31) << owner << "wrong size";
        QTest::newRow("63 hex") << good.toHex().left(63) << owner << "wrong size";
        QTest::newRow("64 non-hex") << QByteArray(64, 'z') << owner << "wrong size";
        QTest::newRow("32 hex digits") << good.toHex().left(32) << owner << "32 hex digits";
        QTest::newRow("empty") << QByteArray() << owner << "wrong size";
        QTest::newRow("zero key") << QByteArray(64, '0') << owner << "all-zero";
        QTest::newRow("huge") << QByteArray(4096, 'a') << owner << "too long";
    }

    void keyFileRefusals()
    {
        QFETCH(QByteArray, content);
        QFETCH(int, perms);
        QFETCH(QString, expected);
        const QString path = m_dir.filePath(QStringLiteral("bad%1.key").arg(++m_counter));
        QVERIFY(writeFile(path, content, QFile::Permissions(perms)));
        QString error;
        QVERIFY(!SecretKey::fromFile(path, &error));
        QVERIFY2(error.contains(expected), qPrintable(error));
        QVERIFY2(error.contains(path), qPrintable(error));
        if (content.size() >= 16)
            QVERIFY2(!error.toUtf8().contains(content.left(16)), "the error quotes the key");
    }

    void keyFileMissingOrNotAFile()
    {
        QString error;
        QVERIFY(!SecretKey::fromFile(m_dir.filePath(QStringLiteral("absent.key")), &error));
        QVERIFY2(error.contains(QLatin1String("does not exist")), qPrintable(error));
        QVERIFY(!SecretKey::fromFile(m_dir.path(), &error));
        QVERIFY2(error.contains(QLatin1String("not a regular file")), qPrintable(error));
        QVERIFY(!SecretKey::fromFile(QString(), &error));
        QVERIFY2(error.contains(QLatin1String("SWITCHYARD_SECRET_KEY_FILE")), qPrintable(error));
    }

    void sealIsBoundToKeyAccountAndContent()
    {
        const SecretKey k1 = key(4);
        const SecretKey k2 = key(5);
        const QByteArray plain("{\"access_token\":\"abc\"}");
        const SealedSecret a = sealSecret(k1, QStringLiteral("acc_1"), plain);
        const SealedSecret b = sealSecret(k1, QStringLiteral("acc_1"), plain);
        QCOMPARE(a.nonce.size(), 24);
        QCOMPARE(a.ciphertext.size(), plain.size() + 16);
        QVERIFY(a.nonce != b.nonce);
        QVERIFY(a.ciphertext != b.ciphertext);
        QVERIFY(!a.ciphertext.contains(plain));
        QByteArray out;
        QVERIFY(openSecret(k1, QStringLiteral("acc_1"), a, &out));
        QCOMPARE(out, plain);
        QVERIFY(!openSecret(k2, QStringLiteral("acc_1"), a, &out));
        QVERIFY(!openSecret(k1, QStringLiteral("acc_2"), a, &out));
        SealedSecret flipped = a;
        flipped.ciphertext[3] = char(flipped.ciphertext[3] ^ 0x01);
        QVERIFY(!openSecret(k1, QStringLiteral("acc_1"), flipped, &out));
        SealedSecret otherNonce = a;
        otherNonce.nonce = b.nonce;
        QVERIFY(!openSecret(k1, QStringLiteral("acc_1"), otherNonce, &out));
        SealedSecret truncated = a;
        truncated.ciphertext.chop(1);
        QVERIFY(!openSecret(k1, QStringLiteral("acc_1"), truncated, &out));
    }

    void roundTripRotateAndRemove()
    {
        DatabaseSecretStore store(freshDb(), key(6));
        const AuthTokens first = sampleTokens(QStringLiteral("one"));
        const AuthTokens second = sampleTokens(QStringLiteral("two"));
        AuthTokens read;
        SecretOutcome o = store.readTokensBlocking(QStringLiteral("acc_1"), &read);
        QCOMPARE(o.error, SecretError::NotFound);
        QVERIFY(store.writeTokensBlocking(QStringLiteral("acc_1"), first).ok);
        QVERIFY(store.writeTokensBlocking(QStringLiteral("acc_2"), second).ok);
        o = store.readTokensBlocking(QStringLiteral("acc_1"), &read);
        QVERIFY2(o.ok, qPrintable(o.errorText));
        QCOMPARE(read, first);
        // Rotation replaces the row.
        QVERIFY(store.writeTokensBlocking(QStringLiteral("acc_1"), second).ok);
        QVERIFY(store.readTokensBlocking(QStringLiteral("acc_1"), &read).ok);
        QCOMPARE(read, second);
        QVERIFY(store.removeTokensBlocking(QStringLiteral("acc_1")).ok);
        QCOMPARE(store.readTokensBlocking(QStringLiteral("acc_1"), &read).error, SecretError::NotFound);
        QVERIFY(store.removeTokensBlocking(QStringLiteral("acc_1")).ok); // nothing there: still fine
        QVERIFY(store.readTokensBlocking(QStringLiteral("acc_2"), &read).ok);
        QCOMPARE(read, second);
        // A second store with the same key (another replica) reads what the first wrote.
        DatabaseSecretStore replica(store.databaseLocation(), key(6));
        QVERIFY(replica.readTokensBlocking(QStringLiteral("acc_2"), &read).ok);
        QCOMPARE(read, second);
    }

    void callbacksAreQueued()
    {
        DatabaseSecretStore store(freshDb(), key(7));
        bool called = false;
        store.writeTokens(QStringLiteral("acc_1"), sampleTokens(QStringLiteral("q")),
                          [&](const SecretOutcome &) { called = true; });
        QVERIFY(!called);
        QTRY_VERIFY(called);
    }

    void wrongKeyFails()
    {
        const QString path = freshDb();
        DatabaseSecretStore writer(path, key(8));
        QVERIFY(writer.writeTokensBlocking(QStringLiteral("acc_1"), sampleTokens(QStringLiteral("k"))).ok);
        DatabaseSecretStore reader(path, key(9));
        AuthTokens read;
        const SecretOutcome o = reader.readTokensBlocking(QStringLiteral("acc_1"), &read);
        QVERIFY(!o.ok);
        QCOMPARE(o.error, SecretError::Failed);
        QVERIFY2(o.errorText.contains(QLatin1String("another key")), qPrintable(o.errorText));
        QVERIFY(read.accessToken.isEmpty());

        // Even with the fingerprint forged to match, the cipher itself refuses.
        Database db;
        QString error;
        QVERIFY2(db.open(path, &error), qPrintable(error));
        QVERIFY(db.exec(QStringLiteral("UPDATE account_secrets SET key_id = '%1'").arg(reader.keyId()), &error));
        const SecretOutcome forged = reader.readTokensBlocking(QStringLiteral("acc_1"), &read);
        QVERIFY(!forged.ok);
        QVERIFY2(forged.errorText.contains(QLatin1String("fail authentication")), qPrintable(forged.errorText));
    }

    void tamperedCiphertextFails()
    {
        const QString path = freshDb();
        DatabaseSecretStore store(path, key(10));
        QVERIFY(store.writeTokensBlocking(QStringLiteral("acc_1"), sampleTokens(QStringLiteral("t"))).ok);
        Database db;
        QString error;
        QVERIFY2(db.open(path, &error), qPrintable(error));
        QSqlQuery q = db.query();
        QVERIFY(q.exec(QStringLiteral("SELECT ciphertext FROM account_secrets WHERE account_id = 'acc_1'")));
        QVERIFY(q.next());
        QByteArray ciphertext = q.value(0).toByteArray();
        q.finish();
        ciphertext[ciphertext.size() / 2] = char(ciphertext[ciphertext.size() / 2] ^ 0x40);
        QVERIFY(q.prepare(QStringLiteral("UPDATE account_secrets SET ciphertext = ? WHERE account_id = 'acc_1'")));
        q.addBindValue(ciphertext);
        QVERIFY(q.exec());
        AuthTokens read;
        const SecretOutcome o = store.readTokensBlocking(QStringLiteral("acc_1"), &read);
        QVERIFY(!o.ok);
        QCOMPARE(o.error, SecretError::Failed);
        QVERIFY2(o.errorText.contains(QLatin1String("fail authentication")), qPrintable(o.errorText));
        QVERIFY(read.refreshToken.isEmpty());
    }

    void blobMovedToAnotherAccountFails()
    {
        const QString path = freshDb();
        DatabaseSecretStore store(path, key(11));
        const AuthTokens victim = sampleTokens(QStringLiteral("victim"));
        QVERIFY(store.writeTokensBlocking(QStringLiteral("acc_victim"), victim).ok);
        Database db;
        QString error;
        QVERIFY2(db.open(path, &error), qPrintable(error));
        QVERIFY2(db.exec(QStringLiteral("INSERT INTO account_secrets (account_id, format, key_id, nonce, ciphertext, "
                                        "updated_at_ms) SELECT 'acc_thief', format, key_id, nonce, ciphertext, "
                                        "updated_at_ms FROM account_secrets WHERE account_id = 'acc_victim'"),
                         &error),
                 qPrintable(error));
        AuthTokens read;
        const SecretOutcome o = store.readTokensBlocking(QStringLiteral("acc_thief"), &read);
        QVERIFY(!o.ok);
        QVERIFY2(o.errorText.contains(QLatin1String("another account")), qPrintable(o.errorText));
        QVERIFY(read.accessToken.isEmpty());
        QVERIFY(store.readTokensBlocking(QStringLiteral("acc_victim"), &read).ok);
        QCOMPARE(read, victim);
    }

    void databaseFilesNeverHoldTokensInClear()
    {
        const QString path = freshDb();
        QList<QByteArray> secrets;
        {
            DatabaseSecretStore store(path, key(12));
            for (int i = 0; i < 5; ++i) {
                const AuthTokens t = sampleTokens(QStringLiteral("scan%1").arg(i));
                secrets << needles(t);
                QVERIFY(store.writeTokensBlocking(QStringLiteral("acc_%1").arg(i), t).ok);
            }
            // Rotations and removals leave old pages behind in the file and the WAL: those must be sealed too.
            for (int i = 0; i < 5; ++i) {
                const AuthTokens t = sampleTokens(QStringLiteral("rotated%1").arg(i));
                secrets << needles(t);
                QVERIFY(store.writeTokensBlocking(QStringLiteral("acc_%1").arg(i), t).ok);
            }
            QVERIFY(store.removeTokensBlocking(QStringLiteral("acc_0")).ok);
            // Scan while the WAL is still there, then again after the last connection checkpointed it.
            for (const QString &suffix : {QString(), QStringLiteral("-wal"), QStringLiteral("-shm")}) {
                const QByteArray hit = findIn(path + suffix, secrets);
                QVERIFY2(hit.isEmpty(), qPrintable(path + suffix + QStringLiteral(": ") + QString::fromUtf8(hit)));
            }
            QVERIFY(QFileInfo(path + QStringLiteral("-wal")).size() > 0);
        }
        QVERIFY(QFileInfo(path).size() > 0);
        QVERIFY2(findIn(path, secrets).isEmpty(), "a token is in the database file in clear");

        // The scan has teeth: the same tokens written in clear into a database are found.
        const QString control = freshDb();
        {
            Database db;
            QString error;
            QVERIFY2(db.open(control, &error), qPrintable(error));
            QSqlQuery q = db.query();
            QVERIFY(q.prepare(QStringLiteral("INSERT INTO settings (key, value) VALUES ('leak', ?)")));
            q.addBindValue(QString::fromUtf8(serializeTokens(sampleTokens(QStringLiteral("scan3")))));
            QVERIFY(q.exec());
        }
        QVERIFY(!findIn(control, secrets).isEmpty());
    }

    void opensItsConnectionOnTheThreadItLivesOn()
    {
        const QString path = freshDb();
        auto *store = new DatabaseSecretStore(path, key(13));
        QThread thread;
        store->moveToThread(&thread);
        connect(&thread, &QThread::finished, store, &QObject::deleteLater);
        thread.start();
        const AuthTokens tokens = sampleTokens(QStringLiteral("thread"));
        SecretOutcome wrote, read;
        AuthTokens got;
        QMetaObject::invokeMethod(
            store,
            [&] {
                wrote = store->writeTokensBlocking(QStringLiteral("acc_t"), tokens);
                read = store->readTokensBlocking(QStringLiteral("acc_t"), &got);
            },
            Qt::BlockingQueuedConnection);
        // From a foreign thread the store refuses instead of touching its connection.
        const SecretOutcome foreign = store->readTokensBlocking(QStringLiteral("acc_t"), &got);
        thread.quit();
        QVERIFY(thread.wait(5000));
        QVERIFY2(wrote.ok, qPrintable(wrote.errorText));
        QVERIFY2(read.ok, qPrintable(read.errorText));
        QCOMPARE(got, tokens);
        QVERIFY(!foreign.ok);
        QVERIFY2(foreign.errorText.contains(QLatin1String("thread")), qPrintable(foreign.errorText));
    }

    void factoryAndConfiguration()
    {
        const QString keyPath = m_dir.filePath(QStringLiteral("factory.key"));
        QVERIFY(writeFile(keyPath, randomKeyBytes(14).toHex()));
        QHash<QString, QString> env{{QStringLiteral("HOME"), m_dir.path()},
                                    {QStringLiteral("SWITCHYARD_DATA_DIR"), m_dir.filePath(QStringLiteral("data"))},
                                    {QStringLiteral("SWITCHYARD_SECRET_BACKEND"), QStringLiteral("database")}};

        // No key file: configuration error.
        ConfigResult r = loadConfig({}, env);
        QVERIFY(!r.ok());
        QVERIFY2(r.error.contains(QLatin1String("SWITCHYARD_SECRET_KEY_FILE")), qPrintable(r.error));

        env.insert(QStringLiteral("SWITCHYARD_SECRET_KEY_FILE"), keyPath);
        r = loadConfig({}, env);
        QVERIFY2(r.ok(), qPrintable(r.error));
        QCOMPARE(r.config.secretKeyFile, keyPath);
        QString error;
        std::unique_ptr<SecretStore> store(makeSecretStore(r.config, &error));
        auto *db = qobject_cast<DatabaseSecretStore *>(store.get());
        QVERIFY2(db, qPrintable(error));
        // A process that opened a secret store leaves no core file behind.
        struct rlimit core = {};
        QCOMPARE(getrlimit(RLIMIT_CORE, &core), 0);
        QCOMPARE(core.rlim_cur, rlim_t(0));
        QCOMPARE(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 0);
        QCOMPARE(db->databaseLocation(), r.config.databaseLocation());
        QVERIFY(db->writeTokensBlocking(QStringLiteral("acc_f"), sampleTokens(QStringLiteral("f"))).ok);

        // A key file others may read is refused by the configuration and by the factory.
        QVERIFY(QFile::setPermissions(keyPath, kOwnerOnly | QFile::ReadGroup | QFile::ReadOther));
        r = loadConfig({}, env);
        QVERIFY(!r.ok());
        QVERIFY2(r.error.contains(QLatin1String("group or others")), qPrintable(r.error));
        Config unsafe;
        unsafe.secretBackend = QStringLiteral("database");
        unsafe.secretKeyFile = keyPath;
        unsafe.dataDir = m_dir.path();
        QVERIFY(!makeSecretStore(unsafe, &error));
        QVERIFY2(error.contains(QLatin1String("chmod 600")), qPrintable(error));

        // The default stays the keychain.
        env.remove(QStringLiteral("SWITCHYARD_SECRET_BACKEND"));
        r = loadConfig({}, env);
        QVERIFY2(r.ok(), qPrintable(r.error));
        std::unique_ptr<SecretStore> keychain(makeSecretStore(r.config, &error));
        QVERIFY(qobject_cast<KeychainSecretStore *>(keychain.get()));
        env.insert(QStringLiteral("SWITCHYARD_SECRET_BACKEND"), QStringLiteral("plaintext"));
        QVERIFY(!loadConfig({}, env).ok());
    }
};

QTEST_GUILESS_MAIN(tst_SecretDatabase)
#include "tst_secret_database.moc"
