#include "api/translate/ChatRequestToResponses.h"

#include <QJsonArray>
#include <QStringList>

using namespace Qt::StringLiterals;

namespace sy {

namespace {

// Collects the first error; the translation stops at it.
struct Failure
{
    QString message;
    bool set(const QString &m)
    {
        if (message.isEmpty())
            message = m;
        return false;
    }
};

QString where(int index)
{
    return u"messages[%1]"_s.arg(index);
}

// Text of a system/developer/tool message: a string, or an array of text parts.
bool collectText(const QJsonValue &content, int ctx, QStringList *pieces, Failure *f)
{
    if (content.isString()) {
        pieces->append(content.toString());
        return true;
    }
    if (content.isNull() || content.isUndefined())
        return true;
    if (!content.isArray())
        return f->set(where(ctx) + u": content must be a string or an array of parts"_s);
    const QJsonArray parts = content.toArray();
    for (const QJsonValue &pv : parts) {
        const QJsonObject part = pv.toObject();
        const QString type = part.value("type"_L1).toString();
        if (type != "text"_L1 && type != "input_text"_L1)
            return f->set(where(ctx) + u": unsupported content part type '%1' (only text is allowed here)"_s.arg(type));
        pieces->append(part.value("text"_L1).toString());
    }
    return true;
}

QJsonObject textPart(const char *type, const QString &text)
{
    return QJsonObject{{u"type"_s, QLatin1String(type)}, {u"text"_s, text}};
}

QJsonObject messageItem(const QString &role, const QJsonArray &content)
{
    return QJsonObject{{u"type"_s, u"message"_s}, {u"role"_s, role}, {u"content"_s, content}};
}

bool userContent(const QJsonValue &content, int ctx, QJsonArray *out, Failure *f)
{
    if (content.isString()) {
        out->append(textPart("input_text", content.toString()));
        return true;
    }
    if (!content.isArray())
        return f->set(where(ctx) + u": user content must be a string or an array of parts"_s);
    const QJsonArray parts = content.toArray();
    for (const QJsonValue &pv : parts) {
        const QJsonObject part = pv.toObject();
        const QString type = part.value("type"_L1).toString();
        if (type == "text"_L1) {
            out->append(textPart("input_text", part.value("text"_L1).toString()));
        } else if (type == "image_url"_L1) {
            // image_url is {url, detail} in the API, a bare string in some clients.
            const QJsonValue iv = part.value("image_url"_L1);
            const QJsonObject img = iv.toObject();
            const QString url = iv.isString() ? iv.toString() : img.value("url"_L1).toString();
            if (url.isEmpty())
                return f->set(where(ctx) + u": image_url part without a url"_s);
            QJsonObject item{{u"type"_s, u"input_image"_s}, {u"image_url"_s, url}};
            const QJsonValue detail = img.value("detail"_L1);
            item.insert(u"detail"_s, detail.isString() ? detail : QJsonValue(u"auto"_s));
            out->append(item);
        } else if (type == "file"_L1) {
            QJsonObject item = part.value("file"_L1).toObject();
            item.insert(u"type"_s, u"input_file"_s);
            out->append(item);
        } else {
            return f->set(where(ctx) + u": unsupported content part type '%1'"_s.arg(type));
        }
    }
    return true;
}

bool assistantItems(const QJsonObject &msg, int ctx, QJsonArray *input, Failure *f)
{
    QJsonArray content;
    const QJsonValue c = msg.value("content"_L1);
    if (c.isString()) {
        if (!c.toString().isEmpty())
            content.append(textPart("output_text", c.toString()));
    } else if (c.isArray()) {
        const QJsonArray parts = c.toArray();
        for (const QJsonValue &pv : parts) {
            const QJsonObject part = pv.toObject();
            const QString type = part.value("type"_L1).toString();
            if (type == "text"_L1)
                content.append(textPart("output_text", part.value("text"_L1).toString()));
            else if (type == "refusal"_L1)
                content.append(QJsonObject{{u"type"_s, u"refusal"_s}, {u"refusal"_s, part.value("refusal"_L1)}});
            else
                return f->set(where(ctx) + u": unsupported assistant content part type '%1'"_s.arg(type));
        }
    } else if (!c.isNull() && !c.isUndefined()) {
        return f->set(where(ctx) + u": assistant content must be a string, an array of parts or null"_s);
    }
    if (msg.value("refusal"_L1).isString() && !msg.value("refusal"_L1).toString().isEmpty())
        content.append(QJsonObject{{u"type"_s, u"refusal"_s}, {u"refusal"_s, msg.value("refusal"_L1)}});
    if (!content.isEmpty())
        input->append(messageItem(u"assistant"_s, content));

    const QJsonValue calls = msg.value("tool_calls"_L1);
    if (calls.isUndefined() || calls.isNull())
        return true;
    if (!calls.isArray())
        return f->set(where(ctx) + u": tool_calls must be an array"_s);
    const QJsonArray callArray = calls.toArray();
    for (int i = 0; i < callArray.size(); ++i) {
        const QJsonObject call = callArray.at(i).toObject();
        const QJsonObject fn = call.value("function"_L1).toObject();
        const QString id = call.value("id"_L1).toString();
        const QString name = fn.value("name"_L1).toString();
        if (id.isEmpty() || name.isEmpty())
            return f->set(where(ctx) + u".tool_calls[%1]: id and function.name are required"_s.arg(i));
        const QJsonValue args = fn.value("arguments"_L1);
        input->append(QJsonObject{{u"type"_s, u"function_call"_s},
                                  {u"call_id"_s, id},
                                  {u"name"_s, name},
                                  {u"arguments"_s, args.isString() ? args.toString() : u"{}"_s}});
    }
    return true;
}

bool toolOutputItem(const QJsonObject &msg, int ctx, QJsonArray *input, Failure *f)
{
    const QString callId = msg.value("tool_call_id"_L1).toString();
    if (callId.isEmpty())
        return f->set(where(ctx) + u": tool message without tool_call_id"_s);
    QStringList pieces;
    if (!collectText(msg.value("content"_L1), ctx, &pieces, f))
        return false;
    input->append(QJsonObject{
        {u"type"_s, u"function_call_output"_s}, {u"call_id"_s, callId}, {u"output"_s, pieces.join(QString())}});
    return true;
}

bool translateTools(const QJsonValue &toolsValue, QJsonArray *out, Failure *f)
{
    if (!toolsValue.isArray())
        return f->set(u"tools must be an array"_s);
    const QJsonArray tools = toolsValue.toArray();
    for (int i = 0; i < tools.size(); ++i) {
        const QJsonObject tool = tools.at(i).toObject();
        if (tool.value("type"_L1).toString() != "function"_L1)
            return f->set(u"tools[%1]: only function tools are supported"_s.arg(i));
        const QJsonObject fn = tool.value("function"_L1).toObject();
        const QString name = fn.value("name"_L1).toString();
        if (name.isEmpty())
            return f->set(u"tools[%1]: function.name is required"_s.arg(i));
        QJsonObject t{{u"type"_s, u"function"_s}, {u"name"_s, name}};
        if (fn.contains("description"_L1))
            t.insert(u"description"_s, fn.value("description"_L1));
        // A chat tool without parameters takes none; Responses wants the schema spelled out.
        t.insert(u"parameters"_s, fn.contains("parameters"_L1)
                                      ? fn.value("parameters"_L1)
                                      : QJsonObject{{u"type"_s, u"object"_s}, {u"properties"_s, QJsonObject()}});
        t.insert(u"strict"_s, fn.value("strict"_L1).toBool(false));
        out->append(t);
    }
    return true;
}

bool translateToolChoice(const QJsonValue &choice, QJsonValue *out, Failure *f)
{
    if (choice.isString()) {
        const QString s = choice.toString();
        if (s != "auto"_L1 && s != "none"_L1 && s != "required"_L1)
            return f->set(u"tool_choice: unknown value '%1'"_s.arg(s));
        *out = s;
        return true;
    }
    const QJsonObject o = choice.toObject();
    const QString name = o.value("function"_L1).toObject().value("name"_L1).toString();
    if (o.value("type"_L1).toString() != "function"_L1 || name.isEmpty())
        return f->set(u"tool_choice must be auto, none, required or {type:function, function:{name}}"_s);
    *out = QJsonObject{{u"type"_s, u"function"_s}, {u"name"_s, name}};
    return true;
}

bool translateResponseFormat(const QJsonValue &rf, QJsonObject *textFormat, Failure *f)
{
    const QJsonObject o = rf.toObject();
    const QString type = o.value("type"_L1).toString();
    if (type == "text"_L1 || type == "json_object"_L1) {
        *textFormat = QJsonObject{{u"type"_s, type}};
        return true;
    }
    if (type != "json_schema"_L1)
        return f->set(u"response_format: unsupported type '%1'"_s.arg(type));
    const QJsonObject js = o.value("json_schema"_L1).toObject();
    if (js.value("name"_L1).toString().isEmpty())
        return f->set(u"response_format.json_schema.name is required"_s);
    QJsonObject fmt{{u"type"_s, u"json_schema"_s}, {u"name"_s, js.value("name"_L1)}};
    for (const auto key : {"schema"_L1, "strict"_L1, "description"_L1}) {
        if (js.contains(key))
            fmt.insert(key, js.value(key));
    }
    *textFormat = fmt;
    return true;
}

bool translateMessages(const QJsonArray &messages, QStringList *instructions, QJsonArray *input, Failure *f)
{
    for (int i = 0; i < messages.size(); ++i) {
        const int ctx = i; // its name (where()) is only spelled out in an error
        if (!messages.at(i).isObject())
            return f->set(where(ctx) + u": must be an object"_s);
        const QJsonObject msg = messages.at(i).toObject();
        const QString role = msg.value("role"_L1).toString();
        if (role == "system"_L1 || role == "developer"_L1) {
            if (!collectText(msg.value("content"_L1), ctx, instructions, f))
                return false;
        } else if (role == "user"_L1) {
            QJsonArray content;
            if (!userContent(msg.value("content"_L1), ctx, &content, f))
                return false;
            input->append(messageItem(role, content));
        } else if (role == "assistant"_L1) {
            if (!assistantItems(msg, ctx, input, f))
                return false;
        } else if (role == "tool"_L1) {
            if (!toolOutputItem(msg, ctx, input, f))
                return false;
        } else {
            return f->set(where(ctx) + u": unknown role '%1'"_s.arg(role));
        }
    }
    return true;
}

} // namespace

QJsonObject chatRequestToResponses(const QJsonObject &chatBody, QString *error)
{
    Failure f;
    const auto fail = [&]() {
        if (error)
            *error = f.message;
        return QJsonObject();
    };

    const QString model = chatBody.value("model"_L1).toString();
    if (model.isEmpty()) {
        f.set(u"model is required"_s);
        return fail();
    }
    const QJsonValue messagesValue = chatBody.value("messages"_L1);
    if (!messagesValue.isArray() || messagesValue.toArray().isEmpty()) {
        f.set(u"messages must be a non-empty array"_s);
        return fail();
    }

    QStringList instructions;
    QJsonArray input;
    if (!translateMessages(messagesValue.toArray(), &instructions, &input, &f))
        return fail();

    instructions.removeAll(QString()); // an empty system message must not leave a stray blank line
    QJsonObject out{{u"model"_s, model},
                    {u"instructions"_s, instructions.join("\n\n"_L1)},
                    {u"input"_s, input},
                    {u"stream"_s, true},
                    {u"store"_s, false}};

    const QJsonValue tools = chatBody.value("tools"_L1);
    if (!tools.isUndefined() && !tools.isNull()) {
        QJsonArray translated;
        if (!translateTools(tools, &translated, &f))
            return fail();
        out.insert(u"tools"_s, translated);
    }
    const QJsonValue toolChoice = chatBody.value("tool_choice"_L1);
    if (!toolChoice.isUndefined() && !toolChoice.isNull()) {
        QJsonValue translated;
        if (!translateToolChoice(toolChoice, &translated, &f))
            return fail();
        out.insert(u"tool_choice"_s, translated);
    }
    if (chatBody.value("parallel_tool_calls"_L1).isBool())
        out.insert(u"parallel_tool_calls"_s, chatBody.value("parallel_tool_calls"_L1));

    QJsonObject text;
    const QJsonValue rf = chatBody.value("response_format"_L1);
    if (!rf.isUndefined() && !rf.isNull()) {
        QJsonObject format;
        if (!translateResponseFormat(rf, &format, &f))
            return fail();
        text.insert(u"format"_s, format);
    }
    if (chatBody.value("verbosity"_L1).isString())
        text.insert(u"verbosity"_s, chatBody.value("verbosity"_L1));
    if (!text.isEmpty())
        out.insert(u"text"_s, text);

    if (chatBody.value("reasoning_effort"_L1).isString())
        out.insert(u"reasoning"_s, QJsonObject{{u"effort"_s, chatBody.value("reasoning_effort"_L1)}});
    if (chatBody.value("prompt_cache_key"_L1).isString())
        out.insert(u"prompt_cache_key"_s, chatBody.value("prompt_cache_key"_L1));
    return out;
}

} // namespace sy
