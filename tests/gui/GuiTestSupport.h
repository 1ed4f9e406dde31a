#pragma once

// Shared by the GUI tests: a temporary store filled through the real repositories, a database secret
// backend (no keychain needed) and a stand-in for the running proxy's /api/status.

#include "TestSupport.h"
#include "lib/TestFiles.h"
#include "config/Config.h"
#include "http/HttpResponse.h"
#include "http/HttpServer.h"
#include "store/AccountRepository.h"
#include "store/Database.h"
#include "store/RequestLogRepository.h"

#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRandomGenerator>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>

namespace sy::test {

class TempStore
{
public:
    TempStore()
    {
        m_path = m_dir.path() + QStringLiteral("/data/switchyard.sqlite");
        QString error;
        m_ok = m_db.open(m_path, &error);
        if (!m_ok)
            qWarning("TempStore: %s", qPrintable(error));
    }

    bool ok() const { return m_ok; }
    QString path() const { return m_path; }
    QString dir() const { return m_dir.path(); }
    Database &db() { return m_db; }

    QString addAccount(const QString &alias, const QString &email, const QString &plan = QStringLiteral("plus"))
    {
        AccountRepository::Identity identity;
        identity.chatgptAccountId = QStringLiteral("cgpt-") + alias;
        identity.userId = QStringLiteral("user-") + alias;
        identity.email = email;
        identity.plan = plan;
        identity.alias = alias;
        QString error;
        const auto r = AccountRepository(m_db).upsert(identity, &error);
        if (!r)
            qWarning("addAccount: %s", qPrintable(error));
        return r ? r->id : QString();
    }

    void setUsage(const QString &id, std::optional<double> fiveHour, std::optional<qint64> fiveHourReset,
                  std::optional<double> weekly, std::optional<qint64> weeklyReset, qint64 observedAtMs)
    {
        UsageRecord u;
        u.accountId = id;
        u.primary = {fiveHour, 300, fiveHourReset};
        u.secondary = {weekly, 10080, weeklyReset};
        u.observedAtMs = observedAtMs;
        QString error;
        if (!AccountRepository(m_db).saveUsage(u, &error))
            qWarning("setUsage: %s", qPrintable(error));
    }

    void setStatus(const QString &id, const QString &status)
    {
        QString error;
        if (!AccountRepository(m_db).setStatus(id, status, QStringLiteral("test"), &error))
            qWarning("setStatus: %s", qPrintable(error));
    }

    static RequestLogRecord request(const QString &id, qint64 startedAtMs, const QString &accountId,
                                    const QString &status = QStringLiteral("completed"), qint64 tokens = 100)
    {
        RequestLogRecord r;
        r.requestId = id;
        r.startedAtMs = startedAtMs;
        r.route = QStringLiteral("/v1/responses");
        r.model = QStringLiteral("gpt-5");
        if (!accountId.isEmpty())
            r.accountId = accountId;
        r.status = status;
        r.tokens = {tokens / 2, tokens / 4, tokens / 2, 0, tokens};
        return r;
    }

    bool insert(const RequestLogRecord &r)
    {
        QString error;
        const bool ok = RequestLogRepository(m_db).insert(r, &error);
        if (!ok)
            qWarning("insert: %s", qPrintable(error));
        return ok;
    }

    static int count(Database &db, const QString &table)
    {
        QSqlQuery q = db.query();
        return q.exec(QStringLiteral("SELECT count(*) FROM ") + table) && q.next() ? q.value(0).toInt() : -1;
    }

    // A Config whose SecretStore is the database backend with a fresh key file (no keychain involved).
    Config config()
    {
        Config c;
        c.dataDir = m_dir.path() + QStringLiteral("/data");
        c.secretBackend = QStringLiteral("database");
        c.secretKeyFile = m_dir.path() + QStringLiteral("/secret.key");
        if (!QFile::exists(c.secretKeyFile)) {
            writeSecretKeyFile(c.secretKeyFile);
        }
        return c;
    }

private:
    QTemporaryDir m_dir;
    QString m_path;
    Database m_db;
    bool m_ok = false;
};

// Answers GET /api/status with whatever the test sets, like the running proxy's local API.
class FakeStatusServer
{
public:
    FakeStatusServer()
    {
        m_server.setHandler([this](HttpRequestPtr, HttpResponse *response) {
            ++m_requests;
            response->sendFull(200, "application/json", QJsonDocument(m_status).toJson(QJsonDocument::Compact));
        });
        m_listening = m_server.listen(QHostAddress::LocalHost, 0);
    }

    bool listening() const { return m_listening; }
    QString baseUrl() const { return QStringLiteral("http://127.0.0.1:%1").arg(m_server.serverPort()); }
    void setStatus(const QJsonObject &status) { m_status = status; }
    int requests() const { return m_requests; }

private:
    HttpServer m_server;
    QJsonObject m_status{{QStringLiteral("listen"), QStringLiteral("127.0.0.1:2455")},
                         {QStringLiteral("store_writable"), true}};
    bool m_listening = false;
    int m_requests = 0;
};

} // namespace sy::test
