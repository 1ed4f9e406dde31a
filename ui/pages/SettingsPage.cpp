#include "pages/SettingsPage.h"

#include "data/Autostart.h"
#include "data/StoreClient.h"
#include "store/SettingsRepository.h"

#include <QCheckBox>
#include <QComboBox>
#include <QCoreApplication>
#include <QFormLayout>
#include <QGroupBox>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace sy::ui {

namespace {

struct BudgetKey
{
    const char *key;
    int BudgetSettings::*field;
    int max;
};

const BudgetKey kBudgetKeys[] = {
    {"gate_wait_s", &BudgetSettings::gateWaitS, 3600},
    {"connect_s", &BudgetSettings::connectS, 600},
    {"gate_retire_s", &BudgetSettings::gateRetireS, 86400},
    {"keepalive_interval_s", &BudgetSettings::keepaliveIntervalS, 600},
    {"keepalive_max", &BudgetSettings::keepaliveMax, 1000},
    {"stream_idle_s", &BudgetSettings::streamIdleS, 86400},
    {"request_total_s", &BudgetSettings::requestTotalS, 86400},
    {"stream_max_s", &BudgetSettings::streamMaxS, 7 * 86400},
};

QString listenText(const Config &c)
{
    const QString host = c.listenAddress.protocol() == QAbstractSocket::IPv6Protocol
                             ? QLatin1Char('[') + c.listenAddress.toString() + QLatin1Char(']')
                             : c.listenAddress.toString();
    return QStringLiteral("%1:%2").arg(host).arg(c.listenPort);
}

} // namespace

SettingsPage::SettingsPage(StoreClient *store, const QString &configPath, const QHash<QString, QString> &env,
                           QWidget *parent)
    : QWidget(parent), m_store(store),
      m_editor(configPath.isEmpty() ? ConfigFileEditor::defaultPath(env) : configPath, env), m_env(env)
{
    setObjectName(QStringLiteral("settingsPage"));
    auto *layout = new QVBoxLayout(this);

    auto *proxyBox = new QGroupBox(tr("Proxy (configuration file %1)").arg(m_editor.path()), this);
    auto *proxyForm = new QFormLayout(proxyBox);
    m_listen = new QLineEdit(proxyBox);
    m_listen->setObjectName(QStringLiteral("listenEdit"));
    proxyForm->addRow(tr("Listen address"), m_listen);
    m_strategy = new QComboBox(proxyBox);
    m_strategy->setObjectName(QStringLiteral("strategyBox"));
    for (const QString &s : SettingsRepository::strategyNames())
        m_strategy->addItem(s, s);
    proxyForm->addRow(tr("Strategy"), m_strategy);
    layout->addWidget(proxyBox);

    auto *budgetBox = new QGroupBox(tr("Per-stage budgets"), this);
    auto *budgetForm = new QFormLayout(budgetBox);
    for (const BudgetKey &k : kBudgetKeys) {
        auto *spin = new QSpinBox(budgetBox);
        spin->setObjectName(QLatin1String(k.key));
        spin->setRange(1, k.max);
        m_budgets.insert(QLatin1String(k.key), spin);
        budgetForm->addRow(QLatin1String(k.key), spin);
        connect(spin, &QSpinBox::valueChanged, this, &SettingsPage::revalidate);
    }
    m_derived = new QLabel(budgetBox);
    m_derived->setObjectName(QStringLiteral("derivedPreResponse"));
    budgetForm->addRow(tr("pre_response (derived)"), m_derived);
    layout->addWidget(budgetBox);

    auto *appBox = new QGroupBox(tr("Desktop"), this);
    auto *appForm = new QFormLayout(appBox);
    m_autostart = new QCheckBox(tr("Launch at login"), appBox);
    m_autostart->setObjectName(QStringLiteral("autostartBox"));
    m_startHidden = new QCheckBox(tr("Start hidden (tray icon only)"), appBox);
    m_startHidden->setObjectName(QStringLiteral("startHiddenBox"));
    m_language = new QComboBox(appBox);
    m_language->setObjectName(QStringLiteral("languageBox"));
    m_language->addItem(tr("System language"), QString());
    m_language->addItem(QStringLiteral("English"), QStringLiteral("en"));
    m_language->addItem(QStringLiteral("简体中文"), QStringLiteral("zh_CN"));
    m_trayNumber = new QComboBox(appBox);
    m_trayNumber->setObjectName(QStringLiteral("trayNumberBox"));
    m_trayNumber->addItem(tr("None"), trayNumberKey(TrayNumber::None));
    m_trayNumber->addItem(tr("5 h remaining"), trayNumberKey(TrayNumber::FiveHour));
    m_trayNumber->addItem(tr("Weekly remaining"), trayNumberKey(TrayNumber::Weekly));
    m_trayNumber->addItem(tr("Lowest remaining"), trayNumberKey(TrayNumber::Lowest));
    m_trayNumber->addItem(tr("Pinned account"), trayNumberKey(TrayNumber::Pinned));
    appForm->addRow(m_autostart);
    appForm->addRow(m_startHidden);
    appForm->addRow(tr("Language (after a restart)"), m_language);
    appForm->addRow(tr("Tray number"), m_trayNumber);
    layout->addWidget(appBox);

    m_message = new QLabel(this);
    m_message->setObjectName(QStringLiteral("settingsMessage"));
    m_message->setWordWrap(true);
    layout->addWidget(m_message);
    m_save = new QPushButton(tr("Save"), this);
    m_save->setObjectName(QStringLiteral("saveButton"));
    layout->addWidget(m_save, 0, Qt::AlignRight);
    layout->addStretch();

    connect(m_listen, &QLineEdit::textChanged, this, &SettingsPage::revalidate);
    connect(m_strategy, &QComboBox::currentIndexChanged, this, &SettingsPage::revalidate);
    connect(m_save, &QPushButton::clicked, this, &SettingsPage::save);
    connect(store, &StoreClient::snapshotChanged, this, &SettingsPage::showSnapshot);
    m_autostart->setChecked(Autostart(m_env).isEnabled());
    loadFile();
    if (store->snapshot())
        showSnapshot(store->snapshot());
}

