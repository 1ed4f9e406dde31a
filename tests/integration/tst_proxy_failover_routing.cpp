// SWITCHYARD_NEEDS_KEYRING: accounts are imported into a real gnome-keyring.
//
// Account choice through a running `switchyard serve` against the fake upstream (issue 2 point 7, DESIGN
// "Selection"): precedence continuation > session affinity > pin > strategy. Session affinity (Codex
// `session-id` / `prompt_cache_key`, OpenCode `x-session-affinity`), continuations (`previous_response_id`:
// the owning account or a clear error, never another account), `x-codex-turn-state` (forwarded both ways,
// the turn kept on one account), `accounts pin` (non-strict falls back, --strict does not; picked up by the
// running proxy within about a second), and the configured strategies round_robin and usage_weighted.
//
// Each test starts its own proxy. Under round_robin (configured for most tests) an account that just served is
// never the strategy's next choice while another one is idle, so a request that lands on the same account again
// did so because of affinity, continuation or pin, not by chance.
#include "lib/FakeUpstreamProcess.h"
#include "lib/HttpTestClient.h"
#include "lib/ProxyProcess.h"
#include "store/AccountRepository.h"
#include "store/Database.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSet>
#include <QTest>
#include <QUuid>
#include <functional>
#include <memory>

using namespace sy;
using namespace sy::test;

namespace {

QString str(const QJsonObject &o, const char *key)
{
    return o.value(QLatin1String(key)).toString();
}

QByteArray compact(const QJsonObject &o)
{
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

QJsonObject codexBody(const QString &text)
{
    const QJsonObject message{
        {QStringLiteral("type"), QStringLiteral("message")},
        {QStringLiteral("role"), QStringLiteral("user")},
        {QStringLiteral("content"), QJsonArray{QJsonObject{{QStringLiteral("type"), QStringLiteral("input_text")},
                                                           {QStringLiteral("text"), text}}}}};
    return {{QStringLiteral("model"), QStringLiteral("gpt-5-codex")},
            {QStringLiteral("stream"), true},
            {QStringLiteral("store"), false},
            {QStringLiteral("input"), QJsonArray{message}}};
}

QByteArray newSessionId()
{
    return QUuid::createUuid().toByteArray(QUuid::WithoutBraces);
}

const int kTimeoutMs = 20000;

} // namespace

class TestProxyFailoverRouting : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    std::unique_ptr<ProxyProcess> m_proxy;

    // `prepare` runs after the accounts exist and before serve starts (e.g. to set the fake's usage).
    QString startProxy(int count, const QString &strategy, const std::function<void()> &prepare = {},
                       const QJsonObject &extraConfig = {})
    {
        m_proxy = std::make_unique<ProxyProcess>();
        // A misrouted continuation is held silently by the fake: keep the pre_response budget (keepalive
        // cadence 2 s x 3) short so such a failure ends quickly.
        QJsonObject config{{QStringLiteral("strategy"), strategy},
                           {QStringLiteral("keepalive_interval_s"), 2},
                           {QStringLiteral("keepalive_max"), 3}};
        for (auto it = extraConfig.begin(); it != extraConfig.end(); ++it)
            config.insert(it.key(), it.value());
        m_proxy->setConfig(config);
        if (!m_proxy->addAccounts(count))
            return m_proxy->errorString();
        if (prepare)
            prepare();
        if (!m_proxy->start(m_fake.baseUrl()))
            return m_proxy->errorString();
        return {};
    }

    const FakeAccount &acct(int n) const { return m_proxy->accounts().at(n - 1); }

    QUrl url(const char *path) const { return QUrl(m_proxy->url(QString::fromLatin1(path))); }

    SseResult codexTurn(const QJsonObject &body, const HttpHeaderList &extra = {})
    {
        return codexTurnRaw(compact(body), extra);
    }

    SseResult codexTurnRaw(const QByteArray &body, const HttpHeaderList &extra = {})
    {
        HttpHeaderList headers{{"content-type", "application/json"}, {"authorization", "Bearer client-key"}};
        headers.append(extra);
        return sseRequest("POST", url("/backend-api/codex/responses"), headers, body, kTimeoutMs);
    }

