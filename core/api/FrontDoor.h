#pragma once

#include "http/HttpRequest.h"

#include <QHostAddress>
#include <QStringList>
#include <optional>

namespace sy {

// Why the front door turned a request away: answered with sendJsonError(status, type, code, message).
struct FrontDoorRefusal
{
    int status = 0;
    QByteArray type;
    QByteArray code;
    QString message;
};

// Browser-facing checks of every downstream request (docs/SECURITY.md "Local-server attacks"), so a web page can
// neither reach the proxy through DNS rebinding nor spend the user's accounts with cross-site requests:
//  - Host must name this server: "localhost" or a loopback IP literal, the listen address, any IP literal when
//    listening on every address (rebinding needs a DNS name), or an allowed_hosts entry; a port, when given,
//    must be the listen port (or the port of the allowed_hosts entry). Else 421 host_not_allowed.
//  - OPTIONS (a CORS preflight, or any other) gets 403 cors_preflight_refused: no cross-origin request is ever
//    permitted, and no Access-Control-* header is ever sent.
//  - An Origin header must be an allowed_origins entry or this server's own origin (http://HOST:PORT with an
//    allowed HOST); "null" never is. Without Origin, Sec-Fetch-Site cross-site/same-site (a browser's
//    no-cors request) is refused too. Else 403 origin_not_allowed.
// Clients that are not browsers (Codex CLI, OpenCode, the openai SDKs) send neither Origin nor Sec-Fetch-Site.
class FrontDoor
{
public:
    FrontDoor() = default;
    FrontDoor(const QHostAddress &listenAddress, quint16 port, const QStringList &allowedHosts,
              const QStringList &allowedOrigins);

    // The port actually listened on (the configured one may be 0).
    void setPort(quint16 port) { m_port = port; }

    std::optional<FrontDoorRefusal> check(const HttpRequest &request) const;

    // `host` as sent in a Host header ("name", "name:port", "[v6]:port").
    bool hostAllowed(QByteArrayView host) const;
    bool originAllowed(QByteArrayView origin) const;

private:
    struct AllowedHost
    {
        QByteArray name; // lower case, IPv6 without brackets
        int port = -1;   // -1: the listen port (or none given)
    };
    bool nameAllowed(const QByteArray &name, int port) const;

    QHostAddress m_listen = QHostAddress::LocalHost;
    quint16 m_port = 0;
    QList<AllowedHost> m_hosts;
    QList<QByteArray> m_origins; // lower case
};

// Splits a Host value into its lower-cased name (IPv6 without brackets) and port (-1 when absent).
// False for a value that is not a host[:port].
bool splitHostPort(QByteArrayView value, QByteArray *name, int *port);

} // namespace sy