void SettingsPage::loadFile()
{
    QString error;
    if (!m_editor.load(&error)) {
        m_error = error;
        m_message->setText(error);
        m_save->setEnabled(false);
        return;
    }
    const ConfigResult current = m_editor.evaluate(m_editor.object());
    const Config &c = current.config;
    m_listen->setText(listenText(c));
    m_strategy->setCurrentIndex(m_strategy->findData(c.strategy));
    for (const BudgetKey &k : kBudgetKeys) {
        QSpinBox *spin = m_budgets.value(QLatin1String(k.key));
        const QSignalBlocker block(spin);
        spin->setValue(c.budgets.*k.field);
    }
    revalidate();
}

void SettingsPage::showSnapshot(const SnapshotPtr &snapshot)
{
    // The database-kept preferences fill in once; later snapshots must not undo the user's unsaved edits.
    if (m_prefsLoaded || !snapshot || !snapshot->error.isEmpty())
        return;
    m_prefsLoaded = true;
    m_startHidden->setChecked(snapshot->startHidden);
    m_language->setCurrentIndex(qMax(0, m_language->findData(snapshot->language)));
    m_trayNumber->setCurrentIndex(qMax(0, m_trayNumber->findData(trayNumberKey(snapshot->trayNumber))));
}

QJsonObject SettingsPage::candidate() const
{
    QJsonObject o = m_editor.object();
    const Config defaults;
    ConfigFileEditor::put(o, QStringLiteral("listen"), m_listen->text().trimmed(), listenText(defaults));
    ConfigFileEditor::put(o, QStringLiteral("strategy"), m_strategy->currentData().toString(), defaults.strategy);
    for (const BudgetKey &k : kBudgetKeys)
        ConfigFileEditor::put(o, QLatin1String(k.key), m_budgets.value(QLatin1String(k.key))->value(),
                              defaults.budgets.*k.field);
    return o;
}

void SettingsPage::revalidate()
{
    const ConfigResult r = m_editor.evaluate(candidate());
    m_error = r.error;
    m_save->setEnabled(r.ok());
    if (r.ok()) {
        m_derived->setText(tr("%1 s (from gate_retire_s, keepalive cadence, stream_idle_s and request_total_s)")
                               .arg(double(ConfigFileEditor::derivedPreResponseMs(r.config.budgets)) / 1000.0));
        m_message->setText(tr("Saved changes apply to the next request; a new listen address needs a restart."));
    } else {
        m_derived->setText(QStringLiteral("-"));
        m_message->setText(tr("Not saved: %1").arg(r.error));
    }
}

bool SettingsPage::save()
{
    QString error;
    if (!m_editor.save(candidate(), &error)) {
        m_message->setText(tr("Not saved: %1").arg(error));
        return false;
    }
    if (m_autostart->isChecked() != Autostart(m_env).isEnabled() &&
        !Autostart(m_env).setEnabled(m_autostart->isChecked(), QCoreApplication::applicationFilePath(), &error)) {
        m_message->setText(tr("Launch at login not changed: %1").arg(error));
        return false;
    }
    m_store->setSetting(uikeys::startHidden,
                        m_startHidden->isChecked() ? QStringLiteral("true") : QStringLiteral("false"));
    m_store->setSetting(uikeys::language, m_language->currentData().toString());
    m_store->setSetting(uikeys::trayNumber, m_trayNumber->currentData().toString());
    m_message->setText(
        tr("Saved to %1. The running proxy applies it within a second (a new listen address after a restart).")
            .arg(m_editor.path()));
    emit saved();
    return true;
}

} // namespace sy::ui
