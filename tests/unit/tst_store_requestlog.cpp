// The request log: insert, newest-first reads, and the exact JSON shape of DESIGN.md "Local API and ids"
// (ISO 8601 UTC times, null for every unknown value, never 0).
#include "store/Database.h"
#include "store/RequestLogRepository.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QSet>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>

using namespace sy;

namespace {

QSet<QString> keysOf(const QJsonObject &o)
{
    const QStringList keys = o.keys();
    return QSet<QString>(keys.begin(), keys.end());
}

QSet<QString> names(std::initializer_list<const char *> list)
{
    QSet<QString> s;
    for (const char *n : list)
        s.insert(QString::fromLatin1(n));
    return s;
}

// 2026-11-30T04:00:00.123Z
constexpr qint64 kStart = 1796011200123;

RequestLogRecord fullRecord()
{
    RequestLogRecord r;
    r.requestId = QStringLiteral("req_full");
    r.startedAtMs = kStart;
    r.route = QStringLiteral("/backend-api/codex/responses");
    r.model = QStringLiteral("gpt-5-codex");
    r.sessionKey = QStringLiteral("0199-session");
    r.accountId = QStringLiteral("acc_0123456789ab");
    r.accountAlias = QStringLiteral("work");
    r.chatgptAccountId = QStringLiteral("11111111-aaaa-4aaa-8aaa-000000000001");
    r.status = QStringLiteral("completed");
    r.upstreamRequestId = QStringLiteral("up-42");
    r.attempts = {{QStringLiteral("acc_other"), QStringLiteral("proxy-eu"), QStringLiteral("rate_limited"), 12},
                  {QStringLiteral("acc_0123456789ab"), std::nullopt, QStringLiteral("completed"), 880}};
    r.blockedBy = {QStringLiteral("acc_paused:paused")};
    r.latency = {0, 3, 40, 900};
    r.tokens = {10, 0, 20, 0, 30};
    return r;
}

RequestLogRecord minimalRecord(const QString &id, qint64 startedAtMs)
{
    RequestLogRecord r;
    r.requestId = id;
    r.startedAtMs = startedAtMs;
    r.route = QStringLiteral("/v1/chat/completions");
    r.status = QStringLiteral("rejected");
    r.errorCode = QStringLiteral("rate_limit_exceeded");
    return r;
}

} // namespace

class tst_StoreRequestLog : public QObject
{
    Q_OBJECT

private:
    QTemporaryDir m_dir;
    std::unique_ptr<Database> m_db;

private slots:
    void init()
    {
        m_db = std::make_unique<Database>();
        QString error;
        QVERIFY2(m_db->open(m_dir.filePath(QStringLiteral("log-%1.sqlite").arg(QTest::currentTestFunction())), &error),
                 qPrintable(error));
    }

    void cleanup() { m_db.reset(); }

    void insertAndReadBackEveryField()
    {
        RequestLogRepository log(*m_db);
        QString error;
        QVERIFY2(log.insert(fullRecord(), &error), qPrintable(error));
        const std::optional<RequestLogRecord> back = log.find(QStringLiteral("req_full"));
        QVERIFY(back);
        QVERIFY(*back == fullRecord());
        QCOMPARE(back->attempts.size(), 2);
        QCOMPARE(back->attempts.at(0).egressProxy, std::optional<QString>(QStringLiteral("proxy-eu")));
        QVERIFY(!back->attempts.at(1).egressProxy);
    }

    void unknownNumbersStayNull()
    {
        RequestLogRepository log(*m_db);
        QString error;
        QVERIFY(log.insert(minimalRecord(QStringLiteral("req_min"), kStart), &error));
        QSqlQuery q = m_db->query();
        QVERIFY(q.exec(QStringLiteral("SELECT tokens_input, tokens_total, latency_total_ms, account_id, model "
                                      "FROM request_log")));
        QVERIFY(q.next());
        for (int i = 0; i < 5; ++i)
            QVERIFY2(q.value(i).isNull(), qPrintable(QString::number(i)));
        const RequestLogRecord back = *log.find(QStringLiteral("req_min"));
        QVERIFY(!back.tokens.input && !back.tokens.total && !back.latency.queueMs && !back.accountId);
    }

    void jsonShapeMatchesDesign()
    {
        const QJsonObject o = RequestLogRepository::toJson(fullRecord());
        QCOMPARE(keysOf(o), names({"request_id", "started_at", "route", "model", "session_key", "account_id",
                                   "account_alias", "chatgpt_account_id", "status", "kill_stage", "error_code",
                                   "upstream_request_id", "attempts", "blocked_by", "latency_ms", "tokens"}));
        QCOMPARE(o.value(QStringLiteral("started_at")).toString(), QStringLiteral("2026-11-30T04:00:00.123Z"));
        QCOMPARE(o.value(QStringLiteral("account_alias")).toString(), QStringLiteral("work"));
        QVERIFY(o.value(QStringLiteral("kill_stage")).isNull());
        QVERIFY(o.value(QStringLiteral("error_code")).isNull());
        const QJsonArray attempts = o.value(QStringLiteral("attempts")).toArray();
        QCOMPARE(attempts.size(), 2);
        QCOMPARE(keysOf(attempts.at(0).toObject()), names({"account_id", "egress_proxy", "outcome", "elapsed_ms"}));
        QCOMPARE(attempts.at(0).toObject().value(QStringLiteral("egress_proxy")).toString(),
                 QStringLiteral("proxy-eu"));
        QVERIFY(attempts.at(1).toObject().value(QStringLiteral("egress_proxy")).isNull());
        QCOMPARE(attempts.at(1).toObject().value(QStringLiteral("elapsed_ms")).toInteger(), 880);
        QCOMPARE(o.value(QStringLiteral("blocked_by")).toArray(), QJsonArray{QStringLiteral("acc_paused:paused")});
        const QJsonObject latency = o.value(QStringLiteral("latency_ms")).toObject();
        QCOMPARE(keysOf(latency), names({"queue", "connect", "first_event", "total"}));
        QCOMPARE(latency.value(QStringLiteral("queue")).toInteger(-1), 0); // a known zero stays 0
        QCOMPARE(latency.value(QStringLiteral("total")).toInteger(), 900);
        const QJsonObject tokens = o.value(QStringLiteral("tokens")).toObject();
        QCOMPARE(keysOf(tokens), names({"input", "cached", "output", "reasoning", "total"}));
        QCOMPARE(tokens.value(QStringLiteral("total")).toInteger(), 30);
    }

