#pragma once

#include <QJsonObject>
#include <QList>
#include <QMutex>
#include <QObject>
#include <QString>
#include <QTcpServer>
#include <QThread>
#include <utility>

namespace sy::test {

// An egress proxy for tests: HTTP CONNECT or SOCKS5 (optionally with username/password: Basic
// Proxy-Authorization, RFC 1929), then bytes are piped both ways. Modes:
//   healthy  answers the handshake at once;
//   down     accepts the TCP connection and closes it before reading anything (a refusal that still shows
//            up in its own record);
//   slow     waits delay_ms before answering the handshake.
//
// It keeps its own record of what it did, independent of anything Switchyard logs: every connection with
// the target it was asked for (host, port, SOCKS address type), the outcome, times (epoch ms), bytes each
// way and the x-request-id of every HTTP request it carried (read from the plain-text requests inside the
// tunnel). record() returns it as JSON; writeRecord() stores it for the independent probe.
//
// Lives in one thread (see FakeEgressFleet); record(), setMode() and port() may be called from any thread.
class FakeEgressProxy : public QObject
{
    Q_OBJECT

public:
    enum class Kind
    {
        HttpConnect,
        Socks5
    };
    enum class Mode
    {
        Healthy,
        Down,
        Slow
    };

    FakeEgressProxy(const QString &name, Kind kind, QObject *parent = nullptr);
    ~FakeEgressProxy() override;

    // Before listen(): connections must authenticate with these.
    void setCredentials(const QString &user, const QString &password);
    bool listen();
    void setMode(Mode mode, int delayMs = 0);

    QString name() const { return m_name; }
    Kind kind() const { return m_kind; }
    quint16 port() const;
    // "http://127.0.0.1:PORT", "socks5://..." or, with remoteDns, "socks5h://..." (for the config file).
    QString url(bool remoteDns = false) const;

    QJsonObject record() const;
    bool writeRecord(const QString &path) const;
    // From record(): the tunnels it set up to 127.0.0.1:targetPort, and the HTTP requests it carried through them.
    std::pair<int, int> carriedTo(quint16 targetPort) const;
    int connectionCount() const;

    static QString modeName(Mode mode);

private:
    friend class FakeEgressTunnel;

    struct Connection
    {
        int id = 0;
        qint64 acceptedAtMs = 0;
        QString mode;
        QString outcome = QStringLiteral("open"); // tunnel, refused, client_closed, auth_failed, bad_handshake,
                                                  // target_unreachable
        QString targetHost;
        int targetPort = 0;
        QString addressType; // ipv4, ipv6, domain (SOCKS5); empty for CONNECT
        QString user;
        int authChallenges = 0;
        qint64 establishedAtMs = -1;
        qint64 closedAtMs = -1;
        qint64 bytesUp = 0;
        qint64 bytesDown = 0;
        QStringList requests;
    };

    void onNewConnection();
    // Called by tunnels (same thread); the mutex guards against readers on other threads.
    template <typename F> void update(int id, F change)
    {
        QMutexLocker lock(&m_mutex);
        change(m_connections[id - 1]);
    }

    QString m_name;
    Kind m_kind;
    QTcpServer m_server;
    QString m_user;
    QString m_password;
    mutable QMutex m_mutex;
    Mode m_mode = Mode::Healthy;
    int m_delayMs = 0;
    quint16 m_port = 0;
    QList<QJsonObject> m_modeChanges;
    QList<Connection> m_connections;
};

// Fake egress proxies on a thread of their own, so they keep serving while the test thread blocks (CLI
// calls, waits for child processes). Deleting the fleet stops them.
class FakeEgressFleet
{
public:
    FakeEgressFleet();
    ~FakeEgressFleet();
    FakeEgressFleet(const FakeEgressFleet &) = delete;
    FakeEgressFleet &operator=(const FakeEgressFleet &) = delete;

    // Null when it cannot listen.
    FakeEgressProxy *add(const QString &name, FakeEgressProxy::Kind kind,
                         FakeEgressProxy::Mode mode = FakeEgressProxy::Mode::Healthy, int delayMs = 0,
                         const QString &user = {}, const QString &password = {});
    FakeEgressProxy *proxy(const QString &name) const;
    const QList<FakeEgressProxy *> &proxies() const { return m_proxies; }
    // One "<dir>/egress-<name>.json" per proxy; returns the paths (empty on a write error).
    QStringList writeRecords(const QString &dir) const;

private:
    QThread m_thread;
    QObject *m_home = nullptr; // lives in m_thread: the parent of every proxy
    QList<FakeEgressProxy *> m_proxies;
};

} // namespace sy::test
