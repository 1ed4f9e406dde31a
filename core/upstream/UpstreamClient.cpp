#include "upstream/UpstreamClient.h"

#include "upstream/ConnectionPool.h"

#include <QLoggingCategory>
#include <QTimer>

namespace sy {

Q_DECLARE_LOGGING_CATEGORY(lcUpstream)

UpstreamClient::UpstreamClient(QObject *parent)
    : QObject(parent), m_pool(new ConnectionPool(this)), m_tls(QSslConfiguration::defaultConfiguration())
{
}

UpstreamClient::~UpstreamClient()
{
    // Calls go first, silently, so none reports into a half-destroyed client or hands back a connection.
    for (const QPointer<UpstreamCall> &call : std::as_const(m_calls)) {
        if (call) {
            disconnect(call, nullptr, this, nullptr);
            delete call.data();
        }
    }
}

UpstreamCall *UpstreamClient::start(const UpstreamRequest &request)
{
    UpstreamEndpoint endpoint = UpstreamEndpoint::fromUrl(request.url, request.egress ? request.egress->proxy : m_proxy);
    if (request.egress)
        endpoint.egressName = request.egress->name;
    auto *call = new UpstreamCall(this, request, endpoint, m_tls);
    m_calls.removeAll(nullptr);
    m_calls.append(call);
    // An idle plain connection takes the request at once (no signal before the caller connects its handlers);
    // anything else begins from the event loop, so the caller has connected them before the first signal.
    // The first costs one event-loop pass less on the time to first byte (bench/HISTORY.md).
    if (!call->beginOnIdleConnection())
        QTimer::singleShot(0, call, [call] { call->begin(); });
    qCDebug(lcUpstream).noquote() << "upstream" << request.method.toUpper()
                                  << request.url.toString(QUrl::RemoveUserInfo | QUrl::RemoveQuery) << "active"
                                  << activeCalls() << "idle connections" << idleConnections();
    return call;
}

void UpstreamClient::setProxy(const QNetworkProxy &proxy)
{
    // Pooled connections are keyed by their proxy, so the old ones just age out.
    m_proxy = proxy;
}

int UpstreamClient::activeCalls() const
{
    int total = 0;
    for (const QPointer<UpstreamCall> &call : m_calls) {
        if (call && !call->isFinished())
            ++total;
    }
    return total;
}

int UpstreamClient::idleConnections() const
{
    return m_pool->idleCount();
}

int UpstreamClient::idleConnectionTimeoutMs() const
{
    return m_pool->idleTimeoutMs();
}

void UpstreamClient::setIdleConnectionTimeoutMs(int ms)
{
    m_pool->setIdleTimeoutMs(ms);
}

} // namespace sy