    void jsonUsesNullForEveryUnknown()
    {
        const QJsonObject o = RequestLogRepository::toJson(minimalRecord(QStringLiteral("req_x"), kStart));
        for (const char *key : {"model", "session_key", "account_id", "account_alias", "chatgpt_account_id",
                                "kill_stage", "upstream_request_id"})
            QVERIFY2(o.value(QLatin1String(key)).isNull(), key);
        QCOMPARE(o.value(QStringLiteral("error_code")).toString(), QStringLiteral("rate_limit_exceeded"));
        QCOMPARE(o.value(QStringLiteral("attempts")).toArray().size(), 0);
        QCOMPARE(o.value(QStringLiteral("blocked_by")).toArray().size(), 0);
        for (const char *group : {"latency_ms", "tokens"}) {
            const QJsonObject inner = o.value(QLatin1String(group)).toObject();
            QVERIFY(!inner.isEmpty());
            for (const QString &key : inner.keys())
                QVERIFY2(inner.value(key).isNull(), qPrintable(QLatin1String(group) + QLatin1Char('.') + key));
        }
        // The printed form really says null (what `requests --json` shows).
        const QByteArray text = QJsonDocument(o).toJson(QJsonDocument::Compact);
        QVERIFY2(text.contains("\"tokens\":{\"cached\":null"), text.constData());
        QVERIFY(!text.contains(":0,") && !text.contains(":0}"));
    }

    void recentIsNewestFirstAndLimited()
    {
        RequestLogRepository log(*m_db);
        QString error;
        QVERIFY(log.insert(minimalRecord(QStringLiteral("req_b"), kStart + 2000), &error));
        QVERIFY(log.insert(minimalRecord(QStringLiteral("req_a"), kStart + 1000), &error));
        QVERIFY(log.insert(minimalRecord(QStringLiteral("req_c"), kStart + 3000), &error));
        QVERIFY(log.insert(minimalRecord(QStringLiteral("req_c2"), kStart + 3000), &error)); // same ms, later
        QList<RequestLogRecord> recent = log.recent(3, &error);
        QCOMPARE(recent.size(), 3);
        QCOMPARE(recent.at(0).requestId, QStringLiteral("req_c2"));
        QCOMPARE(recent.at(1).requestId, QStringLiteral("req_c"));
        QCOMPARE(recent.at(2).requestId, QStringLiteral("req_b"));
        QCOMPARE(log.recent(100).size(), 4);
        QCOMPARE(RequestLogRepository::toJson(log.recent(100)).size(), 4);
        QCOMPARE(log.recent(0).size(), 0);
    }

    void rejectsInvalidRows()
    {
        RequestLogRepository log(*m_db);
        QString error;
        RequestLogRecord r = minimalRecord(QStringLiteral("req_bad"), kStart);
        r.status = QStringLiteral("done");
        QVERIFY(!log.insert(r, &error));
        QVERIFY(error.contains(QStringLiteral("invalid request status")));
        r.status = QStringLiteral("timed_out");
        r.killStage = QStringLiteral("sometime");
        QVERIFY(!log.insert(r, &error));
        QVERIFY(error.contains(QStringLiteral("invalid kill stage")));
        r.killStage = QStringLiteral("pre_response");
        QVERIFY2(log.insert(r, &error), qPrintable(error));
        QVERIFY(!log.insert(r, &error)); // one row per request id
        r.requestId.clear();
        QVERIFY(!log.insert(r, &error));
        QCOMPARE(log.recent(10).size(), 1);
        QCOMPARE(*log.recent(10).at(0).killStage, QStringLiteral("pre_response"));
    }

    // A row booked without a model (a turn settled before its body's scan answered) gets the scan's model once;
    // a row that has one keeps it, and another request's row is not touched.
    void aMissingModelIsFilledInOnce()
    {
        RequestLogRepository log(*m_db);
        QString error;
        QVERIFY(log.insert(minimalRecord(QStringLiteral("req_a"), kStart), &error));
        QVERIFY(log.insert(minimalRecord(QStringLiteral("req_b"), kStart + 1), &error));
        QVERIFY2(log.fillMissingModel(QStringLiteral("req_a"), QStringLiteral("gpt-5-codex"), &error),
                 qPrintable(error));
        QCOMPARE(log.find(QStringLiteral("req_a"))->model, std::optional<QString>(QStringLiteral("gpt-5-codex")));
        QVERIFY(!log.find(QStringLiteral("req_b"))->model);
        QVERIFY(log.fillMissingModel(QStringLiteral("req_a"), QStringLiteral("other"), &error));
        QCOMPARE(log.find(QStringLiteral("req_a"))->model, std::optional<QString>(QStringLiteral("gpt-5-codex")));
        QVERIFY(log.fillMissingModel(QStringLiteral("req_missing"), QStringLiteral("x"), &error)); // no row: nothing
    }
};

QTEST_GUILESS_MAIN(tst_StoreRequestLog)
#include "tst_store_requestlog.moc"
