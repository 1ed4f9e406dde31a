// SWITCHYARD_NEEDS_KEYRING: accounts are imported into a real gnome-keyring.
//
// Failover through a running `switchyard serve` with several accounts against the fake upstream (issue 2
// point 7, DESIGN "Selection" and "Committing a response"): an account that answers 429 / quota / 5xx or
// drops the connection before any event is replaced by another account without the client noticing; once an
// event was forwarded there is no failover but an explicit error + response.failed; a quota 429 never reaches
// the client while another account can serve, and when none can the client gets 429 rate_limit_exceeded with
// Retry-After; request errors (400) pass through and never penalise the account.
//
// Every test runs against a fresh proxy with two accounts. Which account a new turn tries first is the
// strategy's choice (random under the default capacity_weighted), so a test scripts the fault on one account
// and sends turns until one is first tried there (turnFirstTriedOn); turns that went elsewhere must have
// completed normally on their single attempt.
#include "lib/CodexRequests.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/HttpTestClient.h"
#include "lib/ProxyProcess.h"

#include <QDateTime>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QScopeGuard>
#include <QSet>
#include <QTest>
#include <QThread>
#include <memory>

using namespace sy;
using namespace sy::test;

namespace {

// The text a Responses stream delivered, from its output_text.delta events.
QString streamedText(const SseResult &r)
{
    QString text;
    for (const SseEvent &e : r.events) {
        if (e.event == "response.output_text.delta")
            text += e.json().value(QLatin1String("delta")).toString();
    }
    return text;
}

qint64 isoToMs(const QJsonValue &v)
{
    return QDateTime::fromString(v.toString(), Qt::ISODateWithMs).toMSecsSinceEpoch();
}

} // namespace