    // A Codex body continuing `previous`; with `escaped`, the key is spelled with a JSON escape, which only a
    // JSON parser reads as previous_response_id.
    static QByteArray continuationBody(const QString &text, const QString &previous, bool escaped,
                                       qsizetype padBytes = 0)
    {
        QJsonObject body = codexBody(text);
        body.insert(QStringLiteral("previous_response_id"), previous);
        if (padBytes > 0) // history a long session would carry
            body.insert(QStringLiteral("instructions"), QString(padBytes, QLatin1Char('h')));
        QByteArray raw = compact(body);
        if (escaped)
            raw.replace("\"previous_response_id\"", "\"previous\\u005fresponse_id\"");
        return raw;
    }

    qint64 slotEpochs(const QString &alias) const
    {
        const FakeAccount *a = nullptr;
        for (const FakeAccount &f : m_proxy->accounts())
            a = f.alias == alias ? &f : a;
        qint64 sum = 0;
        for (const QJsonValue &v : liveStatus().value(QLatin1String("slots")).toArray()) {
            if (a && str(v.toObject(), "account_id") == a->id)
                sum += v.toObject().value(QLatin1String("epoch")).toInteger();
        }
        return sum;
    }

    const FakeAccount *byAlias(const QString &alias) const
    {
        for (const FakeAccount &f : m_proxy->accounts()) {
            if (f.alias == alias)
                return &f;
        }
        return nullptr;
    }

    // The account's selection time as the strategies see it: this replica's snapshot (/api/status) and the
    // durable row (what other replicas and the next start read).
    QPair<QJsonValue, std::optional<qint64>> selectionTime(const QString &alias) const
    {
        const FakeAccount *a = byAlias(alias);
        if (!a)
            return {};
        Database db;
        QString error;
        std::optional<AccountRecord> row;
        if (db.open(m_proxy->dataDir() + QStringLiteral("/switchyard.sqlite"), &error, Database::OpenMode::ReadOnly))
            row = AccountRepository(db).find(a->id, &error);
        return {live(*a).value(QLatin1String("last_selected_at")), row ? row->lastSelectedMs : std::nullopt};
    }

    int heldSlots() const
    {
        int held = 0;
        for (const QJsonValue &v : liveStatus().value(QLatin1String("slots")).toArray())
            held += str(v.toObject(), "state") == QLatin1String("held");
        return held;
    }

    // A non-streaming /v1/responses call (what the openai SDK sends without stream: true).
    HttpResult v1Response(const QString &input, const QString &previousResponseId = {},
                          const HttpHeaderList &extra = {})
    {
        QJsonObject body{{QStringLiteral("model"), QStringLiteral("gpt-5")}, {QStringLiteral("input"), input}};
        if (!previousResponseId.isEmpty())
            body.insert(QStringLiteral("previous_response_id"), previousResponseId);
        HttpHeaderList headers{{"content-type", "application/json"}};
        headers.append(extra);
        return httpRequest("POST", url("/v1/responses"), headers, compact(body), kTimeoutMs);
    }

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

    // The alias of the account that served a response, after checking that the fake upstream saw exactly one
    // attempt for it, with that account's token. Empty (and a test failure) otherwise.
    QString servedBy(const HttpResult &r)
    {
        const QByteArray requestId = r.header("x-request-id");
        const QJsonArray seen = upstreamTurns(requestId);
        if (r.status != 200 || seen.size() != 1) {
            qWarning() << "request" << requestId << "status" << r.status << "upstream attempts" << seen.size()
                       << r.body;
            return {};
        }
        const FakeAccount *a = m_proxy->accountByChatgptId(str(seen.at(0).toObject(), "chatgpt_account_id"));
        if (!a || str(seen.at(0).toObject(), "authorization") != a->accessToken ||
            r.header("x-switchyard-account") != a->alias.toUtf8()) {
            qWarning() << "request" << requestId << "booked as" << r.header("x-switchyard-account")
                       << "but sent with another account's credentials";
            return {};
        }
        return a->alias;
    }

    QJsonObject liveStatus() const
    {
        return httpRequest("GET", QUrl(m_proxy->url(QStringLiteral("/api/status")))).json();
    }

    QJsonObject live(const FakeAccount &a) const
    {
        for (const QJsonValue &v : liveStatus().value(QLatin1String("accounts")).toArray()) {
            if (str(v.toObject(), "account_id") == a.id)
                return v.toObject();
        }
        return {};
    }

