#pragma once

#include "lib/ChildServer.h"

// Test-side driver of the fake authorization server (FakeOAuth.h documents its endpoints). Header-only so
// that test executables can include it as "fake_oauth/FakeOAuthProcess.h" without another library.

#include "lib/HttpTestClient.h"

#include <QDeadlineTimer>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QString>
#include <QUrl>

namespace sy::test {

// What a browser does with an authorize URL when the user consents: GET it, follow the 302 to the
// redirect URI by hand (optionally with the callback host replaced, e.g. "127.0.0.1" or "::1"), and GET that.
struct BrowserVisit
{
    HttpResult authorize; // the authorization server's answer (302 when it redirects)
    QUrl callback;        // where it redirected to (empty when it did not)
    HttpResult page;      // the callback server's page (status 0 when it was not reached)
};

inline BrowserVisit visitAsBrowser(const QUrl &authorizeUrl, const QString &callbackHost = {}, int timeoutMs = 15000)
{
    BrowserVisit visit;
    visit.authorize = httpRequest("GET", authorizeUrl, {}, {}, timeoutMs);
    if (visit.authorize.status != 302)
        return visit;
    visit.callback = QUrl::fromEncoded(visit.authorize.header("location"), QUrl::StrictMode);
    if (!callbackHost.isEmpty())
        visit.callback.setHost(callbackHost);
    visit.page = httpRequest("GET", visit.callback, {}, {}, timeoutMs);
    return visit;
}

// Runs tests/support/fake_oauth (path from SWITCHYARD_FAKE_OAUTH) on a free port; killed on destruction,
// and it exits by itself when this process dies (its stdin closes).
class FakeOAuthProcess
{
public:
    FakeOAuthProcess() { m_process.setProcessChannelMode(QProcess::ForwardedErrorChannel); }
    ~FakeOAuthProcess() { stop(); }
    FakeOAuthProcess(const FakeOAuthProcess &) = delete;
    FakeOAuthProcess &operator=(const FakeOAuthProcess &) = delete;

    // Starts the process and waits for "LISTENING <port>". On failure errorString() says why.
    bool start(int timeoutMs = 10000)
    {
        m_port = startListeningChild(m_process, "SWITCHYARD_FAKE_OAUTH", &m_error, timeoutMs);
        return m_port != 0;
    }

    void stop()
    {
        stopChild(m_process);
        m_port = 0;
    }

    QString errorString() const { return m_error; }
    quint16 port() const { return m_port; }
    // The issuer URL to give Switchyard as SWITCHYARD_AUTH_URL.
    QString issuer() const { return QStringLiteral("http://127.0.0.1:%1").arg(m_port); }
    QUrl url(const QString &path) const { return QUrl(issuer() + path); }

    // POST /__control/config (deny, wrong_state, token_error, identity, id_token_without_account,
    // access_ttl_s, token_delay_ms).
    bool configure(const QJsonObject &settings) { return post(QStringLiteral("config"), settings); }
    // Makes the server accept `refreshToken` once, for `identity` (or the configured one).
    bool addRefreshToken(const QString &refreshToken, const QJsonObject &identity = {})
    {
        QJsonObject body{{QStringLiteral("refresh_token"), refreshToken}};
        if (!identity.isEmpty())
            body.insert(QStringLiteral("identity"), identity);
        return post(QStringLiteral("refresh_tokens"), body);
    }
    bool reset() { return post(QStringLiteral("reset"), {}); }
    QJsonArray log() { return httpRequest("GET", url(QStringLiteral("/__control/log"))).jsonDocument().array(); }

private:
    bool post(const QString &what, const QJsonObject &body)
    {
        const HttpResult r = httpRequest("POST", url(QStringLiteral("/__control/") + what), {},
                                         QJsonDocument(body).toJson(QJsonDocument::Compact));
        if (r.status != 200)
            m_error = QStringLiteral("control %1 failed: HTTP %2 %3").arg(what).arg(r.status).arg(r.error);
        return r.status == 200;
    }

    QProcess m_process;
    quint16 m_port = 0;
    QString m_error;
};

} // namespace sy::test
