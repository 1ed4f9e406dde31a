#pragma once

#include "upstream/egress/EgressRoute.h"

#include <QByteArray>
#include <QHash>
#include <QNetworkRequest>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QTimer>
#include <functional>

class QNetworkAccessManager;
class QNetworkReply;

namespace sy {

// The network access managers of the calls that follow an EgressRoute: one that goes direct and one per egress
// proxy (by name), so that each proxy keeps its own connections. Children of this object.
class EgressNetworks : public QObject
{
    Q_OBJECT

public:
    explicit EgressNetworks(QObject *parent = nullptr) : QObject(parent) {}
    // `hop` null: direct.
    QNetworkAccessManager *forHop(const EgressRoute::Hop *hop);
    // Drops the manager of a proxy that set up no tunnel: after a request was aborted mid-handshake, Qt's
    // manager for that proxy failed every later request through it, even once the proxy answered again.
    void discard(const QString &hopName);

private:
    QNetworkAccessManager *m_direct = nullptr;
    QHash<QString, QNetworkAccessManager *> m_viaProxy;
};

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
// `done` runs once (never after abort()); then the object deletes itself. Lives on one thread.
class EgressPost : public QObject
{
    Q_OBJECT

public:
    using Done = std::function<void(const EgressPostResult &result)>;

    // `what` names the call in log lines ("refresh of ACCOUNT"); never a secret. The route must be allowed.
    EgressPost(EgressNetworks *networks, const QNetworkRequest &request, QByteArray body, EgressRoute route,
               int hopTimeoutMs, QString what, Done done, QObject *parent = nullptr);
    ~EgressPost() override;

    void start();
    // Stops the call; `done` is not called. The object deletes itself later.
    void abort();

private:
    void send(int hop);
    void onFinished();
    bool viaProxy() const { return m_route.kind == EgressRoute::Kind::Proxies; }

    QPointer<EgressNetworks> m_networks;
    QNetworkRequest m_request;
    QByteArray m_body;
    EgressRoute m_route;
    int m_hopTimeoutMs;
    QString m_what;
    Done m_done;
    QPointer<QNetworkReply> m_reply;
    QTimer m_hopTimer;
    int m_hop = 0;
    bool m_bodySent = false;
    bool m_hopTimedOut = false;
};

} // namespace sy
