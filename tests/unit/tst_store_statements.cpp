// The statement cache of Database (SQLite): inside a StatementScope a statement is compiled once per connection
// and handed out again in later scopes, a statement still in use is never handed out twice, the end of a scope
// resets what it handed out (no read snapshot stays open on the connection), and closing the database drops
// the cached statements before the connection goes. Database::bindAll and forward-only queries, which make
// each use of a statement cheaper.
#include "store/Database.h"

#include <QRegularExpression>
#include <QSqlQuery>
#include <QSqlResult>
#include <QTemporaryDir>
#include <QTest>

using namespace sy;

namespace {

const QString kSelectOne = QStringLiteral("SELECT v FROM t WHERE k = ?");

bool fillTable(Database &db, QString *error)
{
    return db.exec(QStringLiteral("CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT NOT NULL)"), error) &&
           db.exec(QStringLiteral("INSERT INTO t (k, v) VALUES (1, 'one'), (2, 'two'), (3, 'three')"), error);
}

QString readOne(Database &db, int k, QString *error)
{
    QSqlQuery q = db.query();
    if (!db.prepare(q, kSelectOne, error))
        return {};
    q.addBindValue(k);
    if (!db.exec(q, error) || !q.next())
        return {};
    return q.value(0).toString();
}

} // namespace

class TestStoreStatements : public QObject
{
    Q_OBJECT
private slots:
    void scopesReuseCompiledStatements()
    {
        QTemporaryDir dir;
        QString error;
        // Removing a connection that cached queries still use would warn (and leave them dangling).
        QTest::failOnWarning(QRegularExpression(QStringLiteral("still in use")));
        Database db;
        QVERIFY2(db.open(dir.filePath(QStringLiteral("s.sqlite")), &error), qPrintable(error));
        QVERIFY2(fillTable(db, &error), qPrintable(error));
        const qsizetype before = db.cachedStatementCount();

        const QSqlResult *first = nullptr;
        {
            Database::StatementScope scope(db);
            QSqlQuery q = db.query();
            QVERIFY(db.prepare(q, kSelectOne, &error));
            first = q.result();
            q.addBindValue(2);
            QVERIFY(db.exec(q, &error) && q.next());
            QCOMPARE(q.value(0).toString(), QStringLiteral("two"));
        }
        QCOMPARE(db.cachedStatementCount(), before + 1);
        {
            Database::StatementScope scope(db);
            QSqlQuery q = db.query();
            QVERIFY(db.prepare(q, kSelectOne, &error));
            QCOMPARE(q.result(), first); // the same compiled statement, bound anew
            q.addBindValue(3);
            QVERIFY(db.exec(q, &error) && q.next());
            QCOMPARE(q.value(0).toString(), QStringLiteral("three"));
        }
        // Outside a scope nothing is cached or handed out from the cache.
        QSqlQuery outside = db.query();
        QVERIFY(db.prepare(outside, kSelectOne, &error));
        QVERIFY(outside.result() != first);
        outside = QSqlQuery();
        QCOMPARE(db.cachedStatementCount(), before + 1);
        db.close();
        QCOMPARE(db.cachedStatementCount(), 0);
    }

    void aStatementInUseIsNotHandedOutAgain()
    {
        QTemporaryDir dir;
        QString error;
        Database db;
        QVERIFY2(db.open(dir.filePath(QStringLiteral("s.sqlite")), &error), qPrintable(error));
        QVERIFY2(fillTable(db, &error), qPrintable(error));
        const QString all = QStringLiteral("SELECT k FROM t ORDER BY k");
        Database::StatementScope scope(db);
        QSqlQuery outer = db.query();
        QVERIFY(db.prepare(outer, all, &error) && db.exec(outer, &error));
        QList<int> seen;
        int innerRows = 0;
        while (outer.next()) {
            seen << outer.value(0).toInt();
            // The same SQL while `outer` is still being read: it must not be reset under the outer loop.
            QSqlQuery inner = db.query();
            QVERIFY(db.prepare(inner, all, &error) && db.exec(inner, &error));
            QVERIFY(inner.result() != outer.result());
            while (inner.next())
                ++innerRows;
        }
        QCOMPARE(seen, QList<int>({1, 2, 3}));
        QCOMPARE(innerRows, 9);
    }

