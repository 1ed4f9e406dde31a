#include "models/JsonTableModel.h"

#include <QJsonDocument>
#include <QSet>

namespace sy::ui {

JsonTableModel::JsonTableModel(QList<Column> known, QStringList rowKeys, QObject *parent)
    : QAbstractTableModel(parent), m_known(std::move(known)), m_columns(m_known), m_rowKeys(std::move(rowKeys))
{
}

QString JsonTableModel::plainText(const QJsonValue &value)
{
    switch (value.type()) {
    case QJsonValue::Null:
    case QJsonValue::Undefined:
        return QStringLiteral("-");
    case QJsonValue::Bool:
        return value.toBool() ? QStringLiteral("true") : QStringLiteral("false");
    case QJsonValue::Double: {
        const double d = value.toDouble();
        return d == double(qint64(d)) ? QString::number(qint64(d)) : QString::number(d, 'f', 2);
    }
    case QJsonValue::String:
        return value.toString();
    case QJsonValue::Array:
        return QString::fromUtf8(QJsonDocument(value.toArray()).toJson(QJsonDocument::Compact));
    case QJsonValue::Object:
        return QString::fromUtf8(QJsonDocument(value.toObject()).toJson(QJsonDocument::Compact));
    }
    return {};
}

QStringList JsonTableModel::columnKeys() const
{
    QStringList keys;
    for (const Column &c : m_columns)
        keys << c.key;
    return keys;
}

void JsonTableModel::setRows(const QJsonArray &rows)
{
    // Columns: the known ones, then every other key in order of first appearance.
    QList<Column> columns = m_known;
    QSet<QString> seen;
    for (const Column &c : m_known)
        seen.insert(c.key);
    for (const QString &k : m_hidden)
        seen.insert(k);
    for (const QJsonValue &v : rows) {
        const QJsonObject o = v.toObject();
        for (auto it = o.begin(); it != o.end(); ++it) {
            if (!seen.contains(it.key())) {
                seen.insert(it.key());
                columns.append({it.key(), it.key(), {}});
            }
        }
    }
    const auto keyList = [this](const QJsonArray &a) {
        QStringList out;
        for (const QJsonValue &v : a) {
            QStringList key;
            for (const QString &k : m_rowKeys)
                key << plainText(v.toObject().value(k));
            out << key.join(QLatin1Char('\x1f'));
        }
        return out;
    };
    const bool sameShape = columnKeys() == [&columns] {
        QStringList k;
        for (const Column &c : columns)
            k << c.key;
        return k;
    }() && keyList(m_rows) == keyList(rows);
    if (sameShape) {
        m_rows = rows;
        if (!rows.isEmpty())
            emit dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
        return;
    }
    beginResetModel();
    m_columns = columns;
    m_rows = rows;
    endResetModel();
}

int JsonTableModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_rows.size());
}

int JsonTableModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_columns.size());
}

QVariant JsonTableModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid | CheckIndexOption::ParentIsInvalid))
        return {};
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole && role != Qt::UserRole)
        return {};
    const QJsonObject row = m_rows.at(index.row()).toObject();
    const Column &c = m_columns.at(index.column());
    const QJsonValue v = row.value(c.key);
    if (role == Qt::UserRole)
        return v.toVariant();
    if (role == Qt::ToolTipRole)
        return plainText(v);
    return c.format ? c.format(v, row) : plainText(v);
}

QVariant JsonTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation == Qt::Horizontal && role == Qt::DisplayRole && section >= 0 && section < m_columns.size())
        return m_columns.at(section).header;
    return QAbstractTableModel::headerData(section, orientation, role);
}

} // namespace sy::ui
