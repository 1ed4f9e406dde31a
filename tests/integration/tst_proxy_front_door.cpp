// SWITCHYARD_NEEDS_KEYRING: accounts are imported into a real gnome-keyring.
// The front door of a running `switchyard serve` (docs/SECURITY.md "Local-server attacks"): a DNS-rebinding
// Host, a cross-site Origin, a browser no-cors request and a CORS preflight are refused with JSON errors before
// anything reaches an account; no response carries an Access-Control-* header; every real client capture
// (Codex CLI, OpenCode, openai SDK) replayed against the proxy is served; allowed_hosts/allowed_origins widen
// the rules; bodies beyond max_body_mb get 413.
#include "TestSupport.h"
#include "lib/CodexRequests.h"
#include "lib/FakeUpstreamProcess.h"
#include "lib/ProxyProcess.h"
#include "lib/RawHttpClient.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

using namespace sy;
using namespace sy::test;

namespace {

QByteArray head(const QByteArray &method, const QByteArray &target, const HttpHeaderList &headers,
                const QByteArray &body = {})
{
    QByteArray r = method + ' ' + target + " HTTP/1.1\r\n";
    for (const HttpHeader &h : headers)
        r += h.first + ": " + h.second + "\r\n";
    if (!body.isEmpty())
        r += "Content-Length: " + QByteArray::number(body.size()) + "\r\n";
    return r + "\r\n" + body;
}

QString errorCode(const RawResponse &r)
{
    return r.json().value(QStringLiteral("error")).toObject().value(QStringLiteral("code")).toString();
}

bool hasCorsHeader(const RawResponse &r)
{
    for (const HttpHeader &h : r.headers) {
        if (h.first.startsWith("access-control-"))
            return true;
    }
    return false;
}

} // namespace

class TestProxyFrontDoor : public QObject
{
    Q_OBJECT

    FakeUpstreamProcess m_fake;
    ProxyProcess m_proxy;
    QList<RawResponse> m_seen; // every response of the test, for the CORS check at the end

    QByteArray own() const { return "127.0.0.1:" + QByteArray::number(m_proxy.port()); }

    RawResponse send(const QByteArray &bytes, ProxyProcess *proxy = nullptr)
    {
        RawHttpClient client;
        if (!client.connectTo((proxy ? proxy : &m_proxy)->port()))
            return {};
        client.send(bytes);
        const std::optional<RawResponse> r = client.readResponse(30000);
        if (!r)
            return {};
        m_seen.append(*r);
        return *r;
    }

    int upstreamRequests() { return m_fake.log().size(); }

private slots:
    void initTestCase()
    {
        QVERIFY2(m_fake.start(), qPrintable(m_fake.errorString()));
        QVERIFY2(m_proxy.addAccounts(2), qPrintable(m_proxy.errorString()));
        m_proxy.setConfig(QJsonObject{{QStringLiteral("max_body_mb"), 1}});
        QVERIFY2(m_proxy.start(m_fake.baseUrl()), qPrintable(m_proxy.errorString()));
    }

    void ownHostsAreServed()
    {
        const QByteArray port = QByteArray::number(m_proxy.port());
        for (const QByteArray &host : QByteArrayList{own(), QByteArray("localhost:" + port), QByteArray("[::1]:" + port), QByteArray("127.0.0.1")}) {
            const RawResponse r = send(head("GET", "/health/live", {{"Host", host}}));
            QVERIFY2(r.status == 200, host.constData());
        }
        const RawResponse turn = send(head("POST", "/backend-api/codex/responses",
                                           {{"Host", own()}, {"Content-Type", "application/json"},
                                            {"Authorization", "Bearer client-key"}},
                                           codexBody(QStringLiteral("ECHO: own host"))));
        QCOMPARE(turn.status, 200);
        QVERIFY(turn.body.contains("response.completed"));
    }