    void aScopeLeavesNoReadSnapshotOpen()
    {
        QTemporaryDir dir;
        QString error;
        const QString path = dir.filePath(QStringLiteral("s.sqlite"));
        Database a;
        Database b;
        QVERIFY2(a.open(path, &error), qPrintable(error));
        QVERIFY2(fillTable(a, &error), qPrintable(error));
        QVERIFY2(b.open(path, &error), qPrintable(error));
        {
            Database::StatementScope scope(a);
            // One row read of a statement that has more to give would keep SQLite's read transaction open.
            QSqlQuery q = a.query();
            QVERIFY(a.prepare(q, QStringLiteral("SELECT v FROM t ORDER BY k"), &error) && a.exec(q, &error));
            QVERIFY(q.next());
            QCOMPARE(q.value(0).toString(), QStringLiteral("one"));
        }
        // Another connection (another process, in production) commits a change.
        QVERIFY2(b.exec(QStringLiteral("UPDATE t SET v = 'uno' WHERE k = 1"), &error), qPrintable(error));
        // a sees it, and can still take the write lock: its cached statement holds no stale snapshot.
        QCOMPARE(readOne(a, 1, &error), QStringLiteral("uno"));
        Transaction tx(a);
        QVERIFY2(tx.begin(&error), qPrintable(error));
        QVERIFY2(a.exec(QStringLiteral("UPDATE t SET v = 'eins' WHERE k = 1"), &error), qPrintable(error));
        QVERIFY2(tx.commit(&error), qPrintable(error));
        QCOMPARE(readOne(b, 1, &error), QStringLiteral("eins"));
    }
    // A job that bound values and then failed before its exec (the store went away between the two) must not
    // leave them on the cached statement: Qt would append the next job's binds after them and every later use
    // of that statement would fail with "Parameter count mismatch" (request-log rows lost for good after an
    // outage, seen in tst_store_unavailable).
    void aFailedScopeLeavesNoStaleBindings()
    {
        QTemporaryDir dir;
        QString error;
        Database db;
        QVERIFY2(db.open(dir.filePath(QStringLiteral("s.sqlite")), &error), qPrintable(error));
        QVERIFY2(fillTable(db, &error), qPrintable(error));
        const QString insert = QStringLiteral("INSERT INTO t (k, v) VALUES (?, ?)");
        {
            Database::StatementScope scope(db);
            QSqlQuery q = db.query();
            QVERIFY(db.prepare(q, insert, &error));
            q.addBindValue(10);
            q.addBindValue(QStringLiteral("ten"));
            // Fails before q runs, the way a BEGIN fails on a full disk.
            QVERIFY(!db.exec(QStringLiteral("SELECT * FROM no_such_table"), &error));
        }
        for (int k = 11; k <= 12; ++k) {
            Database::StatementScope scope(db);
            QSqlQuery q = db.query();
            QVERIFY(db.prepare(q, insert, &error));
            q.addBindValue(k);
            q.addBindValue(QStringLiteral("v%1").arg(k));
            QVERIFY2(db.exec(q, &error), qPrintable(error));
        }
        QCOMPARE(readOne(db, 11, &error), QStringLiteral("v11"));
        QCOMPARE(readOne(db, 12, &error), QStringLiteral("v12"));
        QVERIFY(readOne(db, 10, &error).isEmpty());
    }
    // Database::bindAll replaces what a statement had bound, all at once: a cached statement gets exactly the
    // values of its new use (NULLs included), and too few values fail as they would with addBindValue().
    void bindAllSetsEveryValueOfAReusedStatement()
    {
        QTemporaryDir dir;
        QString error;
        Database db;
        QVERIFY2(db.open(dir.filePath(QStringLiteral("s.sqlite")), &error), qPrintable(error));
        QVERIFY2(db.exec(QStringLiteral("CREATE TABLE u (k INTEGER PRIMARY KEY, v TEXT NOT NULL, n INTEGER)"), &error),
                 qPrintable(error));
        const QString insert = QStringLiteral("INSERT INTO u (k, v, n) VALUES (?, ?, ?)");
        const QSqlResult *compiled = nullptr;
        const QList<QVariantList> rows = {{1, QStringLiteral("one"), QVariant()},
                                          {2, QStringLiteral("two"), QVariant::fromValue<qint64>(7)}};
        for (const QVariantList &row : rows) {
            Database::StatementScope scope(db);
            QSqlQuery q = db.query();
            QVERIFY(db.prepare(q, insert, &error));
            QVERIFY(!compiled || q.result() == compiled); // the second row reuses the compiled statement
            compiled = q.result();
            Database::bindAll(q, row);
            QVERIFY2(db.exec(q, &error), qPrintable(error));
        }
        {
            Database::StatementScope scope(db);
            QSqlQuery q = db.query();
            QVERIFY(db.prepare(q, insert, &error));
            Database::bindAll(q, {3, QStringLiteral("three")});
            QVERIFY(!db.exec(q, &error));
        }
        QSqlQuery read = db.query();
        QVERIFY(read.exec(QStringLiteral("SELECT k, v, n FROM u ORDER BY k")));
        QList<QVariantList> stored;
        while (read.next())
            stored.append({read.value(0).toInt(), read.value(1).toString(), read.value(2)});
        QCOMPARE(stored.size(), 2);
        QCOMPARE(stored[0][1].toString(), QStringLiteral("one"));
        QVERIFY(stored[0][2].isNull());
        QCOMPARE(stored[1][0].toInt(), 2);
        QCOMPARE(stored[1][2].toLongLong(), 7);
    }
    // Every statement here is read front to back once; on SQLite queries are forward-only so that Qt does not
    // allocate (and free) room for 128 rows on every exec().
    void sqliteQueriesAreForwardOnly()
    {
        QTemporaryDir dir;
        QString error;
        Database db;
        QVERIFY2(db.open(dir.filePath(QStringLiteral("s.sqlite")), &error), qPrintable(error));
        QVERIFY(db.query().isForwardOnly());
        Database::StatementScope scope(db);
        QSqlQuery q = db.query();
        QVERIFY(db.prepare(q, QStringLiteral("SELECT 1"), &error));
        QVERIFY(q.isForwardOnly());
    }
};

QTEST_GUILESS_MAIN(TestStoreStatements)
#include "tst_store_statements.moc"
