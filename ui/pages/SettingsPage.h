#pragma once

#include "data/ConfigFileEditor.h"
#include "data/StoreSnapshot.h"

#include <QHash>
#include <QWidget>

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QSpinBox;

namespace sy::ui {

class StoreClient;

// Settings: listen address, strategy and the per-stage budgets go to the JSON configuration file (validated
// by the same loader `switchyard` starts with, written atomically; the derived pre-response budget is shown
// and contradictory values are refused); launch at login is an XDG autostart entry; start hidden, language
// and the tray number are kept in the database with the other UI settings.
class SettingsPage : public QWidget
{
    Q_OBJECT
public:
    SettingsPage(StoreClient *store, const QString &configPath, const QHash<QString, QString> &env,
                 QWidget *parent = nullptr);

    // The object that Save would write and whether the loader accepts it.
    QJsonObject candidate() const;
    QString validationError() const { return m_error; }
    QSpinBox *budgetBox(const QString &key) const { return m_budgets.value(key); }
    bool save();

signals:
    void saved();

private:
    void loadFile();
    void revalidate();
    void showSnapshot(const SnapshotPtr &snapshot);

    StoreClient *m_store;
    ConfigFileEditor m_editor;
    QHash<QString, QString> m_env;
    QLineEdit *m_listen;
    QComboBox *m_strategy;
    QHash<QString, QSpinBox *> m_budgets;
    QLabel *m_derived;
    QCheckBox *m_autostart;
    QCheckBox *m_startHidden;
    QComboBox *m_language;
    QComboBox *m_trayNumber;
    QLabel *m_message;
    QPushButton *m_save;
    QString m_error;
    bool m_prefsLoaded = false;
};

} // namespace sy::ui
