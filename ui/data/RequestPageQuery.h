#pragma once

#include "store/RequestLogRecord.h"

#include <QList>
#include <QString>
#include <optional>

namespace sy {
class Database;
}

namespace sy::ui {

// What the Requests page asks for. Every filter applies to the whole request log (in SQL), never only to the
// rows already loaded.
struct RequestFilter
{
    QString accountId;            // empty: any
    QString status;               // empty: any
    QString model;                // empty: any
    std::optional<qint64> fromMs; // started_at_ms >= fromMs
    std::optional<qint64> toMs;   // started_at_ms < toMs
    QString search;               // part of the request id or the upstream request id

    bool operator==(const RequestFilter &o) const
    {
        return accountId == o.accountId && status == o.status && model == o.model && fromMs == o.fromMs &&
               toMs == o.toMs && search == o.search;
    }
    bool operator!=(const RequestFilter &o) const { return !(*this == o); }
};

// A position in the newest-first order (started_at_ms DESC, request_id DESC).
struct RequestCursor
{
    qint64 startedAtMs = 0;
    QString requestId;
};

struct RequestPage
{
    QList<RequestLogRecord> rows;
    std::optional<RequestCursor> next; // set when older rows follow
    std::optional<qint64> matching;    // rows matching the filter (when counted)
    QString error;
    qint64 elapsedMs = 0;
};

// Keyset paging over request_log: up to `limit` rows strictly older than `after` (the newest when nullopt)
// that match `filter`, newest first. Uses the (started_at_ms, request_id) index, so page N costs what page 1
// costs. `count` adds the number of matching rows.
RequestPage loadRequestPage(Database &db, const RequestFilter &filter, const std::optional<RequestCursor> &after,
                            int limit, bool count);
// Rows strictly newer than `than` that match, newest first (at most `limit`): what arrived since the top row.
RequestPage loadNewerRequests(Database &db, const RequestFilter &filter, const RequestCursor &than, int limit);

} // namespace sy::ui
