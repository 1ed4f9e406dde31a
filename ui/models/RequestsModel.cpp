#include "models/RequestsModel.h"

#include "Format.h"
#include "data/DbWorker.h"
#include "store/Database.h"

namespace sy::ui {

namespace {

QString number(const std::optional<qint64> &v)
{
    return v ? QString::number(*v) : QStringLiteral("-");
}

} // namespace

RequestsModel::RequestsModel(DbWorker *worker, QObject *parent) : QAbstractTableModel(parent), m_worker(worker) {}

void RequestsModel::setFilter(const RequestFilter &filter)
{
    m_filter = filter;
    reload();
}

void RequestsModel::reload()
{
    ++m_generation; // answers to earlier requests are dropped
    beginResetModel();
    // Freeing hundreds of thousands of loaded rows takes tens of ms: the worker thread does it. The rows move
    // into the job itself (no copy of the pointer stays here): had this thread kept a reference, an idle
    // worker could run the job first and leave the last reference, and so the freeing, to the GUI thread.
    auto old = std::make_unique<std::deque<RequestLogRecord>>();
    old->swap(m_rows);
    m_worker->post([old = std::shared_ptr<std::deque<RequestLogRecord>>(std::move(old))](DbWorker::Context &) mutable {
        old.reset();
    });
    m_next.reset();
    m_matching.reset();
    endResetModel();
    m_loadingNewer = false;
    request(std::nullopt, true);
}

void RequestsModel::setLoading(bool loading)
{
    if (m_loading == loading)
        return;
    m_loading = loading;
    emit loadingChanged(loading);
}

void RequestsModel::request(const std::optional<RequestCursor> &after, bool count)
{
    setLoading(true);
    const quint64 generation = m_generation;
    const RequestFilter filter = m_filter;
    m_worker->run<RequestPage>(
        [filter, after, count](DbWorker::Context &ctx) {
            QString error;
            Database *db = ctx.db(&error);
            if (!db) {
                RequestPage failed;
                failed.error = error;
                return failed;
            }
            return loadRequestPage(*db, filter, after, kPageSize, count);
        },
        this,
        [this, generation](const RequestPage &page) {
            if (generation != m_generation)
                return;
            m_lastQueryMs = page.elapsedMs;
            if (!page.error.isEmpty()) {
                setLoading(false);
                emit errorOccurred(page.error);
                return;
            }
            // The cursor moves before anyone hears of the page: a view or tester reacting to loadingChanged or
            // rowsInserted may ask for the next page at once (canFetchMore/fetchMore), and must not get this
            // one again.
            m_next = page.next;
            if (page.matching)
                m_matching = page.matching;
            setLoading(false);
            if (!page.rows.isEmpty()) {
                beginInsertRows({}, int(m_rows.size()), int(m_rows.size() + page.rows.size()) - 1);
                m_rows.insert(m_rows.end(), page.rows.begin(), page.rows.end());
                endInsertRows();
            }
            if (page.matching)
                emit matchingCountChanged(*page.matching);
            emit pageLoaded(int(page.rows.size()));
        });
}

void RequestsModel::loadNewer()
{
    if (m_loading || m_loadingNewer)
        return;
    if (m_rows.empty()) {
        reload();
        return;
    }
    m_loadingNewer = true;
    const quint64 generation = m_generation;
    const RequestFilter filter = m_filter;
    const RequestCursor top{m_rows.front().startedAtMs, m_rows.front().requestId};
    m_worker->run<RequestPage>(
        [filter, top](DbWorker::Context &ctx) {
            QString error;
            Database *db = ctx.db(&error);
            if (!db) {
                RequestPage failed;
                failed.error = error;
                return failed;
            }
            return loadNewerRequests(*db, filter, top, kPageSize);
        },
        this,
        [this, generation](const RequestPage &page) {
            if (generation != m_generation)
                return;
            m_loadingNewer = false;
            if (!page.error.isEmpty() || page.rows.isEmpty())
                return;
            if (page.rows.size() >= kPageSize) {
                reload(); // more arrived than one page: there may be a gap, start over
                return;
            }
            beginInsertRows({}, 0, int(page.rows.size()) - 1);
            m_rows.insert(m_rows.begin(), page.rows.begin(), page.rows.end());
            endInsertRows();
            if (m_matching) {
                m_matching = *m_matching + page.rows.size();
                emit matchingCountChanged(*m_matching);
            }
        });
}

int RequestsModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_rows.size());
}

int RequestsModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

bool RequestsModel::canFetchMore(const QModelIndex &parent) const
{
    return !parent.isValid() && m_next.has_value() && !m_loading;
}

void RequestsModel::fetchMore(const QModelIndex &parent)
{
    if (canFetchMore(parent))
        request(m_next, false);
}

QVariant RequestsModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const RequestLogRecord &r = m_rows.at(size_t(index.row()));
    if (role == Qt::UserRole)
        return r.requestId;
    if (role != Qt::DisplayRole)
        return {};
    switch (Column(index.column())) {
    case Started:
        return QDateTime::fromMSecsSinceEpoch(r.startedAtMs).toString(QStringLiteral("yyyy-MM-dd HH:mm:ss"));
    case RequestId:
        return r.requestId;
    case Route:
        return r.route;
    case Model:
        return r.model.value_or(QStringLiteral("-"));
    case Account:
        return r.accountAlias ? *r.accountAlias : r.accountId.value_or(QStringLiteral("-"));
    case Status:
        return r.killStage ? tr("%1 (%2)").arg(r.status, *r.killStage) : r.status;
    case Attempts:
        return QString::number(r.attempts.size());
    case Latency:
        return number(r.latency.totalMs);
    case Tokens:
        return number(r.tokens.total);
    case ColumnCount:
        break;
    }
    return {};
}

QVariant RequestsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (Column(section)) {
    case Started:
        return tr("Started");
    case RequestId:
        return tr("Request");
    case Route:
        return tr("Route");
    case Model:
        return tr("Model");
    case Account:
        return tr("Account");
    case Status:
        return tr("Status");
    case Attempts:
        return tr("Attempts");
    case Latency:
        return tr("Total ms");
    case Tokens:
        return tr("Tokens");
    case ColumnCount:
        break;
    }
    return {};
}

} // namespace sy::ui
