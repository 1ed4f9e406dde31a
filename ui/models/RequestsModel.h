#pragma once

#include "data/RequestPageQuery.h"

#include <QAbstractTableModel>
#include <deque>

namespace sy::ui {

class DbWorker;

// The request log as a table, newest first, loaded page by page (keyset paging) on a DbWorker thread:
// setFilter() starts over with the first page and the matching count, fetchMore() (called by the view when
// it scrolls to the end) appends the next page, loadNewer() puts rows that arrived since on top. The GUI
// thread only inserts finished pages.
class RequestsModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column
    {
        Started,
        RequestId,
        Route,
        Model,
        Account,
        Status,
        Attempts,
        Latency,
        Tokens,
        ColumnCount
    };
    static constexpr int kPageSize = 200;

    explicit RequestsModel(DbWorker *worker, QObject *parent = nullptr);

    void setFilter(const RequestFilter &filter);
    RequestFilter filter() const { return m_filter; }
    // Reloads from the first page with the current filter.
    void reload();
    void loadNewer();

    const RequestLogRecord &record(int row) const { return m_rows.at(size_t(row)); }
    bool isLoading() const { return m_loading; }
    bool hasMore() const { return m_next.has_value(); }
    std::optional<qint64> matchingCount() const { return m_matching; }
    // Time the worker needed for the last page (database only).
    qint64 lastQueryMs() const { return m_lastQueryMs; }

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    bool canFetchMore(const QModelIndex &parent) const override;
    void fetchMore(const QModelIndex &parent) override;

signals:
    void loadingChanged(bool loading);
    void matchingCountChanged(qint64 count);
    void pageLoaded(int rows);
    void errorOccurred(const QString &error);

private:
    void request(const std::optional<RequestCursor> &after, bool count);
    void setLoading(bool loading);

    DbWorker *m_worker;
    RequestFilter m_filter;
    // A deque: appending a page (or putting new rows on top) never moves the rows already loaded, so the GUI
    // thread's cost per page stays flat however many pages came before.
    std::deque<RequestLogRecord> m_rows;
    std::optional<RequestCursor> m_next;
    std::optional<qint64> m_matching;
    quint64 m_generation = 0;
    bool m_loading = false;
    bool m_loadingNewer = false;
    qint64 m_lastQueryMs = 0;
};

} // namespace sy::ui

Q_DECLARE_METATYPE(sy::ui::RequestPage)
