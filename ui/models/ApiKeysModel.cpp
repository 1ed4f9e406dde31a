#include "models/ApiKeysModel.h"

#include "Format.h"
#include "apikeys/ApiKey.h"

#include <QBrush>
#include <QFontDatabase>
#include <QPalette>

namespace sy::ui {

ApiKeysModel::ApiKeysModel(QObject *parent) : QAbstractTableModel(parent) {}

void ApiKeysModel::setListing(const QList<ApiKeyListing> &keys)
{
    const auto ids = [](const QList<ApiKeyListing> &list) {
        QStringList out;
        for (const ApiKeyListing &k : list)
            out << k.record.id;
        return out;
    };
    if (ids(keys) == ids(m_keys)) {
        m_keys = keys;
        if (!m_keys.isEmpty())
            emit dataChanged(index(0, 0), index(rowCount() - 1, ColumnCount - 1));
        return;
    }
    beginResetModel();
    m_keys = keys;
    endResetModel();
}

QString ApiKeysModel::keyId(int row) const
{
    return row >= 0 && row < m_keys.size() ? m_keys.at(row).record.id : QString();
}

int ApiKeysModel::rowOf(const QString &keyId) const
{
    for (int row = 0; row < m_keys.size(); ++row)
        if (m_keys.at(row).record.id == keyId)
            return row;
    return -1;
}

int ApiKeysModel::activeCount() const
{
    return int(std::count_if(m_keys.cbegin(), m_keys.cend(),
                             [](const ApiKeyListing &k) { return k.state == ApiKeyRecord::State::Active; }));
}

int ApiKeysModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_keys.size());
}

int ApiKeysModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QString ApiKeysModel::stateText(ApiKeyRecord::State state)
{
    switch (state) {
    case ApiKeyRecord::State::Active:
        return tr("Active");
    case ApiKeyRecord::State::Expired:
        return tr("Expired");
    case ApiKeyRecord::State::Revoked:
        return tr("Revoked");
    }
    return {};
}

QVariant ApiKeysModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    const ApiKeyListing &k = m_keys.at(index.row());
    const ApiKeyRecord &r = k.record;
    if (role == KeyIdRole)
        return r.id;
    if (role == StateRole)
        return ApiKeyRecord::stateName(k.state);
    if (role == TokensUsedRole)
        return index.column() == UsedInWindow && k.tokensUsedInWindow ? QVariant(*k.tokensUsedInWindow) : QVariant();
    if (role == Qt::ForegroundRole && k.state != ApiKeyRecord::State::Active)
        return QPalette().brush(QPalette::Disabled, QPalette::Text);
    if (role == Qt::FontRole && index.column() == Id)
        return QFontDatabase::systemFont(QFontDatabase::FixedFont);
    if (role == Qt::ToolTipRole && index.column() == State && r.revokedAtMs)
        return tr("Revoked %1").arg(Format::dateTime(r.revokedAtMs));
    if (role != Qt::DisplayRole)
        return {};
    switch (index.column()) {
    case Name:
        return r.name.isEmpty() ? QStringLiteral("-") : r.name;
    case Id:
        return r.id;
    case State:
        return stateText(k.state);
    case Created:
        return Format::dateTime(r.createdAtMs);
    case Expires:
        return r.expiresAtMs ? Format::dateTime(r.expiresAtMs) : tr("Never");
    case LastUsed:
        return r.lastUsedMs ? Format::dateTime(r.lastUsedMs) : tr("Never");
    case Limit:
        if (!r.limitTokens || !r.limitWindowS)
            return tr("None");
        return tr("%1 tokens per %2").arg(*r.limitTokens).arg(limitWindowText(*r.limitWindowS));
    case UsedInWindow:
        if (!k.tokensUsedInWindow)
            return QStringLiteral("-");
        return tr("%1 (%2%)")
            .arg(*k.tokensUsedInWindow)
            .arg(r.limitTokens && *r.limitTokens > 0 ? qMin<qint64>(999, *k.tokensUsedInWindow * 100 / *r.limitTokens)
                                                     : 0);
    default:
        return {};
    }
}

QVariant ApiKeysModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case Name:
        return tr("Name");
    case Id:
        return tr("Key id");
    case State:
        return tr("State");
    case Created:
        return tr("Created");
    case Expires:
        return tr("Expires");
    case LastUsed:
        return tr("Last used");
    case Limit:
        return tr("Token limit");
    case UsedInWindow:
        return tr("Used in window");
    default:
        return {};
    }
}

} // namespace sy::ui