class TestProxyFailover : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    std::unique_ptr<ProxyProcess> m_proxy;

    // A fresh proxy with `count` accounts against the shared fake upstream.
    QString startProxy(int count)
    {
        m_proxy = std::make_unique<ProxyProcess>();
        if (!m_proxy->addAccounts(count) || !m_proxy->start(m_fake.baseUrl()))
            return m_proxy->errorString();
        return {};
    }

    // The id of the account whose token the first upstream attempt of a request carried ("" = no attempt).
    QString firstTriedOn(const QByteArray &requestId)
    {
        const QJsonArray seen = upstreamTurns(requestId);
        return seen.isEmpty() ? QString() : str(seen.at(0).toObject(), "chatgpt_account_id");
    }

    // Sends Codex turns until one is first tried on `target` and returns that one. Turns the strategy sent
    // elsewhere first must have completed there in one attempt.
    SseResult turnFirstTriedOn(const FakeAccount &target, const QString &text)
    {
        for (int i = 0; i < 30; ++i) {
            SseResult r = codexTurn(text);
            const QByteArray requestId = r.header("x-request-id");
            const QString first = firstTriedOn(requestId);
            if (first.isEmpty() || first == target.chatgptAccountId)
                return r;
            if (r.status != 200 || upstreamTurns(requestId).size() != 1 ||
                r.eventTypes().value(r.events.size() - 1) != "response.completed") {
                qWarning() << "a turn on the unscripted account did not complete cleanly:" << r.status << r.body;
                return r;
            }
        }
        qWarning() << "30 turns in a row never tried" << target.alias << "first";
        return {};
    }

    QUrl codexUrl() const { return QUrl(m_proxy->url(QStringLiteral("/backend-api/codex/responses"))); }

    SseResult codexTurn(const QString &text) { return sseRequest("POST", codexUrl(), kCodexHeaders, codexBody(text)); }

    // The upstream turns the fake saw for one of our request ids, oldest first.
    QJsonArray upstreamTurns(const QByteArray &requestId)
    {
        QJsonArray out;
        for (const QJsonValue &v : m_fake.log()) {
            const QJsonObject e = v.toObject();
            if (str(e, "path").endsWith(QLatin1String("/codex/responses")) &&
                str(e, "x_request_id").toLatin1() == requestId)
                out.append(e);
        }
        return out;
    }

    // The account as `switchyard accounts list --json` prints it (the durable state).
    QJsonObject listed(const FakeAccount &a) const
    {
        for (const QJsonValue &v :
             m_proxy->cli({QStringLiteral("accounts"), QStringLiteral("list"), QStringLiteral("--json")})
                 .json()
                 .array()) {
            if (str(v.toObject(), "account_id") == a.id)
                return v.toObject();
        }
        return {};
    }

    // The account as the running proxy sees it right now (/api/status).
    QJsonObject live(const FakeAccount &a) const
    {
        const HttpResult r = httpRequest("GET", QUrl(m_proxy->url(QStringLiteral("/api/status"))));
        for (const QJsonValue &v : r.json().value(QLatin1String("accounts")).toArray()) {
            if (str(v.toObject(), "account_id") == a.id)
                return v.toObject();
        }
        return {};
    }

    // A complete stream served by `second` after `first` failed with `firstOutcome` ("" = any failure).
    void verifyFailedOver(const SseResult &r, const FakeAccount &first, const FakeAccount &second,
                          const QString &firstOutcome, const QString &expectedText)
    {
        QCOMPARE(r.status, 200);
        QVERIFY2(!r.events.isEmpty(), r.body.constData());
        QCOMPARE(r.eventTypes().constFirst(), QByteArrayLiteral("response.created"));
        QCOMPARE(r.eventTypes().constLast(), QByteArrayLiteral("response.completed"));
        QVERIFY(!r.eventTypes().contains(QByteArrayLiteral("error")));
        QVERIFY(!r.eventTypes().contains(QByteArrayLiteral("response.failed")));
        QCOMPARE(streamedText(r), expectedText);
        const QByteArray requestId = r.header("x-request-id");
        QVERIFY(requestId.startsWith("req_"));

        // Upstream: two attempts under the same request id, first with the failing account's token, then with
        // the serving account's.
        const QJsonArray seen = upstreamTurns(requestId);
        QCOMPARE(seen.size(), 2);
        const QJsonObject a0 = seen.at(0).toObject(), a1 = seen.at(1).toObject();
        QCOMPARE(str(a0, "chatgpt_account_id"), first.chatgptAccountId);
        QCOMPARE(str(a0, "authorization"), first.accessToken);
        QVERIFY2(str(a1, "chatgpt_account_id") == second.chatgptAccountId,
                 qPrintable(QStringLiteral("the second upstream request went to %1 again (outcome of the first: %2), "
                                           "not to the other account")
                                .arg(first.alias, str(a0, "outcome"))));
        QCOMPARE(str(a1, "authorization"), second.accessToken);
        QVERIFY(str(a0, "authorization") != str(a1, "authorization"));
        QCOMPARE(str(a1, "outcome"), QStringLiteral("completed"));

        // Request log: booked on the account that completed, both attempts listed in order.
        const QJsonObject row = m_proxy->waitForRequest(QString::fromLatin1(requestId));
        QVERIFY2(!row.isEmpty(), "no request-log row");
        QCOMPARE(str(row, "status"), QStringLiteral("completed"));
        QCOMPARE(str(row, "account_id"), second.id);
        QCOMPARE(str(row, "chatgpt_account_id"), second.chatgptAccountId);
        const QJsonArray attempts = row.value(QLatin1String("attempts")).toArray();
        QCOMPARE(attempts.size(), 2);
        QCOMPARE(str(attempts.at(0).toObject(), "account_id"), first.id);
        if (firstOutcome.isEmpty()) {
            QVERIFY(!str(attempts.at(0).toObject(), "outcome").isEmpty());
            QVERIFY(str(attempts.at(0).toObject(), "outcome") != QLatin1String("completed"));
        } else {
            QCOMPARE(str(attempts.at(0).toObject(), "outcome"), firstOutcome);
        }
        QCOMPARE(str(attempts.at(1).toObject(), "account_id"), second.id);
        QCOMPARE(str(attempts.at(1).toObject(), "outcome"), QStringLiteral("completed"));
        QVERIFY(row.value(QLatin1String("tokens")).toObject().value(QLatin1String("total")).toInt() > 0);
        QCOMPARE(r.header("x-switchyard-account"), second.alias.toUtf8());
    }

