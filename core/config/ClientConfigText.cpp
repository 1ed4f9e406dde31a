#include "config/ClientConfigText.h"

#include <QJsonDocument>
#include <QJsonObject>

namespace sy {

QString localBaseUrl(const QHostAddress &listenAddress, quint16 port)
{
    QHostAddress a = listenAddress;
    if (a == QHostAddress::Any || a == QHostAddress::AnyIPv4)
        a = QHostAddress::LocalHost;
    else if (a == QHostAddress::AnyIPv6)
        a = QHostAddress::LocalHostIPv6;
    const QString host = a.protocol() == QAbstractSocket::IPv6Protocol
                             ? QLatin1Char('[') + a.toString() + QLatin1Char(']')
                             : a.toString();
    return QStringLiteral("http://%1:%2").arg(host).arg(port);
}

QString codexClientConfig(const QString &baseUrl)
{
    return QStringLiteral("# ~/.codex/config.toml\nmodel_provider = \"switchyard\"\n\n[model_providers.switchyard]\n"
                          "name = \"Switchyard\"\nbase_url = \"%1/backend-api/codex\"\nwire_api = \"responses\"\n"
                          "env_key = \"SWITCHYARD_API_KEY\"\n# and: export SWITCHYARD_API_KEY=local\n")
        .arg(baseUrl);
}

QString openCodeClientConfig(const QString &baseUrl)
{
    const QJsonObject provider{
        {QStringLiteral("npm"), QStringLiteral("@ai-sdk/openai")},
        {QStringLiteral("name"), QStringLiteral("Switchyard")},
        {QStringLiteral("options"), QJsonObject{{QStringLiteral("baseURL"), QString(baseUrl + QStringLiteral("/v1"))},
                                                {QStringLiteral("apiKey"), QStringLiteral("local")}}},
        {QStringLiteral("models"),
         QJsonObject{{QStringLiteral("gpt-5"), QJsonObject()}, {QStringLiteral("gpt-5-codex"), QJsonObject()}}}};
    const QJsonObject root{{QStringLiteral("$schema"), QStringLiteral("https://opencode.ai/config.json")},
                           {QStringLiteral("provider"), QJsonObject{{QStringLiteral("switchyard"), provider}}}};
    return QString::fromUtf8(QJsonDocument(root).toJson(QJsonDocument::Indented));
}

} // namespace sy
