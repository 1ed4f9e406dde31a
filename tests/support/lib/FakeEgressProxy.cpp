#include "lib/FakeEgressProxy.h"

#include <QDateTime>
#include <QFile>
#include <QHostAddress>
#include <QJsonArray>
#include <QJsonDocument>
#include <QPointer>
#include <QSaveFile>
#include <QTcpSocket>
#include <QTimer>
#include <QtEndian>

#include <utility>

namespace sy::test {

namespace {

qint64 nowMs()
{
    return QDateTime::currentMSecsSinceEpoch();
}

QJsonValue orNull(qint64 v)
{
    return v < 0 ? QJsonValue() : QJsonValue(v);
}

QJsonValue orNull(const QString &v)
{
    return v.isEmpty() ? QJsonValue() : QJsonValue(v);
}

} // namespace

// One client connection: handshake, then the pipe to the target. Parses the plain-text HTTP requests going
// up the tunnel (head, then Content-Length bytes of body) to note each x-request-id.
class FakeEgressTunnel : public QObject
{
public:
    FakeEgressTunnel(FakeEgressProxy *proxy, QTcpSocket *client, int id, FakeEgressProxy::Mode mode, int delayMs)
        : QObject(proxy), m_proxy(proxy), m_client(client), m_id(id), m_mode(mode), m_delayMs(delayMs)
    {
        client->setParent(this);
        connect(client, &QTcpSocket::readyRead, this, &FakeEgressTunnel::onClientData);
        connect(client, &QTcpSocket::disconnected, this, [this] { finish(QStringLiteral("client_closed")); });
        connect(client, &QTcpSocket::errorOccurred, this, [this] { finish(QStringLiteral("client_closed")); });
    }

    void start()
    {
        if (m_mode == FakeEgressProxy::Mode::Down) {
            setOutcome(QStringLiteral("refused"));
            m_proxy->update(m_id, [&](FakeEgressProxy::Connection &c) { c.closedAtMs = nowMs(); });
            m_finished = true;
            m_client->abort();
            deleteLater();
            return;
        }
        onClientData();
    }

private:
    enum class Stage
    {
        Greeting,     // SOCKS5 method negotiation
        SocksAuth,    // RFC 1929
        Request,      // CONNECT head / SOCKS5 request
        Connecting,   // delay and target connection
        Piping
    };

    bool needsAuth() const { return !m_proxy->m_user.isEmpty(); }

    void setOutcome(const QString &outcome)
    {
        m_proxy->update(m_id, [&](FakeEgressProxy::Connection &c) {
            if (c.outcome == QLatin1String("open") || outcome == QLatin1String("tunnel"))
                c.outcome = outcome;
        });
    }

    void fail(const QString &outcome, const QByteArray &answer)
    {
        setOutcome(outcome);
        if (!answer.isEmpty())
            m_client->write(answer);
        m_client->flush();
        m_client->disconnectFromHost();
        finish(outcome);
    }

    void onClientData()
    {
        if (m_finished)
            return;
        if (m_stage == Stage::Piping) {
            const QByteArray bytes = m_client->readAll();
            scanRequests(bytes);
            m_proxy->update(m_id, [&](FakeEgressProxy::Connection &c) { c.bytesUp += bytes.size(); });
            m_target->write(bytes);
            return;
        }
        if (m_stage == Stage::Connecting)
            return; // the client must wait for the answer; bytes stay buffered in the socket
        m_in += m_client->readAll();
        if (m_proxy->m_kind == FakeEgressProxy::Kind::HttpConnect)
            httpHandshake();
        else
            socksHandshake();
    }

