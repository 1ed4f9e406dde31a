#include "pages/RequestsPage.h"

#include "data/StoreClient.h"
#include "models/RequestsModel.h"
#include "pages/RequestDetailView.h"

#include <QComboBox>
#include <QDateTime>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

namespace sy::ui {

namespace {

constexpr qint64 kHourMs = 3600 * 1000;

} // namespace

RequestsPage::RequestsPage(StoreClient *store, QWidget *parent)
    : QWidget(parent), m_model(new RequestsModel(store->queryWorker(), this))
{
    setObjectName(QStringLiteral("requestsPage"));
    auto *layout = new QVBoxLayout(this);
    auto *filters = new QHBoxLayout;
    m_account = new QComboBox(this);
    m_account->setObjectName(QStringLiteral("accountFilter"));
    m_account->addItem(tr("All accounts"), QString());
    m_status = new QComboBox(this);
    m_status->setObjectName(QStringLiteral("statusFilter"));
    m_status->addItem(tr("Any status"), QString());
    for (const QString &s : RequestLogRecord::statusNames())
        m_status->addItem(s, s);
    m_modelFilter = new QLineEdit(this);
    m_modelFilter->setObjectName(QStringLiteral("modelFilter"));
    m_modelFilter->setPlaceholderText(tr("Model"));
    m_time = new QComboBox(this);
    m_time->setObjectName(QStringLiteral("timeFilter"));
    m_time->addItem(tr("Any time"), 0);
    m_time->addItem(tr("Last hour"), 1);
    m_time->addItem(tr("Last 24 hours"), 24);
    m_time->addItem(tr("Last 7 days"), 24 * 7);
    m_time->addItem(tr("Last 30 days"), 24 * 30);
    m_search = new QLineEdit(this);
    m_search->setObjectName(QStringLiteral("requestSearch"));
    m_search->setPlaceholderText(tr("Search request id"));
    m_search->setClearButtonEnabled(true);
    m_count = new QLabel(this);
    m_count->setObjectName(QStringLiteral("requestCount"));
    filters->addWidget(m_account);
    filters->addWidget(m_status);
    filters->addWidget(m_modelFilter);
    filters->addWidget(m_time);
    filters->addWidget(m_search, 1);
    filters->addWidget(m_count);
    layout->addLayout(filters);

    auto *split = new QSplitter(Qt::Horizontal, this);
    m_view = new QTableView(split);
    m_view->setObjectName(QStringLiteral("requestsView"));
    m_view->setModel(m_model);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    m_view->verticalHeader()->hide();
    // One fixed row height: the view never measures rows, so pages landing on a view of hundreds of
    // thousands of rows (or a new row on top) cost the same as on an empty one.
    m_view->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    m_view->verticalHeader()->setDefaultSectionSize(m_view->fontMetrics().height() + 8);
    m_view->horizontalHeader()->setStretchLastSection(true);
    m_view->setWordWrap(false);
    // Fixed starting widths: measuring contents would read every loaded row.
    const int widths[] = {150, 220, 200, 110, 90, 90, 60, 70};
    for (int c = 0; c < int(std::size(widths)); ++c)
        m_view->horizontalHeader()->resizeSection(c, widths[c]);
    m_detail = new RequestDetailView(split);
    split->addWidget(m_view);
    split->addWidget(m_detail);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    layout->addWidget(split, 1);

    m_debounce.setSingleShot(true);
    m_debounce.setInterval(300);
    connect(&m_debounce, &QTimer::timeout, this, &RequestsPage::applyFilter);
    const auto later = [this] { m_debounce.start(); };
    connect(m_account, &QComboBox::currentIndexChanged, this, &RequestsPage::applyFilter);
    connect(m_status, &QComboBox::currentIndexChanged, this, &RequestsPage::applyFilter);
    connect(m_time, &QComboBox::currentIndexChanged, this, &RequestsPage::applyFilter);
    connect(m_modelFilter, &QLineEdit::textChanged, this, later);
    connect(m_search, &QLineEdit::textChanged, this, later);
    connect(m_model, &RequestsModel::matchingCountChanged, this, [this](qint64 n) {
        m_count->setText(tr("%n matching request(s)", nullptr, int(qMin<qint64>(n, INT_MAX))));
    });
    connect(m_model, &RequestsModel::errorOccurred, this,
            [this](const QString &e) { m_count->setText(tr("Cannot read the log: %1").arg(e)); });
    connect(m_view->selectionModel(), &QItemSelectionModel::currentRowChanged, this, &RequestsPage::showSelected);
    connect(store, &StoreClient::snapshotChanged, this, &RequestsPage::updateAccounts);
    if (store->snapshot())
        updateAccounts(store->snapshot());
    m_newer.setInterval(2000);
    connect(&m_newer, &QTimer::timeout, this, [this] {
        // Only the unbounded newest-first view grows at the top.
        if (!m_model->filter().toMs)
            m_model->loadNewer();
    });
}

RequestFilter RequestsPage::currentFilter() const
{
    RequestFilter f;
    f.accountId = m_account->currentData().toString();
    f.status = m_status->currentData().toString();
    f.model = m_modelFilter->text().trimmed();
    const int hours = m_time->currentData().toInt();
    if (hours > 0)
        f.fromMs = QDateTime::currentMSecsSinceEpoch() - hours * kHourMs;
    f.search = m_search->text().trimmed();
    return f;
}

void RequestsPage::applyFilter()
{
    m_loaded = true;
    m_detail->clearRecord();
    m_model->setFilter(currentFilter());
}

void RequestsPage::showEvent(QShowEvent *event)
{
    QWidget::showEvent(event);
    if (!m_loaded)
        applyFilter();
    m_newer.start();
}

void RequestsPage::hideEvent(QHideEvent *event)
{
    QWidget::hideEvent(event);
    m_newer.stop();
}

void RequestsPage::updateAccounts(const SnapshotPtr &snapshot)
{
    if (!snapshot || !snapshot->error.isEmpty())
        return;
    QHash<QString, QString> names;
    for (const AccountView &a : snapshot->accounts)
        names.insert(a.record.id, a.record.displayName());
    if (names == m_names)
        return;
    m_names = names;
    const QString current = m_account->currentData().toString();
    const QSignalBlocker block(m_account);
    while (m_account->count() > 1)
        m_account->removeItem(1);
    for (const AccountView &a : snapshot->accounts)
        m_account->addItem(a.record.displayName(), a.record.id);
    const int index = m_account->findData(current);
    m_account->setCurrentIndex(index < 0 ? 0 : index);
    if (index < 0 && !current.isEmpty())
        applyFilter(); // the filtered account is gone
}

void RequestsPage::showSelected()
{
    const QModelIndex current = m_view->selectionModel()->currentIndex();
    if (!current.isValid() || current.row() >= m_model->rowCount()) {
        m_detail->clearRecord();
        return;
    }
    m_detail->showRecord(m_model->record(current.row()), m_names);
}

} // namespace sy::ui
