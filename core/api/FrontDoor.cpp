#include "api/FrontDoor.h"

namespace sy {

namespace {

bool isNameChar(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
}

bool parsePort(const QByteArray &digits, int *port)
{
    if (digits.isEmpty() || digits.size() > 5)
        return false;
    int p = 0;
    for (char c : digits) {
        if (c < '0' || c > '9')
            return false;
        p = p * 10 + (c - '0');
    }
    if (p > 65535)
        return false;
    *port = p;
    return true;
}

bool isAnyAddress(const QHostAddress &a)
{
    return a == QHostAddress(QHostAddress::AnyIPv4) || a == QHostAddress(QHostAddress::AnyIPv6) ||
           a == QHostAddress(QHostAddress::Any);
}

} // namespace

bool splitHostPort(QByteArrayView value, QByteArray *name, int *port)
{
    const QByteArray v = value.toByteArray().trimmed().toLower();
    if (v.isEmpty())
        return false;
    QByteArray host;
    QByteArray rest;
    if (v.startsWith('[')) {
        const qsizetype close = v.indexOf(']');
        if (close < 2)
            return false;
        host = v.mid(1, close - 1);
        for (char c : host) {
            if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == ':' || c == '.'))
                return false;
        }
        rest = v.mid(close + 1);
    } else {
        const qsizetype colon = v.indexOf(':');
        if (colon >= 0 && v.indexOf(':', colon + 1) >= 0)
            return false; // a bare IPv6 address is not a valid Host
        host = colon >= 0 ? v.left(colon) : v;
        rest = colon >= 0 ? v.mid(colon) : QByteArray();
        if (host.endsWith('.'))
            host.chop(1); // "localhost." is the fully qualified "localhost"
        if (host.isEmpty())
            return false;
        for (char c : host) {
            if (!isNameChar(c))
                return false;
        }
    }
    int p = -1;
    if (!rest.isEmpty()) {
        if (rest.at(0) != ':' || !parsePort(rest.mid(1), &p))
            return false;
    }
    *name = host;
    *port = p;
    return true;
}

FrontDoor::FrontDoor(const QHostAddress &listenAddress, quint16 port, const QStringList &allowedHosts,
                     const QStringList &allowedOrigins)
    : m_listen(listenAddress), m_port(port)
{
    for (const QString &entry : allowedHosts) {
        AllowedHost h;
        if (splitHostPort(entry.toUtf8(), &h.name, &h.port))
            m_hosts.append(h);
    }
    for (const QString &entry : allowedOrigins)
        m_origins.append(entry.toUtf8().toLower());
}

bool FrontDoor::nameAllowed(const QByteArray &name, int port) const
{
    const bool ownPort = port < 0 || port == m_port;
    if (ownPort && name == "localhost")
        return true;
    QHostAddress literal;
    if (ownPort && literal.setAddress(QString::fromLatin1(name)) &&
        (literal.isLoopback() || literal.isEqual(m_listen, QHostAddress::TolerantConversion) || isAnyAddress(m_listen)))
        return true;
    for (const AllowedHost &h : m_hosts) {
        if (h.name == name && (h.port < 0 ? ownPort : (port < 0 || port == h.port)))
            return true;
    }
    return false;
}

bool FrontDoor::hostAllowed(QByteArrayView host) const
{
    QByteArray name;
    int port = -1;
    return splitHostPort(host, &name, &port) && nameAllowed(name, port);
}

bool FrontDoor::originAllowed(QByteArrayView origin) const
{
    const QByteArray o = origin.toByteArray().trimmed().toLower();
    if (o.isEmpty() || o == "null")
        return false;
    if (m_origins.contains(o))
        return true;
    // This server's own origin: pages served from it (none today) may talk to it.
    if (!o.startsWith("http://"))
        return false;
    QByteArray name;
    int port = -1;
    if (!splitHostPort(o.mid(7), &name, &port))
        return false;
    if (port < 0)
        port = 80;
    return port == m_port && nameAllowed(name, port);
}

std::optional<FrontDoorRefusal> FrontDoor::check(const HttpRequest &request) const
{
    const QList<QByteArray> hosts = request.headerValues("host");
    if (hosts.size() != 1)
        return FrontDoorRefusal{421, "invalid_request_error", "host_not_allowed",
                                QStringLiteral("the request needs exactly one Host header naming this server")};
    if (!hostAllowed(hosts.first()))
        return FrontDoorRefusal{
            421, "invalid_request_error", "host_not_allowed",
            QStringLiteral("Host \"%1\" does not name this server; add it to allowed_hosts if it should")
                .arg(QString::fromLatin1(hosts.first().left(200)))};
    if (request.method == "OPTIONS")
        return FrontDoorRefusal{403, "permission_error", "cors_preflight_refused",
                                QStringLiteral("cross-origin requests are not allowed")};
    const QList<QByteArray> origins = request.headerValues("origin");
    for (const QByteArray &origin : origins) {
        if (!originAllowed(origin))
            return FrontDoorRefusal{403, "permission_error", "origin_not_allowed",
                                    QStringLiteral("requests from the web origin \"%1\" are not allowed; add it to "
                                                   "allowed_origins if they should be")
                                        .arg(QString::fromLatin1(origin.left(200)))};
    }
    if (origins.isEmpty()) {
        const QByteArray site = request.header("sec-fetch-site").trimmed().toLower();
        if (site == "cross-site" || site == "same-site")
            return FrontDoorRefusal{403, "permission_error", "origin_not_allowed",
                                    QStringLiteral("cross-site browser requests are not allowed")};
    }
    return std::nullopt;
}

} // namespace sy
