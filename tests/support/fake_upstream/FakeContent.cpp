#include "FakeContent.h"

#include <QJsonDocument>
#include <QJsonValue>

namespace sy::fake {

namespace {

QJsonObject window(double usedPercent, int windowMinutes, qint64 resetAfter, qint64 now)
{
    return QJsonObject{{QStringLiteral("used_percent"), usedPercent},
                       {QStringLiteral("limit_window_seconds"), qint64(windowMinutes) * 60},
                       {QStringLiteral("reset_after_seconds"), resetAfter},
                       {QStringLiteral("reset_at"), now + resetAfter}};
}

QJsonObject eventWindow(double usedPercent, int windowMinutes, qint64 resetAfter, qint64 now)
{
    return QJsonObject{{QStringLiteral("used_percent"), usedPercent},
                       {QStringLiteral("window_minutes"), windowMinutes},
                       {QStringLiteral("reset_at"), now + resetAfter}};
}

QByteArray number(double v)
{
    return QByteArray::number(v, 'g', 6);
}

QJsonObject responseObject(const TurnSpec &spec, const QString &status)
{
    const QJsonValue previous = spec.body.value(QStringLiteral("previous_response_id"));
    return QJsonObject{
        {QStringLiteral("id"), spec.responseId},
        {QStringLiteral("object"), QStringLiteral("response")},
        {QStringLiteral("created_at"), spec.createdAtSeconds},
        {QStringLiteral("status"), status},
        {QStringLiteral("error"), QJsonValue::Null},
        {QStringLiteral("incomplete_details"), QJsonValue::Null},
        {QStringLiteral("model"), spec.body.value(QStringLiteral("model")).toString(QStringLiteral("gpt-5-codex"))},
        {QStringLiteral("output"), QJsonArray()},
        {QStringLiteral("parallel_tool_calls"), spec.body.value(QStringLiteral("parallel_tool_calls")).toBool()},
        {QStringLiteral("previous_response_id"), previous.isString() ? previous : QJsonValue(QJsonValue::Null)},
        {QStringLiteral("store"), false},
        {QStringLiteral("tool_choice"),
         spec.body.value(QStringLiteral("tool_choice")).toString(QStringLiteral("auto"))},
        {QStringLiteral("usage"), QJsonValue::Null},
    };
}

QJsonObject lastInputItem(const QJsonObject &body)
{
    const QJsonValue input = body.value(QStringLiteral("input"));
    if (input.isString())
        return QJsonObject{{QStringLiteral("type"), QStringLiteral("message")},
                           {QStringLiteral("role"), QStringLiteral("user")},
                           {QStringLiteral("content"), input.toString()}};
    const QJsonArray items = input.toArray();
    return items.isEmpty() ? QJsonObject() : items.last().toObject();
}

QString messageText(const QJsonObject &item)
{
    const QJsonValue content = item.value(QStringLiteral("content"));
    if (content.isString())
        return content.toString();
    QString text;
    for (const QJsonValue &part : content.toArray())
        text += part.toObject().value(QStringLiteral("text")).toString();
    return text;
}

bool isUserMessage(const QJsonObject &item)
{
    return item.value(QStringLiteral("role")).toString() == QLatin1String("user") &&
           item.value(QStringLiteral("type")).toString(QStringLiteral("message")) == QLatin1String("message");
}

QString answerText(const TurnSpec &spec)
{
    const QString text = lastUserText(spec.body);
    const qsizetype echo = text.indexOf(QLatin1String("ECHO:"));
    if (echo >= 0)
        return text.mid(echo + 5).trimmed();
    return QStringLiteral("Hello from fake upstream (account %1).").arg(spec.accountId);
}

QString toolToCall(const QJsonObject &body)
{
    const QJsonArray tools = body.value(QStringLiteral("tools")).toArray();
    if (tools.isEmpty() || !isUserMessage(lastInputItem(body)) ||
        !messageText(lastInputItem(body)).contains(QLatin1String("CALL_TOOL")))
        return {};
    for (const QJsonValue &tool : tools) {
        QString name = tool.toObject().value(QStringLiteral("name")).toString();
        if (name.isEmpty()) // Chat Completions style {"type":"function","function":{"name":...}}
            name =
                tool.toObject().value(QStringLiteral("function")).toObject().value(QStringLiteral("name")).toString();
        if (!name.isEmpty())
            return name;
    }
    return QStringLiteral("shell");
}

// Several deltas per answer: one per word, or thirds of a short single word.
QStringList splitIntoDeltas(const QString &text)
{
    QStringList pieces;
    qsizetype start = 0;
    for (qsizetype i = 0; i < text.size(); ++i) {
        if (text.at(i) == QLatin1Char(' ')) {
            pieces.append(text.mid(start, i - start + 1));
            start = i + 1;
        }
    }
    if (start < text.size())
        pieces.append(text.mid(start));
    if (pieces.size() < 3 && text.size() >= 3) {
        pieces.clear();
        const qsizetype third = text.size() / 3;
        pieces << text.left(third) << text.mid(third, third) << text.mid(2 * third);
    }
    if (pieces.isEmpty())
        pieces.append(text);
    return pieces;
}

QString idSuffix(const QString &responseId)
{
    return responseId.mid(responseId.indexOf(QLatin1Char('_')) + 1);
}

class FrameList
{
public:
    void add(const QByteArray &type, QJsonObject data, bool delta = false)
    {
        data.insert(QStringLiteral("type"), QString::fromLatin1(type));
        if (!type.startsWith("codex."))
            data.insert(QStringLiteral("sequence_number"), m_sequence++);
        m_frames.append({sseFrame(type, data), delta});
    }
    QList<SseFrame> take() { return std::move(m_frames); }

private:
    QList<SseFrame> m_frames;
    int m_sequence = 0;
};

} // namespace

QString applyUsageUpdate(UsageState &s, const QJsonObject &u)
{
    for (auto it = u.begin(); it != u.end(); ++it) {
        const QString key = it.key();
        const QJsonValue v = it.value();
        if (key == QLatin1String("account_id") || key == QLatin1String("token"))
            continue;
        if (key == QLatin1String("plan_type") && v.isString())
            s.planType = v.toString();
        else if (key == QLatin1String("primary_used_percent") && v.isDouble())
            s.primaryUsedPercent = v.toDouble();
        else if (key == QLatin1String("secondary_used_percent") && v.isDouble())
            s.secondaryUsedPercent = v.toDouble();
        else if (key == QLatin1String("primary_window_minutes") && v.isDouble())
            s.primaryWindowMinutes = v.toInt();
        else if (key == QLatin1String("secondary_window_minutes") && v.isDouble())
            s.secondaryWindowMinutes = v.toInt();
        else if (key == QLatin1String("primary_reset_after_seconds") && v.isDouble())
            s.primaryResetAfterSeconds = qint64(v.toDouble());
        else if (key == QLatin1String("secondary_reset_after_seconds") && v.isDouble())
            s.secondaryResetAfterSeconds = qint64(v.toDouble());
        else if (key == QLatin1String("has_credits") && v.isBool())
            s.hasCredits = v.toBool();
        else if (key == QLatin1String("unlimited") && v.isBool())
            s.unlimited = v.toBool();
        else if (key == QLatin1String("balance") && v.isString())
            s.balance = v.toString();
        else
            return QStringLiteral("bad usage key or value type: %1").arg(key);
    }
    return {};
}

HttpHeaderList rateLimitHeaders(const UsageState &u, qint64 now)
{
    return {
        {"x-codex-primary-used-percent", number(u.primaryUsedPercent)},
        {"x-codex-primary-window-minutes", QByteArray::number(u.primaryWindowMinutes)},
        {"x-codex-primary-reset-at", QByteArray::number(now + u.primaryResetAfterSeconds)},
        {"x-codex-secondary-used-percent", number(u.secondaryUsedPercent)},
        {"x-codex-secondary-window-minutes", QByteArray::number(u.secondaryWindowMinutes)},
        {"x-codex-secondary-reset-at", QByteArray::number(now + u.secondaryResetAfterSeconds)},
        {"x-codex-credits-has-credits", u.hasCredits ? "True" : "False"},
        {"x-codex-credits-unlimited", u.unlimited ? "True" : "False"},
        {"x-codex-credits-balance", u.balance.toUtf8()},
    };
}

QJsonObject whamUsageJson(const UsageState &u, qint64 now)
{
    const bool reached = u.primaryUsedPercent >= 100 || u.secondaryUsedPercent >= 100;
    return QJsonObject{
        {QStringLiteral("plan_type"), u.planType},
        {QStringLiteral("rate_limit"),
         QJsonObject{
             {QStringLiteral("allowed"), !reached},
             {QStringLiteral("limit_reached"), reached},
             {QStringLiteral("primary_window"),
              window(u.primaryUsedPercent, u.primaryWindowMinutes, u.primaryResetAfterSeconds, now)},
             {QStringLiteral("secondary_window"),
              window(u.secondaryUsedPercent, u.secondaryWindowMinutes, u.secondaryResetAfterSeconds, now)},
         }},
        {QStringLiteral("credits"), QJsonObject{{QStringLiteral("has_credits"), u.hasCredits},
                                                {QStringLiteral("unlimited"), u.unlimited},
                                                {QStringLiteral("balance"), u.balance}}},
    };
}

QJsonObject rateLimitsEvent(const UsageState &u, qint64 now)
{
    return QJsonObject{
        {QStringLiteral("plan_type"), u.planType},
        {QStringLiteral("rate_limits"),
         QJsonObject{
             {QStringLiteral("primary"),
              eventWindow(u.primaryUsedPercent, u.primaryWindowMinutes, u.primaryResetAfterSeconds, now)},
             {QStringLiteral("secondary"),
              eventWindow(u.secondaryUsedPercent, u.secondaryWindowMinutes, u.secondaryResetAfterSeconds, now)},
         }},
        {QStringLiteral("credits"), QJsonObject{{QStringLiteral("has_credits"), u.hasCredits},
                                                {QStringLiteral("unlimited"), u.unlimited},
                                                {QStringLiteral("balance"), u.balance}}},
    };
}

QJsonObject modelsJson()
{
    auto model = [](const QString &slug, int priority) {
        QJsonArray levels;
        for (const char *effort : {"low", "medium", "high"})
            levels.append(QJsonObject{{QStringLiteral("effort"), QString::fromLatin1(effort)},
                                      {QStringLiteral("description"), QStringLiteral("reasoning effort")}});
        return QJsonObject{{QStringLiteral("slug"), slug},
                           {QStringLiteral("display_name"), slug},
                           {QStringLiteral("description"), QStringLiteral("Fake model for tests.")},
                           {QStringLiteral("default_reasoning_level"), QStringLiteral("medium")},
                           {QStringLiteral("supported_reasoning_levels"), levels},
                           {QStringLiteral("shell_type"), QStringLiteral("shell_command")},
                           {QStringLiteral("visibility"), QStringLiteral("list")},
                           {QStringLiteral("supported_in_api"), true},
                           {QStringLiteral("priority"), priority},
                           {QStringLiteral("context_window"), 272000}};
    };
    return QJsonObject{{QStringLiteral("models"),
                        QJsonArray{model(QStringLiteral("gpt-5-codex"), 1), model(QStringLiteral("gpt-5"), 2)}}};
}

QJsonObject compactJson(const QJsonObject &body, const QString &accountId)
{
    QJsonArray output;
    for (const QJsonValue &item : body.value(QStringLiteral("input")).toArray()) {
        if (isUserMessage(item.toObject()))
            output.append(item);
    }
    const QByteArray digest = QByteArray::number(qHash(QJsonDocument(body).toJson(QJsonDocument::Compact)), 16);
    output.append(
        QJsonObject{{QStringLiteral("type"), QStringLiteral("compaction")},
                    {QStringLiteral("encrypted_content"),
                     QStringLiteral("gAAAA-fake-compaction-%1-%2").arg(accountId, QString::fromLatin1(digest))}});
    return QJsonObject{{QStringLiteral("output"), output}};
}

QByteArray sseFrame(const QByteArray &type, const QJsonObject &data)
{
    return "event: " + type + "\ndata: " + QJsonDocument(data).toJson(QJsonDocument::Compact) + "\n\n";
}

qint64 inputTokensFor(const QJsonObject &body)
{
    return qMax<qint64>(1, QJsonDocument(body).toJson(QJsonDocument::Compact).size() / 4);
}

QString lastUserText(const QJsonObject &body)
{
    const QJsonValue input = body.value(QStringLiteral("input"));
    if (input.isString())
        return input.toString();
    const QJsonArray items = input.toArray();
    for (qsizetype i = items.size() - 1; i >= 0; --i) {
        const QJsonObject item = items.at(i).toObject();
        if (isUserMessage(item))
            return messageText(item);
    }
    return {};
}

QList<SseFrame> buildTurnFrames(const TurnSpec &spec)
{
    FrameList frames;
    QJsonObject response = responseObject(spec, QStringLiteral("in_progress"));
    frames.add("response.created", {{QStringLiteral("response"), response}});
    frames.add("response.in_progress", {{QStringLiteral("response"), response}});

    const QString suffix = idSuffix(spec.responseId);
    const QString tool = toolToCall(spec.body);
    QJsonObject item;
    int pieces = 0;
    if (!tool.isEmpty()) {
        const QString itemId = QStringLiteral("fc_") + suffix;
        const QString arguments = QStringLiteral("{\"path\":\"README.md\"}");
        item = QJsonObject{{QStringLiteral("id"), itemId},
                           {QStringLiteral("type"), QStringLiteral("function_call")},
                           {QStringLiteral("status"), QStringLiteral("in_progress")},
                           {QStringLiteral("name"), tool},
                           {QStringLiteral("call_id"), QString(QStringLiteral("call_") + suffix)},
                           {QStringLiteral("arguments"), QString()}};
        frames.add("response.output_item.added", {{QStringLiteral("output_index"), 0}, {QStringLiteral("item"), item}});
        for (const QString &piece : {arguments.left(8), arguments.mid(8, 7), arguments.mid(15)}) {
            frames.add("response.function_call_arguments.delta",
                       {{QStringLiteral("item_id"), itemId},
                        {QStringLiteral("output_index"), 0},
                        {QStringLiteral("delta"), piece}},
                       true);
            ++pieces;
        }
        frames.add("response.function_call_arguments.done", {{QStringLiteral("item_id"), itemId},
                                                             {QStringLiteral("output_index"), 0},
                                                             {QStringLiteral("arguments"), arguments}});
        item.insert(QStringLiteral("status"), QStringLiteral("completed"));
        item.insert(QStringLiteral("arguments"), arguments);
    } else {
        const QString itemId = QStringLiteral("msg_") + suffix;
        const QString text = answerText(spec);
        item = QJsonObject{{QStringLiteral("id"), itemId},
                           {QStringLiteral("type"), QStringLiteral("message")},
                           {QStringLiteral("status"), QStringLiteral("in_progress")},
                           {QStringLiteral("role"), QStringLiteral("assistant")},
                           {QStringLiteral("content"), QJsonArray()}};
        const QJsonObject where{{QStringLiteral("item_id"), itemId},
                                {QStringLiteral("output_index"), 0},
                                {QStringLiteral("content_index"), 0}};
        auto with = [&where](std::initializer_list<QPair<QString, QJsonValue>> extra) {
            QJsonObject o = where;
            for (const auto &kv : extra)
                o.insert(kv.first, kv.second);
            return o;
        };
        auto part = [](const QString &t) {
            return QJsonObject{{QStringLiteral("type"), QStringLiteral("output_text")},
                               {QStringLiteral("text"), t},
                               {QStringLiteral("annotations"), QJsonArray()}};
        };
        frames.add("response.output_item.added", {{QStringLiteral("output_index"), 0}, {QStringLiteral("item"), item}});
        frames.add("response.content_part.added", with({{QStringLiteral("part"), part(QString())}}));
        for (const QString &piece : splitIntoDeltas(text)) {
            frames.add("response.output_text.delta", with({{QStringLiteral("delta"), piece}}), true);
            ++pieces;
        }
        frames.add("response.output_text.done", with({{QStringLiteral("text"), text}}));
        frames.add("response.content_part.done", with({{QStringLiteral("part"), part(text)}}));
        item.insert(QStringLiteral("status"), QStringLiteral("completed"));
        item.insert(QStringLiteral("content"), QJsonArray{part(text)});
    }
    frames.add("response.output_item.done", {{QStringLiteral("output_index"), 0}, {QStringLiteral("item"), item}});
    frames.add("codex.rate_limits", rateLimitsEvent(spec.usage, spec.createdAtSeconds));

    const qint64 input = inputTokensFor(spec.body);
    const qint64 reasoning = spec.body.contains(QStringLiteral("reasoning")) ? 8 : 0;
    const qint64 output = pieces + reasoning;
    response.insert(QStringLiteral("status"), QStringLiteral("completed"));
    response.insert(QStringLiteral("output"), QJsonArray{item});
    response.insert(QStringLiteral("usage"),
                    QJsonObject{{QStringLiteral("input_tokens"), input},
                                {QStringLiteral("input_tokens_details"),
                                 QJsonObject{{QStringLiteral("cached_tokens"), qMin(spec.cachedTokens, input)}}},
                                {QStringLiteral("output_tokens"), output},
                                {QStringLiteral("output_tokens_details"),
                                 QJsonObject{{QStringLiteral("reasoning_tokens"), reasoning}}},
                                {QStringLiteral("total_tokens"), input + output}});
    frames.add("response.completed", {{QStringLiteral("response"), response}});
    return frames.take();
}

QList<SseFrame> buildFailedTurnFrames(const TurnSpec &spec)
{
    FrameList frames;
    QJsonObject response = responseObject(spec, QStringLiteral("in_progress"));
    frames.add("response.created", {{QStringLiteral("response"), response}});
    frames.add("response.in_progress", {{QStringLiteral("response"), response}});
    response.insert(QStringLiteral("status"), QStringLiteral("failed"));
    response.insert(QStringLiteral("error"), QJsonObject{{QStringLiteral("code"), QStringLiteral("server_error")},
                                                         {QStringLiteral("message"),
                                                          QStringLiteral("The model failed to respond (scripted).")}});
    frames.add("response.failed", {{QStringLiteral("response"), response}});
    return frames.take();
}

} // namespace sy::fake
