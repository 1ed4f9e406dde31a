#include "health/ProxyHandshake.h"

#include <QElapsedTimer>
#include <QEventLoop>
#include <QHostAddress>
#include <QHostInfo>
#include <QNetworkProxy>
#include <QTcpSocket>
#include <QTimer>
#include <QtEndian>
#include <memory>

namespace sy {

// One proxy's handshake, from TCP connect to the proxy's answer to the tunnel request.
class ProxyHandshake::Session : public QObject
{
public:
    Session(const EgressProxySpec &spec, const Credentials &creds, const QString &host, quint16 port, int timeoutMs,
            std::function<void(const ProxyProbeResult &)> done, QObject *parent)
        : QObject(parent), m_spec(spec), m_creds(creds), m_host(host), m_port(port), m_done(std::move(done))
    {
        m_clock.start();
        m_socket.setProxy(QNetworkProxy::NoProxy);
        connect(&m_socket, &QTcpSocket::connected, this, &Session::greet);
        connect(&m_socket, &QTcpSocket::readyRead, this, &Session::onData);
        connect(&m_socket, &QTcpSocket::errorOccurred, this, [this] { finish(false, m_socket.errorString()); });
        QTimer::singleShot(timeoutMs, this, [this, timeoutMs] {
            finish(false, QStringLiteral("no answer within %1 ms").arg(timeoutMs));
        });
    }

    void start()
    {
        if (m_spec.type != EgressProxyType::Socks5) {
            m_socket.connectToHost(m_spec.host, m_spec.port);
            return;
        }
        // socks5://: the target's name is resolved here; the proxy gets an address.
        QHostAddress literal;
        if (literal.setAddress(m_host)) {
            m_address = literal;
            m_socket.connectToHost(m_spec.host, m_spec.port);
            return;
        }
        QHostInfo::lookupHost(m_host, this, [this](const QHostInfo &info) {
            if (info.addresses().isEmpty()) {
                finish(false, QStringLiteral("cannot resolve %1: %2").arg(m_host, info.errorString()));
                return;
            }
            m_address = info.addresses().first();
            m_socket.connectToHost(m_spec.host, m_spec.port);
        });
    }

private:
    enum class Step
    {
        Connecting,
        HttpAnswer,
        SocksMethod,
        SocksAuth,
        SocksReply
    };

    void greet()
    {
        if (m_spec.type == EgressProxyType::HttpConnect) {
            const QByteArray target =
                (m_host.contains(QLatin1Char(':')) ? '[' + m_host.toLatin1() + ']' : m_host.toLatin1()) + ':' +
                QByteArray::number(m_port);
            QByteArray request = "CONNECT " + target + " HTTP/1.1\r\nHost: " + target + "\r\n";
            if (!m_creds.user.isEmpty())
                request += "Proxy-Authorization: Basic " +
                           (m_creds.user + QLatin1Char(':') + m_creds.password).toUtf8().toBase64() + "\r\n";
            m_socket.write(request + "\r\n");
            m_step = Step::HttpAnswer;
            return;
        }
        const char method = m_creds.user.isEmpty() ? 0x00 : 0x02;
        m_socket.write(QByteArray("\x05\x01", 2) + QByteArray(1, method));
        m_step = Step::SocksMethod;
    }

