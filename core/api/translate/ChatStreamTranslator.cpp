#include "api/translate/ChatStreamTranslator.h"

#include "api/translate/TranslateCommon.h"

#include <QJsonArray>
#include <QJsonDocument>

using namespace Qt::StringLiterals;

namespace sy {

namespace {

// JSON string literal (with quotes) for a value fixed for the whole stream; escaped once, not per chunk.
QByteArray jsonString(const QString &s)
{
    const QByteArray array = QJsonDocument(QJsonArray{s}).toJson(QJsonDocument::Compact);
    return array.mid(1, array.size() - 2);
}

QByteArray compact(const QJsonObject &o)
{
    return QJsonDocument(o).toJson(QJsonDocument::Compact);
}

int outputIndexOf(const QJsonObject &data)
{
    const QJsonValue v = data.value("output_index"_L1);
    return v.isDouble() ? v.toInt(-1) : -1;
}

} // namespace

ChatStreamTranslator::ChatStreamTranslator(const QString &model, const QString &completionId, qint64 createdEpochS,
                                           bool includeUsage)
    : m_includeUsage(includeUsage)
{
    m_head = "{\"id\":" + jsonString(completionId) +
             ",\"object\":\"chat.completion.chunk\",\"created\":" + QByteArray::number(createdEpochS) +
             ",\"model\":" + jsonString(model) + ',';
    m_choiceHead = m_head + "\"choices\":[{\"index\":0,\"delta\":";
}

QByteArray ChatStreamTranslator::chunk(const QByteArray &deltaJson, const char *finishReason) const
{
    QByteArray json;
    json.reserve(m_choiceHead.size() + deltaJson.size() + 64);
    json.append(m_choiceHead).append(deltaJson).append(",\"logprobs\":null,\"finish_reason\":");
    if (finishReason)
        json.append('"').append(finishReason).append('"');
    else
        json.append("null");
    json.append("}]");
    // OpenAI marks every chunk but the last with usage:null when usage was asked for.
    if (m_includeUsage)
        json.append(",\"usage\":null");
    json.append('}');
    return translate::sseFrame(json);
}

QByteArray ChatStreamTranslator::deltaChunk(const QJsonObject &delta) const
{
    return chunk(compact(delta));
}

void ChatStreamTranslator::start(QList<QByteArray> *out)
{
    if (m_started)
        return;
    m_started = true;
    out->append(chunk(QByteArrayLiteral("{\"role\":\"assistant\",\"content\":\"\"}")));
}

void ChatStreamTranslator::emitText(int outputIndex, const QString &text, const char *field, QList<QByteArray> *out)
{
    m_outputsWithText.insert(outputIndex);
    if (outputIndex < 0 && !text.isEmpty())
        m_textWithoutIndex = true;
    if (text.isEmpty())
        return;
    start(out);
    out->append(deltaChunk(QJsonObject{{QLatin1String(field), text}}));
}

ChatStreamTranslator::Call *ChatStreamTranslator::findCall(const QJsonObject &data)
{
    const QString itemId = data.value("item_id"_L1).toString();
    const int outputIndex = outputIndexOf(data);
    for (Call &c : m_calls) {
        if ((!itemId.isEmpty() && c.itemId == itemId) || (outputIndex >= 0 && c.outputIndex == outputIndex))
            return &c;
    }
    return nullptr;
}

void ChatStreamTranslator::announceCall(int outputIndex, const QJsonObject &item, QList<QByteArray> *out)
{
    Call call;
    call.itemId = item.value("id"_L1).toString();
    call.outputIndex = outputIndex;
    call.callId = item.value("call_id"_L1).toString();
    const QString arguments = item.value("arguments"_L1).toString();
    call.argumentsSent = arguments.size();
    call.index = int(m_calls.size());
    m_calls.append(call);

    start(out);
    const QJsonObject toolCall{
        {u"index"_s, call.index},
        {u"id"_s, call.callId},
        {u"type"_s, u"function"_s},
        {u"function"_s, QJsonObject{{u"name"_s, item.value("name"_L1).toString()}, {u"arguments"_s, arguments}}}};
    out->append(deltaChunk(QJsonObject{{u"tool_calls"_s, QJsonArray{toolCall}}}));
}

void ChatStreamTranslator::catchUpArguments(Call *call, const QString &arguments, QList<QByteArray> *out)
{
    // Only what the client has not seen yet; the done events repeat the whole argument string.
    if (arguments.size() <= call->argumentsSent)
        return;
    const QString rest = arguments.mid(call->argumentsSent);
    call->argumentsSent = arguments.size();
    out->append(argumentsChunk(*call, rest));
}

QByteArray ChatStreamTranslator::argumentsChunk(const Call &call, const QString &fragment) const
{
    const QJsonObject toolCall{{u"index"_s, call.index}, {u"function"_s, QJsonObject{{u"arguments"_s, fragment}}}};
    return deltaChunk(QJsonObject{{u"tool_calls"_s, QJsonArray{toolCall}}});
}

void ChatStreamTranslator::onItemDone(int outputIndex, const QJsonObject &item, QList<QByteArray> *out)
{
    const QString type = item.value("type"_L1).toString();
    if (type == "function_call"_L1) {
        QJsonObject lookup{{u"item_id"_s, item.value("id"_L1)}, {u"output_index"_s, outputIndex}};
        if (Call *call = findCall(lookup))
            catchUpArguments(call, item.value("arguments"_L1).toString(), out);
        else
            announceCall(outputIndex, item, out);
    } else if (type == "message"_L1 && !m_textWithoutIndex && !m_outputsWithText.contains(outputIndex)) {
        QString text;
        QString refusal;
        const QJsonArray parts = item.value("content"_L1).toArray();
        for (const QJsonValue &p : parts) {
            const QJsonObject part = p.toObject();
            if (part.value("type"_L1).toString() == "output_text"_L1)
                text += part.value("text"_L1).toString();
            else if (part.value("type"_L1).toString() == "refusal"_L1)
                refusal += part.value("refusal"_L1).toString();
        }
        emitText(outputIndex, text, "content", out);
        emitText(outputIndex, refusal, "refusal", out);
    }
}

void ChatStreamTranslator::finishNormally(const QString &status, const QJsonObject &response, QList<QByteArray> *out)
{
    // Deliver whatever the final response holds that no earlier event carried (an upstream that skips deltas).
    const QJsonArray output = response.value("output"_L1).toArray();
    for (int i = 0; i < output.size(); ++i)
        onItemDone(i, output.at(i).toObject(), out);

    start(out);
    const QString reason = response.value("incomplete_details"_L1).toObject().value("reason"_L1).toString();
    m_finishReason = translate::chatFinishReason(status, reason, !m_calls.isEmpty());
    out->append(chunk("{}", m_finishReason.toLatin1().constData()));
    m_usage = usageFromResponse(response);
    if (m_includeUsage) {
        const QByteArray json = m_head + "\"choices\":[],\"usage\":" + compact(chatUsageJson(m_usage)) + '}';
        out->append(translate::sseFrame(json));
    }
    out->append(translate::sseDoneFrame());
    m_finished = true;
}

void ChatStreamTranslator::finishWithError(const QJsonObject &error, QList<QByteArray> *out)
{
    out->append(translate::sseDataFrame(QJsonObject{{u"error"_s, error}}));
    out->append(translate::sseDoneFrame());
    m_finished = true;
    m_failed = true;
}

QList<QByteArray> ChatStreamTranslator::onEvent(const QByteArray &type, const QJsonObject &data)
{
    QList<QByteArray> out;
    if (m_finished)
        return out;
    const QString t = type.isEmpty() ? data.value("type"_L1).toString() : QString::fromLatin1(type);

    if (t == "response.output_text.delta"_L1) {
        emitText(outputIndexOf(data), data.value("delta"_L1).toString(), "content", &out);
    } else if (t == "response.refusal.delta"_L1) {
        emitText(outputIndexOf(data), data.value("delta"_L1).toString(), "refusal", &out);
    } else if (t == "response.output_text.done"_L1) {
        if (!m_textWithoutIndex && !m_outputsWithText.contains(outputIndexOf(data)))
            emitText(outputIndexOf(data), data.value("text"_L1).toString(), "content", &out);
    } else if (t == "response.function_call_arguments.delta"_L1) {
        // A fragment for a call the client has not been told about yet cannot be placed; the call's done
        // event brings the full arguments.
        if (Call *call = findCall(data)) {
            const QString fragment = data.value("delta"_L1).toString();
            if (!fragment.isEmpty()) {
                call->argumentsSent += fragment.size();
                out.append(argumentsChunk(*call, fragment));
            }
        }
    } else if (t == "response.function_call_arguments.done"_L1) {
        if (Call *call = findCall(data))
            catchUpArguments(call, data.value("arguments"_L1).toString(), &out);
    } else if (t == "response.output_item.added"_L1) {
        const QJsonObject item = data.value("item"_L1).toObject();
        if (item.value("type"_L1).toString() == "function_call"_L1 &&
            !findCall(QJsonObject{{u"item_id"_s, item.value("id"_L1)}, {u"output_index"_s, outputIndexOf(data)}}))
            announceCall(outputIndexOf(data), item, &out);
        else
            start(&out);
    } else if (t == "response.output_item.done"_L1) {
        onItemDone(outputIndexOf(data), data.value("item"_L1).toObject(), &out);
    } else if (t == "response.created"_L1 || t == "response.in_progress"_L1) {
        start(&out);
    } else if (t == "response.completed"_L1) {
        finishNormally(u"completed"_s, data.value("response"_L1).toObject(), &out);
    } else if (t == "response.incomplete"_L1) {
        finishNormally(u"incomplete"_s, data.value("response"_L1).toObject(), &out);
    } else if (t == "response.failed"_L1) {
        const QJsonObject response = data.value("response"_L1).toObject();
        m_usage = usageFromResponse(response);
        finishWithError(
            translate::chatErrorObject(response.value("error"_L1).toObject(), u"the upstream response failed"_s), &out);
    } else if (t == "error"_L1) {
        finishWithError(translate::chatErrorObject(data, u"the upstream reported an error"_s), &out);
    }
    return out;
}

QList<QByteArray> ChatStreamTranslator::finishIncomplete(const QString &message)
{
    QList<QByteArray> out;
    if (m_finished)
        return out;
    finishWithError(QJsonObject{{u"message"_s, message},
                                {u"type"_s, u"server_error"_s},
                                {u"code"_s, u"stream_incomplete"_s},
                                {u"param"_s, QJsonValue()}},
                    &out);
    return out;
}

} // namespace sy
