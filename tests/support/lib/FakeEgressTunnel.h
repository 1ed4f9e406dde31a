#pragma once

#include "lib/FakeEgressProxy.h"

#include <QByteArray>
#include <QObject>
#include <QString>

class QTcpSocket;

namespace sy::test {

// One client connection of a FakeEgressProxy: handshake, then the pipe to the target. Parses the plain-text
// HTTP requests going up the tunnel (head, then Content-Length bytes of body) to note each x-request-id.
class FakeEgressTunnel : public QObject
{
public:
    FakeEgressTunnel(FakeEgressProxy *proxy, QTcpSocket *client, int id, FakeEgressProxy::Mode mode, int delayMs);
    void start();

private:
    enum class Stage
    {
        Greeting,   // SOCKS5 method negotiation
        SocksAuth,  // RFC 1929
        Request,    // CONNECT head / SOCKS5 request
        Connecting, // delay and target connection
        Piping
    };

    bool needsAuth() const { return !m_proxy->m_user.isEmpty(); }
    void setOutcome(const QString &outcome);
    void fail(const QString &outcome, const QByteArray &answer);
    void onClientData();
    void httpHandshake();
    void socksHandshake();
    void connectTarget(const QString &host, quint16 port);
    void onTargetConnected();
    void scanRequests(const QByteArray &bytes);
    void finish(const QString &outcome);

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

} // namespace sy::test