    void httpHandshake()
    {
        const qsizetype end = m_in.indexOf("\r\n\r\n");
        if (end < 0)
            return;
        const QByteArray head = m_in.left(end);
        m_in.remove(0, end + 4);
        const QList<QByteArray> lines = head.split('\n');
        const QList<QByteArray> first = lines.value(0).trimmed().split(' ');
        if (first.size() < 2 || first.at(0) != "CONNECT") {
            fail(QStringLiteral("bad_handshake"), "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n");
            return;
        }
        const QByteArray target = first.at(1);
        const qsizetype colon = target.lastIndexOf(':');
        QString host = QString::fromLatin1(target.left(colon));
        if (host.startsWith(QLatin1Char('[')) && host.endsWith(QLatin1Char(']')))
            host = host.mid(1, host.size() - 2);
        const int port = target.mid(colon + 1).toInt();
        QByteArray auth;
        for (const QByteArray &line : lines) {
            const qsizetype c = line.indexOf(':');
            if (c > 0 && line.left(c).trimmed().toLower() == "proxy-authorization")
                auth = line.mid(c + 1).trimmed();
        }
        m_proxy->update(m_id, [&](FakeEgressProxy::Connection &c) {
            c.targetHost = host;
            c.targetPort = port;
        });
        if (needsAuth()) {
            const QByteArray expected =
                "Basic " + (m_proxy->m_user + QLatin1Char(':') + m_proxy->m_password).toUtf8().toBase64();
            if (auth != expected) {
                int challenges = 0;
                m_proxy->update(m_id, [&](FakeEgressProxy::Connection &c) { challenges = ++c.authChallenges; });
                // One challenge is how a client learns it must authenticate; wrong credentials end it.
                const QByteArray answer = "HTTP/1.1 407 Proxy Authentication Required\r\n"
                                          "Proxy-Authenticate: Basic realm=\"fake-egress\"\r\n"
                                          "Content-Length: 0\r\n\r\n";
                if (!auth.isEmpty() || challenges > 2) {
                    fail(QStringLiteral("auth_failed"), answer);
                    return;
                }
                m_client->write(answer);
                return;
            }
            m_proxy->update(m_id, [&](FakeEgressProxy::Connection &c) { c.user = m_proxy->m_user; });
        }
        connectTarget(host, quint16(port));
    }

    void socksHandshake()
    {
        for (;;) {
            if (m_stage == Stage::Greeting) {
                if (m_in.size() < 2 || m_in.size() < 2 + quint8(m_in.at(1)))
                    return;
                const QByteArray methods = m_in.mid(2, quint8(m_in.at(1)));
                const bool version5 = m_in.at(0) == 5;
                m_in.remove(0, 2 + methods.size());
                const char wanted = needsAuth() ? 2 : 0;
                if (!version5 || !methods.contains(wanted)) {
                    fail(QStringLiteral("bad_handshake"), QByteArray("\x05\xff", 2));
                    return;
                }
                m_client->write(QByteArray("\x05", 1) + QByteArray(1, wanted));
                m_stage = needsAuth() ? Stage::SocksAuth : Stage::Request;
                continue;
            }
            if (m_stage == Stage::SocksAuth) {
                if (m_in.size() < 2)
                    return;
                const int ulen = quint8(m_in.at(1));
                if (m_in.size() < 3 + ulen)
                    return;
                const int plen = quint8(m_in.at(2 + ulen));
                if (m_in.size() < 3 + ulen + plen)
                    return;
                const QString user = QString::fromUtf8(m_in.mid(2, ulen));
                const QString password = QString::fromUtf8(m_in.mid(3 + ulen, plen));
                m_in.remove(0, 3 + ulen + plen);
                if (user != m_proxy->m_user || password != m_proxy->m_password) {
                    fail(QStringLiteral("auth_failed"), QByteArray("\x01\x01", 2));
                    return;
                }
                m_proxy->update(m_id, [&](FakeEgressProxy::Connection &c) { c.user = user; });
                m_client->write(QByteArray("\x01\x00", 2));
                m_stage = Stage::Request;
                continue;
            }
            if (m_stage == Stage::Request) {
                if (m_in.size() < 5)
                    return;
                const int atyp = quint8(m_in.at(3));
                int addressBytes = 0;
                if (atyp == 1)
                    addressBytes = 4;
                else if (atyp == 4)
                    addressBytes = 16;
                else if (atyp == 3)
                    addressBytes = 1 + quint8(m_in.at(4));
                if (m_in.at(0) != 5 || m_in.at(1) != 1 || addressBytes == 0) {
                    fail(QStringLiteral("bad_handshake"), QByteArray("\x05\x07\x00\x01\0\0\0\0\0\0", 10));
                    return;
                }
                if (m_in.size() < 4 + addressBytes + 2)
                    return;
                QString host;
                QString type;
                if (atyp == 1) {
                    host = QHostAddress(qFromBigEndian<quint32>(m_in.constData() + 4)).toString();
                    type = QStringLiteral("ipv4");
                } else if (atyp == 4) {
                    host = QHostAddress(reinterpret_cast<const quint8 *>(m_in.constData() + 4)).toString();
                    type = QStringLiteral("ipv6");
                } else {
                    host = QString::fromLatin1(m_in.mid(5, addressBytes - 1));
                    type = QStringLiteral("domain");
                }
                const quint16 port = qFromBigEndian<quint16>(m_in.constData() + 4 + addressBytes);
                m_in.remove(0, 4 + addressBytes + 2);
                m_proxy->update(m_id, [&](FakeEgressProxy::Connection &c) {
                    c.targetHost = host;
                    c.targetPort = port;
                    c.addressType = type;
                });
                connectTarget(host, port);
            }
            return;
        }
    }

