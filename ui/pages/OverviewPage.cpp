#include "pages/OverviewPage.h"

#include "Format.h"
#include "data/PoolSummary.h"
#include "data/StatusPoller.h"
#include "data/StoreClient.h"

#include <QDateTime>
#include <QFormLayout>
#include <QJsonArray>
#include <QLabel>
#include <QProgressBar>
#include <QVBoxLayout>

namespace sy::ui {

namespace {

QString strategyText(const QString &name)
{
    if (name == QLatin1String("capacity_weighted"))
        return OverviewPage::tr("Capacity weighted");
    if (name == QLatin1String("usage_weighted"))
        return OverviewPage::tr("Usage weighted");
    if (name == QLatin1String("round_robin"))
        return OverviewPage::tr("Round robin");
    if (name == QLatin1String("fill_first"))
        return OverviewPage::tr("Fill first");
    return name;
}

// The earliest reset ahead among the accounts that count for capacity.
std::optional<qint64> nextReset(const StoreSnapshot &s, Window w, qint64 now)
{
    std::optional<qint64> next;
    for (const AccountView &a : s.accounts) {
        const std::optional<qint64> at = pool::window(a, w).resetAtMs;
        if (pool::countsForCapacity(a) && at && *at > now && (!next || *at < *next))
            next = at;
    }
    return next;
}

QString projection(const std::optional<double> &remaining, const std::optional<double> &pace,
                   const std::optional<qint64> &reset, qint64 now)
{
    if (!pace)
        return OverviewPage::tr("Not enough observations in the last hour");
    const QString rate = OverviewPage::tr("%1 % per hour").arg(*pace, 0, 'f', 1);
    if (*pace <= 0.05 || !remaining)
        return OverviewPage::tr("%1 · no exhaustion in sight").arg(rate);
    const qint64 emptyAt = now + qint64(*remaining / *pace * 3600000.0);
    if (reset && emptyAt >= *reset)
        return OverviewPage::tr("%1 · lasts until the reset %2").arg(rate, Format::countdown(reset, now));
    return OverviewPage::tr("%1 · runs out %2 (%3)")
        .arg(rate, Format::countdown(emptyAt, now), Format::dateTime(emptyAt));
}

} // namespace

OverviewPage::OverviewPage(StoreClient *store, StatusPoller *status, QWidget *parent)
    : QWidget(parent), m_now([] { return QDateTime::currentMSecsSinceEpoch(); })
{
    setObjectName(QStringLiteral("overviewPage"));
    auto *layout = new QVBoxLayout(this);
    m_form = new QFormLayout;
    layout->addLayout(m_form);
    layout->addStretch();
    const auto bar = [this](const QString &name) {
        auto *b = new QProgressBar(this);
        b->setObjectName(name);
        b->setRange(0, 100);
        b->setFormat(tr("%p% remaining"));
        return b;
    };
    m_fiveHourBar = bar(QStringLiteral("fiveHourBar"));
    m_weeklyBar = bar(QStringLiteral("weeklyBar"));
    m_form->addRow(tr("5 h window (pooled)"), m_fiveHourBar);
    m_fiveHour = addRow(QStringLiteral("fiveHourRemaining"), tr("5 h remaining"));
    m_paceFiveHour = addRow(QStringLiteral("fiveHourPace"), tr("5 h pace"));
    m_form->addRow(tr("Weekly window (pooled)"), m_weeklyBar);
    m_weekly = addRow(QStringLiteral("weeklyRemaining"), tr("Weekly remaining"));
    m_paceWeekly = addRow(QStringLiteral("weeklyPace"), tr("Weekly pace"));
    m_requests = addRow(QStringLiteral("requestsToday"), tr("Requests today"));
    m_tokens = addRow(QStringLiteral("tokensToday"), tr("Tokens today"));
    m_errors = addRow(QStringLiteral("errorsToday"), tr("Errors today"));
    m_strategy = addRow(QStringLiteral("strategy"), tr("Strategy"));
    m_pin = addRow(QStringLiteral("pin"), tr("Pinned account"));
    m_proxy = addRow(QStringLiteral("proxy"), tr("Proxy"));

    connect(store, &StoreClient::snapshotChanged, this, &OverviewPage::showSnapshot);
    connect(status, &StatusPoller::statusReceived, this, &OverviewPage::showStatus);
    connect(status, &StatusPoller::unreachable, this,
            [this](const QString &error) { m_proxy->setText(tr("Not answering (%1)").arg(error)); });
    if (store->snapshot())
        showSnapshot(store->snapshot());
}

QLabel *OverviewPage::addRow(const QString &name, const QString &label)
{
    auto *value = new QLabel(QStringLiteral("-"), this);
    value->setObjectName(name);
    value->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_form->addRow(label, value);
    return value;
}

void OverviewPage::showSnapshot(const SnapshotPtr &snapshot)
{
    if (!snapshot)
        return;
    if (!snapshot->error.isEmpty()) {
        m_proxy->setText(tr("Database problem: %1").arg(snapshot->error));
        return;
    }
    const StoreSnapshot &s = *snapshot;
    const qint64 now = m_now();
    const auto show = [&](Window w, QProgressBar *bar, QLabel *label, QLabel *paceLabel,
                          const std::optional<double> &pace) {
        const std::optional<double> remaining = pool::pooledRemaining(s, w, now);
        bar->setValue(remaining ? qRound(*remaining) : 0);
        bar->setEnabled(remaining.has_value());
        label->setText(Format::percent(remaining));
        paceLabel->setText(projection(remaining, pace, nextReset(s, w, now), now));
    };
    show(Window::FiveHour, m_fiveHourBar, m_fiveHour, m_paceFiveHour, s.primaryPacePerHour);
    show(Window::Weekly, m_weeklyBar, m_weekly, m_paceWeekly, s.secondaryPacePerHour);
    m_requests->setText(QString::number(s.today.requests));
    m_tokens->setText(tr("%1 (input %2, cached %3, output %4)")
                          .arg(Format::tokens(s.today.total), Format::tokens(s.today.input),
                               Format::tokens(s.today.cached), Format::tokens(s.today.output)));
    m_errors->setText(QString::number(s.today.errors));
    // The strategy is a configuration-file setting the running proxy reports; the store's value is only a
    // fallback while the proxy has not answered.
    if (m_runningStrategy.isEmpty())
        m_strategy->setText(strategyText(s.strategy));
    const AccountView *pinned = s.pin ? s.account(s.pin->accountId) : nullptr;
    m_pin->setText(pinned ? pinned->record.displayName() : tr("None (automatic)"));
}

void OverviewPage::showStatus(const QJsonObject &status)
{
    const QString listen = status.value(QStringLiteral("listen")).toString();
    const bool writable = status.value(QStringLiteral("store_writable")).toBool(true);
    const int inFlight = int(status.value(QStringLiteral("in_flight")).toArray().size());
    m_runningStrategy = status.value(QStringLiteral("strategy")).toString();
    if (!m_runningStrategy.isEmpty())
        m_strategy->setText(strategyText(m_runningStrategy));
    QString text = tr("Listening on %1 · %n turn(s) in flight", nullptr, inFlight).arg(listen);
    if (!writable)
        text += tr(" · store unavailable: %1 (new requests get 503 until it is writable again)")
                    .arg(status.value(QStringLiteral("store_problem")).toString());
    m_proxy->setText(text);
}

} // namespace sy::ui