    // DNS rebinding: the page's name now resolves to 127.0.0.1, so the browser sends Host: evil.example:PORT.
    void reboundHostIsRefused()
    {
        const int before = upstreamRequests();
        const QByteArray rebound = "evil.example:" + QByteArray::number(m_proxy.port());
        const QList<QPair<QByteArray, QByteArray>> targets{{"GET", "/health/live"},
                                                           {"GET", "/v1/models"},
                                                           {"GET", "/api/status"},
                                                           {"GET", "/api/requests"},
                                                           {"POST", "/api/reload"},
                                                           {"POST", "/v1/responses"},
                                                           {"POST", "/backend-api/codex/responses"}};
        for (const auto &[method, target] : targets) {
            const QByteArray body = method == "POST" ? codexBody(QStringLiteral("ECHO: rebound")) : QByteArray();
            const RawResponse r = send(head(method, target, {{"Host", rebound}, {"Content-Type", "application/json"}}, body));
            QVERIFY2(r.status == 421, target.constData());
            QCOMPARE(errorCode(r), QStringLiteral("host_not_allowed"));
            QCOMPARE(r.header("content-type"), QByteArray("application/json"));
        }
        // Other ports of loopback, a missing Host and a doubled Host are refused too.
        QCOMPARE(send(head("GET", "/api/status", {{"Host", "127.0.0.1:1"}})).status, 421);
        QCOMPARE(send("GET /api/status HTTP/1.1\r\n\r\n").status, 421);
        QCOMPARE(send(head("GET", "/api/status", {{"Host", own()}, {"Host", rebound}})).status, 421);
        QCOMPARE(upstreamRequests(), before); // nothing reached an account
    }

    void crossSiteBrowserRequestsAreRefused()
    {
        const int before = upstreamRequests();
        const QByteArray body = codexBody(QStringLiteral("ECHO: cross-site"));
        const HttpHeaderList base{{"Host", own()}, {"Content-Type", "text/plain"}};
        for (const QByteArray &origin : QByteArrayList{QByteArray("http://evil.example"), QByteArray("https://evil.example:8443"),
                                                     QByteArray("null"),
                                                     QByteArray("http://evil.example:" + QByteArray::number(m_proxy.port()))}) {
            RawResponse r = send(head("POST", "/v1/responses", base + HttpHeaderList{{"Origin", origin}}, body));
            QVERIFY2(r.status == 403, origin.constData());
            QCOMPARE(errorCode(r), QStringLiteral("origin_not_allowed"));
            r = send(head("POST", "/api/reload", base + HttpHeaderList{{"Origin", origin}}));
            QCOMPARE(r.status, 403);
        }
        // A no-cors GET (an <img> or <script> on a foreign page) carries no Origin, but Sec-Fetch-Site.
        const RawResponse img =
            send(head("GET", "/api/status", {{"Host", own()}, {"Sec-Fetch-Site", "cross-site"}, {"Sec-Fetch-Mode", "no-cors"}}));
        QCOMPARE(img.status, 403);
        QCOMPARE(errorCode(img), QStringLiteral("origin_not_allowed"));
        QCOMPARE(upstreamRequests(), before);
        // The server's own origin is not foreign.
        QCOMPARE(send(head("GET", "/api/status", {{"Host", own()}, {"Origin", QByteArray("http://" + own())}})).status, 200);
    }

    void preflightIsRefused()
    {
        const RawResponse r = send(head("OPTIONS", "/v1/responses",
                                        {{"Host", own()},
                                         {"Origin", "http://evil.example"},
                                         {"Access-Control-Request-Method", "POST"},
                                         {"Access-Control-Request-Headers", "authorization,content-type"}}));
        QCOMPARE(r.status, 403);
        QCOMPARE(errorCode(r), QStringLiteral("cors_preflight_refused"));
        QVERIFY(!hasCorsHeader(r));
        QCOMPARE(send(head("OPTIONS", "/api/status", {{"Host", own()}})).status, 403);
    }

    void bodiesBeyondTheLimitGet413()
    {
        const int before = upstreamRequests();
        RawHttpClient client;
        QVERIFY(client.connectTo(m_proxy.port()));
        client.send(head("POST", "/v1/responses",
                         {{"Host", own()}, {"Content-Type", "application/json"}, {"Content-Length", "1048577"}}));
        const std::optional<RawResponse> r = client.readResponse(30000);
        QVERIFY(r);
        m_seen.append(*r);
        QCOMPARE(r->status, 413);
        QCOMPARE(errorCode(*r), QStringLiteral("request_too_large"));
        QCOMPARE(upstreamRequests(), before);
    }