    void onData()
    {
        m_in += m_socket.readAll();
        switch (m_step) {
        case Step::Connecting:
            return;
        case Step::HttpAnswer: {
            const qsizetype end = m_in.indexOf("\r\n");
            if (end < 0)
                return;
            const QList<QByteArray> status = m_in.left(end).split(' ');
            const int code = status.value(1).toInt();
            finish(code == 200, QStringLiteral("CONNECT answered %1").arg(code));
            return;
        }
        case Step::SocksMethod:
            if (m_in.size() < 2)
                return;
            if (m_in.at(0) != 5 || (quint8(m_in.at(1)) != 0 && quint8(m_in.at(1)) != 2) ||
                (quint8(m_in.at(1)) == 2 && m_creds.user.isEmpty())) {
                finish(false, QStringLiteral("SOCKS5 proxy accepts none of our authentication methods"));
                return;
            }
            if (quint8(m_in.at(1)) == 2) {
                m_in.remove(0, 2);
                const QByteArray user = m_creds.user.toUtf8(), password = m_creds.password.toUtf8();
                m_socket.write(QByteArray("\x01", 1) + QByteArray(1, char(user.size())) + user +
                               QByteArray(1, char(password.size())) + password);
                m_step = Step::SocksAuth;
                return;
            }
            m_in.remove(0, 2);
            sendSocksConnect();
            return;
        case Step::SocksAuth:
            if (m_in.size() < 2)
                return;
            if (m_in.at(1) != 0) {
                finish(false, QStringLiteral("SOCKS5 proxy refused the credentials"));
                return;
            }
            m_in.remove(0, 2);
            sendSocksConnect();
            return;
        case Step::SocksReply:
            if (m_in.size() < 2)
                return;
            finish(m_in.at(0) == 5 && m_in.at(1) == 0,
                   QStringLiteral("SOCKS5 CONNECT answered %1").arg(int(quint8(m_in.at(1)))));
            return;
        }
    }

    void sendSocksConnect()
    {
        QByteArray request("\x05\x01\x00", 3);
        if (m_spec.type == EgressProxyType::Socks5RemoteDns) {
            const QByteArray name = m_host.toLatin1();
            request += '\x03' + QByteArray(1, char(name.size())) + name;
        } else if (m_address.protocol() == QAbstractSocket::IPv6Protocol) {
            const Q_IPV6ADDR v6 = m_address.toIPv6Address();
            request += '\x04' + QByteArray(reinterpret_cast<const char *>(v6.c), 16);
        } else {
            char v4[4];
            qToBigEndian<quint32>(m_address.toIPv4Address(), v4);
            request += '\x01' + QByteArray(v4, 4);
        }
        char port[2];
        qToBigEndian<quint16>(m_port, port);
        m_socket.write(request + QByteArray(port, 2));
        m_step = Step::SocksReply;
    }

    void finish(bool reached, const QString &detail)
    {
        if (!m_done)
            return;
        const auto done = std::exchange(m_done, nullptr);
        m_socket.abort();
        done({reached, detail, m_clock.elapsed()});
        deleteLater();
    }

    EgressProxySpec m_spec;
    Credentials m_creds;
    QString m_host;
    quint16 m_port;
    QHostAddress m_address;
    QTcpSocket m_socket;
    QByteArray m_in;
    Step m_step = Step::Connecting;
    QElapsedTimer m_clock;
    std::function<void(const ProxyProbeResult &)> m_done;
};

ProxyHandshake::ProxyHandshake(const QString &targetHost, quint16 targetPort, int timeoutMs, QObject *parent)
    : QObject(parent), m_host(targetHost), m_port(targetPort), m_timeoutMs(timeoutMs)
{
}

void ProxyHandshake::run(const QList<EgressProxySpec> &proxies, const QHash<QString, Credentials> &credentials,
                         std::function<void(QHash<QString, ProxyProbeResult>)> done)
{
    auto results = std::make_shared<QHash<QString, ProxyProbeResult>>();
    auto pending = std::make_shared<int>(int(proxies.size()));
    if (proxies.isEmpty()) {
        QTimer::singleShot(0, this, [done] { done({}); });
        return;
    }
    for (const EgressProxySpec &spec : proxies) {
        const QString name = spec.name;
        auto *session = new Session(
            spec, credentials.value(name), m_host, m_port, m_timeoutMs,
            [results, pending, done, name](const ProxyProbeResult &r) {
                results->insert(name, r);
                if (--*pending == 0)
                    done(*results);
            },
            this);
        session->start();
    }
}

QHash<QString, ProxyProbeResult> ProxyHandshake::runAndWait(const QList<EgressProxySpec> &proxies,
                                                            const QHash<QString, Credentials> &credentials)
{
    QHash<QString, ProxyProbeResult> out;
    QEventLoop loop;
    bool finished = false;
    run(proxies, credentials, [&](QHash<QString, ProxyProbeResult> results) {
        out = std::move(results);
        finished = true;
        loop.quit();
    });
    if (!finished)
        loop.exec();
    return out;
}

} // namespace sy
