#include "api/translate/ResponseAccumulator.h"

#include "api/translate/ResponseEventType.h"

#include <QJsonArray>
#include <algorithm>

using namespace Qt::StringLiterals;

namespace sy {

void ResponseAccumulator::onEvent(const QByteArray &type, const QJsonObject &data)
{
    if (m_terminal)
        return;
    // Compared as bytes: a QString made of the type was an allocation and a conversion per streamed event.
    const QByteArray t = type.isEmpty() ? data.value("type"_L1).toString().toUtf8() : type;
    const ResponseEventType kind = responseEventType(t);

    if (kind == ResponseEventType::OutputItemDone) {
        if (m_summaryOnly)
            return;
        const QJsonValue index = data.value("output_index"_L1);
        // Without an index the item goes after everything seen so far, i.e. in arrival order.
        const int at = index.isDouble() ? index.toInt() : (m_doneItems.isEmpty() ? 0 : m_doneItems.lastKey() + 1);
        m_doneItems.insert(at, data.value("item"_L1).toObject());
    } else if (kind == ResponseEventType::Created || kind == ResponseEventType::InProgress) {
        if (data.value("response"_L1).isObject())
            m_response = kept(data.value("response"_L1).toObject());
    } else if (isTerminalResponseEvent(kind)) {
        m_terminal = true;
        m_response = kept(data.value("response"_L1).toObject());
        if (!m_response.value("status"_L1).isString())
            m_response.insert(u"status"_s, QString::fromLatin1(t.mid(qstrlen("response."))));
        if (kind == ResponseEventType::Failed)
            m_error = m_response.value("error"_L1).toObject();
    } else if (kind == ResponseEventType::Error) {
        m_terminal = true;
        if (data.value("error"_L1).isObject()) {
            m_error = data.value("error"_L1).toObject();
        } else {
            // Flat form {type:"error", code, message, param, sequence_number}: keep the error's own fields.
            m_error = data;
            m_error.remove(u"type"_s);
            m_error.remove(u"sequence_number"_s);
        }
        m_response.insert(u"status"_s, u"failed"_s);
        m_response.insert(u"error"_s, m_error);
    }
}

bool ResponseAccumulator::usesData(const QByteArray &type) const
{
    if (type.isEmpty())
        return true; // the type is in the data
    if (m_terminal)
        return false;
    // A summary takes nothing from response.in_progress that response.created did not give (the id; the status
    // is read from the terminal event): once a response is kept, that parse is skipped.
    switch (responseEventType(type)) {
    case ResponseEventType::InProgress:
        return !m_summaryOnly || m_response.isEmpty();
    case ResponseEventType::Created:
    case ResponseEventType::Completed:
    case ResponseEventType::Incomplete:
    case ResponseEventType::Failed:
    case ResponseEventType::Error:
        return true;
    case ResponseEventType::OutputItemDone:
        return !m_summaryOnly;
    case ResponseEventType::RateLimits:
    case ResponseEventType::Other:
        return false;
    }
    return false;
}

void ResponseAccumulator::dropAllButSummary()
{
    m_summaryOnly = true;
    m_response = kept(m_response);
    m_doneItems.clear();
}

QJsonObject ResponseAccumulator::kept(const QJsonObject &response) const
{
    if (!m_summaryOnly)
        return response;
    static constexpr QLatin1String keys[] = {"id"_L1, "status"_L1, "usage"_L1, "error"_L1, "incomplete_details"_L1};
    // A summary read by responseEventSummary() holds these members only: it is kept as it is (shared).
    bool onlyKept = true;
    for (auto it = response.constBegin(); onlyKept && it != response.constEnd(); ++it)
        onlyKept = std::find(std::begin(keys), std::end(keys), it.key()) != std::end(keys);
    if (onlyKept)
        return response;
    QJsonObject summary;
    for (const QLatin1String key : keys) {
        const auto it = response.constFind(key);
        if (it != response.constEnd())
            summary.insert(key, *it);
    }
    return summary;
}

QString ResponseAccumulator::status() const
{
    return m_terminal ? m_response.value("status"_L1).toString() : QString();
}

QJsonObject ResponseAccumulator::response() const
{
    const QJsonValue output = m_response.value("output"_L1);
    if (output.isArray() && !output.toArray().isEmpty())
        return m_response;
    QJsonArray rebuilt;
    for (const QJsonObject &item : m_doneItems)
        rebuilt.append(item);
    QJsonObject r = m_response;
    // The openai SDK throws on a response object without `output`, so it is always present.
    r.insert(u"output"_s, rebuilt);
    return r;
}

} // namespace sy
