#include "upstream/egress/EgressCredentials.h"

namespace sy {

namespace {
// Marks the blob as egress credentials, so an account's tokens are never mistaken for them.
const char kMarker[] = "switchyard-egress-proxy-credentials";
} // namespace

AuthTokens packEgressCredentials(const EgressCredentials &credentials)
{
    AuthTokens t;
    t.accessToken = credentials.password;
    t.refreshToken = credentials.user;
    t.idToken = QLatin1String(kMarker);
    return t;
}

std::optional<EgressCredentials> unpackEgressCredentials(const AuthTokens &tokens)
{
    if (tokens.idToken != QLatin1String(kMarker) || tokens.refreshToken.isEmpty())
        return std::nullopt;
    return EgressCredentials{tokens.refreshToken, tokens.accessToken};
}

} // namespace sy
