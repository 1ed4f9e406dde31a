#pragma once

#include "store/RequestLogRecord.h"

#include <QHash>
#include <QTreeWidget>

namespace sy::ui {

// The Requests page's detail pane: why the request went where it went. The request itself, the candidates
// the router skipped and why (blocked_by), every attempt (account, egress proxy, outcome, elapsed), the
// stage latencies and the tokens.
class RequestDetailView : public QTreeWidget
{
    Q_OBJECT
public:
    explicit RequestDetailView(QWidget *parent = nullptr);

    // accountNames: id -> alias for readable names (ids stay visible in tooltips).
    void showRecord(const RequestLogRecord &record, const QHash<QString, QString> &accountNames);
    void clearRecord();
    // The text of the value in section `section` (0-based top-level item) on the row named `label`.
    QString value(const QString &section, const QString &label) const;
};

} // namespace sy::ui
