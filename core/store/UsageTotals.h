#pragma once

#include <QHash>
#include <QString>

#include <optional>

namespace sy {

class Database;

struct TokenTotals
{
    qint64 requests = 0;
    qint64 input = 0;
    qint64 cached = 0;
    qint64 output = 0;
    qint64 reasoning = 0;
    qint64 total = 0;
};

// Token totals per account over the request log since `sinceMs` (unknown numbers count as nothing).
QHash<QString, TokenTotals> tokenTotalsByAccount(Database &db, qint64 sinceMs, QString *error);

} // namespace sy
