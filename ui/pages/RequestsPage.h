#pragma once

#include "data/RequestPageQuery.h"
#include "data/StoreSnapshot.h"

#include <QTimer>
#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QTableView;

namespace sy::ui {

class RequestDetailView;
class RequestsModel;
class StoreClient;

// The request log: filters (account, status, model, time) and a request-id search that cover every row
// (in SQL, with keyset paging on the query worker), and a detail pane explaining the routing decision of the
// selected request. New requests appear on top every few seconds.
class RequestsPage : public QWidget
{
    Q_OBJECT
public:
    explicit RequestsPage(StoreClient *store, QWidget *parent = nullptr);

    RequestsModel *model() const { return m_model; }
    QTableView *view() const { return m_view; }
    RequestDetailView *detail() const { return m_detail; }
    RequestFilter currentFilter() const;

protected:
    void showEvent(QShowEvent *event) override;
    void hideEvent(QHideEvent *event) override;

private:
    void applyFilter();
    void updateAccounts(const SnapshotPtr &snapshot);
    void showSelected();

    RequestsModel *m_model;
    QTableView *m_view;
    RequestDetailView *m_detail;
    QComboBox *m_account;
    QComboBox *m_status;
    QLineEdit *m_modelFilter;
    QComboBox *m_time;
    QLineEdit *m_search;
    QLabel *m_count;
    QTimer m_debounce;
    QTimer m_newer;
    QHash<QString, QString> m_names;
    bool m_loaded = false;
};

} // namespace sy::ui
