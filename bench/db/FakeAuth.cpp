#include "FakeAuth.h"

#include <QDateTime>
#include <QFile>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRandomGenerator>

namespace sy::bench {

namespace {

QByteArray base64Url(const QByteArray &bytes)
{
    return bytes.toBase64(QByteArray::Base64UrlEncoding | QByteArray::OmitTrailingEquals);
}

QString unsignedJwt(const QJsonObject &claims)
{
    const QByteArray header = QJsonDocument(QJsonObject{{QStringLiteral("alg"), QStringLiteral("none")}})
                                  .toJson(QJsonDocument::Compact);
    const QByteArray body = QJsonDocument(claims).toJson(QJsonDocument::Compact);
    const QByteArray signature = QByteArray::number(QRandomGenerator::global()->generate64(), 16);
    return QString::fromLatin1(base64Url(header) + '.' + base64Url(body) + '.' + base64Url(signature));
}

} // namespace

QString writeFakeAuthFiles(const QString &dir, int count)
{
    const qint64 expires = QDateTime::currentSecsSinceEpoch() + 10 * 24 * 3600;
    for (int i = 1; i <= count; ++i) {
        const QString salt = QString::number(QRandomGenerator::global()->generate(), 16);
        const QString accountId = QStringLiteral("bench-acct-%1-%2").arg(i).arg(salt);
        const QString userId = QStringLiteral("bench-user-%1").arg(i);
        const QJsonObject auth{{QStringLiteral("chatgpt_account_id"), accountId},
                               {QStringLiteral("chatgpt_plan_type"), QStringLiteral("pro")},
                               {QStringLiteral("chatgpt_user_id"), userId}};
        const QString access = unsignedJwt({{QStringLiteral("sub"), userId},
                                            {QStringLiteral("exp"), expires},
                                            {QStringLiteral("https://api.openai.com/auth"), auth}});
        const QString idToken = unsignedJwt({{QStringLiteral("sub"), userId},
                                             {QStringLiteral("email"), QStringLiteral("bench%1@example.test").arg(i)},
                                             {QStringLiteral("exp"), expires},
                                             {QStringLiteral("https://api.openai.com/auth"), auth}});
        const QJsonObject tokens{{QStringLiteral("id_token"), idToken},
                                 {QStringLiteral("access_token"), access},
                                 {QStringLiteral("refresh_token"), QStringLiteral("rt_bench_%1_%2").arg(i).arg(salt)},
                                 {QStringLiteral("account_id"), accountId}};
        const QJsonObject file{{QStringLiteral("OPENAI_API_KEY"), QJsonValue()},
                               {QStringLiteral("tokens"), tokens},
                               {QStringLiteral("last_refresh"),
                                QDateTime::currentDateTimeUtc().toString(Qt::ISODate)}};
        QFile out(QStringLiteral("%1/auth-%2.json").arg(dir).arg(i));
        if (!out.open(QIODevice::WriteOnly) || out.write(QJsonDocument(file).toJson()) < 0)
            return QStringLiteral("cannot write %1: %2").arg(out.fileName(), out.errorString());
    }
    return {};
}

} // namespace sy::bench
