// SWITCHYARD_NEEDS_KEYRING: accounts are imported into a real gnome-keyring.
//
// Per-stage budgets through the running proxy (DESIGN.md "Per-stage budgets" and "Committing a response",
// issue 2 point 5): every kill is reported under the name of the budget that fired (request log `kill_stage`,
// `status: timed_out`), the client gets the answer DESIGN.md prescribes before and after commit, budgets are
// per request and carried across failover, and contradictory settings are refused at start-up.
#include "lib/FakeUpstreamProcess.h"
#include "lib/HttpTestClient.h"
#include "lib/ProxyProcess.h"
#include "lib/RawHttpClient.h"

#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTcpServer>
#include <QTest>
#include <memory>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

using namespace sy;
using namespace sy::test;

namespace {

const char *const kCodex = "/backend-api/codex/responses";
const char *const kV1Responses = "/v1/responses";
const char *const kV1Chat = "/v1/chat/completions";

QByteArray compact(const QJsonObject &o)
{
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

// A Responses request body (Codex route or /v1/responses).
QByteArray responsesBody(const QString &text, bool stream = true)
{
    const QJsonObject content{{QStringLiteral("type"), QStringLiteral("input_text")}, {QStringLiteral("text"), text}};
    const QJsonObject message{{QStringLiteral("type"), QStringLiteral("message")},
                              {QStringLiteral("role"), QStringLiteral("user")},
                              {QStringLiteral("content"), QJsonArray{content}}};
    return compact({{QStringLiteral("model"), QStringLiteral("gpt-5-codex")},
                    {QStringLiteral("stream"), stream},
                    {QStringLiteral("store"), false},
                    {QStringLiteral("input"), QJsonArray{message}}});
}

QByteArray chatBody(const QString &text, bool stream = true)
{
    return compact(
        {{QStringLiteral("model"), QStringLiteral("gpt-5-codex")},
         {QStringLiteral("stream"), stream},
         {QStringLiteral("messages"), QJsonArray{QJsonObject{{QStringLiteral("role"), QStringLiteral("user")},
                                                             {QStringLiteral("content"), text}}}}});
}

QByteArray bodyFor(const char *path, const QString &text, bool stream = true)
{
    return qstrcmp(path, kV1Chat) == 0 ? chatBody(text, stream) : responsesBody(text, stream);
}

// Sends one request on its own connection; the caller reads the answer later (waiting spins the event loop,
// so several such requests progress concurrently).
std::unique_ptr<RawHttpClient> post(const ProxyProcess &proxy, const char *path, const QByteArray &body)
{
    auto client = std::make_unique<RawHttpClient>();
    if (!client->connectTo(proxy.port()))
        return nullptr;
    client->send(RawHttpClient::buildRequest(
        "POST", path, {{"content-type", "application/json"}, {"authorization", "Bearer client-key"}}, body));
    return client;
}

QList<QByteArray> eventTypes(const QByteArray &sse)
{
    QList<QByteArray> types;
    for (const SseEvent &e : parseSse(sse))
        types << e.event;
    return types;
}

QByteArray describe(const RawResponse &r)
{
    // QtTest shortens long failure messages: show the end of the body, where a stream's ending is.
    const QByteArray body = r.body.size() <= 700 ? r.body : "[...]" + r.body.right(700);
    return r.statusLine + QByteArrayLiteral(" (") + QByteArray::number(r.body.size()) + " body bytes)\n" + body;
}

QStringList attemptOutcomes(const QJsonObject &row)
{
    QStringList out;
    for (const QJsonValue &v : row.value(QLatin1String("attempts")).toArray())
        out << v.toObject().value(QLatin1String("outcome")).toString();
    return out;
}

QString str(const QJsonObject &o, const char *key)
{
    return o.value(QLatin1String(key)).toString();
}

// The upstream requests the fake has seen for one account.
QJsonArray upstreamRequestsFor(FakeUpstreamProcess &fake, const QString &chatgptAccountId)
{
    QJsonArray out;
    for (const QJsonValue &v : fake.log()) {
        const QJsonObject e = v.toObject();
        if (str(e, "chatgpt_account_id") == chatgptAccountId && str(e, "path").endsWith(QLatin1String("/responses")))
            out.append(e);
    }
    return out;
}

QJsonObject statusJson(const ProxyProcess &proxy)
{
    // The instance listens on an ephemeral port (serve --listen 127.0.0.1:0): tell the CLI where it is.
    const CliResult r = proxy.cli({QStringLiteral("status"), QStringLiteral("--json"), QStringLiteral("--listen"),
                                   QStringLiteral("127.0.0.1:%1").arg(proxy.port())});
    if (r.exitCode != 0)
        qWarning("status --json failed (%d): %s", r.exitCode, r.err.constData());
    return r.json().object();
}

QJsonObject inFlightTurn(const QJsonObject &status, const QString &requestId)
{
    for (const QJsonValue &v : status.value(QLatin1String("in_flight")).toArray()) {
        if (str(v.toObject(), "request_id") == requestId)
            return v.toObject();
    }
    return {};
}

// A long answer: the fake streams one delta per word.
QString longEchoText(int words)
{
    QStringList w;
    for (int i = 0; i < words; ++i)
        w << QStringLiteral("word%1").arg(i);
    return QStringLiteral("ECHO: ") + w.join(QLatin1Char(' '));
}

// An upstream that completes TCP handshakes (the kernel does) but never reads: with a tiny receive buffer a
// large request body can never be sent completely.
class BlackHole
{
public:
    BlackHole() = default;
    ~BlackHole() { m_server.close(); }
    bool listen()
    {
        const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return false;
        const int one = 1;
        ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        // Set before listen() so accepted connections inherit it (and receive-buffer autotuning is off).
        const int tiny = 4096;
        ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &tiny, sizeof tiny);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = 0;
        if (::bind(fd, reinterpret_cast<sockaddr *>(&addr), sizeof addr) != 0 || ::listen(fd, 64) != 0) {
            ::close(fd);
            return false;
        }
        socklen_t len = sizeof addr;
        ::getsockname(fd, reinterpret_cast<sockaddr *>(&addr), &len);
        m_port = ntohs(addr.sin_port);
        if (!m_server.setSocketDescriptor(fd))
            return false;
        // Connections complete in the kernel's accept queue and are never accepted, so nothing ever reads
        // them: their (tiny) receive buffers fill and the sender blocks.
        m_server.pauseAccepting();
        return true;
    }
    QString baseUrl() const { return QStringLiteral("http://127.0.0.1:%1/backend-api").arg(m_port); }

private:
    QTcpServer m_server;
    quint16 m_port = 0;
};

} // namespace

