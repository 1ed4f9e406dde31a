#pragma once

#include "data/StoreSnapshot.h"

#include <QAbstractTableModel>
#include <functional>

namespace sy::ui {

// The Accounts page's table: one row per account of the latest store snapshot. Updating with a snapshot of
// the same accounts only emits dataChanged, so selection and scrolling survive the once-a-second refresh.
class AccountsModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column
    {
        Name,
        Email,
        Plan,
        Status,
        FiveHour,
        Weekly,
        LastUsed,
        TokenExpiry,
        ColumnCount
    };
    enum Role
    {
        AccountIdRole = Qt::UserRole + 1,
        // For FiveHour/Weekly: the used % (double), invalid when unknown; the usage bar draws it.
        UsedPercentRole,
        StatusRole, // the stored status name
        PinnedRole,
    };

    explicit AccountsModel(QObject *parent = nullptr);

    void setSnapshot(const SnapshotPtr &snapshot);
    // Countdowns and "last used" read this clock (tests pin it).
    void setNow(std::function<qint64()> now) { m_now = std::move(now); }
    SnapshotPtr snapshot() const { return m_snapshot; }
    QString accountId(int row) const;

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

private:
    SnapshotPtr m_snapshot;
    std::function<qint64()> m_now;
};

} // namespace sy::ui