private slots:
    void initTestCase() { QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString())); }

    void init() { QVERIFY2(m_fake.reset(), qPrintable(m_fake.errorString())); }

    void cleanup()
    {
        if (m_proxy)
            m_proxy->stop();
        m_proxy.reset();
    }

    // 429 usage_limit_reached / rate_limit_exceeded / insufficient_quota / 500 / 503 on the first account:
    // the client gets a complete stream from the second one, and the first one is backed off.
    void failoverOnAccountFailure_data()
    {
        QTest::addColumn<QString>("action");
        QTest::addColumn<QString>("outcome");       // first attempt's outcome in the request log ("" = any failure)
        QTest::addColumn<QString>("accountStatus"); // the failing account's status afterwards ("" = not checked)
        QTest::addColumn<int>("httpStatus");        // what the fake answered the first attempt
        QTest::newRow("429 usage_limit_reached") << "429"
                                                 << "rate_limited"
                                                 << "rate_limited" << 429;
        QTest::newRow("429 rate_limit_exceeded") << "429_rate"
                                                 << "rate_limited"
                                                 << "rate_limited" << 429;
        QTest::newRow("insufficient_quota") << "quota"
                                            << "quota_exceeded"
                                            << "quota_exceeded" << 429;
        QTest::newRow("500") << "500"
                             << ""
                             << "" << 500;
        QTest::newRow("503") << "503"
                             << ""
                             << "" << 503;
    }

    void failoverOnAccountFailure()
    {
        QFETCH(QString, action);
        QFETCH(QString, outcome);
        QFETCH(QString, accountStatus);
        QFETCH(int, httpStatus);
        const QString error = startProxy(2);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const FakeAccount first = m_proxy->accounts().at(0), second = m_proxy->accounts().at(1);
        QVERIFY(m_fake.script(first.chatgptAccountId, {action}));

        const qint64 before = QDateTime::currentMSecsSinceEpoch();
        const SseResult r = turnFirstTriedOn(first, QStringLiteral("ECHO: served after failover"));
        verifyFailedOver(r, first, second, outcome, QStringLiteral("served after failover"));
        if (QTest::currentTestFailed())
            return;
        QCOMPARE(upstreamTurns(r.header("x-request-id")).at(0).toObject().value(QLatin1String("status_sent")).toInt(),
                 httpStatus);

        // The failing account is backed off (cooldown in the future, at least the 30 s floor) and, for limits,
        // marked with its status; the serving account stays clean.
        QTRY_VERIFY_WITH_TIMEOUT(!listed(first).value(QLatin1String("cooldown_until")).isNull(), 5000);
        const QJsonObject failed = listed(first);
        QVERIFY2(isoToMs(failed.value(QLatin1String("cooldown_until"))) >= before + 29000,
                 qPrintable(str(failed, "cooldown_until")));
        if (!accountStatus.isEmpty())
            QCOMPARE(str(failed, "status"), accountStatus);
        const QJsonObject served = listed(second);
        QCOMPARE(str(served, "status"), QStringLiteral("active"));
        QVERIFY(served.value(QLatin1String("cooldown_until")).isNull());
    }

    // The upstream closes the connection before any event (before the head, or right after a 200 head):
    // nothing reached the client, so the proxy fails over.
    void failoverWhenConnectionDropsBeforeFirstEvent_data()
    {
        QTest::addColumn<QString>("action");
        QTest::newRow("drop before the response head") << "silent";
        QTest::newRow("drop after a 200 head, before any event") << "silent_after_headers";
    }

    void failoverWhenConnectionDropsBeforeFirstEvent()
    {
        QFETCH(QString, action);
        const QString error = startProxy(2);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const FakeAccount first = m_proxy->accounts().at(0), second = m_proxy->accounts().at(1);
        QVERIFY(m_fake.script(first.chatgptAccountId, {action}));
        auto held = [&] {
            for (const QJsonValue &v : m_fake.log()) {
                const QJsonObject e = v.toObject();
                if (str(e, "chatgpt_account_id") == first.chatgptAccountId && str(e, "outcome") == action)
                    return true;
            }
            return false;
        };

        // The client runs on its own thread while this one waits for the fake to hold the attempt on `first`,
        // then makes the fake drop it. A turn the strategy sent to `second` first just completes: try again.
        SseResult r;
        const QUrl url = codexUrl();
        const QByteArray body = codexBody(QStringLiteral("ECHO: survived a dropped connection"));
        bool dropped = false;
        for (int i = 0; i < 30 && !dropped; ++i) {
            r = SseResult();
            std::unique_ptr<QThread> client(
                QThread::create([&r, url, body] { r = sseRequest("POST", url, kCodexHeaders, body, 30000); }));
            client->start();
            // Whatever happens below, the client thread ends before `r` and the thread object go away.
            const auto joinClient = qScopeGuard([&] {
                if (!client->wait(0)) {
                    m_fake.dropHeld();
                    client->wait(40000);
                }
            });
            QTRY_VERIFY_WITH_TIMEOUT(held() || client->isFinished(), 10000);
            if (held()) {
                QVERIFY(m_fake.dropHeld());
                dropped = true;
            }
            QVERIFY(client->wait(40000));
            if (!dropped) {
                QCOMPARE(r.status, 200);
                QCOMPARE(firstTriedOn(r.header("x-request-id")), second.chatgptAccountId);
            }
        }
        QVERIFY2(dropped, "no turn was tried on the scripted account first");

        verifyFailedOver(r, first, second, QString(), QStringLiteral("survived a dropped connection"));
    }

    // Once an upstream event reached the client the turn is committed to its account: a drop mid-stream ends
    // with an explicit error event and response.failed, and is not retried elsewhere.
    void dropMidStreamEndsWithAnErrorAndNoFailover()
    {
        const QString error = startProxy(2);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const FakeAccount first = m_proxy->accounts().at(0), second = m_proxy->accounts().at(1);
        QVERIFY(m_fake.script(first.chatgptAccountId, {QStringLiteral("drop_mid")}));

        const SseResult r = turnFirstTriedOn(first, QStringLiteral("ECHO: one two three four five six seven eight"));
        QCOMPARE(r.status, 200);
        const QList<QByteArray> types = r.eventTypes();
        QVERIFY2(!types.isEmpty(), r.body.constData());
        QCOMPARE(types.constFirst(), QByteArrayLiteral("response.created"));
        QCOMPARE(types.count(QByteArrayLiteral("response.output_text.delta")), 2);
        QCOMPARE(streamedText(r), QStringLiteral("one two "));
        QVERIFY(!types.contains(QByteArrayLiteral("response.completed")));
        const qsizetype errorAt = types.indexOf(QByteArrayLiteral("error"));
        QVERIFY2(errorAt > 0, "no error event after the drop");
        QCOMPARE(types.constLast(), QByteArrayLiteral("response.failed"));
        QVERIFY(errorAt < types.size() - 1);
        QCOMPARE(r.header("x-switchyard-account"), first.alias.toUtf8());

        const QByteArray requestId = r.header("x-request-id");
        const QJsonArray seen = upstreamTurns(requestId);
        QCOMPARE(seen.size(), 1);
        QCOMPARE(str(seen.at(0).toObject(), "chatgpt_account_id"), first.chatgptAccountId);
        // Not retried on the other account: a retry would carry the same request id.
        for (const QJsonValue &v : m_fake.log())
            QVERIFY(!(str(v.toObject(), "chatgpt_account_id") == second.chatgptAccountId &&
                      str(v.toObject(), "x_request_id").toLatin1() == requestId));

        const QJsonObject row = m_proxy->waitForRequest(QString::fromLatin1(requestId));
        QVERIFY2(!row.isEmpty(), "no request-log row");
        QCOMPARE(str(row, "status"), QStringLiteral("failed"));
        QCOMPARE(str(row, "account_id"), first.id);
        QVERIFY(!str(row, "error_code").isEmpty());
        const QJsonArray attempts = row.value(QLatin1String("attempts")).toArray();
        QCOMPARE(attempts.size(), 1);
        QCOMPARE(str(attempts.at(0).toObject(), "account_id"), first.id);
        QVERIFY(str(attempts.at(0).toObject(), "outcome") != QLatin1String("completed"));
    }

    // Every account answers usage_limit_reached: the client gets 429 rate_limit_exceeded (never
    // usage_limit_reached, which Codex treats as fatal) with a Retry-After from the reset time; the accounts
    // are rate_limited with a cooldown, and the next request is refused without touching the upstream.
    void allAccountsLimitedGive429RateLimitExceeded()
    {
        const QString error = startProxy(2);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const QList<FakeAccount> accounts = m_proxy->accounts();
        for (const FakeAccount &a : accounts)
            QVERIFY(m_fake.script(a.chatgptAccountId, {QStringLiteral("429")}));

        const qint64 before = QDateTime::currentMSecsSinceEpoch();
        const SseResult r = codexTurn(QStringLiteral("ECHO: nobody can serve this"));
        QCOMPARE(r.status, 429);
        QVERIFY2(!r.body.contains("usage_limit_reached"), r.body.constData());
        const QJsonObject err = QJsonDocument::fromJson(r.body).object().value(QLatin1String("error")).toObject();
        QCOMPARE(str(err, "type"), QStringLiteral("rate_limit_exceeded"));
        QCOMPARE(str(err, "code"), QStringLiteral("rate_limit_exceeded"));
        // The fake's 429 says resets_in_seconds 3600.
        bool ok = false;
        const int retryAfter = r.header("retry-after").toInt(&ok);
        QVERIFY2(ok, r.header("retry-after").constData());
        QVERIFY2(retryAfter >= 3300 && retryAfter <= 3601, r.header("retry-after").constData());

        // Both accounts were tried, one attempt each, under the same request id.
        const QByteArray requestId = r.header("x-request-id");
        QVERIFY(requestId.startsWith("req_"));
        const QJsonArray seen = upstreamTurns(requestId);
        QCOMPARE(seen.size(), 2);
        const QSet<QString> tried{str(seen.at(0).toObject(), "chatgpt_account_id"),
                                  str(seen.at(1).toObject(), "chatgpt_account_id")};
        QCOMPARE(tried, (QSet<QString>{accounts.at(0).chatgptAccountId, accounts.at(1).chatgptAccountId}));
        const QJsonObject row = m_proxy->waitForRequest(QString::fromLatin1(requestId));
        QVERIFY2(!row.isEmpty(), "no request-log row");
        QVERIFY(str(row, "status") != QLatin1String("completed"));
        QVERIFY(!str(row, "error_code").isEmpty());
        const QJsonArray attempts = row.value(QLatin1String("attempts")).toArray();
        QCOMPARE(attempts.size(), 2);
        for (const QJsonValue &a : attempts)
            QCOMPARE(str(a.toObject(), "outcome"), QStringLiteral("rate_limited"));

        // Durable state: rate_limited until about an hour from now.
        for (const FakeAccount &a : accounts) {
            QTRY_COMPARE_WITH_TIMEOUT(str(listed(a), "status"), QStringLiteral("rate_limited"), 5000);
            const qint64 until = isoToMs(listed(a).value(QLatin1String("cooldown_until")));
            QVERIFY2(until >= before + 3300 * 1000 && until <= QDateTime::currentMSecsSinceEpoch() + 3601 * 1000,
                     qPrintable(str(listed(a), "cooldown_until")));
        }

        // Right after, on the /v1 route too: refused at once, the limited accounts are not tried again.
        const int upstreamBefore = m_fake.log().size();
        const QJsonObject v1{{QStringLiteral("model"), QStringLiteral("gpt-5")},
                             {QStringLiteral("stream"), true},
                             {QStringLiteral("input"), QStringLiteral("still nobody")}};
        const SseResult again =
            sseRequest("POST", QUrl(m_proxy->url(QStringLiteral("/v1/responses"))),
                       {{"content-type", "application/json"}}, QJsonDocument(v1).toJson(QJsonDocument::Compact));
        QCOMPARE(again.status, 429);
        QVERIFY2(!again.body.contains("usage_limit_reached"), again.body.constData());
        QCOMPARE(str(again.json().value(QLatin1String("error")).toObject(), "code"),
                 QStringLiteral("rate_limit_exceeded"));
        const int retryAgain = again.header("retry-after").toInt(&ok);
        QVERIFY2(ok && retryAgain >= 3300 && retryAgain <= 3601, again.header("retry-after").constData());
        QVERIFY(again.header("x-switchyard-account").isEmpty());
        QCOMPARE(m_fake.log().size(), upstreamBefore);
        QVERIFY(upstreamTurns(again.header("x-request-id")).isEmpty());
        const QJsonObject againRow = m_proxy->waitForRequest(QString::fromLatin1(again.header("x-request-id")));
        QVERIFY2(!againRow.isEmpty(), "no request-log row for the refused request");
        QVERIFY(againRow.value(QLatin1String("attempts")).toArray().isEmpty());
    }

    // A request error (400) is the request's fault: passed to the client as the upstream sent it, no failover,
    // and the account stays usable.
    void requestErrorPassesThroughWithoutPenalty()
    {
        const QString error = startProxy(2);
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const FakeAccount first = m_proxy->accounts().at(0);
        QVERIFY(m_fake.script(first.chatgptAccountId, {QStringLiteral("400")}));

        const SseResult r = turnFirstTriedOn(first, QStringLiteral("bad request"));
        QCOMPARE(r.status, 400);
        // The fake's scripted 400 body, unchanged.
        const QJsonObject err = r.json().value(QLatin1String("error")).toObject();
        QCOMPARE(str(err, "type"), QStringLiteral("invalid_request_error"));
        QCOMPARE(str(err, "code"), QStringLiteral("invalid_request"));
        QCOMPARE(str(err, "message"), QStringLiteral("Scripted bad request."));
        const QByteArray requestId = r.header("x-request-id");
        const QJsonArray seen = upstreamTurns(requestId);
        QCOMPARE(seen.size(), 1); // no failover for the request's own fault
        QCOMPARE(str(seen.at(0).toObject(), "chatgpt_account_id"), first.chatgptAccountId);
        const QJsonObject row = m_proxy->waitForRequest(QString::fromLatin1(requestId));
        QVERIFY2(!row.isEmpty(), "no request-log row");
        QCOMPARE(row.value(QLatin1String("attempts")).toArray().size(), 1);

        // Not penalised: still active, no cooldown, in the proxy and in the database.
        const QJsonObject now = live(first);
        QCOMPARE(str(now, "status"), QStringLiteral("active"));
        QVERIFY(now.value(QLatin1String("cooldown_until")).isNull());

        // The account keeps serving: new turns reach it (the strategy spreads them; a cooled-down account would
        // never be chosen) and complete there.
        SseResult served;
        for (int i = 0; i < 30 && served.header("x-switchyard-account") != first.alias.toUtf8(); ++i) {
            served = codexTurn(QStringLiteral("ECHO: next turn"));
            QCOMPARE(served.status, 200);
            QCOMPARE(served.eventTypes().constLast(), QByteArrayLiteral("response.completed"));
        }
        QCOMPARE(served.header("x-switchyard-account"), first.alias.toUtf8());
        QCOMPARE(upstreamTurns(served.header("x-request-id")).size(), 1);

        const QJsonObject stored = listed(first);
        QCOMPARE(str(stored, "status"), QStringLiteral("active"));
        QVERIFY(stored.value(QLatin1String("cooldown_until")).isNull());
    }
};

QTEST_GUILESS_MAIN(TestProxyFailover)
#include "tst_proxy_failover.moc"
