#pragma once

#include <QByteArray>
#include <QString>

namespace sy {

// The three OAuth tokens of one account. They live only in memory and in the SecretStore: never in the
// database in clear, never in a log line or an error message.
struct AuthTokens
{
    QString accessToken;
    QString refreshToken;
    QString idToken;

    bool isComplete() const { return !accessToken.isEmpty() && !refreshToken.isEmpty() && !idToken.isEmpty(); }
    bool operator==(const AuthTokens &o) const
    {
        return accessToken == o.accessToken && refreshToken == o.refreshToken && idToken == o.idToken;
    }
    bool operator!=(const AuthTokens &o) const { return !(*this == o); }
};

// The one-blob form a SecretStore keeps: {"access_token","refresh_token","id_token"} as compact JSON.
QByteArray serializeTokens(const AuthTokens &tokens);
// False (and *error without any token text) when the blob is not that JSON shape.
bool deserializeTokens(const QByteArray &blob, AuthTokens *tokens, QString *error);

} // namespace sy
