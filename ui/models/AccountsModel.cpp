#include "models/AccountsModel.h"

#include "Format.h"
#include "data/PoolSummary.h"

#include <QDateTime>
#include <QFont>

namespace sy::ui {

AccountsModel::AccountsModel(QObject *parent)
    : QAbstractTableModel(parent), m_now([] { return QDateTime::currentMSecsSinceEpoch(); })
{
}

void AccountsModel::setSnapshot(const SnapshotPtr &snapshot)
{
    if (!snapshot || !snapshot->error.isEmpty())
        return; // keep showing the last good read
    const auto ids = [](const SnapshotPtr &s) {
        QStringList out;
        if (s)
            for (const AccountView &a : s->accounts)
                out << a.record.id;
        return out;
    };
    if (ids(m_snapshot) == ids(snapshot)) {
        m_snapshot = snapshot;
        if (!snapshot->accounts.isEmpty())
            emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
        return;
    }
    beginResetModel();
    m_snapshot = snapshot;
    endResetModel();
}

QString AccountsModel::accountId(int row) const
{
    if (!m_snapshot || row < 0 || row >= m_snapshot->accounts.size())
        return {};
    return m_snapshot->accounts.at(row).record.id;
}

int AccountsModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() || !m_snapshot ? 0 : int(m_snapshot->accounts.size());
}

int AccountsModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant AccountsModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid) || !m_snapshot)
        return {};
    const AccountView &a = m_snapshot->accounts.at(index.row());
    const qint64 now = m_now();
    const auto windowText = [now](const UsageRecordWindow &w) {
        const std::optional<double> remaining = pool::remainingPercent(w, now);
        const std::optional<double> used = remaining ? std::optional<double>(100.0 - *remaining) : std::nullopt;
        if (!w.resetAtMs || *w.resetAtMs <= now)
            return Format::percent(used);
        return tr("%1 · resets %2").arg(Format::percent(used), Format::countdown(w.resetAtMs, now));
    };
    switch (role) {
    case AccountIdRole:
        return a.record.id;
    case StatusRole:
        return a.record.status;
    case PinnedRole:
        return a.pinned;
    case UsedPercentRole: {
        const UsageRecordWindow *w = index.column() == FiveHour ? &a.usage.primary
                                     : index.column() == Weekly ? &a.usage.secondary
                                                                : nullptr;
        if (!w)
            return {};
        const std::optional<double> remaining = pool::remainingPercent(*w, now);
        return remaining ? QVariant(100.0 - *remaining) : QVariant();
    }
    case Qt::FontRole:
        if (a.pinned && index.column() == Name) {
            QFont bold;
            bold.setBold(true);
            return bold;
        }
        return {};
    case Qt::ToolTipRole:
        if (index.column() == Status && !a.record.statusReason.isEmpty())
            return a.record.statusReason;
        return {};
    case Qt::DisplayRole:
        break;
    default:
        return {};
    }
    switch (Column(index.column())) {
    case Name:
        return a.pinned ? tr("%1 (pinned)").arg(a.record.displayName()) : a.record.displayName();
    case Email:
        return a.record.email.isEmpty() ? QStringLiteral("-") : a.record.email;
    case Plan:
        return a.record.plan.isEmpty() ? QStringLiteral("?") : a.record.plan;
    case Status:
        if (a.record.cooldownUntilMs && *a.record.cooldownUntilMs > now)
            return tr("%1 (backoff %2)")
                .arg(Format::accountStatus(a.record.status), Format::countdown(a.record.cooldownUntilMs, now));
        return Format::accountStatus(a.record.status);
    case FiveHour:
        return windowText(a.usage.primary);
    case Weekly:
        return windowText(a.usage.secondary);
    case LastUsed:
        return Format::dateTime(a.record.lastSelectedMs);
    case TokenExpiry:
        return Format::dateTime(a.record.tokenExpiresAtMs);
    case ColumnCount:
        break;
    }
    return {};
}

QVariant AccountsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (Column(section)) {
    case Name:
        return tr("Account");
    case Email:
        return tr("Email");
    case Plan:
        return tr("Plan");
    case Status:
        return tr("Status");
    case FiveHour:
        return tr("5 h used");
    case Weekly:
        return tr("Weekly used");
    case LastUsed:
        return tr("Last used");
    case TokenExpiry:
        return tr("Token expires");
    case ColumnCount:
        break;
    }
    return {};
}

} // namespace sy::ui
