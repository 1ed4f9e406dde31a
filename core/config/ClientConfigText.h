#pragma once

#include <QHostAddress>
#include <QString>

namespace sy {

// "http://HOST:PORT" a local client uses to reach a proxy listening on address:port (a wildcard listen
// address becomes the loopback address of its family; IPv6 in brackets).
QString localBaseUrl(const QHostAddress &listenAddress, quint16 port);

// The client configuration snippets of README "Client configuration" for a proxy at `baseUrl`, exactly as
// `switchyard client-config codex|opencode` prints them and the tray copies them.
QString codexClientConfig(const QString &baseUrl);
QString openCodeClientConfig(const QString &baseUrl);

} // namespace sy