class TestProxyBudgets : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;

    bool startProxy(ProxyProcess &proxy, const QJsonObject &config, int accounts, QString *error,
                    const QString &upstream = {})
    {
        proxy.setConfig(config);
        if (!proxy.addAccounts(accounts) || !proxy.start(upstream.isEmpty() ? m_fake.baseUrl() : upstream)) {
            *error = proxy.errorString();
            return false;
        }
        return true;
    }

    // Pins an account through the CLI and waits until the running instance has picked it up.
    bool pin(ProxyProcess &proxy, const FakeAccount &account, bool strict)
    {
        QStringList args{QStringLiteral("accounts"), QStringLiteral("pin"), account.alias};
        if (strict)
            args << QStringLiteral("--strict");
        const CliResult r = proxy.cli(args);
        if (r.exitCode != 0) {
            qWarning("accounts pin failed: %s", r.err.constData());
            return false;
        }
        return QTest::qWaitFor(
            [&] {
                const QJsonObject s = statusJson(proxy);
                return str(s, "pinned_account_id") == account.id &&
                       s.value(QLatin1String("pin_strict")).toBool() == strict;
            },
            10000);
    }

private slots:
    void initTestCase() { QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString())); }

    void init() { QVERIFY(m_fake.reset()); }

    void cleanup()
    {
        if (!QTest::currentTestFailed())
            return;
        // Diagnostics: what the upstream saw and did.
        for (const QJsonValue &v : m_fake.log()) {
            const QJsonObject e = v.toObject();
            qInfo("upstream #%d %s %s account=%s request=%s action=%s status=%d outcome=%s client_gone=%d",
                  e.value(QLatin1String("seq")).toInt(), qPrintable(str(e, "method")), qPrintable(str(e, "path")),
                  qPrintable(str(e, "chatgpt_account_id")), qPrintable(str(e, "x_request_id")),
                  qPrintable(str(e, "action")), e.value(QLatin1String("status_sent")).toInt(),
                  qPrintable(str(e, "outcome")), int(e.value(QLatin1String("client_gone")).toBool()));
        }
    }

    // 1. gate_wait before commit: 503 proxy_overloaded with Retry-After, never usage_limit_reached.
    void gateWaitTimeoutAnswers503ProxyOverloaded()
    {
        ProxyProcess proxy;
        QString error;
        QVERIFY2(startProxy(proxy,
                            {{QStringLiteral("slots_per_account"), 1},
                             {QStringLiteral("gate_wait_s"), 1},
                             {QStringLiteral("keepalive_interval_s"), 10}},
                            1, &error),
                 qPrintable(error));
        const FakeAccount &acct = proxy.accounts().first();
        QVERIFY(m_fake.script(acct.chatgptAccountId, {QStringLiteral("silent")}));

        // The holder takes the only slot and hangs before response.created.
        auto holder = post(proxy, kCodex, responsesBody(QStringLiteral("hold the slot")));
        QVERIFY(holder);
        QTRY_COMPARE_WITH_TIMEOUT(int(upstreamRequestsFor(m_fake, acct.chatgptAccountId).size()), 1, 10000);
        const QString holderId =
            str(upstreamRequestsFor(m_fake, acct.chatgptAccountId).first().toObject(), "x_request_id");

        // status --json shows the holder in flight, in pre_response, with its remaining budgets.
        const QJsonObject held = inFlightTurn(statusJson(proxy), holderId);
        QCOMPARE(str(held, "stage"), QStringLiteral("pre_response"));
        QCOMPARE(str(held, "account_id"), acct.id);
        const QJsonObject heldRemaining = held.value(QLatin1String("remaining_ms")).toObject();
        QVERIFY2(heldRemaining.contains(QLatin1String("pre_response")), compact(held).constData());
        QVERIFY(heldRemaining.value(QLatin1String("pre_response")).toInteger() > 0);
        QVERIFY(heldRemaining.value(QLatin1String("pre_response")).toInteger() <= 60000); // 10 s x 6 keepalives
        QVERIFY(heldRemaining.value(QLatin1String("request_total")).toInteger() > 0);
        QVERIFY(heldRemaining.value(QLatin1String("request_total")).toInteger() <= 600000);

        // Waiters on the Codex route and on /v1 (stream and not) all get 503 proxy_overloaded.
        struct Waiter
        {
            const char *path;
            bool stream;
            std::unique_ptr<RawHttpClient> client;
        };
        Waiter waiters[] = {{kCodex, true, nullptr}, {kV1Responses, false, nullptr}, {kV1Chat, true, nullptr}};
        for (Waiter &w : waiters) {
            w.client = post(proxy, w.path, bodyFor(w.path, QStringLiteral("ECHO: waiting"), w.stream));
            QVERIFY(w.client);
        }
        for (Waiter &w : waiters) {
            const std::optional<RawResponse> r = w.client->readResponse(15000);
            QVERIFY2(r, w.path);
            QVERIFY2(r->status == 503, qPrintable(QStringLiteral("%1: %2 %3")
                                                      .arg(QLatin1String(w.path))
                                                      .arg(r->status)
                                                      .arg(QString::fromUtf8(r->body))));
            const QJsonObject err = r->json().value(QLatin1String("error")).toObject();
            QCOMPARE(str(err, "code"), QStringLiteral("proxy_overloaded"));
            QVERIFY2(!r->body.contains("usage_limit_reached"), describe(*r).constData());
            bool ok = false;
            const int retryAfter = r->header("retry-after").toInt(&ok);
            QVERIFY2(ok && retryAfter >= 1, r->header("retry-after").constData());
            const QByteArray requestId = r->header("x-request-id");
            QVERIFY(requestId.startsWith("req_"));

            const QJsonObject row = proxy.waitForRequest(QString::fromLatin1(requestId));
            QVERIFY2(!row.isEmpty(), requestId.constData());
            QCOMPARE(str(row, "status"), QStringLiteral("timed_out"));
            QCOMPARE(str(row, "kill_stage"), QStringLiteral("gate_wait"));
            QCOMPARE(str(row, "error_code"), QStringLiteral("proxy_overloaded"));
            QVERIFY(row.value(QLatin1String("attempts")).toArray().isEmpty()); // never reached the upstream
            const QJsonValue queue = row.value(QLatin1String("latency_ms")).toObject().value(QLatin1String("queue"));
            QVERIFY2(queue.isDouble() && queue.toInteger() >= 900, compact(row).constData());
        }
        // Only the holder ever reached the upstream.
        QCOMPARE(int(upstreamRequestsFor(m_fake, acct.chatgptAccountId).size()), 1);
        QVERIFY(m_fake.dropHeld());
        QVERIFY(holder->readResponse(15000));
    }

    // 2a. A gate wait longer than keepalive_interval_s commits the stream with keepalives; when the slot
    // frees in time, the answer follows in the same stream.
    void gateWaitKeepaliveCommitsAndAnswerFollows()
    {
        ProxyProcess proxy;
        QString error;
        QVERIFY2(startProxy(proxy,
                            {{QStringLiteral("slots_per_account"), 1},
                             {QStringLiteral("gate_wait_s"), 4},
                             {QStringLiteral("keepalive_interval_s"), 1}},
                            1, &error),
                 qPrintable(error));
        const FakeAccount &acct = proxy.accounts().first();
        // The holder's upstream answer starts 2.2 s after its request: the waiter sees keepalives first.
        QVERIFY(m_fake.script(acct.chatgptAccountId, {QStringLiteral("delay_first:2200")}));
        auto holder = post(proxy, kCodex, responsesBody(QStringLiteral("ECHO: holder done")));
        QVERIFY(holder);
        QTRY_COMPARE_WITH_TIMEOUT(int(upstreamRequestsFor(m_fake, acct.chatgptAccountId).size()), 1, 10000);

        auto waiter = post(proxy, kCodex, responsesBody(QStringLiteral("ECHO: waited for my turn")));
        QVERIFY(waiter);
        const std::optional<RawResponse> r = waiter->readResponse(20000);
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        QVERIFY(r->header("content-type").startsWith("text/event-stream"));
        const qsizetype keepalive = r->body.indexOf(": keepalive");
        const qsizetype created = r->body.indexOf("event: response.created");
        QVERIFY2(keepalive >= 0, describe(*r).constData());
        QVERIFY2(created > keepalive, describe(*r).constData());
        const QList<QByteArray> types = eventTypes(r->body);
        QVERIFY2(types.contains("codex.keepalive"), describe(*r).constData());
        QVERIFY(types.indexOf("codex.keepalive") < types.indexOf("response.created"));
        QCOMPARE(types.constLast(), QByteArrayLiteral("response.completed"));
        QVERIFY(!types.contains("error"));
        QByteArray text;
        for (const SseEvent &e : parseSse(r->body)) {
            if (e.event == "response.output_text.delta")
                text += e.json().value(QLatin1String("delta")).toString().toUtf8();
        }
        QCOMPARE(text, QByteArrayLiteral("waited for my turn"));

        const QJsonObject row = proxy.waitForRequest(QString::fromLatin1(r->header("x-request-id")));
        QCOMPARE(str(row, "status"), QStringLiteral("completed"));
        QVERIFY(row.value(QLatin1String("kill_stage")).isNull());
        QCOMPARE(attemptOutcomes(row), QStringList{QStringLiteral("completed")});
        QVERIFY2(row.value(QLatin1String("latency_ms")).toObject().value(QLatin1String("queue")).toInteger() >= 1000,
                 compact(row).constData());
        QVERIFY(holder->readResponse(15000));
    }

    // 2c. A freed slot wakes the waiters in the order they first began to wait: a turn that waited, won a slot,
    // failed over from it and waits again is still ahead of a turn that began to wait while it held that slot.
    void aTurnWaitingAgainAfterFailoverKeepsItsPlace()
    {
        ProxyProcess proxy;
        QString error;
        QVERIFY2(startProxy(proxy,
                            {{QStringLiteral("slots_per_account"), 1},
                             {QStringLiteral("gate_wait_s"), 30},
                             {QStringLiteral("keepalive_interval_s"), 20}},
                            2, &error),
                 qPrintable(error));
        const QString a = proxy.accounts().at(0).chatgptAccountId;
        const QString b = proxy.accounts().at(1).chatgptAccountId;
        // Each account's first request holds its slot; b's second answers usage_limit_reached 3 s late.
        QVERIFY(m_fake.script(a, {QStringLiteral("silent")}));
        QVERIFY(m_fake.script(b, {QStringLiteral("silent"), QStringLiteral("429+delay_first:3000")}));
        const auto inputText = [](const QJsonValue &entry) {
            const QJsonArray input =
                entry.toObject().value(QLatin1String("body")).toObject().value(QLatin1String("input")).toArray();
            return input.at(0)
                .toObject()
                .value(QLatin1String("content"))
                .toArray()
                .at(0)
                .toObject()
                .value(QLatin1String("text"))
                .toString();
        };
        const auto gate = [&](const char *key) {
            return statusJson(proxy).value(QLatin1String("gate")).toObject().value(QLatin1String(key)).toInt(-1);
        };

        std::unique_ptr<RawHttpClient> holder1 = post(proxy, kCodex, responsesBody(QStringLiteral("ECHO: holder1")));
        std::unique_ptr<RawHttpClient> holder2 = post(proxy, kCodex, responsesBody(QStringLiteral("ECHO: holder2")));
        QVERIFY(holder1 && holder2);
        QTRY_COMPARE_WITH_TIMEOUT(int(upstreamRequestsFor(m_fake, a).size()), 1, 10000);
        QTRY_COMPARE_WITH_TIMEOUT(int(upstreamRequestsFor(m_fake, b).size()), 1, 10000);
        const bool holder1OnA = inputText(upstreamRequestsFor(m_fake, a).at(0)) == QLatin1String("ECHO: holder1");
        std::unique_ptr<RawHttpClient> &holderOnA = holder1OnA ? holder1 : holder2;
        std::unique_ptr<RawHttpClient> &holderOnB = holder1OnA ? holder2 : holder1;

        // The first turn waits, then gets b's slot when b's holder goes away.
        auto first = post(proxy, kCodex, responsesBody(QStringLiteral("ECHO: first waiter")));
        QVERIFY(first);
        QTRY_COMPARE_WITH_TIMEOUT(gate("queued"), 1, 10000);
        holderOnB.reset();
        QTRY_COMPARE_WITH_TIMEOUT(int(upstreamRequestsFor(m_fake, b).size()), 2, 10000);
        QCOMPARE(inputText(upstreamRequestsFor(m_fake, b).at(1)), QStringLiteral("ECHO: first waiter"));

        // While it holds b's slot (its answer is 3 s away), a second turn begins to wait.
        auto second = post(proxy, kCodex, responsesBody(QStringLiteral("ECHO: second waiter")));
        QVERIFY(second);
        QTRY_COMPARE_WITH_TIMEOUT(gate("queued"), 1, 10000);
        QVERIFY2(upstreamRequestsFor(m_fake, b).at(1).toObject().value(QLatin1String("status_sent")).toInt() == 0,
                 "b answered before the second turn queued: the case needs a longer delay");
        // b's usage limit: the first turn fails over, b cools down, and both wait for a's slot.
        QTRY_COMPARE_WITH_TIMEOUT(gate("queued"), 2, 15000);
        QCOMPARE(gate("slot_watchers"), 2);

        holderOnA.reset();
        const std::optional<RawResponse> firstAnswer = first->readResponse(20000);
        QVERIFY(firstAnswer);
        QCOMPARE(firstAnswer->status, 200);
        QVERIFY2(eventTypes(firstAnswer->body).contains("response.completed"), describe(*firstAnswer).constData());
        const std::optional<RawResponse> secondAnswer = second->readResponse(20000);
        QVERIFY(secondAnswer);
        QCOMPARE(secondAnswer->status, 200);
        const QJsonArray onA = upstreamRequestsFor(m_fake, a);
        QCOMPARE(onA.size(), 3);
        QCOMPARE(inputText(onA.at(1)), QStringLiteral("ECHO: first waiter"));
        QCOMPARE(inputText(onA.at(2)), QStringLiteral("ECHO: second waiter"));
        const QJsonObject row = proxy.waitForRequest(QString::fromLatin1(firstAnswer->header("x-request-id")));
        QCOMPARE(attemptOutcomes(row), (QStringList{QStringLiteral("rate_limited"), QStringLiteral("completed")}));
        // Settled turns listen no more.
        QTRY_COMPARE_WITH_TIMEOUT(gate("slot_watchers"), 0, 10000);
    }

    // 2b. When the slot does not free in time, the committed stream ends with an explicit error event and
    // response.failed (chat: an error frame and [DONE]) — never a silent close — labelled gate_wait.
    void gateWaitAfterKeepaliveCommitEndsWithExplicitError()
    {
        ProxyProcess proxy;
        QString error;
        QVERIFY2(startProxy(proxy,
                            {{QStringLiteral("slots_per_account"), 1},
                             {QStringLiteral("gate_wait_s"), 4},
                             {QStringLiteral("keepalive_interval_s"), 1}},
                            1, &error),
                 qPrintable(error));
        const FakeAccount &acct = proxy.accounts().first();
        QVERIFY(m_fake.script(acct.chatgptAccountId, {QStringLiteral("silent")}));
        auto holder = post(proxy, kCodex, responsesBody(QStringLiteral("hold the slot")));
        QVERIFY(holder);
        QTRY_COMPARE_WITH_TIMEOUT(int(upstreamRequestsFor(m_fake, acct.chatgptAccountId).size()), 1, 10000);

        auto codex = post(proxy, kCodex, responsesBody(QStringLiteral("ECHO: never served")));
        auto v1 = post(proxy, kV1Responses, responsesBody(QStringLiteral("ECHO: never served")));
        auto chat = post(proxy, kV1Chat, chatBody(QStringLiteral("ECHO: never served")));
        QVERIFY(codex && v1 && chat);

        // After keepalive_interval_s the waiter's stream is committed and carries keepalives.
        QVERIFY2(codex->waitForBodyContaining("codex.keepalive", 10000), describe(codex->partial()).constData());
        QCOMPARE(codex->partial().status, 200);
        const QString waiterId = QString::fromLatin1(codex->partial().header("x-request-id"));
        QVERIFY(waiterId.startsWith(QLatin1String("req_")));

        // status --json during the gate wait: the waiter at the gate with its remaining budgets.
        const QJsonObject status = statusJson(proxy);
        const QJsonObject waiting = inFlightTurn(status, waiterId);
        QVERIFY2(!waiting.isEmpty(), compact(status).constData());
        QCOMPARE(str(waiting, "stage"), QStringLiteral("gate_wait"));
        QCOMPARE(str(waiting, "next_deadline"), QStringLiteral("gate_wait"));
        const QJsonObject remaining = waiting.value(QLatin1String("remaining_ms")).toObject();
        QVERIFY2(remaining.contains(QLatin1String("gate_wait")), compact(waiting).constData());
        QVERIFY(remaining.value(QLatin1String("gate_wait")).toInteger() > 0);
        QVERIFY(remaining.value(QLatin1String("gate_wait")).toInteger() < 4000);
        QVERIFY(remaining.value(QLatin1String("request_total")).toInteger() > 4000);
        QVERIFY(!remaining.contains(QLatin1String("stream_idle")));
        // Only the three waiters listen for a freed slot; the holder, which never waited, does not.
        const QJsonObject gate = status.value(QLatin1String("gate")).toObject();
        QCOMPARE(gate.value(QLatin1String("queued")).toInt(-1), 3);
        QCOMPARE(gate.value(QLatin1String("slot_watchers")).toInt(-1), 3);

        struct Case
        {
            const char *path;
            RawHttpClient *client;
        };
        for (const Case &c : {Case{kCodex, codex.get()}, Case{kV1Responses, v1.get()}, Case{kV1Chat, chat.get()}}) {
            const std::optional<RawResponse> r = c.client->readResponse(20000);
            QVERIFY2(r, c.path);
            QVERIFY2(r->complete, c.path);
            QCOMPARE(r->status, 200);
            QVERIFY2(r->body.contains(": keepalive"), describe(*r).constData());
            QVERIFY2(!r->body.contains("usage_limit_reached"), describe(*r).constData());
            const QList<QByteArray> types = eventTypes(r->body);
            if (qstrcmp(c.path, kV1Chat) == 0) {
                QVERIFY2(r->body.trimmed().endsWith("data: [DONE]"), describe(*r).constData());
                const QList<SseEvent> events = parseSse(r->body);
                QVERIFY(events.size() >= 2);
                QVERIFY2(events.at(events.size() - 2).json().contains(QLatin1String("error")),
                         describe(*r).constData());
            } else {
                QVERIFY2(types.size() >= 2, describe(*r).constData());
                QCOMPARE(types.at(types.size() - 2), QByteArrayLiteral("error"));
                QCOMPARE(types.constLast(), QByteArrayLiteral("response.failed"));
                QCOMPARE(types.contains("codex.keepalive"), qstrcmp(c.path, kCodex) == 0); // /v1 drops codex.*
            }
            const QJsonObject row = proxy.waitForRequest(QString::fromLatin1(r->header("x-request-id")));
            QVERIFY2(!row.isEmpty(), c.path);
            QCOMPARE(str(row, "status"), QStringLiteral("timed_out"));
            QCOMPARE(str(row, "kill_stage"), QStringLiteral("gate_wait"));
        }
        QVERIFY(m_fake.dropHeld());
        QVERIFY(holder->readResponse(15000));
    }

    // 3a. A silent upstream is killed by the derived pre_response budget (keepalive cadence 1 s x 2); with a
    // single account the client gets 504.
    void preResponseKillAnswers504WithOneAccount()
    {
        ProxyProcess proxy;
        QString error;
        QVERIFY2(startProxy(proxy,
                            {{QStringLiteral("keepalive_interval_s"), 1},
                             {QStringLiteral("keepalive_max"), 2},
                             {QStringLiteral("request_total_s"), 60}},
                            1, &error),
                 qPrintable(error));
        const FakeAccount &acct = proxy.accounts().first();
        QVERIFY(m_fake.script(acct.chatgptAccountId, {QStringLiteral("silent")}, true));
        auto client = post(proxy, kCodex, responsesBody(QStringLiteral("anyone there?")));
        QVERIFY(client);
        QTRY_COMPARE_WITH_TIMEOUT(int(upstreamRequestsFor(m_fake, acct.chatgptAccountId).size()), 1, 10000);
        const QString requestId =
            str(upstreamRequestsFor(m_fake, acct.chatgptAccountId).first().toObject(), "x_request_id");
        const QJsonObject turn = inFlightTurn(statusJson(proxy), requestId);
        QCOMPARE(str(turn, "stage"), QStringLiteral("pre_response"));
        const qint64 left =
            turn.value(QLatin1String("remaining_ms")).toObject().value(QLatin1String("pre_response")).toInteger(-1);
        QVERIFY2(left >= 0 && left <= 2000, compact(turn).constData());

        const std::optional<RawResponse> r = client->readResponse(15000);
        QVERIFY(r);
        QVERIFY2(r->status == 504, describe(*r).constData());
        QCOMPARE(r->header("x-request-id"), requestId.toLatin1());
        const QJsonObject row = proxy.waitForRequest(requestId);
        QCOMPARE(str(row, "status"), QStringLiteral("timed_out"));
        QCOMPARE(str(row, "kill_stage"), QStringLiteral("pre_response"));
        QCOMPARE(attemptOutcomes(row), QStringList{QStringLiteral("pre_response_timeout")});
        QCOMPARE(int(upstreamRequestsFor(m_fake, acct.chatgptAccountId).size()), 1);
    }

    // 3b. A pre_response kill before anything was forwarded fails over: the other account answers.
    void preResponseKillFailsOverToAnotherAccount()
    {
        ProxyProcess proxy;
        QString error;
        QVERIFY2(startProxy(proxy,
                            {{QStringLiteral("keepalive_interval_s"), 1},
                             {QStringLiteral("keepalive_max"), 2},
                             {QStringLiteral("request_total_s"), 60}},
                            2, &error),
                 qPrintable(error));
        const FakeAccount &silent = proxy.accounts().at(0);
        const FakeAccount &healthy = proxy.accounts().at(1);
        QVERIFY(m_fake.script(silent.chatgptAccountId, {QStringLiteral("silent")}, true));
        QVERIFY(pin(proxy, silent, false));

        auto client = post(proxy, kCodex, responsesBody(QStringLiteral("ECHO: served by the other one")));
        QVERIFY(client);
        const std::optional<RawResponse> r = client->readResponse(20000);
        QVERIFY(r);
        QVERIFY2(r->status == 200, describe(*r).constData());
        const QList<QByteArray> types = eventTypes(r->body);
        QCOMPARE(types.constLast(), QByteArrayLiteral("response.completed"));
        QVERIFY(!types.contains("error"));
        QCOMPARE(r->header("x-switchyard-account"), healthy.alias.toUtf8());

        const QJsonObject row = proxy.waitForRequest(QString::fromLatin1(r->header("x-request-id")));
        QCOMPARE(str(row, "status"), QStringLiteral("completed"));
        QCOMPARE(str(row, "account_id"), healthy.id);
        QCOMPARE(attemptOutcomes(row),
                 (QStringList{QStringLiteral("pre_response_timeout"), QStringLiteral("completed")}));
        const QJsonArray attempts = row.value(QLatin1String("attempts")).toArray();
        QCOMPARE(str(attempts.at(0).toObject(), "account_id"), silent.id);
        QCOMPARE(str(attempts.at(1).toObject(), "account_id"), healthy.id);
        // The silent attempt lasted its pre_response budget (2 s cadence), not longer.
        const qint64 firstMs = attempts.at(0).toObject().value(QLatin1String("elapsed_ms")).toInteger();
        QVERIFY2(firstMs >= 1900 && firstMs < 10000, compact(row).constData());
        QCOMPARE(int(upstreamRequestsFor(m_fake, silent.chatgptAccountId).size()), 1);
        QCOMPARE(int(upstreamRequestsFor(m_fake, healthy.chatgptAccountId).size()), 1);
    }

    // 4. When the derived pre_response equals the remaining request_total (cadence 60 s > request_total 2 s),
    // the kill is labelled request_total.
    void requestTotalNamesKillWhenItBoundsPreResponse()
    {
        ProxyProcess proxy;
        QString error;
        QVERIFY2(startProxy(proxy,
                            {{QStringLiteral("request_total_s"), 2},
                             {QStringLiteral("gate_wait_s"), 1},
                             {QStringLiteral("connect_s"), 1}},
                            1, &error),
                 qPrintable(error));
        const FakeAccount &acct = proxy.accounts().first();
        QVERIFY(m_fake.script(acct.chatgptAccountId, {QStringLiteral("silent")}, true));
        for (const char *path : {kCodex, kV1Responses}) {
            auto client = post(proxy, path, responsesBody(QStringLiteral("anyone there?"), true));
            QVERIFY(client);
            const std::optional<RawResponse> r = client->readResponse(15000);
            QVERIFY2(r, path);
            QVERIFY2(r->status == 504, describe(*r).constData());
            const QJsonObject row = proxy.waitForRequest(QString::fromLatin1(r->header("x-request-id")));
            QCOMPARE(str(row, "status"), QStringLiteral("timed_out"));
            QCOMPARE(str(row, "kill_stage"), QStringLiteral("request_total"));
            QCOMPARE(attemptOutcomes(row), QStringList{QStringLiteral("request_total_timeout")});
            const qint64 total =
                row.value(QLatin1String("latency_ms")).toObject().value(QLatin1String("total")).toInteger();
            QVERIFY2(total >= 1900, compact(row).constData());
        }
    }

    // 5. stream_idle after commit: first deltas, then an explicit error and a terminal event on every route.
    void streamIdleKillEndsStreamsExplicitly()
    {
        ProxyProcess proxy;
        QString error;
        QVERIFY2(startProxy(proxy, {{QStringLiteral("stream_idle_s"), 1}}, 1, &error), qPrintable(error));
        const FakeAccount &acct = proxy.accounts().first();
        QVERIFY(m_fake.script(acct.chatgptAccountId, {QStringLiteral("stall_mid")}, true));
        const QString text = QStringLiteral("ECHO: alpha beta gamma delta epsilon");

        struct Case
        {
            const char *path;
            bool stream;
            std::unique_ptr<RawHttpClient> client;
        };
        Case cases[] = {{kCodex, true, nullptr},
                        {kV1Responses, true, nullptr},
                        {kV1Chat, true, nullptr},
                        {kV1Responses, false, nullptr}};
        for (Case &c : cases) {
            c.client = post(proxy, c.path, bodyFor(c.path, text, c.stream));
            QVERIFY(c.client);
        }
        // stream_idle is 1 s: every answer must be over well within 10 s (waited for together; each one is
        // checked below, with what it got so far when it is not over).
        [[maybe_unused]] const bool allOver = QTest::qWaitFor(
            [&] {
                for (const Case &c : cases) {
                    if (!c.client->parser().hasComplete())
                        return false;
                }
                return true;
            },
            10000);
        for (Case &c : cases) {
            const QString what = QStringLiteral("%1 stream=%2").arg(QLatin1String(c.path)).arg(c.stream);
            const std::optional<RawResponse> r = c.client->readResponse(100);
            QVERIFY2(r, qPrintable(what + QStringLiteral(": no complete response; got: ") +
                                   QString::fromUtf8(describe(c.client->partial()))));
            QVERIFY2(r->complete, qPrintable(what));
            if (!c.stream) {
                QVERIFY2(r->status == 504, qPrintable(what + QLatin1Char(' ') + QString::fromUtf8(r->body)));
            } else {
                QCOMPARE(r->status, 200);
                if (qstrcmp(c.path, kV1Chat) == 0) {
                    const QList<SseEvent> events = parseSse(r->body);
                    bool sawContent = false;
                    for (const SseEvent &e : events) {
                        const QJsonArray choices = e.json().value(QLatin1String("choices")).toArray();
                        if (!choices.isEmpty() && !choices.first()
                                                       .toObject()
                                                       .value(QLatin1String("delta"))
                                                       .toObject()
                                                       .value(QLatin1String("content"))
                                                       .toString()
                                                       .isEmpty())
                            sawContent = true;
                    }
                    QVERIFY2(sawContent, describe(*r).constData());
                    QVERIFY2(events.size() >= 2, describe(*r).constData());
                    QCOMPARE(events.constLast().data, QByteArrayLiteral("[DONE]"));
                    QVERIFY2(events.at(events.size() - 2).json().contains(QLatin1String("error")),
                             describe(*r).constData());
                } else {
                    const QList<QByteArray> types = eventTypes(r->body);
                    QVERIFY2(types.count("response.output_text.delta") >= 1, describe(*r).constData());
                    QVERIFY2(types.size() >= 2, describe(*r).constData());
                    QCOMPARE(types.at(types.size() - 2), QByteArrayLiteral("error"));
                    QCOMPARE(types.constLast(), QByteArrayLiteral("response.failed"));
                    QVERIFY(!types.contains("response.completed"));
                }
            }
            const QJsonObject row = proxy.waitForRequest(QString::fromLatin1(r->header("x-request-id")));
            QVERIFY2(!row.isEmpty(), qPrintable(what));
            QCOMPARE(str(row, "status"), QStringLiteral("timed_out"));
            QCOMPARE(str(row, "kill_stage"), QStringLiteral("stream_idle"));
            QCOMPARE(attemptOutcomes(row), QStringList{QStringLiteral("stream_idle_timeout")});
        }
    }

    // 6. A healthy stream outlives request_total (it has started) and is ended by stream_max.
    void streamMaxKillsHealthyStreamNotRequestTotal()
    {
        ProxyProcess proxy;
        QString error;
        // stream_idle_s is kept <= stream_max_s (an idle bound above the whole-stream bound could never fire).
        QVERIFY2(startProxy(proxy,
                            {{QStringLiteral("stream_max_s"), 2},
                             {QStringLiteral("stream_idle_s"), 2},
                             {QStringLiteral("request_total_s"), 1},
                             {QStringLiteral("gate_wait_s"), 1},
                             {QStringLiteral("connect_s"), 1}},
                            1, &error),
                 qPrintable(error));
        const FakeAccount &acct = proxy.accounts().first();
        QVERIFY(m_fake.script(acct.chatgptAccountId, {QStringLiteral("slow:300")}, true));
        auto client = post(proxy, kCodex, responsesBody(longEchoText(40)));
        QVERIFY(client);
        const std::optional<RawResponse> r = client->readResponse(20000);
        QVERIFY(r);
        QCOMPARE(r->status, 200);
        const QList<QByteArray> types = eventTypes(r->body);
        QVERIFY2(types.count("response.output_text.delta") >= 2, describe(*r).constData());
        QVERIFY2(types.size() >= 2, describe(*r).constData());
        QCOMPARE(types.at(types.size() - 2), QByteArrayLiteral("error"));
        QCOMPARE(types.constLast(), QByteArrayLiteral("response.failed"));
        const QJsonObject row = proxy.waitForRequest(QString::fromLatin1(r->header("x-request-id")));
        QCOMPARE(str(row, "status"), QStringLiteral("timed_out"));
        QCOMPARE(str(row, "kill_stage"), QStringLiteral("stream_max"));
        QCOMPARE(attemptOutcomes(row), QStringList{QStringLiteral("stream_max_timeout")});
        // It streamed well past request_total (1 s) before stream_max (2 s from the first event) ended it.
        const qint64 total =
            row.value(QLatin1String("latency_ms")).toObject().value(QLatin1String("total")).toInteger();
        QVERIFY2(total >= 1900, compact(row).constData());
    }

    // 7. connect: an upstream that never reads cannot receive a large body; the connect stage (until the
    // request is sent) fires.
    void connectStageKillsUnsendableRequest()
    {
        BlackHole hole;
        QVERIFY(hole.listen());
        ProxyProcess proxy;
        QString error;
        QVERIFY2(startProxy(proxy, {{QStringLiteral("connect_s"), 1}, {QStringLiteral("request_total_s"), 10}}, 1,
                            &error, hole.baseUrl()),
                 qPrintable(error));
        // 16 MiB of text inside the input, under the 32 MiB body limit.
        const QString padding = QString(16 * 1024 * 1024, QLatin1Char('x'));
        auto client = post(proxy, kCodex, responsesBody(padding));
        QVERIFY(client);
        QElapsedTimer timer;
        timer.start();
        const std::optional<RawResponse> r = client->readResponse(20000);
        QVERIFY2(r, "no answer within 20 s");
        QVERIFY2(r->status == 504, describe(*r).constData());
        QVERIFY2(timer.elapsed() < 15000, QByteArray::number(timer.elapsed()).constData());
        const QJsonObject row = proxy.waitForRequest(QString::fromLatin1(r->header("x-request-id")));
        QCOMPARE(str(row, "status"), QStringLiteral("timed_out"));
        QCOMPARE(str(row, "kill_stage"), QStringLiteral("connect"));
        QCOMPARE(attemptOutcomes(row), QStringList{QStringLiteral("connect_timeout")});
    }

    // 8a. Budgets are per request: a request that stalls and is killed does not take a later one with it.
    // Also: status --json shows a streaming turn's stream budgets.
    void budgetsArePerRequest()
    {
        ProxyProcess proxy;
        QString error;
        QVERIFY2(startProxy(proxy,
                            {{QStringLiteral("request_total_s"), 3},
                             {QStringLiteral("gate_wait_s"), 1},
                             {QStringLiteral("connect_s"), 1}},
                            1, &error),
                 qPrintable(error));
        const FakeAccount &acct = proxy.accounts().first();
        // A hangs; B's upstream answer starts 2 s after its request, i.e. after A's budget has run out.
        QVERIFY(m_fake.script(acct.chatgptAccountId, {QStringLiteral("silent"), QStringLiteral("delay_first:2000"),
                                                      QStringLiteral("slow:200")}));
        QElapsedTimer timer;
        timer.start();
        auto a = post(proxy, kCodex, responsesBody(QStringLiteral("A stalls")));
        QVERIFY(a);
        QTRY_COMPARE_WITH_TIMEOUT(int(upstreamRequestsFor(m_fake, acct.chatgptAccountId).size()), 1, 10000);
        QTest::qWait(int(qMax<qint64>(0, 1500 - timer.elapsed())));
        auto b = post(proxy, kCodex, responsesBody(QStringLiteral("ECHO: B has its own budget")));
        QVERIFY(b);

        const std::optional<RawResponse> ra = a->readResponse(15000);
        QVERIFY(ra);
        QVERIFY2(ra->status == 504, describe(*ra).constData());
        const std::optional<RawResponse> rb = b->readResponse(15000);
        QVERIFY(rb);
        QCOMPARE(rb->status, 200);
        const QList<QByteArray> types = eventTypes(rb->body);
        QCOMPARE(types.constLast(), QByteArrayLiteral("response.completed"));
        QVERIFY(!types.contains("error"));

        const QJsonObject rowA = proxy.waitForRequest(QString::fromLatin1(ra->header("x-request-id")));
        QCOMPARE(str(rowA, "status"), QStringLiteral("timed_out"));
        QCOMPARE(str(rowA, "kill_stage"), QStringLiteral("request_total"));
        const QJsonObject rowB = proxy.waitForRequest(QString::fromLatin1(rb->header("x-request-id")));
        QCOMPARE(str(rowB, "status"), QStringLiteral("completed"));
        QVERIFY(rowB.value(QLatin1String("kill_stage")).isNull());
        // B waited longer than A's remaining budget (1.5 s) for its first event, within its own 3 s.
        const qint64 firstEvent =
            rowB.value(QLatin1String("latency_ms")).toObject().value(QLatin1String("first_event")).toInteger();
        QVERIFY2(firstEvent >= 1900, compact(rowB).constData());

        // A streaming turn: status shows stream_idle and stream_max remaining, and request_total no longer runs.
        auto c = post(proxy, kCodex, responsesBody(longEchoText(15)));
        QVERIFY(c);
        QVERIFY(c->waitForBodyContaining("response.output_text.delta", 10000));
        const QString cId = QString::fromLatin1(c->partial().header("x-request-id"));
        const QJsonObject turn = inFlightTurn(statusJson(proxy), cId);
        QCOMPARE(str(turn, "stage"), QStringLiteral("streaming"));
        const QJsonObject remaining = turn.value(QLatin1String("remaining_ms")).toObject();
        QVERIFY2(remaining.contains(QLatin1String("stream_idle")) && remaining.contains(QLatin1String("stream_max")),
                 compact(turn).constData());
        QVERIFY(remaining.value(QLatin1String("stream_idle")).toInteger() <= 300000);
        QVERIFY(remaining.value(QLatin1String("stream_max")).toInteger() <= 7200000);
        QVERIFY(remaining.value(QLatin1String("stream_max")).toInteger() > 7000000);
        QVERIFY2(!remaining.contains(QLatin1String("request_total")), compact(turn).constData());
        const std::optional<RawResponse> rc = c->readResponse(20000);
        QVERIFY(rc);
        QCOMPARE(eventTypes(rc->body).constLast(), QByteArrayLiteral("response.completed"));
    }

    // 8b. request_total is carried across failover, never reset: the second attempt only gets what is left.
    void requestTotalCarriedAcrossFailover()
    {
        ProxyProcess proxy;
        QString error;
        QVERIFY2(startProxy(proxy,
                            {{QStringLiteral("keepalive_interval_s"), 1},
                             {QStringLiteral("keepalive_max"), 2},
                             {QStringLiteral("request_total_s"), 3},
                             {QStringLiteral("gate_wait_s"), 1},
                             {QStringLiteral("connect_s"), 1}},
                            2, &error),
                 qPrintable(error));
        for (const FakeAccount &a : proxy.accounts())
            QVERIFY(m_fake.script(a.chatgptAccountId, {QStringLiteral("silent")}, true));
        auto client = post(proxy, kCodex, responsesBody(QStringLiteral("nobody answers")));
        QVERIFY(client);
        const std::optional<RawResponse> r = client->readResponse(20000);
        QVERIFY(r);
        QVERIFY2(r->status == 504, describe(*r).constData());
        const QJsonObject row = proxy.waitForRequest(QString::fromLatin1(r->header("x-request-id")));
        QCOMPARE(str(row, "status"), QStringLiteral("timed_out"));
        // First attempt: its pre_response (2 s cadence); second: only the 1 s left of request_total.
        QCOMPARE(attemptOutcomes(row),
                 (QStringList{QStringLiteral("pre_response_timeout"), QStringLiteral("request_total_timeout")}));
        QCOMPARE(str(row, "kill_stage"), QStringLiteral("request_total"));
        const QJsonArray attempts = row.value(QLatin1String("attempts")).toArray();
        QVERIFY(str(attempts.at(0).toObject(), "account_id") != str(attempts.at(1).toObject(), "account_id"));
        const qint64 first = attempts.at(0).toObject().value(QLatin1String("elapsed_ms")).toInteger();
        const qint64 second = attempts.at(1).toObject().value(QLatin1String("elapsed_ms")).toInteger();
        QVERIFY2(second < first, compact(row).constData());
    }

    // 9. Contradictory or invalid settings: `serve` exits 3 naming the problem.
    void invalidSettingsRefusedAtStartup_data()
    {
        QTest::addColumn<QByteArray>("config"); // empty: no file at the explicitly named path
        QTest::addColumn<QStringList>("mustName");
        const QString file = QStringLiteral("config.json");
        // Contradictions: both keys named.
        QTest::newRow("gate_wait above request_total")
            << QByteArray(R"({"gate_wait_s": 700, "request_total_s": 600})")
            << QStringList{QStringLiteral("gate_wait_s"), QStringLiteral("request_total_s")};
        QTest::newRow("gate_wait above default request_total")
            << QByteArray(R"({"gate_wait_s": 700})")
            << QStringList{QStringLiteral("gate_wait_s"), QStringLiteral("request_total_s")};
        QTest::newRow("connect above request_total")
            << QByteArray(R"({"connect_s": 20, "request_total_s": 10, "gate_wait_s": 5})")
            << QStringList{QStringLiteral("connect_s"), QStringLiteral("request_total_s")};
        QTest::newRow("stream_idle above stream_max")
            << QByteArray(R"({"stream_idle_s": 600, "stream_max_s": 300})")
            << QStringList{QStringLiteral("stream_idle_s"), QStringLiteral("stream_max_s")};
        QTest::newRow("lease ttl below twice the renewal")
            << QByteArray(R"({"lease_ttl_s": 30, "lease_renew_s": 20})")
            << QStringList{QStringLiteral("lease_ttl_s"), QStringLiteral("lease_renew_s")};
        // Broken files: the file and the key named (DESIGN.md "Configuration file").
        QTest::newRow("unknown key") << QByteArray(R"({"gate_wait_seconds": 5})")
                                     << QStringList{file, QStringLiteral("gate_wait_seconds")};
        QTest::newRow("wrong type") << QByteArray(R"({"stream_idle_s": "ten"})")
                                    << QStringList{file, QStringLiteral("stream_idle_s")};
        QTest::newRow("out of range") << QByteArray(R"({"connect_s": 0})")
                                      << QStringList{file, QStringLiteral("connect_s")};
        QTest::newRow("invalid JSON") << QByteArray(R"({"gate_wait_s": 5,)") << QStringList{file};
        QTest::newRow("explicit file missing") << QByteArray() << QStringList{file};
    }

    void invalidSettingsRefusedAtStartup()
    {
        QFETCH(QByteArray, config);
        QFETCH(QStringList, mustName);
        ProxyProcess proxy; // only for its data dir, config path and environment: serve runs through cli()
        if (!config.isEmpty()) {
            QFile f(proxy.configPath());
            QVERIFY(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
            f.write(config);
        }
        const CliResult r =
            proxy.cli({QStringLiteral("serve"), QStringLiteral("--listen"), QStringLiteral("127.0.0.1:0")}, 15000);
        QVERIFY2(r.exitCode == 3,
                 qPrintable(QStringLiteral("exit %1, stderr: %2").arg(r.exitCode).arg(QString::fromUtf8(r.err))));
        for (const QString &name : mustName)
            QVERIFY2(QString::fromUtf8(r.err).contains(name), r.err.constData());
        QVERIFY2(!r.out.contains("serving on"), r.out.constData());
    }
};

QTEST_GUILESS_MAIN(TestProxyBudgets)
#include "tst_proxy_budgets.moc"
