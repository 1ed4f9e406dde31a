#pragma once

#include "apikeys/ApiKeyAdmin.h"

#include <QAbstractTableModel>

namespace sy::ui {

// The API keys page's table: one row per stored key (never the key itself, which the store does not have),
// as listApiKeys() reads them. A listing of the same keys only emits dataChanged, so the selection survives
// the page's periodic refresh.
class ApiKeysModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column
    {
        Name,
        Id,
        State,
        Created,
        Expires,
        LastUsed,
        Limit,
        UsedInWindow,
        ColumnCount
    };
    enum Role
    {
        KeyIdRole = Qt::UserRole + 1,
        StateRole, // ApiKeyRecord::stateName: "active", "expired", "revoked"
        // UsedInWindow: the tokens (qint64), invalid for a key without a limit.
        TokensUsedRole,
    };

    explicit ApiKeysModel(QObject *parent = nullptr);

    void setListing(const QList<ApiKeyListing> &keys);
    const QList<ApiKeyListing> &listing() const { return m_keys; }
    QString keyId(int row) const;
    int rowOf(const QString &keyId) const;
    int activeCount() const;

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    static QString stateText(ApiKeyRecord::State state);

private:
    QList<ApiKeyListing> m_keys;
};

} // namespace sy::ui