    bool cliOk(const QStringList &args)
    {
        const CliResult r = m_proxy->cli(args);
        if (r.exitCode != 0)
            qWarning() << args << "exit" << r.exitCode << r.err;
        return r.exitCode == 0;
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

    // Consecutive turns of one session stay on one account (under round_robin they would alternate).
    void sessionStaysOnItsAccount_data()
    {
        QTest::addColumn<QString>("how");
        QTest::newRow("Codex session-id header") << "session-id";
        QTest::newRow("Codex prompt_cache_key") << "prompt_cache_key";
        QTest::newRow("OpenCode x-session-affinity") << "x-session-affinity";
    }

    void sessionStaysOnItsAccount()
    {
        QFETCH(QString, how);
        const QString error = startProxy(2, QStringLiteral("round_robin"));
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const QByteArray session = newSessionId();
        QSet<QString> used;
        QByteArray lastRequestId;
        for (int i = 0; i < 6; ++i) {
            HttpResult r;
            if (how == QLatin1String("x-session-affinity")) {
                const QJsonObject body{{QStringLiteral("model"), QStringLiteral("gpt-5")},
                                       {QStringLiteral("stream"), true},
                                       {QStringLiteral("input"), QStringLiteral("turn %1").arg(i)}};
                r = sseRequest("POST", url("/v1/responses"),
                               {{"content-type", "application/json"}, {"x-session-affinity", session}}, compact(body),
                               kTimeoutMs);
            } else if (how == QLatin1String("session-id")) {
                r = codexTurn(codexBody(QStringLiteral("turn %1").arg(i)), {{"session-id", session}});
            } else {
                QJsonObject body = codexBody(QStringLiteral("turn %1").arg(i));
                body.insert(QStringLiteral("prompt_cache_key"), QString::fromLatin1(session));
                r = codexTurn(body);
            }
            const QString alias = servedBy(r);
            QVERIFY2(!alias.isEmpty(), qPrintable(QStringLiteral("turn %1").arg(i)));
            used.insert(alias);
            lastRequestId = r.header("x-request-id");
        }
        QCOMPARE(used.size(), 1);
        const QJsonObject row = m_proxy->waitForRequest(QString::fromLatin1(lastRequestId));
        QCOMPARE(str(row, "session_key"), QString::fromLatin1(session));
    }

    // round_robin from the configuration: new sessions take turns, so two sessions on two accounts use both, and
    // each session then keeps its account.
    void differentSessionsSpreadUnderRoundRobin()
    {
        const QString error = startProxy(2, QStringLiteral("round_robin"));
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(str(liveStatus(), "strategy"), QStringLiteral("round_robin"));
        const QByteArray s1 = newSessionId(), s2 = newSessionId();
        const QString a1 = servedBy(codexTurn(codexBody(QStringLiteral("s1 first")), {{"session-id", s1}}));
        const QString a2 = servedBy(codexTurn(codexBody(QStringLiteral("s2 first")), {{"session-id", s2}}));
        QVERIFY(!a1.isEmpty() && !a2.isEmpty());
        QVERIFY2(a1 != a2, qPrintable(a1));
        for (int i = 0; i < 2; ++i) {
            QCOMPARE(servedBy(codexTurn(codexBody(QStringLiteral("s2 again")), {{"session-id", s2}})), a2);
            QCOMPARE(servedBy(codexTurn(codexBody(QStringLiteral("s1 again")), {{"session-id", s1}})), a1);
        }
    }

    // A continuation goes to the account that produced the response, even where the strategy would pick the
    // other account, and the anchor reaches the upstream.
    void continuationGoesToTheOwningAccount()
    {
        const QString error = startProxy(2, QStringLiteral("round_robin"));
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const HttpResult first = v1Response(QStringLiteral("ECHO: start"));
        const QString owner = servedBy(first);
        QVERIFY(!owner.isEmpty());
        QString previous = str(first.json(), "id");
        QVERIFY2(previous.startsWith(QLatin1String("resp_")), first.body.constData());

        for (int i = 0; i < 5; ++i) {
            if (i == 2) {
                // Another session in between (round_robin sends it to the other account).
                const QString other =
                    servedBy(codexTurn(codexBody(QStringLiteral("other")), {{"session-id", newSessionId()}}));
                QVERIFY(!other.isEmpty());
            }
            const HttpResult next = v1Response(QStringLiteral("ECHO: continue %1").arg(i), previous);
            QCOMPARE(servedBy(next), owner);
            const QJsonObject seen = upstreamTurns(next.header("x-request-id")).at(0).toObject();
            QCOMPARE(str(seen.value(QLatin1String("body")).toObject(), "previous_response_id"), previous);
            QCOMPARE(str(next.json(), "status"), QStringLiteral("completed"));
            previous = str(next.json(), "id");
            QVERIFY(previous.startsWith(QLatin1String("resp_")));
        }
    }

    // A Codex turn with a session-id header is routed, and its slot claimed, before its body is scanned
    // (Turn::claimBeforeScan), unless its body (up to 1 MiB) names a previous response. A key spelled with a
    // JSON escape, or in a larger body (not searched), is found only by the scan: the claim made by then (on
    // the session's account) is given up once answered, and the continuation goes to the response's owner, the
    // other account.
    void codexContinuationOverridesTheSessionsAccount_data()
    {
        QTest::addColumn<bool>("escaped");
        QTest::addColumn<int>("padBytes");
        QTest::addColumn<int>("earlyClaims");
        QTest::newRow("previous_response_id: no claim before the scan") << false << 0 << 0;
        QTest::newRow("previous\\u005fresponse_id: a claim before the scan, given up") << true << 0 << 1;
        QTest::newRow("previous_response_id, 1.5 MiB body: a claim before the scan, given up")
            << false << 1536 * 1024 << 1;
    }

    void codexContinuationOverridesTheSessionsAccount()
    {
        QFETCH(bool, escaped);
        QFETCH(int, padBytes);
        QFETCH(int, earlyClaims);
        const QString error = startProxy(2, QStringLiteral("round_robin"));
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const QByteArray session = newSessionId();
        const QString sessionAccount =
            servedBy(codexTurn(codexBody(QStringLiteral("ECHO: first")), {{"session-id", session}}));
        QVERIFY(!sessionAccount.isEmpty());
        const HttpResult elsewhere = v1Response(QStringLiteral("ECHO: elsewhere")); // round_robin: the other one
        const QString owner = servedBy(elsewhere);
        QVERIFY(!owner.isEmpty());
        QVERIFY2(owner != sessionAccount, qPrintable(owner));
        const qint64 sessionEpochs = slotEpochs(sessionAccount);
        const auto selected = selectionTime(sessionAccount);
        QVERIFY(selected.second.has_value());
        QVERIFY(!selected.first.isNull());

        const SseResult next = codexTurnRaw(
            continuationBody(QStringLiteral("ECHO: continue"), str(elsewhere.json(), "id"), escaped, padBytes),
            {{"session-id", session}});
        QCOMPARE(servedBy(next), owner);
        QCOMPARE(slotEpochs(sessionAccount), sessionEpochs + earlyClaims);
        QCOMPARE(heldSlots(), 0);
        // A claim given up unused leaves the session account's selection time as it was (strategies read it).
        QCOMPARE(selectionTime(sessionAccount), selected);
    }

    // The same with the owner being the session's own account and a single slot: the early claim holds that
    // slot until its release is answered, so the continuation is routed only then and claims the slot at
    // once, without waiting at the gate for its own slot.
    void aGivenUpEarlyClaimDoesNotMakeItsContinuationWait()
    {
        const QString error =
            startProxy(1, QStringLiteral("round_robin"), {}, {{QStringLiteral("slots_per_account"), 1}});
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const HttpResult first = v1Response(QStringLiteral("ECHO: start"));
        const QString owner = servedBy(first);
        QVERIFY(!owner.isEmpty());
        const qint64 epochs = slotEpochs(owner);
        const QJsonObject gate = liveStatus().value(QLatin1String("gate")).toObject();
        const SseResult next =
            codexTurnRaw(continuationBody(QStringLiteral("ECHO: continue"), str(first.json(), "id"), true),
                         {{"session-id", newSessionId()}});
        QCOMPARE(servedBy(next), owner);
        QCOMPARE(slotEpochs(owner), epochs + 2); // the early claim and the continuation's
        const QJsonObject after = liveStatus().value(QLatin1String("gate")).toObject();
        QCOMPARE(after.value(QLatin1String("admitted")).toInteger(), gate.value(QLatin1String("admitted")).toInteger());
        QCOMPARE(heldSlots(), 0);
    }

    // An anchor nobody produced is refused with 400 previous_response_not_found and never reaches the upstream.
    void unknownPreviousResponseIsRefused()
    {
        const QString error = startProxy(2, QStringLiteral("round_robin"));
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const int before = int(m_fake.log().size());
        const HttpResult r = v1Response(QStringLiteral("continue"), QStringLiteral("resp_never_produced_here"));
        QCOMPARE(r.status, 400);
        QCOMPARE(str(r.json().value(QLatin1String("error")).toObject(), "code"),
                 QStringLiteral("previous_response_not_found"));
        QCOMPARE(int(m_fake.log().size()), before);
        QVERIFY(r.header("x-switchyard-account").isEmpty());
    }

    // The owner paused: its continuation is refused (not sent to the other account); resumed: served again.
    void continuationOfAPausedAccountIsRefused()
    {
        const QString error = startProxy(2, QStringLiteral("round_robin"));
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const HttpResult first = v1Response(QStringLiteral("ECHO: start"));
        const QString owner = servedBy(first);
        QVERIFY(!owner.isEmpty());
        const QString responseId = str(first.json(), "id");
        const FakeAccount &ownerAccount = owner == acct(1).alias ? acct(1) : acct(2);

        QVERIFY(cliOk({QStringLiteral("accounts"), QStringLiteral("pause"), owner}));
        QTRY_COMPARE_WITH_TIMEOUT(str(live(ownerAccount), "status"), QStringLiteral("paused"), 4000);

        const int before = int(m_fake.log().size());
        const HttpResult refused = v1Response(QStringLiteral("continue"), responseId);
        QVERIFY2(refused.status >= 400 && refused.status < 600, qPrintable(QString::number(refused.status)));
        QVERIFY2(!str(refused.json().value(QLatin1String("error")).toObject(), "code").isEmpty(),
                 refused.body.constData());
        QCOMPARE(int(m_fake.log().size()), before); // not sent anywhere, in particular not to the other account

        QVERIFY(cliOk({QStringLiteral("accounts"), QStringLiteral("resume"), owner}));
        QTRY_COMPARE_WITH_TIMEOUT(str(live(ownerAccount), "status"), QStringLiteral("active"), 4000);
        QCOMPARE(servedBy(v1Response(QStringLiteral("ECHO: continue"), responseId)), owner);
    }

    // x-codex-turn-state from the upstream reaches the client; a follow-up carrying it reaches the same account,
    // with the header forwarded upstream.
    void turnStateKeepsTheTurnOnItsAccount()
    {
        const QString error = startProxy(2, QStringLiteral("round_robin"));
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const SseResult first = codexTurn(codexBody(QStringLiteral("ECHO: start")));
        const QString owner = servedBy(first);
        QVERIFY(!owner.isEmpty());
        const QByteArray turnState = first.header("x-codex-turn-state");
        QVERIFY2(turnState.startsWith("ts_"), turnState.constData()); // what the fake sent

        for (int i = 0; i < 4; ++i) {
            const SseResult next =
                codexTurn(codexBody(QStringLiteral("ECHO: follow-up %1").arg(i)), {{"x-codex-turn-state", turnState}});
            QCOMPARE(servedBy(next), owner);
            QCOMPARE(next.eventTypes().constLast(), QByteArrayLiteral("response.completed"));
            const QJsonObject seen = upstreamTurns(next.header("x-request-id")).at(0).toObject();
            QCOMPARE(str(seen, "turn_state").toLatin1(), turnState);
            QCOMPARE(next.header("x-codex-turn-state"), turnState);
        }
    }

    // `accounts pin acct2`: new sessions go to acct2; acct2 paused: a plain pin falls back, a strict one fails with
    // 429; `pin auto`: balancing again.
    void pinSteersNewSessions()
    {
        const QString error = startProxy(2, QStringLiteral("round_robin"));
        QVERIFY2(error.isEmpty(), qPrintable(error));
        const FakeAccount &a1 = acct(1), &a2 = acct(2);
        auto newSessionTurn = [&](const QString &text) {
            return codexTurn(codexBody(text), {{"session-id", newSessionId()}});
        };

        QVERIFY(cliOk({QStringLiteral("accounts"), QStringLiteral("pin"), a2.alias}));
        QTRY_COMPARE_WITH_TIMEOUT(str(liveStatus(), "pinned_account_id"), a2.id, 4000);
        for (int i = 0; i < 4; ++i)
            QCOMPARE(servedBy(newSessionTurn(QStringLiteral("pinned %1").arg(i))), a2.alias);

        QVERIFY(cliOk({QStringLiteral("accounts"), QStringLiteral("pause"), a2.alias}));
        QTRY_COMPARE_WITH_TIMEOUT(str(live(a2), "status"), QStringLiteral("paused"), 4000);
        QCOMPARE(servedBy(newSessionTurn(QStringLiteral("fallback"))), a1.alias);

        QVERIFY(cliOk({QStringLiteral("accounts"), QStringLiteral("pin"), a2.alias, QStringLiteral("--strict")}));
        QTRY_VERIFY_WITH_TIMEOUT(liveStatus().value(QLatin1String("pin_strict")).toBool(), 4000);
        const int before = int(m_fake.log().size());
        const SseResult strict = newSessionTurn(QStringLiteral("strict"));
        QCOMPARE(strict.status, 429);
        QVERIFY(!strict.body.contains("usage_limit_reached"));
        QCOMPARE(int(m_fake.log().size()), before);

        QVERIFY(cliOk({QStringLiteral("accounts"), QStringLiteral("resume"), a2.alias}));
        QVERIFY(cliOk({QStringLiteral("accounts"), QStringLiteral("pin"), QStringLiteral("auto")}));
        QTRY_VERIFY_WITH_TIMEOUT(liveStatus().value(QLatin1String("pinned_account_id")).isNull() &&
                                     str(live(a2), "status") == QLatin1String("active"),
                                 4000);
        QSet<QString> used;
        for (int i = 0; i < 12 && used.size() < 2; ++i) {
            const QString alias = servedBy(newSessionTurn(QStringLiteral("balanced %1").arg(i)));
            QVERIFY(!alias.isEmpty());
            used.insert(alias);
        }
        QCOMPARE(used, (QSet<QString>{a1.alias, a2.alias}));
    }

    // usage_weighted from the configuration: once the proxy has learnt each account's weekly usage from the
    // upstream's rate-limit headers, new turns go to the least used account, and follow changes in usage.
    void usageWeightedPicksTheLowestWeeklyUsage()
    {
        const double weekly[] = {80, 20, 50};
        const QString error = startProxy(3, QStringLiteral("usage_weighted"), [&] {
            for (int i = 0; i < 3; ++i) {
                QVERIFY(m_fake.setUsage(acct(i + 1).chatgptAccountId,
                                        {{QStringLiteral("primary_used_percent"), 10.0},
                                         {QStringLiteral("secondary_used_percent"), weekly[i]}}));
            }
        });
        QVERIFY2(error.isEmpty(), qPrintable(error));
        QCOMPARE(str(liveStatus(), "strategy"), QStringLiteral("usage_weighted"));

        // Usage arrives through turns (headers, codex.rate_limits) and the background poller; unknown usage
        // counts as 0 % used, so turns keep visiting accounts whose usage is not known yet.
        auto weeklyKnown = [&](int i) {
            return live(acct(i + 1)).value(QLatin1String("secondary_window")).toObject()
                       .value(QLatin1String("used_percent")).toDouble(-1) == weekly[i];
        };
        for (int turn = 0; turn < 6 && !(weeklyKnown(0) && weeklyKnown(1) && weeklyKnown(2)); ++turn)
            servedBy(codexTurn(codexBody(QStringLiteral("learn %1").arg(turn))));
        for (int i = 0; i < 3; ++i)
            QVERIFY2(weeklyKnown(i), qPrintable(QStringLiteral("weekly usage of acct%1 never learnt").arg(i + 1)));

        for (int i = 0; i < 3; ++i)
            QCOMPARE(servedBy(codexTurn(codexBody(QStringLiteral("lowest %1").arg(i)))), acct(2).alias);

        // acct2 climbs to 90 %: its next turn reports it, and the one after goes to acct3 (50 %).
        QVERIFY(m_fake.setUsage(acct(2).chatgptAccountId, {{QStringLiteral("secondary_used_percent"), 90.0}}));
        QCOMPARE(servedBy(codexTurn(codexBody(QStringLiteral("reports 90")))), acct(2).alias);
        QCOMPARE(servedBy(codexTurn(codexBody(QStringLiteral("moves on")))), acct(3).alias);
    }
};

QTEST_GUILESS_MAIN(TestProxyFailoverRouting)
#include "tst_proxy_failover_routing.moc"
