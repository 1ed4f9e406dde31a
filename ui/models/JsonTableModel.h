#pragma once

#include <QAbstractTableModel>
#include <QJsonArray>
#include <QJsonObject>
#include <QList>
#include <functional>

namespace sy::ui {

// A table over a JSON array of objects (the live page's in-flight turns and owner slots from /api/status).
// Known keys get their column, header and formatting; keys nobody planned for still get a column each, so
// whatever the running proxy reports is shown. Rows are matched by a key column so a refresh that keeps
// the same rows only emits dataChanged.
class JsonTableModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    struct Column
    {
        QString key;
        QString header;
        // Display text of the value (the whole row is given for columns that combine fields).
        std::function<QString(const QJsonValue &value, const QJsonObject &row)> format;
    };

    // rowKeys: the fields that identify a row (together).
    JsonTableModel(QList<Column> known, QStringList rowKeys, QObject *parent = nullptr);

    // Keys shown through another column's formatting (an alias next to its id): no column of their own.
    void setHiddenKeys(const QStringList &keys) { m_hidden = keys; }
    void setRows(const QJsonArray &rows);
    const QJsonArray &rows() const { return m_rows; }
    QStringList columnKeys() const;

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    // Plain rendering of any JSON value ("-" for null).
    static QString plainText(const QJsonValue &value);

private:
    QList<Column> m_known;
    QList<Column> m_columns;
    QStringList m_rowKeys;
    QStringList m_hidden;
    QJsonArray m_rows;
};

} // namespace sy::ui
