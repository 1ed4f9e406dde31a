#include "DashboardWindow.h"

#include "store/AccountRepository.h"
#include "store/Database.h"
#include "store/RequestLogRepository.h"

#include <QHeaderView>
#include <QJsonArray>
#include <QJsonObject>
#include <QLabel>
#include <QSplitter>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>

namespace sy::ui {

namespace {

QTableWidget *makeTable(const QStringList &headers, QWidget *parent)
{
    auto *t = new QTableWidget(0, int(headers.size()), parent);
    t->setHorizontalHeaderLabels(headers);
    t->verticalHeader()->hide();
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->setSelectionBehavior(QAbstractItemView::SelectRows);
    t->horizontalHeader()->setStretchLastSection(true);
    return t;
}

QString percent(const std::optional<double> &v)
{
    return v ? QString::number(*v, 'f', 0) + QLatin1Char('%') : QStringLiteral("?");
}

void setRow(QTableWidget *t, int row, const QStringList &cells)
{
    for (int c = 0; c < cells.size(); ++c) {
        QTableWidgetItem *item = t->item(row, c);
        if (!item) {
            item = new QTableWidgetItem;
            t->setItem(row, c, item);
        }
        if (item->text() != cells.at(c))
            item->setText(cells.at(c));
    }
}

QString jsonText(const QJsonValue &v)
{
    if (v.isNull() || v.isUndefined())
        return QStringLiteral("-");
    if (v.isDouble())
        return QString::number(v.toDouble(), 'f', 0);
    return v.toString();
}

} // namespace

DashboardWindow::DashboardWindow(const QString &databasePath, QWidget *parent)
    : QMainWindow(parent), m_databasePath(databasePath)
{
    setWindowTitle(tr("Switchyard"));
    auto *central = new QWidget(this);
    auto *layout = new QVBoxLayout(central);
    m_header = new QLabel(central);
    layout->addWidget(m_header);
    auto *split = new QSplitter(Qt::Vertical, central);
    m_accounts = makeTable({tr("Account"), tr("Email"), tr("Plan"), tr("Status"), tr("5 h used"), tr("Weekly used"),
                            tr("Last used")},
                           split);
    m_requests = makeTable({tr("Started"), tr("Request"), tr("Route"), tr("Account"), tr("Status"), tr("ms"),
                            tr("Tokens")},
                           split);
    m_accounts->setObjectName(QStringLiteral("accountsTable"));
    m_requests->setObjectName(QStringLiteral("requestsTable"));
    split->addWidget(m_accounts);
    split->addWidget(m_requests);
    layout->addWidget(split);
    setCentralWidget(central);
    resize(980, 620);

    m_timer = new QTimer(this);
    m_timer->setInterval(1000);
    connect(m_timer, &QTimer::timeout, this, &DashboardWindow::refresh);
    m_timer->start();
    refresh();
}

DashboardWindow::~DashboardWindow() = default;

void DashboardWindow::setListenText(const QString &text)
{
    m_listen = text;
}

void DashboardWindow::refresh()
{
    QString error;
    if (!m_db) {
        m_db = std::make_unique<Database>();
        if (!m_db->open(m_databasePath, &error, Database::OpenMode::ReadOnly)) {
            m_header->setText(tr("Database not available: %1").arg(error));
            m_db.reset();
            return;
        }
    }
    AccountRepository accounts(*m_db);
    const QList<AccountRecord> list = accounts.list(&error);
    QHash<QString, UsageRecord> usage;
    for (const UsageRecord &u : accounts.loadAllUsage())
        usage.insert(u.accountId, u);
    m_accounts->setRowCount(int(list.size()));
    for (int i = 0; i < list.size(); ++i) {
        const AccountRecord &a = list.at(i);
        const UsageRecord u = usage.value(a.id);
        setRow(m_accounts, i,
               {a.displayName(), a.email, a.plan, a.status, percent(u.primary.usedPercent),
                percent(u.secondary.usedPercent),
                a.lastSelectedMs ? QDateTime::fromMSecsSinceEpoch(*a.lastSelectedMs).toString(Qt::ISODate)
                                 : QStringLiteral("-")});
    }
    const QJsonArray rows = RequestLogRepository::toJson(RequestLogRepository(*m_db).recent(200, &error));
    m_requests->setRowCount(int(rows.size()));
    for (int i = 0; i < rows.size(); ++i) {
        const QJsonObject o = rows.at(i).toObject();
        setRow(m_requests, i,
               {jsonText(o.value(QLatin1String("started_at"))), jsonText(o.value(QLatin1String("request_id"))),
                jsonText(o.value(QLatin1String("route"))),
                o.value(QLatin1String("account_alias")).isString() ? jsonText(o.value(QLatin1String("account_alias")))
                                                                   : jsonText(o.value(QLatin1String("account_id"))),
                jsonText(o.value(QLatin1String("status"))),
                jsonText(o.value(QLatin1String("latency_ms")).toObject().value(QLatin1String("total"))),
                jsonText(o.value(QLatin1String("tokens")).toObject().value(QLatin1String("total")))});
    }
    m_header->setText(error.isEmpty() ? tr("%1 · %n account(s)", nullptr, int(list.size())).arg(m_listen)
                                      : tr("Database problem: %1").arg(error));
}

} // namespace sy::ui
