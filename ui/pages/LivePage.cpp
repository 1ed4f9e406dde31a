#include "pages/LivePage.h"

#include "Format.h"
#include "data/StatusPoller.h"
#include "models/JsonTableModel.h"

#include <QDateTime>
#include <QHeaderView>
#include <QJsonArray>
#include <QLabel>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>

namespace sy::ui {

namespace {

QTableView *makeView(QAbstractItemModel *model, const QString &name, QWidget *parent)
{
    auto *view = new QTableView(parent);
    view->setObjectName(name);
    view->setModel(model);
    view->verticalHeader()->hide();
    view->setSelectionBehavior(QAbstractItemView::SelectRows);
    view->horizontalHeader()->setStretchLastSection(true);
    view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
    view->setWordWrap(false);
    return view;
}

// "pre_response 12 s · request_total 9 min 20 s", earliest first as the proxy lists them.
QString remainingText(const QJsonValue &v)
{
    const QJsonObject o = v.toObject();
    QList<std::pair<qint64, QString>> items;
    for (auto it = o.begin(); it != o.end(); ++it)
        items.append({it.value().toInteger(), it.key()});
    std::sort(items.begin(), items.end());
    QStringList parts;
    for (const auto &[ms, stage] : items)
        parts << QStringLiteral("%1 %2").arg(stage, Format::duration(ms));
    return parts.isEmpty() ? QStringLiteral("-") : parts.join(QStringLiteral(" · "));
}

} // namespace

LivePage::LivePage(StatusPoller *status, QWidget *parent)
    : QWidget(parent), m_now([] { return QDateTime::currentMSecsSinceEpoch(); })
{
    setObjectName(QStringLiteral("livePage"));
    const auto account = [](const QJsonValue &, const QJsonObject &row) {
        const QJsonValue alias = row.value(QStringLiteral("account_alias"));
        return alias.isString() ? alias.toString() : JsonTableModel::plainText(row.value(QStringLiteral("account_id")));
    };
    m_turns = new JsonTableModel(
        {
            {QStringLiteral("request_id"), tr("Request"), {}},
            {QStringLiteral("route"), tr("Route"), {}},
            {QStringLiteral("model"), tr("Model"), {}},
            {QStringLiteral("account_id"), tr("Account"), account},
            {QStringLiteral("stage"), tr("Stage"),
             [](const QJsonValue &v, const QJsonObject &) { return Format::stage(v.toString()); }},
            {QStringLiteral("elapsed_ms"), tr("Elapsed"),
             [](const QJsonValue &v, const QJsonObject &) { return Format::duration(v.toInteger()); }},
            {QStringLiteral("next_deadline"), tr("Next deadline"), {}},
            {QStringLiteral("remaining_ms"), tr("Remaining per budget"),
             [](const QJsonValue &v, const QJsonObject &) { return remainingText(v); }},
            {QStringLiteral("attempts"), tr("Attempts"), {}},
        },
        {QStringLiteral("request_id")}, this);
    m_turns->setHiddenKeys({QStringLiteral("account_alias")});
    const auto lease = [this](const QJsonValue &v, const QJsonObject &) {
        if (!v.isString())
            return QStringLiteral("-");
        const QDateTime at = QDateTime::fromString(v.toString(), Qt::ISODateWithMs);
        if (!at.isValid())
            return v.toString();
        return tr("%1 (%2)").arg(at.toLocalTime().toString(QStringLiteral("HH:mm:ss")),
                                 Format::countdown(at.toMSecsSinceEpoch(), m_now()));
    };
    m_slots = new JsonTableModel(
        {
            {QStringLiteral("account_id"), tr("Account"),
             [this](const QJsonValue &v, const QJsonObject &) { return m_aliases.value(v.toString(), v.toString()); }},
            {QStringLiteral("slot"), tr("Slot"), {}},
            {QStringLiteral("state"), tr("State"), {}},
            {QStringLiteral("owner_replica"), tr("Replica"), {}},
            {QStringLiteral("epoch"), tr("Epoch"), {}},
            {QStringLiteral("lease_expires_at"), tr("Lease expires"), lease},
            {QStringLiteral("request_id"), tr("Request"), {}},
        },
        {QStringLiteral("account_id"), QStringLiteral("slot")}, this);

    auto *layout = new QVBoxLayout(this);
    m_header = new QLabel(tr("Waiting for the proxy…"), this);
    m_header->setObjectName(QStringLiteral("liveHeader"));
    layout->addWidget(m_header);
    auto *split = new QSplitter(Qt::Vertical, this);
    auto *turnsBox = new QWidget(split);
    auto *turnsLayout = new QVBoxLayout(turnsBox);
    turnsLayout->setContentsMargins(0, 0, 0, 0);
    turnsLayout->addWidget(new QLabel(tr("In-flight turns"), turnsBox));
    turnsLayout->addWidget(makeView(m_turns, QStringLiteral("turnsView"), turnsBox));
    auto *slotsBox = new QWidget(split);
    auto *slotsLayout = new QVBoxLayout(slotsBox);
    slotsLayout->setContentsMargins(0, 0, 0, 0);
    m_slotsHeader = new QLabel(tr("Owner slots"), slotsBox);
    m_slotsHeader->setObjectName(QStringLiteral("slotsHeader"));
    slotsLayout->addWidget(m_slotsHeader);
    m_slotsView = makeView(m_slots, QStringLiteral("slotsView"), slotsBox);
    slotsLayout->addWidget(m_slotsView);
    split->addWidget(turnsBox);
    split->addWidget(slotsBox);
    layout->addWidget(split);

    connect(status, &StatusPoller::statusReceived, this, &LivePage::showStatus);
    connect(status, &StatusPoller::unreachable, this,
            [this](const QString &error) { m_header->setText(tr("The proxy does not answer: %1").arg(error)); });
}

void LivePage::showStatus(const QJsonObject &status)
{
    const QJsonArray turns = status.value(QStringLiteral("in_flight")).toArray();
    QString header =
        tr("%1 · version %2 · %n turn(s) in flight", nullptr, int(turns.size()))
            .arg(status.value(QStringLiteral("listen")).toString(), status.value(QStringLiteral("version")).toString());
    if (status.value(QStringLiteral("draining")).toBool())
        header += tr(" · draining");
    m_header->setText(header);
    m_aliases.clear();
    for (const QJsonValue &v : status.value(QStringLiteral("accounts")).toArray()) {
        const QJsonObject a = v.toObject();
        if (a.value(QStringLiteral("account_alias")).isString())
            m_aliases.insert(a.value(QStringLiteral("account_id")).toString(),
                             a.value(QStringLiteral("account_alias")).toString());
    }
    m_turns->setRows(turns);
    // Owner slots exist once the ownership protocol reports them; render whatever it sends.
    const QJsonValue slotRows = status.value(QStringLiteral("slots"));
    m_slotsView->setVisible(slotRows.isArray());
    if (slotRows.isArray()) {
        m_slots->setRows(slotRows.toArray());
        const QJsonObject replica = status.value(QStringLiteral("replica")).toObject();
        m_slotsHeader->setText(replica.isEmpty()
                                   ? tr("Owner slots")
                                   : tr("Owner slots · this replica %1 (incarnation %2)")
                                         .arg(replica.value(QStringLiteral("replica_id")).toString(),
                                              JsonTableModel::plainText(replica.value(QStringLiteral("incarnation")))));
    } else {
        m_slots->setRows({});
        m_slotsHeader->setText(tr("Owner slots: not reported by this proxy"));
    }
}

} // namespace sy::ui
