#include "api/translate/TranslateCommon.h"

#include <QJsonDocument>

using namespace Qt::StringLiterals;

namespace sy::translate {

QByteArray sseDataFrame(const QJsonObject &payload)
{
    return sseFrame(QJsonDocument(payload).toJson(QJsonDocument::Compact));
}

QByteArray sseFrame(const QByteArray &json)
{
    QByteArray frame;
    frame.reserve(json.size() + 8);
    frame.append("data: ", 6).append(json).append("\n\n", 2);
    return frame;
}

QByteArray sseDoneFrame()
{
    return QByteArrayLiteral("data: [DONE]\n\n");
}

QString chatFinishReason(const QString &status, const QString &incompleteReason, bool hadToolCalls)
{
    if (status == "incomplete"_L1) {
        if (incompleteReason == "content_filter"_L1)
            return u"content_filter"_s;
        return u"length"_s;
    }
    return hadToolCalls ? u"tool_calls"_s : u"stop"_s;
}

QJsonObject chatErrorObject(const QJsonObject &upstreamError, const QString &fallbackMessage)
{
    // The `error` event arrives both flat ({type:"error", code, message}) and nested ({error:{...}}).
    const QJsonObject src =
        upstreamError.value("error"_L1).isObject() ? upstreamError.value("error"_L1).toObject() : upstreamError;
    QString message = src.value("message"_L1).toString();
    if (message.isEmpty())
        message = fallbackMessage;
    const QJsonValue code = src.value("code"_L1);
    QString type = src.value("type"_L1).toString();
    if (type.isEmpty() || type == "error"_L1)
        type = code.isString() ? code.toString() : u"server_error"_s;
    return QJsonObject{{u"message"_s, message},
                       {u"type"_s, type},
                       {u"code"_s, code.isString() || code.isDouble() ? code : QJsonValue(QJsonValue::Null)},
                       {u"param"_s, src.value("param"_L1).isString() ? src.value("param"_L1) : QJsonValue()}};
}

} // namespace sy::translate
