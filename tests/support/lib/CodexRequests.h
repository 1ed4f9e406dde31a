#pragma once

#include "lib/HttpTestClient.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>

namespace sy::test {

// A Codex-style /backend-api/codex/responses body with one user message (as Codex CLI sends it).
inline QByteArray codexBody(const QString &text)
{
    const QJsonObject message{
        {QStringLiteral("type"), QStringLiteral("message")},
        {QStringLiteral("role"), QStringLiteral("user")},
        {QStringLiteral("content"), QJsonArray{QJsonObject{{QStringLiteral("type"), QStringLiteral("input_text")},
                                                           {QStringLiteral("text"), text}}}}};
    const QJsonObject body{{QStringLiteral("model"), QStringLiteral("gpt-5-codex")},
                           {QStringLiteral("stream"), true},
                           {QStringLiteral("store"), false},
                           {QStringLiteral("input"), QJsonArray{message}}};
    return QJsonDocument(body).toJson(QJsonDocument::Compact);
}

// What a client sends with it; the bearer is the client's own key, which the proxy must replace.
inline const HttpHeaderList kCodexHeaders{{"content-type", "application/json"},
                                          {"authorization", "Bearer client-key"}};

inline QString str(const QJsonObject &o, const char *key)
{
    return o.value(QLatin1String(key)).toString();
}

} // namespace sy::test
