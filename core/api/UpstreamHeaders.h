#pragma once

#include "api/AccountPool.h"
#include "http/HttpRequest.h"
#include "upstream/UpstreamCall.h"

#include <QUrl>

namespace sy {

// {upstream base}{path}, e.g. https://chatgpt.com/backend-api + /codex/responses.
QUrl upstreamEndpoint(const QUrl &base, const QString &path, const QByteArray &rawQuery = {});

// The headers of an upstream call made for `client` on `account`: the account's credentials replace the
// client's, our request id goes in x-request-id, and the Codex session headers the backend uses pass through.
HttpHeaders upstreamHeaders(const HttpRequest &client, const AccountPool::Account &account,
                            const QByteArray &requestId, bool eventStream);
// The same without the access token (the one header that a token refresh changes), and that header alone.
HttpHeaders upstreamHeadersButAuthorization(const HttpRequest &client, const AccountPool::Account &account,
                                            const QByteArray &requestId, bool eventStream);
HttpHeader upstreamAuthorization(const AccountPool::Account &account);

} // namespace sy
