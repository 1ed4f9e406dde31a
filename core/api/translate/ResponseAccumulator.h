#pragma once

#include "api/translate/TokenUsage.h"

#include <QByteArray>
#include <QJsonObject>
#include <QMap>
#include <QString>

namespace sy {

// Consumes an upstream Responses SSE stream and yields the final response object, for clients that asked
// for a non-streaming answer (non-streaming /v1/responses, non-streaming chat completions).
//
// The terminal event (response.completed, response.incomplete or response.failed) supplies the response
// object. The backend may send it with an empty `output`; then `output` is rebuilt from the
// response.output_item.done items in output_index order. An `error` event also ends the stream: the
// response then has status "failed" and the event's error, and error() returns it.
class ResponseAccumulator
{
public:
    // Summary only: keep the response's id, status, usage, error and incomplete_details, never its output or
    // echoed request fields. For sinks that pass the stream through and need the accumulator only for the request log.
    void setSummaryOnly(bool summaryOnly) { m_summaryOnly = summaryOnly; }
    // From now on summary only, and what was kept beyond the summary (the output, its finished items, the
    // echoed request) is dropped: for a non-streaming answer built already, whose turn still needs the usage,
    // status and id while its settlement commits.
    void dropAllButSummary();

    // `type` is the SSE event name; when empty, data["type"] is used.
    void onEvent(const QByteArray &type, const QJsonObject &data);
    // Whether onEvent() reads the data of an event of this type: a caller may pass an empty object for the
    // others instead of parsing them (the done events repeat a whole item, text or reasoning, in JSON).
    bool usesData(const QByteArray &type) const;

    // True once a terminal event (or an `error` event) has arrived; later events are ignored.
    bool terminal() const { return m_terminal; }
    // "completed", "incomplete", "failed", or "" before any terminal event.
    QString status() const;
    // The final response object, `output` rebuilt if needed. Before a terminal event: the last response
    // object seen (response.created / in_progress), with the items finished so far as `output`. In summary
    // mode only the summary fields, with an empty `output`.
    QJsonObject response() const;
    // The failure: a failed response's `error`, or the data of an `error` event; empty otherwise.
    QJsonObject error() const { return m_error; }
    TokenUsage usage() const { return usageFromResponse(m_response); }
    // The upstream's response id (from the first event that carried one), for continuity anchors.
    QString responseId() const { return m_response.value(QLatin1String("id")).toString(); }

private:
    QJsonObject kept(const QJsonObject &response) const;

    bool m_summaryOnly = false;
    QJsonObject m_response;
    QMap<int, QJsonObject> m_doneItems; // output_index -> finished item
    QJsonObject m_error;
    bool m_terminal = false;
};

} // namespace sy
