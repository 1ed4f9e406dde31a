#include "lib/FakeUpstreamProcess.h"

#include "lib/ChildServer.h"

#include "lib/HttpTestClient.h"

#include <QDeadlineTimer>
#include <QJsonDocument>

namespace sy::test {

FakeUpstreamProcess::FakeUpstreamProcess()
{
    m_process.setProcessChannelMode(QProcess::ForwardedErrorChannel);
}

FakeUpstreamProcess::~FakeUpstreamProcess()
{
    stop();
}

bool FakeUpstreamProcess::start(int timeoutMs)
{
    m_port = startListeningChild(m_process, "SWITCHYARD_FAKE_UPSTREAM", &m_error, timeoutMs);
    return m_port != 0;
}

void FakeUpstreamProcess::stop()
{
    stopChild(m_process);
    m_port = 0;
}

bool FakeUpstreamProcess::isRunning() const
{
    return m_process.state() == QProcess::Running;
}

QString FakeUpstreamProcess::baseUrl() const
{
    return QStringLiteral("http://127.0.0.1:%1/backend-api").arg(m_port);
}

QUrl FakeUpstreamProcess::url(const QString &path) const
{
    return QUrl(QStringLiteral("http://127.0.0.1:%1%2").arg(m_port).arg(path));
}

bool FakeUpstreamProcess::control(const QByteArray &method, const QString &what, const QJsonObject &body,
                                  QByteArray *reply)
{
    const QByteArray payload = body.isEmpty() ? QByteArray() : QJsonDocument(body).toJson(QJsonDocument::Compact);
    const HttpResult r = httpRequest(method, url(QStringLiteral("/__control/") + what), {}, payload, 10000);
    if (reply)
        *reply = r.body;
    if (r.status != 200)
        m_error = QStringLiteral("control %1 failed: %2 %3").arg(what).arg(r.status).arg(QString::fromUtf8(r.body));
    return r.status == 200;
}

bool FakeUpstreamProcess::script(const QString &accountId, const QStringList &actions, bool sticky,
                                 const QString &endpoint)
{
    return control("POST", QStringLiteral("script"),
                   {{QStringLiteral("account_id"), accountId},
                    {QStringLiteral("actions"), QJsonArray::fromStringList(actions)},
                    {QStringLiteral("sticky"), sticky},
                    {QStringLiteral("endpoint"), endpoint}},
                   nullptr);
}

bool FakeUpstreamProcess::scriptToken(const QString &token, const QStringList &actions, bool sticky,
                                      const QString &endpoint)
{
    return control("POST", QStringLiteral("script"),
                   {{QStringLiteral("token"), token},
                    {QStringLiteral("actions"), QJsonArray::fromStringList(actions)},
                    {QStringLiteral("sticky"), sticky},
                    {QStringLiteral("endpoint"), endpoint}},
                   nullptr);
}

bool FakeUpstreamProcess::setUsage(const QString &accountId, const QJsonObject &usage)
{
    QJsonObject body = usage;
    body.insert(QStringLiteral("account_id"), accountId);
    return control("POST", QStringLiteral("usage"), body, nullptr);
}

QJsonArray FakeUpstreamProcess::log(bool brief)
{
    constexpr int kPage = 2000;
    QJsonArray all;
    for (;;) {
        QByteArray reply;
        const QString page = QStringLiteral("log?from=%1&limit=%2%3")
                                 .arg(all.size())
                                 .arg(kPage)
                                 .arg(brief ? QStringLiteral("&brief=1") : QString());
        if (!control("GET", page, {}, &reply))
            return {};
        const QJsonArray entries = QJsonDocument::fromJson(reply).array();
        for (const QJsonValue &entry : entries)
            all.append(entry);
        if (entries.size() < kPage)
            return all;
    }
}

QJsonObject FakeUpstreamProcess::stats()
{
    QByteArray reply;
    if (!control("GET", QStringLiteral("stats"), {}, &reply))
        return {};
    return QJsonDocument::fromJson(reply).object();
}

bool FakeUpstreamProcess::reset()
{
    return control("POST", QStringLiteral("reset"), {}, nullptr);
}

bool FakeUpstreamProcess::dropHeld()
{
    return control("POST", QStringLiteral("drop_held"), {}, nullptr);
}

} // namespace sy::test
