#pragma once

#include "upstream/egress/EgressRoute.h"

#include <QByteArray>
#include <QNetworkRequest>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QTimer>
#include <functional>

class QNetworkAccessManager;
class QNetworkReply;

namespace sy {

struct EgressPostResult
{
    int httpStatus = 0;   // 0: no HTTP answer
    QByteArray body;      // the answer's body
    QString networkError; // when httpStatus is 0
    // Through proxies only: no proxy of the route took any of the body, so the server cannot have seen it.
    bool noTunnel = false;
    QString lastHop; // the proxy of the last try (empty when direct)
};

// One POST whose body carries a single-use credential (a refresh token, an authorization code), sent along an
// EgressRoute: directly, or through the route's proxies in order. The next proxy is tried only while none of
// the body has been written through the previous one: once some of it went out, the server may have used the
// credential, and a second try could spend it twice. Each proxy has `hopTimeoutMs` to take the body's first
// byte: Qt's network access manager can keep reconnecting to a SOCKS5 proxy that refuses the handshake and never
// answer, which would otherwise hold the call until the request's transfer timeout.
//
// Each try has a network access manager of its own, deleted with it: such calls are rare (a refresh per account
// every few hours, a login), so reusing connections gains nothing, while a shared manager carried one try's
// trouble into the next (after a request was aborted mid-handshake, Qt's manager for that proxy failed every
// later call through it) and a kept-alive connection the server had closed would need the body sent again.
//
// `done` runs once (never after abort()); then the object deletes itself. Lives on one thread.
class EgressPost : public QObject
{
    Q_OBJECT

public:
    using Done = std::function<void(const EgressPostResult &result)>;

    // `what` names the call in log lines ("refresh of ACCOUNT"); never a secret. The route must be allowed.
    EgressPost(const QNetworkRequest &request, QByteArray body, EgressRoute route, int hopTimeoutMs, QString what,
               Done done, QObject *parent = nullptr);
    ~EgressPost() override;

    void start();
    // Stops the call; `done` is not called. The object deletes itself later.
    void abort();

private:
    void send(int hop);
    void onFinished();
    void markBodyRead();
    bool viaProxy() const { return m_route.kind == EgressRoute::Kind::Proxies; }

    QNetworkRequest m_request;
    QByteArray m_body;
    EgressRoute m_route;
    int m_hopTimeoutMs;
    QString m_what;
    Done m_done;
    QPointer<QNetworkAccessManager> m_network; // the current try's
    QPointer<QNetworkReply> m_reply;
    QTimer m_hopTimer;
    int m_hop = 0;
    // Some of the body was handed to Qt (read from the one-shot device) or written: it may reach the server, so
    // no other proxy may carry it. Set when Qt reads it, before any byte can reach a socket.
    bool m_bodySent = false;
    bool m_hopTimedOut = false;
};

} // namespace sy
