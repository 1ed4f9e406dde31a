#pragma once

#include "store/RequestLogRecord.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QList>
#include <optional>

namespace sy {

class Database;

class RequestLogRepository
{
public:
    explicit RequestLogRepository(Database &db);

    // Inserts one row; rejects a record without request id or route, or with a status or kill stage that
    // is not one of the names DESIGN.md defines. A request id is logged once.
    bool insert(const RequestLogRecord &record, QString *error);
    // Whether a row for `requestId` exists (false with *error set on a failure).
    bool exists(const QString &requestId, QString *error);
    // Sets the model of `requestId`'s row if it has none: a turn booked before its body's scan told the model
    // (a client gone while a large body was scanned). False with *error set on a failure only; *updated (if
    // given): whether a row took it.
    bool fillMissingModel(const QString &requestId, const QString &model, QString *error, bool *updated = nullptr);
    // Newest first (by start time), at most `limit` rows.
    QList<RequestLogRecord> recent(int limit, QString *error = nullptr);
    std::optional<RequestLogRecord> find(const QString &requestId, QString *error = nullptr);

    // Exactly the JSON object DESIGN.md shows, with ISO 8601 UTC times and null for unknown values.
    static QJsonObject toJson(const RequestLogRecord &record);
    static QJsonArray toJson(const QList<RequestLogRecord> &records);

private:
    Database &m_db;
};

} // namespace sy