    // What the real clients sent, replayed with this proxy's port in Host: nothing is refused at the door.
    void realClientCapturesAreServed()
    {
        const QStringList files =
            QDir(testDataDir() + QStringLiteral("/client-captures")).entryList({QStringLiteral("*.json")});
        int served = 0;
        for (const QString &file : files) {
            const QJsonArray entries = QJsonDocument::fromJson(readTestData(QStringLiteral("client-captures/") + file)).array();
            for (const QJsonValue &v : entries) {
                const QJsonObject e = v.toObject();
                const QByteArray method = e.value(QLatin1String("method")).toString().toLatin1();
                const QByteArray url = e.value(QLatin1String("url")).toString().toLatin1();
                HttpHeaderList headers;
                const QJsonObject captured = e.value(QLatin1String("headers")).toObject();
                for (auto it = captured.begin(); it != captured.end(); ++it) {
                    const QByteArray name = it.key().toLatin1();
                    // The body below is the decoded JSON: its length and coding are recomputed.
                    if (name == "content-length" || name == "content-encoding" || name == "transfer-encoding")
                        continue;
                    headers.append({name, name == "host" ? own() : it.value().toString().toLatin1()});
                }
                const QJsonValue body = e.value(QLatin1String("body"));
                const QByteArray bytes =
                    body.isObject() ? QJsonDocument(body.toObject()).toJson(QJsonDocument::Compact) : QByteArray();
                const RawResponse r = send(head(method, url, headers, bytes));
                const QString where = file + QLatin1Char(' ') + QString::fromLatin1(url);
                const QString code = errorCode(r);
                QVERIFY2(r.status != 0, qPrintable(where));
                QVERIFY2(code != QLatin1String("host_not_allowed") && code != QLatin1String("origin_not_allowed") &&
                             code != QLatin1String("cors_preflight_refused"),
                         qPrintable(where));
                if (e.value(QLatin1String("kind")).toString() == QLatin1String("upgrade")) {
                    QCOMPARE(r.status, 426); // the WebSocket fallback, past the door
                } else if (url.startsWith("/backend-api/wham/")) {
                    QCOMPARE(r.status, 404); // not a proxy route, past the door
                } else {
                    QVERIFY2(r.status == 200, qPrintable(where + QStringLiteral(": %1 %2").arg(r.status).arg(code)));
                    ++served;
                }
            }
        }
        QVERIFY(served >= 18);
    }

    void allowListsWidenTheRules()
    {
        ProxyProcess proxy;
        QVERIFY2(proxy.addAccounts(1), qPrintable(proxy.errorString()));
        proxy.setConfig(QJsonObject{{QStringLiteral("allowed_hosts"), QJsonArray{QStringLiteral("switchyard.lan")}},
                                    {QStringLiteral("allowed_origins"), QJsonArray{QStringLiteral("http://localhost:3000")}}});
        QVERIFY2(proxy.start(m_fake.baseUrl()), qPrintable(proxy.errorString()));
        const QByteArray port = QByteArray::number(proxy.port());
        QCOMPARE(send(head("GET", "/api/status", {{"Host", QByteArray("switchyard.lan:" + port)}}), &proxy).status, 200);
        QCOMPARE(send(head("GET", "/api/status", {{"Host", QByteArray("other.lan:" + port)}}), &proxy).status, 421);
        QCOMPARE(send(head("GET", "/api/status", {{"Host", QByteArray("127.0.0.1:" + port)}, {"Origin", "http://localhost:3000"}}), &proxy)
                     .status,
                 200);
        QCOMPARE(send(head("GET", "/api/status", {{"Host", QByteArray("127.0.0.1:" + port)}, {"Origin", "http://localhost:3001"}}), &proxy)
                     .status,
                 403);
        // An allowed origin still gets no CORS permission: its preflight is refused too.
        QCOMPARE(send(head("OPTIONS", "/v1/responses", {{"Host", QByteArray("127.0.0.1:" + port)}, {"Origin", "http://localhost:3000"}}),
                      &proxy)
                     .status,
                 403);
        QCOMPARE(proxy.stop(), 0);
    }

    void badAllowListsStopTheProgram()
    {
        ProxyProcess proxy;
        proxy.setConfig(QJsonObject{{QStringLiteral("allowed_hosts"), QJsonArray{QStringLiteral("http://x/")}}});
        QVERIFY(!proxy.start(m_fake.baseUrl()));
        QVERIFY2(proxy.errorString().contains(QLatin1String("allowed_hosts")), qPrintable(proxy.errorString()));
        const CliResult r = proxy.cli({QStringLiteral("health")});
        QCOMPARE(r.exitCode, 3);
    }

    void noResponseCarriesCorsHeaders()
    {
        QVERIFY(m_seen.size() > 40);
        for (const RawResponse &r : std::as_const(m_seen))
            QVERIFY2(!hasCorsHeader(r), r.statusLine.constData());
    }
};

QTEST_GUILESS_MAIN(TestProxyFrontDoor)
#include "tst_proxy_front_door.moc"
