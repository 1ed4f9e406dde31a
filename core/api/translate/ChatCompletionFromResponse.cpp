#include "api/translate/ChatCompletionFromResponse.h"

#include "api/translate/TokenUsage.h"
#include "api/translate/TranslateCommon.h"

#include <QJsonArray>

using namespace Qt::StringLiterals;

namespace sy {

QJsonObject chatCompletionFromResponse(const QJsonObject &response, const QString &model, const QString &id,
                                       qint64 createdEpochS)
{
    QString text;
    QString refusal;
    bool hasText = false;
    QJsonArray toolCalls;

    const QJsonArray output = response.value("output"_L1).toArray();
    for (const QJsonValue &iv : output) {
        const QJsonObject item = iv.toObject();
        const QString type = item.value("type"_L1).toString();
        if (type == "message"_L1) {
            const QJsonArray parts = item.value("content"_L1).toArray();
            for (const QJsonValue &pv : parts) {
                const QJsonObject part = pv.toObject();
                const QString partType = part.value("type"_L1).toString();
                if (partType == "output_text"_L1) {
                    text += part.value("text"_L1).toString();
                    hasText = true;
                } else if (partType == "refusal"_L1) {
                    refusal += part.value("refusal"_L1).toString();
                }
            }
        } else if (type == "function_call"_L1) {
            toolCalls.append(
                QJsonObject{{u"id"_s, item.value("call_id"_L1).toString()},
                            {u"type"_s, u"function"_s},
                            {u"function"_s, QJsonObject{{u"name"_s, item.value("name"_L1).toString()},
                                                        {u"arguments"_s, item.value("arguments"_L1).toString()}}}});
        }
    }

    QJsonObject message{{u"role"_s, u"assistant"_s},
                        {u"content"_s, hasText ? QJsonValue(text) : QJsonValue()},
                        {u"refusal"_s, refusal.isEmpty() ? QJsonValue() : QJsonValue(refusal)}};
    if (!toolCalls.isEmpty())
        message.insert(u"tool_calls"_s, toolCalls);

    const QString reason = translate::chatFinishReason(
        response.value("status"_L1).toString(),
        response.value("incomplete_details"_L1).toObject().value("reason"_L1).toString(), !toolCalls.isEmpty());
    const QJsonObject choice{
        {u"index"_s, 0}, {u"message"_s, message}, {u"logprobs"_s, QJsonValue()}, {u"finish_reason"_s, reason}};

    QJsonObject completion{{u"id"_s, id},
                           {u"object"_s, u"chat.completion"_s},
                           {u"created"_s, createdEpochS},
                           {u"model"_s, model},
                           {u"choices"_s, QJsonArray{choice}}};
    if (response.value("usage"_L1).isObject())
        completion.insert(u"usage"_s, chatUsageJson(usageFromResponse(response)));
    return completion;
}

} // namespace sy
