#include "tray/TrayController.h"

#include "Format.h"
#include "config/ClientConfigFiles.h"
#include "config/ClientConfigText.h"
#include "config/Config.h"
#include "data/StatusPoller.h"
#include "data/StoreClient.h"
#include "tray/TrayIconPainter.h"

#include <QAction>
#include <QActionGroup>
#include <QClipboard>
#include <QGuiApplication>
#include <QMenu>
#include <QSystemTrayIcon>

namespace sy::ui {

namespace {

QString stateText(TrayState state)
{
    switch (state) {
    case TrayState::Serving:
        return TrayController::tr("Serving");
    case TrayState::Degraded:
        return TrayController::tr("Serving with problems");
    case TrayState::AllLimited:
        return TrayController::tr("All accounts limited");
    case TrayState::Paused:
        return TrayController::tr("Paused");
    case TrayState::Stopped:
        return TrayController::tr("Stopped");
    }
    return {};
}

QString usedPercent(const UsageRecordWindow &w, qint64 nowMs)
{
    // A window whose reset has passed starts over, whatever the last observation said.
    if (w.resetAtMs && *w.resetAtMs <= nowMs)
        return Format::percent(0.0);
    return Format::percent(w.usedPercent);
}

QString accountLine(const AccountView &a, qint64 nowMs)
{
    return TrayController::tr("%1 — %2 · 5 h %3 used · weekly %4 used")
        .arg(a.record.displayName(), Format::accountStatus(a.record.status), usedPercent(a.usage.primary, nowMs),
             usedPercent(a.usage.secondary, nowMs));
}

} // namespace

TrayController::TrayController(StoreClient *store, StatusPoller *status, QObject *parent)
    : QObject(parent), m_store(store), m_status(status), m_codexConfigPath(codexConfigPath(processEnvironment())),
      m_openCodeConfigPath(openCodeConfigPath(processEnvironment())),
      m_probe([] { return QSystemTrayIcon::isSystemTrayAvailable(); })
{
    m_hostTimer.setInterval(3000);
    connect(&m_hostTimer, &QTimer::timeout, this, &TrayController::checkHost);
    buildMenu();
    connect(m_store, &StoreClient::snapshotChanged, this, &TrayController::onSnapshot);
    connect(m_status, &StatusPoller::statusReceived, this, &TrayController::updateLook);
    connect(m_status, &StatusPoller::unreachable, this, &TrayController::updateLook);
    if (m_store->snapshot())
        onSnapshot(m_store->snapshot());
    updateLook();
}

TrayController::~TrayController()
{
    delete m_tray;
    delete m_menu;
}

void TrayController::buildMenu()
{
    m_menu = new QMenu;
    m_menu->setObjectName(QStringLiteral("trayMenu"));
    m_header = m_menu->addAction(QString());
    m_header->setEnabled(false);
    m_menu->addSeparator();
    m_pinGroup = new QActionGroup(this);
    m_pinGroup->setExclusive(true);
    QAction *automatic = m_menu->addAction(tr("Automatic (balance across accounts)"));
    automatic->setObjectName(QStringLiteral("pin:auto"));
    automatic->setCheckable(true);
    automatic->setChecked(true);
    m_pinGroup->addAction(automatic);
    m_pinActions.insert(QString(), automatic);
    connect(automatic, &QAction::triggered, this, [this] { m_store->clearPin(); });
    m_accountsEnd = m_menu->addSeparator();

    m_pause = m_menu->addAction(tr("Pause proxy"));
    m_pause->setObjectName(QStringLiteral("pause"));
    connect(m_pause, &QAction::triggered, this,
            [this] { m_store->setProxyPaused(!(m_snapshot && m_snapshot->proxyPaused)); });
    QAction *add = m_menu->addAction(tr("Add account…"));
    add->setObjectName(QStringLiteral("addAccount"));
    connect(add, &QAction::triggered, this, &TrayController::addAccountRequested);
    QAction *import = m_menu->addAction(tr("Import auth.json…"));
    import->setObjectName(QStringLiteral("importAuthJson"));
    connect(import, &QAction::triggered, this, &TrayController::importRequested);
    QAction *open = m_menu->addAction(tr("Open dashboard"));
    open->setObjectName(QStringLiteral("openDashboard"));
    connect(open, &QAction::triggered, this, &TrayController::openDashboardRequested);

    QMenu *copy = m_menu->addMenu(tr("Copy client config"));
    QAction *codex = copy->addAction(QStringLiteral("Codex CLI"));
    codex->setObjectName(QStringLiteral("copyCodex"));
    connect(codex, &QAction::triggered, this,
            [this] { copyText(codexClientConfig(m_baseUrl), QStringLiteral("Codex CLI")); });
    QAction *opencode = copy->addAction(QStringLiteral("OpenCode"));
    opencode->setObjectName(QStringLiteral("copyOpenCode"));
    connect(opencode, &QAction::triggered, this,
            [this] { copyText(openCodeClientConfig(m_baseUrl), QStringLiteral("OpenCode")); });
    const auto addEdit = [this](const QString &text, const char *name, void (TrayController::*edit)(bool), bool write) {
        QAction *a = m_menu->addAction(text);
        a->setObjectName(QLatin1String(name));
        connect(a, &QAction::triggered, this, [this, edit, write] { (this->*edit)(write); });
    };
    addEdit(tr("Write Codex CLI config"), "writeCodexConfig", &TrayController::editCodexConfig, true);
    addEdit(tr("Undo Codex CLI config"), "undoCodexConfig", &TrayController::editCodexConfig, false);
    addEdit(tr("Write OpenCode config"), "writeOpenCodeConfig", &TrayController::editOpenCodeConfig, true);
    addEdit(tr("Undo OpenCode config"), "undoOpenCodeConfig", &TrayController::editOpenCodeConfig, false);

    QMenu *numbers = m_menu->addMenu(tr("Tray number"));
    m_numberGroup = new QActionGroup(this);
    const QList<std::pair<TrayNumber, QString>> choices = {
        {TrayNumber::None, tr("None")},
        {TrayNumber::FiveHour, tr("5 h remaining")},
        {TrayNumber::Weekly, tr("Weekly remaining")},
        {TrayNumber::Lowest, tr("Lowest remaining")},
        {TrayNumber::Pinned, tr("Pinned account")},
    };
    for (const auto &[value, label] : choices) {
        QAction *a = numbers->addAction(label);
        a->setObjectName(QStringLiteral("number:") + trayNumberKey(value));
        a->setCheckable(true);
        a->setChecked(value == TrayNumber::Lowest);
        m_numberGroup->addAction(a);
        connect(a, &QAction::triggered, this,
                [this, value = value] { m_store->setSetting(uikeys::trayNumber, trayNumberKey(value)); });
    }
    m_menu->addSeparator();
    QAction *quit = m_menu->addAction(tr("Quit"));
    quit->setObjectName(QStringLiteral("quit"));
    connect(quit, &QAction::triggered, this, &TrayController::quitRequested);
}

QAction *TrayController::pinAction(const QString &accountId) const
{
    return m_pinActions.value(accountId);
}

void TrayController::start()
{
    checkHost();
    m_hostTimer.start();
}

bool TrayController::trayVisible() const
{
    return m_tray && m_tray->isVisible();
}

void TrayController::checkHost()
{
    const bool available = m_probe();
    if (available && !m_tray) {
        m_tray = new QSystemTrayIcon;
        m_tray->setContextMenu(m_menu);
        connect(m_tray, &QSystemTrayIcon::activated, this, [this](QSystemTrayIcon::ActivationReason reason) {
            if (reason == QSystemTrayIcon::Trigger || reason == QSystemTrayIcon::DoubleClick)
                emit openDashboardRequested();
        });
        m_tray->setIcon(TrayIconPainter::icon(m_state, m_number));
        m_tray->setToolTip(m_toolTip);
        m_tray->show();
    }
    if (available != m_available || !m_announced) {
        m_available = available;
        m_announced = true;
        emit trayAvailableChanged(available);
    }
}

void TrayController::onSnapshot(const SnapshotPtr &snapshot)
{
    if (!snapshot)
        return;
    if (m_snapshot)
        for (const Notice &n : NoticeDiff::between(*m_snapshot, *snapshot, snapshot->takenAtMs))
            notify(n);
    m_snapshot = snapshot;
    if (snapshot->error.isEmpty())
        updateAccounts(*snapshot);
    for (QAction *a : m_numberGroup->actions())
        a->setChecked(a->objectName() == QStringLiteral("number:") + trayNumberKey(snapshot->trayNumber));
    m_pause->setText(snapshot->proxyPaused ? tr("Resume proxy") : tr("Pause proxy"));
    updateLook();
}

void TrayController::updateAccounts(const StoreSnapshot &s)
{
    QStringList order;
    for (const AccountView &a : s.accounts)
        order << a.record.id;
    if (order != m_accountOrder) {
        // The set of accounts changed: rebuild their entries between "Automatic" and the separator.
        for (const QString &id : std::as_const(m_accountOrder)) {
            QAction *a = m_pinActions.take(id);
            m_pinGroup->removeAction(a);
            m_menu->removeAction(a);
            delete a;
        }
        for (const AccountView &a : s.accounts) {
            auto *action = new QAction(m_menu);
            action->setObjectName(QStringLiteral("pin:") + a.record.id);
            action->setCheckable(true);
            m_pinGroup->addAction(action);
            m_menu->insertAction(m_accountsEnd, action);
            m_pinActions.insert(a.record.id, action);
            const QString id = a.record.id;
            connect(action, &QAction::triggered, this, [this, id] { m_store->setPin(id); });
        }
        m_accountOrder = order;
    }
    for (const AccountView &a : s.accounts)
        m_pinActions.value(a.record.id)->setText(accountLine(a, s.takenAtMs));
    const QString pinned = s.pin && m_pinActions.contains(s.pin->accountId) ? s.pin->accountId : QString();
    m_pinActions.value(pinned)->setChecked(true);
}

void TrayController::updateLook()
{
    const StoreSnapshot empty;
    const StoreSnapshot &s = m_snapshot ? *m_snapshot : empty;
    const qint64 now = QDateTime::currentMSecsSinceEpoch();
    const bool writable = m_status->lastStatus().value(QStringLiteral("store_writable")).toBool(true);
    // Until the first answer (or failure) the proxy counts as running: it was started before the tray.
    const bool answers = m_status->answering() || !m_status->hasResult();
    const TrayState state = pool::trayState(s, answers, writable, now);
    const std::optional<int> number = pool::trayNumber(s, now);

    QStringList lines{tr("Switchyard — %1").arg(stateText(state))};
    if (answers && !writable) {
        // Why the proxy refuses new requests, in the words the proxy itself reports (disk full, read-only...).
        lines << tr("Store unavailable: %1 — new requests are refused until it is writable again")
                     .arg(m_status->lastStatus().value(QStringLiteral("store_problem")).toString());
    }
    if (const AccountView *a = pool::featuredAccount(s)) {
        lines << tr("%1%2: 5 h %3 used, weekly %4 used")
                     .arg(a->record.displayName(), a->pinned ? tr(" (pinned)") : QString(),
                          usedPercent(a->usage.primary, now), usedPercent(a->usage.secondary, now));
    } else if (s.accounts.isEmpty() && s.error.isEmpty() && m_snapshot) {
        lines << tr("No account yet: add one from this menu.");
    }
    const QString toolTip = lines.join(QLatin1Char('\n'));
    const bool iconChanged = state != m_state || number != m_number;
    m_state = state;
    m_number = number;
    m_toolTip = toolTip;
    m_header->setText(m_baseUrl.isEmpty() ? lines.first() : tr("%1 — %2").arg(lines.first(), m_baseUrl));
    if (m_tray) {
        if (iconChanged || m_tray->icon().isNull())
            m_tray->setIcon(TrayIconPainter::icon(state, number));
        if (m_tray->toolTip() != toolTip)
            m_tray->setToolTip(toolTip);
    }
}

void TrayController::copyText(const QString &text, const QString &what)
{
    QGuiApplication::clipboard()->setText(text);
    if (m_tray && m_tray->isVisible())
        m_tray->showMessage(tr("Copied"), tr("The %1 configuration is on the clipboard.").arg(what),
                            QSystemTrayIcon::Information, 3000);
}

void TrayController::editCodexConfig(bool write)
{
    const ClientConfigEdit e =
        write ? writeCodexConfig(m_codexConfigPath, m_baseUrl) : undoCodexConfig(m_codexConfigPath);
    reportConfigEdit(e, write, tr("Codex CLI config"), tr(" (set SWITCHYARD_API_KEY for Codex)"));
}

void TrayController::editOpenCodeConfig(bool write)
{
    const ClientConfigEdit e =
        write ? writeOpenCodeConfig(m_openCodeConfigPath, m_baseUrl) : undoOpenCodeConfig(m_openCodeConfigPath);
    reportConfigEdit(e, write, tr("OpenCode config"), QString());
}

void TrayController::reportConfigEdit(const ClientConfigEdit &e, bool write, const QString &title,
                                      const QString &writeHint)
{
    QString message;
    if (!e.ok)
        message = e.error;
    else if (!e.changed)
        message =
            write ? tr("%1 already uses Switchyard.").arg(e.path) : tr("%1 has no Switchyard settings.").arg(e.path);
    else if (write)
        message = tr("%1 now uses Switchyard%2. The previous file is in %3.")
                      .arg(e.path, writeHint, e.backupPath.isEmpty() ? tr("(none: the file is new)") : e.backupPath);
    else
        message = tr("Switchyard was taken out of %1.").arg(e.path);
    if (m_tray && m_tray->isVisible())
        m_tray->showMessage(title, message, e.ok ? QSystemTrayIcon::Information : QSystemTrayIcon::Warning, 8000);
    emit clientConfigEdited(e.ok, message, e.path);
}

void TrayController::notify(const Notice &notice)
{
    if (m_tray && m_tray->isVisible()) {
        const auto icon =
            notice.kind == Notice::Kind::Failover ? QSystemTrayIcon::Information : QSystemTrayIcon::Warning;
        m_tray->showMessage(notice.title, notice.text, icon, 10000);
    }
    emit notified(notice);
}

} // namespace sy::ui
