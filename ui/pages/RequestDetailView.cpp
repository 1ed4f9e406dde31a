#include "pages/RequestDetailView.h"

#include <QDateTime>
#include <QHeaderView>

namespace sy::ui {

namespace {

QString text(const std::optional<QString> &v)
{
    return v && !v->isEmpty() ? *v : QStringLiteral("-");
}

QString ms(const std::optional<qint64> &v)
{
    return v ? RequestDetailView::tr("%1 ms").arg(*v) : QStringLiteral("-");
}

QString number(const std::optional<qint64> &v)
{
    return v ? QString::number(*v) : QStringLiteral("-");
}

} // namespace

RequestDetailView::RequestDetailView(QWidget *parent) : QTreeWidget(parent)
{
    setObjectName(QStringLiteral("requestDetail"));
    setColumnCount(2);
    setHeaderLabels({tr("Field"), tr("Value")});
    header()->setSectionResizeMode(0, QHeaderView::ResizeToContents);
    setRootIsDecorated(true);
}

void RequestDetailView::clearRecord()
{
    clear();
}

void RequestDetailView::showRecord(const RequestLogRecord &r, const QHash<QString, QString> &accountNames)
{
    clear();
    const auto name = [&accountNames](const QString &id) {
        const QString alias = accountNames.value(id);
        return alias.isEmpty() || alias == id ? id : QStringLiteral("%1 (%2)").arg(alias, id);
    };
    const auto section = [this](const QString &title) {
        auto *item = new QTreeWidgetItem(this, {title});
        QFont bold = item->font(0);
        bold.setBold(true);
        item->setFont(0, bold);
        item->setExpanded(true);
        return item;
    };
    const auto row = [](QTreeWidgetItem *parent, const QString &label, const QString &value) {
        auto *item = new QTreeWidgetItem(parent, {label, value});
        item->setToolTip(1, value);
        return item;
    };

    QTreeWidgetItem *request = section(tr("Request"));
    row(request, tr("Request id"), r.requestId);
    row(request, tr("Started"),
        QDateTime::fromMSecsSinceEpoch(r.startedAtMs).toString(QStringLiteral("yyyy-MM-dd HH:mm:ss.zzz")));
    row(request, tr("Route"), r.route);
    row(request, tr("Model"), text(r.model));
    row(request, tr("Session"), text(r.sessionKey));
    row(request, tr("Status"), r.status);
    row(request, tr("Killed by budget"), text(r.killStage));
    row(request, tr("Error code"), text(r.errorCode));
    row(request, tr("Upstream request id"), text(r.upstreamRequestId));

    QTreeWidgetItem *routing = section(tr("Routing decision"));
    row(routing, tr("Served by"), r.accountId ? name(*r.accountId) : tr("no account was chosen"));
    if (r.blockedBy.isEmpty())
        row(routing, tr("Skipped candidates"), tr("none"));
    for (const QString &entry : r.blockedBy) {
        // "account:reason" as the router records it; anything else is shown as it is.
        const int colon = entry.indexOf(QLatin1Char(':'));
        if (colon > 0)
            row(routing, tr("Skipped %1").arg(name(entry.left(colon))), entry.mid(colon + 1));
        else
            row(routing, tr("Skipped"), entry);
    }

    QTreeWidgetItem *attempts = section(tr("Attempts (%1)").arg(r.attempts.size()));
    for (int i = 0; i < r.attempts.size(); ++i) {
        const RequestAttempt &a = r.attempts.at(i);
        QTreeWidgetItem *attempt = row(attempts, tr("#%1").arg(i + 1), name(a.accountId));
        row(attempt, tr("Outcome"), a.outcome);
        row(attempt, tr("Egress proxy"), a.egressProxy ? *a.egressProxy : tr("direct"));
        row(attempt, tr("Elapsed"), ms(a.elapsedMs));
        attempt->setExpanded(true);
    }

    QTreeWidgetItem *latency = section(tr("Latency"));
    row(latency, tr("Queue"), ms(r.latency.queueMs));
    row(latency, tr("Connect"), ms(r.latency.connectMs));
    row(latency, tr("First event"), ms(r.latency.firstEventMs));
    row(latency, tr("Total"), ms(r.latency.totalMs));

    QTreeWidgetItem *tokens = section(tr("Tokens"));
    row(tokens, tr("Input"), number(r.tokens.input));
    row(tokens, tr("Cached"), number(r.tokens.cached));
    row(tokens, tr("Output"), number(r.tokens.output));
    row(tokens, tr("Reasoning"), number(r.tokens.reasoning));
    row(tokens, tr("Total"), number(r.tokens.total));
}

QString RequestDetailView::value(const QString &section, const QString &label) const
{
    for (int i = 0; i < topLevelItemCount(); ++i) {
        const QTreeWidgetItem *s = topLevelItem(i);
        if (!s->text(0).startsWith(section))
            continue;
        for (int j = 0; j < s->childCount(); ++j) {
            if (s->child(j)->text(0) == label)
                return s->child(j)->text(1);
        }
    }
    return {};
}

} // namespace sy::ui