    void connectTarget(const QString &host, quint16 port)
    {
        m_stage = Stage::Connecting;
        const auto go = [this, host, port] {
            if (m_finished)
                return;
            m_target = new QTcpSocket(this);
            connect(m_target, &QTcpSocket::connected, this, &FakeEgressTunnel::onTargetConnected);
            connect(m_target, &QTcpSocket::readyRead, this, [this] {
                const QByteArray bytes = m_target->readAll();
                m_proxy->update(m_id, [&](FakeEgressProxy::Connection &c) { c.bytesDown += bytes.size(); });
                m_client->write(bytes);
            });
            connect(m_target, &QTcpSocket::errorOccurred, this, [this] {
                if (m_stage == Stage::Piping) {
                    finish(QStringLiteral("tunnel"));
                    return;
                }
                const bool http = m_proxy->m_kind == FakeEgressProxy::Kind::HttpConnect;
                fail(QStringLiteral("target_unreachable"),
                     http ? QByteArray("HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                          : QByteArray("\x05\x05\x00\x01\0\0\0\0\0\0", 10));
            });
            connect(m_target, &QTcpSocket::disconnected, this, [this] { finish(QStringLiteral("tunnel")); });
            m_target->connectToHost(host, port);
        };
        if (m_mode == FakeEgressProxy::Mode::Slow && m_delayMs > 0)
            QTimer::singleShot(m_delayMs, this, go);
        else
            go();
    }

    void onTargetConnected()
    {
        if (m_finished)
            return;
        m_stage = Stage::Piping;
        m_proxy->update(m_id, [&](FakeEgressProxy::Connection &c) {
            c.establishedAtMs = nowMs();
            c.outcome = QStringLiteral("tunnel");
        });
        if (m_proxy->m_kind == FakeEgressProxy::Kind::HttpConnect)
            m_client->write("HTTP/1.1 200 Connection established\r\n\r\n");
        else
            m_client->write(QByteArray("\x05\x00\x00\x01\x7f\x00\x00\x01\x00\x00", 10));
        // Anything the client sent early (after its handshake) goes up now.
        if (!m_in.isEmpty()) {
            const QByteArray early = std::exchange(m_in, QByteArray());
            scanRequests(early);
            m_proxy->update(m_id, [&](FakeEgressProxy::Connection &c) { c.bytesUp += early.size(); });
            m_target->write(early);
        }
        onClientData();
    }

    void scanRequests(const QByteArray &bytes)
    {
        m_scan += bytes;
        for (;;) {
            if (m_bodyLeft > 0) {
                const qint64 skip = qMin<qint64>(m_bodyLeft, m_scan.size());
                m_scan.remove(0, skip);
                m_bodyLeft -= skip;
                if (m_bodyLeft > 0)
                    return;
            }
            const qsizetype end = m_scan.indexOf("\r\n\r\n");
            if (end < 0)
                return;
            const QList<QByteArray> lines = m_scan.left(end).split('\n');
            m_scan.remove(0, end + 4);
            QString requestId = QStringLiteral("(none)");
            for (const QByteArray &line : lines) {
                const qsizetype c = line.indexOf(':');
                if (c <= 0)
                    continue;
                const QByteArray name = line.left(c).trimmed().toLower();
                if (name == "x-request-id")
                    requestId = QString::fromLatin1(line.mid(c + 1).trimmed());
                else if (name == "content-length")
                    m_bodyLeft = line.mid(c + 1).trimmed().toLongLong();
            }
            m_proxy->update(m_id, [&](FakeEgressProxy::Connection &c) { c.requests.append(requestId); });
        }
    }

    void finish(const QString &outcome)
    {
        if (m_finished)
            return;
        m_finished = true;
        setOutcome(outcome);
        m_proxy->update(m_id, [&](FakeEgressProxy::Connection &c) { c.closedAtMs = nowMs(); });
        if (m_target) {
            m_target->disconnect(this);
            m_target->disconnectFromHost();
        }
        m_client->disconnect(this);
        m_client->disconnectFromHost();
        deleteLater();
    }

    FakeEgressProxy *m_proxy;
    QTcpSocket *m_client;
    QTcpSocket *m_target = nullptr;
    int m_id;
    FakeEgressProxy::Mode m_mode;
    int m_delayMs;
    Stage m_stage = Stage::Greeting;
    QByteArray m_in;
    QByteArray m_scan;
    qint64 m_bodyLeft = 0;
    bool m_finished = false;
};

FakeEgressProxy::FakeEgressProxy(const QString &name, Kind kind, QObject *parent)
    : QObject(parent), m_name(name), m_kind(kind)
{
    connect(&m_server, &QTcpServer::newConnection, this, &FakeEgressProxy::onNewConnection);
}

FakeEgressProxy::~FakeEgressProxy() = default;

void FakeEgressProxy::setCredentials(const QString &user, const QString &password)
{
    m_user = user;
    m_password = password;
}

bool FakeEgressProxy::listen()
{
    if (!m_server.listen(QHostAddress::LocalHost, 0))
        return false;
    QMutexLocker lock(&m_mutex);
    m_port = m_server.serverPort();
    if (m_modeChanges.isEmpty())
        m_modeChanges.append({{QStringLiteral("at_ms"), nowMs()},
                              {QStringLiteral("mode"), modeName(m_mode)},
                              {QStringLiteral("delay_ms"), m_delayMs}});
    return true;
}

void FakeEgressProxy::setMode(Mode mode, int delayMs)
{
    QMutexLocker lock(&m_mutex);
    m_mode = mode;
    m_delayMs = delayMs;
    m_modeChanges.append({{QStringLiteral("at_ms"), nowMs()},
                          {QStringLiteral("mode"), modeName(mode)},
                          {QStringLiteral("delay_ms"), delayMs}});
}

quint16 FakeEgressProxy::port() const
{
    QMutexLocker lock(&m_mutex);
    return m_port;
}

QString FakeEgressProxy::url(bool remoteDns) const
{
    const QString scheme = m_kind == Kind::HttpConnect ? QStringLiteral("http")
                                                       : (remoteDns ? QStringLiteral("socks5h") : QStringLiteral("socks5"));
    return QStringLiteral("%1://127.0.0.1:%2").arg(scheme).arg(port());
}

QString FakeEgressProxy::modeName(Mode mode)
{
    switch (mode) {
    case Mode::Healthy:
        return QStringLiteral("healthy");
    case Mode::Down:
        return QStringLiteral("down");
    case Mode::Slow:
        return QStringLiteral("slow");
    }
    return {};
}

void FakeEgressProxy::onNewConnection()
{
    while (QTcpSocket *client = m_server.nextPendingConnection()) {
        Mode mode;
        int delayMs;
        int id;
        {
            QMutexLocker lock(&m_mutex);
            mode = m_mode;
            delayMs = m_delayMs;
            Connection c;
            c.id = int(m_connections.size()) + 1;
            c.acceptedAtMs = nowMs();
            c.mode = modeName(mode);
            m_connections.append(c);
            id = c.id;
        }
        auto *tunnel = new FakeEgressTunnel(this, client, id, mode, delayMs);
        tunnel->start();
    }
}

QJsonObject FakeEgressProxy::record() const
{
    QMutexLocker lock(&m_mutex);
    QJsonArray connections;
    for (const Connection &c : m_connections) {
        connections.append(QJsonObject{
            {QStringLiteral("id"), c.id},
            {QStringLiteral("accepted_at_ms"), c.acceptedAtMs},
            {QStringLiteral("mode"), c.mode},
            {QStringLiteral("outcome"), c.outcome},
            {QStringLiteral("target_host"), orNull(c.targetHost)},
            {QStringLiteral("target_port"), c.targetPort > 0 ? QJsonValue(c.targetPort) : QJsonValue()},
            {QStringLiteral("address_type"), orNull(c.addressType)},
            {QStringLiteral("user"), orNull(c.user)},
            {QStringLiteral("auth_challenges"), c.authChallenges},
            {QStringLiteral("established_at_ms"), orNull(c.establishedAtMs)},
            {QStringLiteral("closed_at_ms"), orNull(c.closedAtMs)},
            {QStringLiteral("bytes_up"), c.bytesUp},
            {QStringLiteral("bytes_down"), c.bytesDown},
            {QStringLiteral("requests"), QJsonArray::fromStringList(c.requests)},
        });
    }
    QJsonArray modes;
    for (const QJsonObject &m : m_modeChanges)
        modes.append(m);
    return QJsonObject{
        {QStringLiteral("name"), m_name},
        {QStringLiteral("kind"), m_kind == Kind::HttpConnect ? QStringLiteral("http") : QStringLiteral("socks5")},
        {QStringLiteral("port"), int(m_port)},
        {QStringLiteral("mode"), modeName(m_mode)},
        {QStringLiteral("delay_ms"), m_delayMs},
        {QStringLiteral("requires_credentials"), !m_user.isEmpty()},
        {QStringLiteral("modes"), modes},
        {QStringLiteral("connections"), connections},
    };
}

bool FakeEgressProxy::writeRecord(const QString &path) const
{
    QSaveFile f(path);
    if (!f.open(QIODevice::WriteOnly))
        return false;
    f.write(QJsonDocument(record()).toJson(QJsonDocument::Indented));
    return f.commit();
}

FakeEgressFleet::FakeEgressFleet()
{
    m_thread.setObjectName(QStringLiteral("fake-egress"));
    m_home = new QObject;
    m_home->moveToThread(&m_thread);
    // The proxies (children of m_home) are deleted in their own thread as it finishes.
    QObject::connect(&m_thread, &QThread::finished, m_home, &QObject::deleteLater);
    m_thread.start();
}

FakeEgressFleet::~FakeEgressFleet()
{
    m_thread.quit();
    m_thread.wait();
}

FakeEgressProxy *FakeEgressFleet::add(const QString &name, FakeEgressProxy::Kind kind, FakeEgressProxy::Mode mode,
                                      int delayMs, const QString &user, const QString &password)
{
    FakeEgressProxy *made = nullptr;
    QMetaObject::invokeMethod(
        m_home,
        [&] {
            auto *p = new FakeEgressProxy(name, kind, m_home);
            p->setCredentials(user, password);
            p->setMode(mode, delayMs);
            if (!p->listen()) {
                delete p;
                return;
            }
            made = p;
        },
        Qt::BlockingQueuedConnection);
    if (made)
        m_proxies.append(made);
    return made;
}

FakeEgressProxy *FakeEgressFleet::proxy(const QString &name) const
{
    for (FakeEgressProxy *p : m_proxies) {
        if (p->name() == name)
            return p;
    }
    return nullptr;
}

QStringList FakeEgressFleet::writeRecords(const QString &dir) const
{
    QStringList paths;
    for (const FakeEgressProxy *p : m_proxies) {
        const QString path = dir + QStringLiteral("/egress-") + p->name() + QStringLiteral(".json");
        if (!p->writeRecord(path))
            return {};
        paths.append(path);
    }
    return paths;
}

} // namespace sy::test
