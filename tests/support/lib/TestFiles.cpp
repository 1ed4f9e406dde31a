#include "TestFiles.h"

#include <QFile>
#include <QRandomGenerator>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QVariant>

namespace sy::test {

bool writeSecretKeyFile(const QString &path, QFileDevice::Permissions permissions)
{
    QByteArray key(32, Qt::Uninitialized);
    QRandomGenerator::securelySeeded().fillRange(reinterpret_cast<quint32 *>(key.data()), 8);
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
        return false;
    const bool written = f.write(key.toHex() + '\n') == 65;
    f.close();
    return f.setPermissions(permissions) && written;
}

QStringList readSqliteColumn(const QString &path, const QString &query, QString *error)
{
    static int counter = 0;
    const QString name = QStringLiteral("test-sqlite-column-%1").arg(++counter);
    QStringList out;
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name);
        db.setDatabaseName(path);
        db.setConnectOptions(QStringLiteral("QSQLITE_OPEN_READONLY;QSQLITE_BUSY_TIMEOUT=5000"));
        if (!db.open()) {
            *error = db.lastError().text();
        } else {
            QSqlQuery q(db);
            if (!q.exec(query))
                *error = q.lastError().text();
            while (q.next())
                out << q.value(0).toString();
        }
    }
    QSqlDatabase::removeDatabase(name);
    return out;
}

} // namespace sy::test
