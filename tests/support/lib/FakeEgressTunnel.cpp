#include "lib/FakeEgressTunnel.h"

#include <QDateTime>
#include <QHostAddress>
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

} // namespace

FakeEgressTunnel::FakeEgressTunnel(FakeEgressProxy *proxy, QTcpSocket *client, int id, FakeEgressProxy::Mode mode,
                                   int delayMs)
    : QObject(proxy), m_proxy(proxy), m_client(client), m_id(id), m_mode(mode), m_delayMs(delayMs)
{
    client->setParent(this);
    connect(client, &QTcpSocket::readyRead, this, &FakeEgressTunnel::onClientData);
    connect(client, &QTcpSocket::disconnected, this, [this] { finish(QStringLiteral("client_closed")); });
    connect(client, &QTcpSocket::errorOccurred, this, [this] { finish(QStringLiteral("client_closed")); });
}

void FakeEgressTunnel::start()
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

void FakeEgressTunnel::setOutcome(const QString &outcome)
{
    m_proxy->update(m_id, [&](FakeEgressProxy::Connection &c) {
        if (c.outcome == QLatin1String("open") || outcome == QLatin1String("tunnel"))
            c.outcome = outcome;
    });
}

void FakeEgressTunnel::fail(const QString &outcome, const QByteArray &answer)
{
    setOutcome(outcome);
    if (!answer.isEmpty())
        m_client->write(answer);
    m_client->flush();
    m_client->disconnectFromHost();
    finish(outcome);
}

void FakeEgressTunnel::onClientData()
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

void FakeEgressTunnel::httpHandshake()
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

void FakeEgressTunnel::socksHandshake()
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

void FakeEgressTunnel::connectTarget(const QString &host, quint16 port)
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

void FakeEgressTunnel::onTargetConnected()
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

void FakeEgressTunnel::scanRequests(const QByteArray &bytes)
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

void FakeEgressTunnel::finish(const QString &outcome)
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

} // namespace sy::test
