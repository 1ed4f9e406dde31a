#include "upstream/egress/EgressPost.h"

#include <QLoggingCategory>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <functional>
#include <utility>

Q_LOGGING_CATEGORY(lcEgressPost, "switchyard.egress")

namespace sy {

namespace {

// The body of one try, readable once. Qt's HTTP client sends a request again (up to three more times) when the
// connection closes before an answer, and rewinds its body for that; this body cannot be rewound, so such a
// try ends with an error instead of carrying the credential a second time.
class OneShotBody : public QIODevice
{
public:
    // `firstRead` runs when Qt takes the first bytes (on this device's thread, before they reach a socket).
    OneShotBody(QByteArray bytes, std::function<void()> firstRead, QObject *parent)
        : QIODevice(parent), m_bytes(std::move(bytes)), m_firstRead(std::move(firstRead))
    {
        open(QIODevice::ReadOnly);
    }
    bool isSequential() const override { return true; }
    bool reset() override { return false; }
    qint64 bytesAvailable() const override { return m_bytes.size() - m_pos + QIODevice::bytesAvailable(); }
    bool atEnd() const override { return m_pos >= m_bytes.size() && QIODevice::bytesAvailable() == 0; }

protected:
    qint64 readData(char *data, qint64 maxSize) override
    {
        const qint64 n = qMin(maxSize, qint64(m_bytes.size()) - m_pos);
        if (n <= 0)
            return m_pos >= m_bytes.size() ? -1 : 0;
        memcpy(data, m_bytes.constData() + m_pos, size_t(n));
        m_pos += n;
        if (m_firstRead)
            std::exchange(m_firstRead, nullptr)();
        return n;
    }
    qint64 writeData(const char *, qint64) override { return -1; }

private:
    QByteArray m_bytes;
    std::function<void()> m_firstRead;
    qint64 m_pos = 0;
};

} // namespace

EgressPost::EgressPost(const QNetworkRequest &request, QByteArray body, EgressRoute route, int hopTimeoutMs,
                       QString what, Done done, QObject *parent)
    : QObject(parent), m_request(request), m_body(std::move(body)), m_route(std::move(route)),
      m_hopTimeoutMs(qMax(1, hopTimeoutMs)), m_what(std::move(what)), m_done(std::move(done))
{
    m_hopTimer.setSingleShot(true);
    connect(&m_hopTimer, &QTimer::timeout, this, [this] {
        if (m_reply && !m_bodySent) {
            m_hopTimedOut = true;
            m_reply->abort(); // finished() follows: no tunnel, nothing sent, so the next proxy may try
        }
    });
}

EgressPost::~EgressPost()
{
    if (m_reply) {
        disconnect(m_reply, nullptr, this, nullptr);
        m_reply->abort();
    }
}

void EgressPost::start()
{
    if (!m_route.allowed() || (viaProxy() && m_route.hops.isEmpty())) {
        // Never direct instead: report it as a call no proxy carried.
        m_hop = -1;
        QMetaObject::invokeMethod(this, &EgressPost::onFinished, Qt::QueuedConnection);
        return;
    }
    send(0);
}

void EgressPost::abort()
{
    m_done = nullptr;
    m_hopTimer.stop();
    if (m_reply) {
        disconnect(m_reply, nullptr, this, nullptr);
        m_reply->abort();
    }
    deleteLater(); // with the try's manager, its reply and the body
}

void EgressPost::markBodyRead()
{
    m_bodySent = true;
    m_hopTimer.stop();
}

void EgressPost::send(int hop)
{
    m_hop = hop;
    m_bodySent = false;
    m_hopTimedOut = false;
    const EgressRoute::Hop *via = viaProxy() ? &m_route.hops.at(hop) : nullptr;
    m_network = new QNetworkAccessManager(this);
    if (via)
        m_network->setProxy(tunnelOnly(via->proxy));
    // A body that is read once (Qt does not send it again on its own). Qt would first buffer a sequential body
    // into a copy it can rewind; with its length up front it may stream it instead, and is told to.
    QNetworkRequest request = m_request;
    request.setHeader(QNetworkRequest::ContentLengthHeader, m_body.size());
    request.setAttribute(QNetworkRequest::DoNotBufferUploadDataAttribute, true);
    // A redirect is answered to the caller as it is, never followed: following a 307/308 would send the
    // credential again, to another place.
    request.setAttribute(QNetworkRequest::RedirectPolicyAttribute, QNetworkRequest::ManualRedirectPolicy);
    QPointer<EgressPost> self(this);
    auto *body = new OneShotBody(
        m_body,
        [self] {
            if (self)
                self->markBodyRead();
        },
        this);
    m_reply = m_network->post(request, body);
    body->setParent(m_reply);
    // A backstop for the mark above: bytes written to the socket.
    connect(m_reply, &QNetworkReply::uploadProgress, this, [this](qint64 sent, qint64) {
        if (sent > 0)
            markBodyRead();
    });
    connect(m_reply, &QNetworkReply::finished, this, &EgressPost::onFinished);
    if (via && !m_bodySent)
        m_hopTimer.start(m_hopTimeoutMs);
}

void EgressPost::onFinished()
{
    m_hopTimer.stop();
    QNetworkReply *reply = m_reply;
    m_reply = nullptr;
    EgressPostResult result;
    if (reply) {
        result.httpStatus = reply->attribute(QNetworkRequest::HttpStatusCodeAttribute).toInt();
        if (reply->isOpen())
            result.body = reply->readAll();
        if (result.httpStatus == 0)
            result.networkError =
                m_hopTimedOut ? QStringLiteral("no tunnel within %1 ms").arg(m_hopTimeoutMs) : reply->errorString();
        disconnect(reply, nullptr, this, nullptr);
    } else {
        result.networkError = QStringLiteral("the pool has no proxy to try");
    }
    if (m_network)
        m_network->deleteLater(); // with its reply and the body: this try is over
    m_network = nullptr;
    if (viaProxy() && m_hop >= 0) {
        result.lastHop = m_route.hops.at(m_hop).name;
        result.noTunnel = result.httpStatus == 0 && !m_bodySent;
        if (result.noTunnel && m_hop + 1 < m_route.hops.size()) {
            qCInfo(lcEgressPost).noquote() << m_what << "through egress proxy" << result.lastHop << "failed ("
                                           << result.networkError << "), trying" << m_route.hops.at(m_hop + 1).name;
            send(m_hop + 1);
            return;
        }
    } else if (viaProxy()) {
        result.lastHop = QStringLiteral("none");
        result.noTunnel = true;
    }
    Done done = std::move(m_done);
    m_done = nullptr;
    deleteLater();
    if (done)
        done(result);
}

} // namespace sy
