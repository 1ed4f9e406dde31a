#include "upstream/UpstreamClient.h"

#include <QLoggingCategory>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QNetworkRequest>
#include <algorithm>

namespace sy {

Q_DECLARE_LOGGING_CATEGORY(lcUpstream)

namespace {

// Headers the transport sets itself; forwarding a client's copy would corrupt framing or compression.
bool isTransportHeader(const QByteArray &name)
{
    static const QByteArrayList owned{"host",       "content-length",    "connection",
                                      "keep-alive", "transfer-encoding", "te",
                                      "upgrade",    "proxy-connection",  "accept-encoding"};
    return owned.contains(name.toLower());
}

QNetworkRequest buildRequest(const UpstreamRequest &request)
{
    QNetworkRequest out(request.url);
    for (const auto &[name, value] : request.headers) {
        if (!isTransportHeader(name))
            out.setRawHeader(name, value);
    }
    out.setAttribute(QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::ManualRedirectPolicy);
    out.setAttribute(QNetworkRequest::CookieLoadControlAttribute, QNetworkRequest::Manual);
    out.setAttribute(QNetworkRequest::CookieSaveControlAttribute, QNetworkRequest::Manual);
    out.setAttribute(QNetworkRequest::AuthenticationReuseAttribute, QNetworkRequest::Manual);
    out.setAttribute(QNetworkRequest::CacheLoadControlAttribute, QNetworkRequest::AlwaysNetwork);
    out.setAttribute(QNetworkRequest::CacheSaveControlAttribute, false);
    out.setAttribute(QNetworkRequest::Http2AllowedAttribute, request.url.scheme() == QLatin1String("https"));
    // Deadlines belong to the per-stage budgets, not to Qt.
    out.setTransferTimeout(0);
    return out;
}

} // namespace

UpstreamClient::UpstreamClient(QObject *parent) : QObject(parent)
{
    createManager();
    m_pruneTimer.setInterval(m_idleTimeoutMs);
    connect(&m_pruneTimer, &QTimer::timeout, this, &UpstreamClient::pruneIdleManagers);
}

UpstreamClient::~UpstreamClient()
{
    // Calls go first, silently, so none reports into a half-destroyed client when its manager dies.
    for (const QPointer<UpstreamCall> &call : std::as_const(m_calls)) {
        if (call) {
            disconnect(call, nullptr, this, nullptr);
            delete call.data();
        }
    }
}

QNetworkAccessManager *UpstreamClient::createManager()
{
    auto *manager = new QNetworkAccessManager(this);
    manager->setRedirectPolicy(QNetworkRequest::ManualRedirectPolicy);
    manager->setAutoDeleteReplies(false);
    manager->setProxy(m_proxy);
    PoolEntry entry;
    entry.manager = manager;
    entry.idleSince.start();
    m_pool.push_back(entry);
    if (m_pool.size() > 1 && !m_pruneTimer.isActive())
        m_pruneTimer.start();
    return manager;
}

std::size_t UpstreamClient::pickManager()
{
    // The lowest-numbered manager with room, so the extra ones drain and can be dropped.
    for (std::size_t i = 0; i < m_pool.size(); ++i) {
        if (m_pool[i].active < m_maxCallsPerManager)
            return i;
    }
    createManager();
    return m_pool.size() - 1;
}

UpstreamCall *UpstreamClient::start(const UpstreamRequest &request)
{
    const std::size_t index = pickManager();
    QNetworkAccessManager *manager = m_pool[index].manager;
    ++m_pool[index].active;

    const QNetworkRequest networkRequest = buildRequest(request);
    QNetworkReply *reply = nullptr;
    const QByteArray method = request.method.toUpper();
    if (method == "GET" && request.body.isEmpty())
        reply = manager->get(networkRequest);
    else if (method == "HEAD" && request.body.isEmpty())
        reply = manager->head(networkRequest);
    else
        reply = manager->sendCustomRequest(networkRequest, method, request.body);

    auto *call = new UpstreamCall(reply, request.url, request.maxBodyBytes, this);
    m_calls.removeAll(nullptr);
    m_calls.append(call);
    // Connected before the caller can connect anything, so the slot is counted free when callers hear it.
    connect(call, &UpstreamCall::finished, this, [this, manager] { callFinished(manager); });
    qCDebug(lcUpstream).noquote() << "upstream" << method
                                  << request.url.toString(QUrl::RemoveUserInfo | QUrl::RemoveQuery) << "manager"
                                  << index << "active" << activeCalls();
    return call;
}

void UpstreamClient::callFinished(QNetworkAccessManager *manager)
{
    for (PoolEntry &entry : m_pool) {
        if (entry.manager == manager) {
            if (--entry.active == 0)
                entry.idleSince.start();
            return;
        }
    }
}

void UpstreamClient::setProxy(const QNetworkProxy &proxy)
{
    m_proxy = proxy;
    for (PoolEntry &entry : m_pool)
        entry.manager->setProxy(proxy);
}

int UpstreamClient::activeCalls() const
{
    int total = 0;
    for (const PoolEntry &entry : m_pool)
        total += entry.active;
    return total;
}

void UpstreamClient::setIdleManagerTimeoutMs(int ms)
{
    m_idleTimeoutMs = std::max(1, ms);
    m_pruneTimer.setInterval(m_idleTimeoutMs);
}

void UpstreamClient::pruneIdleManagers()
{
    for (auto it = m_pool.begin() + 1; it != m_pool.end();) {
        if (it->active == 0 && it->idleSince.elapsed() >= m_idleTimeoutMs) {
            // Finished calls may still hold their reply until their own deleteLater runs.
            it->manager->deleteLater();
            it = m_pool.erase(it);
        } else {
            ++it;
        }
    }
    if (m_pool.size() <= 1)
        m_pruneTimer.stop();
}

} // namespace sy
