#include "api/AccountPool.h"

#include "accounts/SecretStore.h"
#include "routing/Cooldown.h"
#include "store/AccountRepository.h"
#include "store/AnchorRepository.h"
#include "store/Database.h"
#include "store/SettingsRepository.h"
#include "store/StoreWorker.h"
#include "util/Clock.h"
#include "usage/UsageRecordConversion.h"
#include "util/Ids.h"

#include <QJsonObject>
#include <QLoggingCategory>
#include <QScopeGuard>

Q_LOGGING_CATEGORY(lcPool, "switchyard.accounts")

namespace sy {

namespace {

QJsonValue optionalNumber(const std::optional<double> &v)
{
    return v ? QJsonValue(*v) : QJsonValue(QJsonValue::Null);
}

QJsonValue optionalTime(const std::optional<qint64> &v)
{
    return v ? QJsonValue(isoUtc(*v)) : QJsonValue(QJsonValue::Null);
}

QJsonObject windowJson(const QuotaWindow &w)
{
    return {{QStringLiteral("used_percent"), optionalNumber(w.usedPercent)},
            {QStringLiteral("window_minutes"), w.windowMinutes ? QJsonValue(*w.windowMinutes) : QJsonValue()},
            {QStringLiteral("resets_at"), optionalTime(w.resetAtMs)}};
}

} // namespace

AccountPool::AccountPool(std::shared_ptr<const Config> config, const Clock &clock, StoreWorker *store,
                         SecretStore *secrets, QObject *parent)
    : QObject(parent), m_config(std::move(config)), m_clock(clock), m_store(store), m_secrets(secrets),
      m_rng(QRandomGenerator::securelySeeded())
{
    m_pollTimer.setInterval(1000);
    connect(&m_pollTimer, &QTimer::timeout, this, &AccountPool::pollChanges);
    auto *refresher = new TokenRefresher(m_config->authUrl, this);
    refresher->setRouter([this](const QString &accountId) { return outboundRoute(accountId); });
    refresher->setHopTimeoutMs(qMax(1, m_config->budgets.connectS) * 1000);
    m_refresh = new RefreshCoordinator(clock, store, secrets, refresher, this);
    m_ledger = new SlotLedger(m_config, clock, store, this);
    connect(m_ledger, &SlotLedger::slotFreed, this, &AccountPool::slotFreed);
    m_refreshTimer.setInterval(60000);
    connect(&m_refreshTimer, &QTimer::timeout, this, &AccountPool::refreshDueAccounts);
    // A turn's usage arrives with its upstream head, in the same event-loop pass as its first event. Written at
    // once, it woke the store thread while that first event was still on its way to the client: at c=1 on two
    // cores that pass took about 250 us longer (bench/HISTORY.md). A few milliseconds later the write finds the
    // turn's first bytes sent.
    m_usageWriteTimer.setSingleShot(true);
    m_usageWriteTimer.setInterval(kUsageWriteDelayMs);
    connect(&m_usageWriteTimer, &QTimer::timeout, this, &AccountPool::writePendingUsage);
}

AccountPool::~AccountPool()
{
    writePendingUsage();
}

void AccountPool::writePendingUsage()
{
    const QHash<QString, UsageRecord> pending = std::exchange(m_usageToWrite, {});
    for (const UsageRecord &record : pending) {
        m_store->submit(
            [record](Database &db, QString *error) { return AccountRepository(db).saveUsage(record, error); }, nullptr,
            {});
    }
}

void AccountPool::start(std::function<void(const QString &error)> ready)
{
    // The replica registers (and reclaims its previous incarnation's slots) before any turn can claim.
    m_ledger->start([this, ready](const QString &error) {
        if (!error.isEmpty()) {
            if (ready)
                ready(error);
            return;
        }
        load([ready] {
            if (ready)
                ready({});
        });
    });
}

void AccountPool::load(std::function<void()> ready)
{
    struct Loaded
    {
        QList<Account> accounts;
        QString pin;
        bool strict = false;
        bool paused = false;
        qint64 counter = -1;
    };
    auto loaded = std::make_shared<Loaded>();
    m_loading = true;
    m_store->submitRead(
        [loaded](Database &db, QString *error) {
            AccountRepository repo(db);
            const QList<AccountRecord> records = repo.list(error);
            if (!error->isEmpty())
                return false;
            QHash<QString, UsageRecord> usage;
            for (const UsageRecord &u : repo.loadAllUsage())
                usage.insert(u.accountId, u);
            for (const AccountRecord &r : records) {
                Account a;
                a.record = r;
                if (usage.contains(r.id))
                    a.usage = fromUsageRecord(usage.value(r.id));
                loaded->accounts.append(a);
            }
            SettingsRepository settings(db);
            if (auto pin = settings.pin()) {
                loaded->pin = pin->accountId;
                loaded->strict = pin->strict;
            }
            loaded->paused = settings.value(QStringLiteral("proxy_paused")).value_or(QString()) == QLatin1String("true");
            loaded->counter = db.changeCounter().value_or(-1);
            return true;
        },
        this,
        [this, loaded, ready](bool ok, const QString &error) {
            m_loading = false;
            if (!ok)
                qCWarning(lcPool).noquote() << "could not load accounts:" << error;
            else {
                m_proxyPaused = loaded->paused;
                applyLoaded(loaded->accounts, loaded->pin, loaded->strict, loaded->counter);
            }
            // Ready once every account's credentials have been read (or failed): serving before that would
            // refuse turns that a moment later could be served.
            if (ready) {
                if (m_pendingTokenLoads == 0)
                    ready();
                else
                    m_tokensSettled.append(ready);
            }
        });
    if (!m_pollTimer.isActive())
        m_pollTimer.start();
    if (!m_refreshTimer.isActive())
        m_refreshTimer.start();
}

void AccountPool::setConfig(std::shared_ptr<const Config> config)
{
    m_config = std::move(config);
    m_strategy = parseStrategy(m_config->strategy).value_or(Strategy::CapacityWeighted);
    m_ledger->setConfig(m_config);
    emit slotFreed(); // more slots or a wider gate may let waiting turns go on
}

void AccountPool::reloadNow()
{
    if (!m_loading)
        load({});
}

void AccountPool::pollChanges()
{
    if (m_loading)
        return;
    auto counter = std::make_shared<qint64>(-1);
    m_store->submitRead(
        [counter](Database &db, QString *) {
            *counter = db.changeCounter().value_or(-1);
            return true;
        },
        this,
        [this, counter](bool ok, const QString &) {
            if (ok && *counter != m_changeCounter)
                reloadNow();
        });
}

void AccountPool::applyLoaded(QList<Account> loaded, QString pin, bool strict, qint64 counter)
{
    // Keep what only this process knows (tokens, in-flight counts, fresher usage) across reloads.
    for (Account &a : loaded) {
        const int i = m_index.value(a.record.id, -1);
        if (i < 0)
            continue;
        const Account &old = m_accounts.at(i);
        a.tokens = old.tokens;
        a.tokensReady = old.tokensReady;
        a.tokenProblem = old.tokenProblem;
        if (old.usage.observedAtMs > a.usage.observedAtMs)
            a.usage = old.usage;
        if (old.record.lastSelectedMs > a.record.lastSelectedMs)
            a.record.lastSelectedMs = old.record.lastSelectedMs;
    }
    // Slots held by turns on accounts that were removed are still released by those turns: keep counting them
    // under their id until they finish.
    m_accounts = std::move(loaded);
    m_index.clear();
    for (int i = 0; i < m_accounts.size(); ++i)
        m_index.insert(m_accounts.at(i).record.id, i);
    m_pinnedAccountId = pin;
    m_pinStrict = strict;
    // The strategy is a configuration-file setting (the dashboard edits that file), not a database one.
    m_strategy = parseStrategy(m_config->strategy).value_or(Strategy::CapacityWeighted);
    m_changeCounter = counter;
    for (const Account &a : std::as_const(m_accounts)) {
        if (!a.tokensReady && a.tokenProblem.isEmpty())
            loadTokens(a.record.id);
    }
    emit accountsChanged();
    emit slotFreed(); // a resumed or new account may serve waiting turns
}

void AccountPool::loadTokens(const QString &accountId)
{
    // A keychain read happens once per account (start-up or a user's import), never from a timer loop.
    m_index.contains(accountId) ? void(m_accounts[m_index.value(accountId)].tokenProblem = QStringLiteral("loading"))
                                : void();
    ++m_pendingTokenLoads;
    m_secrets->readTokens(accountId, [this, accountId](const SecretOutcome &outcome, const AuthTokens &tokens) {
        auto settle = qScopeGuard([this] {
            if (--m_pendingTokenLoads == 0) {
                const auto waiting = std::exchange(m_tokensSettled, {});
                for (const auto &f : waiting)
                    f();
            }
        });
        const int i = m_index.value(accountId, -1);
        if (i < 0)
            return;
        Account &a = m_accounts[i];
        if (outcome.ok && !tokens.accessToken.isEmpty()) {
            a.tokens = tokens;
            a.tokensReady = true;
            a.tokenProblem.clear();
            emit slotFreed();
            // An account imported with an almost expired token should not wait a timer period.
            QTimer::singleShot(0, this, &AccountPool::refreshDueAccounts);
        } else {
            a.tokenProblem = outcome.ok ? QStringLiteral("no access token stored") : outcome.errorText;
            qCWarning(lcPool).noquote() << "account" << accountId << "has no usable tokens:" << a.tokenProblem;
        }
        emit accountsChanged();
    });
}

QList<Candidate> AccountPool::candidates(bool ignoreSlots) const
{
    QList<Candidate> out;
    out.reserve(m_accounts.size());
    for (const Account &a : m_accounts) {
        Candidate c;
        c.accountId = a.record.id;
        c.alias = a.record.alias.value_or(QString());
        c.plan = a.record.plan;
        c.status = parseAccountStatus(a.record.status).value_or(AccountStatus::Active);
        if (!a.tokensReady && c.status == AccountStatus::Active)
            c.status = AccountStatus::ReauthRequired; // no credentials: cannot serve
        c.cooldownUntilMs = a.record.cooldownUntilMs.value_or(0);
        c.usage = a.usage;
        c.lastSelectedMs = a.record.lastSelectedMs.value_or(0);
        // Selection asks only whether a slot is free: counted up to one.
        c.freeSlots = ignoreSlots ? 1 : m_ledger->freeSlots(a.record.id, slotTotal(a.record.id), 1);
        out.append(c);
    }
    return out;
}

AccountPool::Acquisition AccountPool::select(const SelectionRequest &request, bool ignoreSlots)
{
    Acquisition result;
    const qint64 now = m_clock.nowMs();
    result.selection = selectAccount(candidates(ignoreSlots), request, m_strategy, now, m_rng);
    if (result.selection.ok() || ignoreSlots)
        return result;
    // Would anything serve if slots were free? Then wait at the gate instead of refusing.
    QRandomGenerator probe(1);
    const SelectionResult unconstrained = selectAccount(candidates(true), request, m_strategy, now, probe);
    result.shouldWait = unconstrained.ok();
    return result;
}

int AccountPool::slotTotal(const QString &accountId) const
{
    const Account *a = account(accountId);
    return qMax(1, a && a->record.slotCount ? *a->record.slotCount : m_config->slotsPerAccount);
}

void AccountPool::claim(SlotLedger::ClaimRequest request, std::function<void(const ClaimOutcome &)> done)
{
    if (!request.previousResponseId.isEmpty())
        request.unwrittenAnchor = unwrittenAnchor(request.previousResponseId);
    m_ledger->claim(request, [this, id = request.accountId, done](const ClaimOutcome &outcome) {
        if (outcome.kind == ClaimOutcome::Kind::Claimed) {
            const int i = m_index.value(id, -1);
            if (i >= 0) // stored by the claim's transaction
                m_accounts[i].record.lastSelectedMs = outcome.selectedAtMs.value_or(m_clock.nowMs());
        } else if (outcome.kind == ClaimOutcome::Kind::Ineligible) {
            // The durable row disagrees with this replica's snapshot: fetch the truth before routing again.
            reloadNow();
        }
        done(outcome);
    });
}

void AccountPool::giveUpClaim(const QString &requestId, const QString &accountId, const ClaimOutcome &outcome,
                              std::function<void()> released)
{
    std::optional<SelectionUndo> undo;
    if (outcome.selectedAtMs) {
        undo = SelectionUndo{accountId, outcome.previousSelectedMs, *outcome.selectedAtMs};
        const int i = m_index.value(accountId, -1);
        if (i >= 0 && m_accounts[i].record.lastSelectedMs == outcome.selectedAtMs)
            m_accounts[i].record.lastSelectedMs = outcome.previousSelectedMs;
    }
    m_ledger->releaseForFailover(requestId, std::move(released), undo);
}

const AccountPool::Account *AccountPool::account(const QString &accountId) const
{
    const int i = m_index.value(accountId, -1);
    return i < 0 ? nullptr : &m_accounts.at(i);
}

QList<const AccountPool::Account *> AccountPool::accounts() const
{
    QList<const Account *> out;
    for (const Account &a : m_accounts)
        out.append(&a);
    return out;
}

void AccountPool::bindSession(const QString &sessionKey, const QString &accountId)
{
    if (m_sessions.value(sessionKey) == accountId)
        return;
    m_sessions.insert(sessionKey, accountId);
    m_store->submit([sessionKey, accountId](Database &db, QString *error) {
        return AffinityRepository(db).set(sessionKey, accountId, error);
    }, this, {});
}

void AccountPool::bindTurnState(const QByteArray &turnState, const QString &accountId)
{
    m_turnStates.insert(turnState, accountId);
}

void AccountPool::lookupAnchor(const QString &responseId, std::function<void(std::optional<AnchorRecord>)> done)
{
    if (const AnchorRecord *cached = m_anchors.find(responseId)) {
        done(*cached);
        return;
    }
    if (const auto it = m_unwrittenAnchors.constFind(responseId); it != m_unwrittenAnchors.cend()) {
        done(*it); // fell out of the cache during a long stream; its row is not written yet
        return;
    }
    auto anchor = std::make_shared<std::optional<AnchorRecord>>();
    m_store->submitRead(
        [responseId, anchor](Database &db, QString *error) {
            *anchor = AnchorRepository(db).find(responseId, error);
            return error->isEmpty();
        },
        this, [anchor, done](bool, const QString &) { done(*anchor); });
}

bool AccountPool::rememberAnchor(const AnchorRecord &anchor)
{
    const AnchorRecord *known = m_anchors.find(anchor.responseId);
    if (known && known->accountId == anchor.accountId && known->epoch == anchor.epoch)
        return false;
    m_anchors.insert(anchor.responseId, anchor);
    m_unwrittenAnchors.insert(anchor.responseId, anchor);
    return true;
}

void AccountPool::anchorHandedOver(const QString &responseId)
{
    m_unwrittenAnchors.remove(responseId);
}

std::optional<AnchorRecord> AccountPool::unwrittenAnchor(const QString &responseId) const
{
    const auto it = m_unwrittenAnchors.constFind(responseId);
    return it == m_unwrittenAnchors.cend() ? std::nullopt : std::optional<AnchorRecord>(*it);
}

void AccountPool::recordUsage(const QString &accountId, const AccountUsage &usage)
{
    const int i = m_index.value(accountId, -1);
    if (i < 0 || usage.isEmpty())
        return;
    Account &a = m_accounts[i];
    const AccountUsage before = a.usage;
    a.usage = merge(a.usage, usage);
    // Every turn reports usage; most reports repeat what is stored. Write changes at once, and the same facts
    // only every 30 s (to keep their observation time fresh), not one transaction per turn.
    const bool same = before.primary == a.usage.primary && before.secondary == a.usage.secondary &&
                      before.hasCredits == a.usage.hasCredits && before.unlimited == a.usage.unlimited &&
                      before.creditsBalance == a.usage.creditsBalance;
    const qint64 now = m_clock.nowMs();
    if (same && now - m_usageWrittenMs.value(accountId, 0) < 30000)
        return;
    m_usageWrittenMs.insert(accountId, now);
    m_usageToWrite.insert(accountId, toUsageRecord(accountId, a.usage)); // the latest facts per account
    if (!m_usageWriteTimer.isActive())
        m_usageWriteTimer.start();
}

void AccountPool::recordFailure(const QString &accountId, const FailureInfo &failure)
{
    const int i = m_index.value(accountId, -1);
    if (i < 0)
        return;
    Account &a = m_accounts[i];
    const qint64 now = m_clock.nowMs();
    a.record.consecutiveFailures += 1;
    const qint64 until = cooldownUntil(failure, a.record.consecutiveFailures, now, m_config->backoffMaxS);
    // A 401 that a token refresh did not repair (turns refresh once before they get here): keep the account
    // out of rotation for the backoff period so other accounts serve meanwhile.
    const qint64 effective = failure.cls == FailureClass::AuthExpired
                                 ? now + qMin<qint64>(qint64(m_config->backoffMaxS) * 1000,
                                                      30000LL << qMin(a.record.consecutiveFailures - 1, 4))
                                 : until;
    a.record.cooldownUntilMs = effective > 0 ? std::optional<qint64>(effective) : std::nullopt;
    QString status = a.record.status;
    if (failure.cls == FailureClass::RateLimited)
        status = QStringLiteral("rate_limited");
    else if (failure.cls == FailureClass::QuotaExceeded)
        status = QStringLiteral("quota_exceeded");
    persistAccountState(a);
    if (status != a.record.status) {
        a.record.status = status;
        const QString id = accountId;
        const QString reason = failure.code;
        m_store->submit([id, status, reason](Database &db, QString *error) {
            return AccountRepository(db).setStatus(id, status, reason, error);
        }, this, {});
    }
    emit accountsChanged();
}

void AccountPool::recordSuccess(const QString &accountId)
{
    const int i = m_index.value(accountId, -1);
    if (i < 0)
        return;
    Account &a = m_accounts[i];
    const bool wasLimited = a.record.status == QLatin1String("rate_limited") ||
                            a.record.status == QLatin1String("quota_exceeded");
    if (a.record.consecutiveFailures == 0 && !a.record.cooldownUntilMs && !wasLimited)
        return;
    a.record.consecutiveFailures = 0;
    a.record.cooldownUntilMs.reset();
    persistAccountState(a);
    if (wasLimited) {
        a.record.status = QStringLiteral("active");
        const QString id = accountId;
        m_store->submit([id](Database &db, QString *error) {
            return AccountRepository(db).setStatus(id, QStringLiteral("active"), QString(), error);
        }, this, {});
    }
    emit accountsChanged();
}

void AccountPool::recordPlan(const QString &accountId, const QString &plan)
{
    const int i = m_index.value(accountId, -1);
    if (i < 0 || plan.isEmpty() || m_accounts[i].record.plan == plan)
        return;
    m_accounts[i].record.plan = plan;
    m_store->submit([accountId, plan](Database &db, QString *error) {
        return AccountRepository(db).setPlan(accountId, plan, error);
    }, this, {});
    emit accountsChanged();
}

void AccountPool::persistAccountState(const Account &a)
{
    const QString id = a.record.id;
    const std::optional<qint64> until = a.record.cooldownUntilMs;
    const int failures = a.record.consecutiveFailures;
    m_store->submit([id, until, failures](Database &db, QString *error) {
        return AccountRepository(db).setCooldown(id, until, failures, error);
    }, this, {});
}

QJsonArray AccountPool::statusJson() const
{
    QJsonArray out;
    const qint64 now = m_clock.nowMs();
    for (const Account &a : m_accounts) {
        const int slotTotal = this->slotTotal(a.record.id);
        QJsonObject o{
            {QStringLiteral("account_id"), a.record.id},
            {QStringLiteral("account_alias"), a.record.alias ? QJsonValue(*a.record.alias) : QJsonValue()},
            {QStringLiteral("email"), a.record.email},
            {QStringLiteral("chatgpt_account_id"), a.record.chatgptAccountId},
            {QStringLiteral("plan"), a.record.plan.isEmpty() ? QJsonValue() : QJsonValue(a.record.plan)},
            {QStringLiteral("status"), a.record.status},
            {QStringLiteral("credentials"), a.tokensReady ? QStringLiteral("ready")
                                                          : (a.tokenProblem.isEmpty() ? QStringLiteral("missing")
                                                                                      : a.tokenProblem)},
            {QStringLiteral("cooldown_until"),
             a.record.cooldownUntilMs && *a.record.cooldownUntilMs > now ? optionalTime(a.record.cooldownUntilMs)
                                                                          : QJsonValue()},
            {QStringLiteral("slots"), slotTotal},
            {QStringLiteral("in_flight"), m_ledger->heldBy(a.record.id)},
            {QStringLiteral("free_slots"), m_ledger->freeSlots(a.record.id, slotTotal)},
            {QStringLiteral("version"), a.record.version},
            {QStringLiteral("pinned"), a.record.id == m_pinnedAccountId},
            {QStringLiteral("primary_window"), windowJson(a.usage.primary)},
            {QStringLiteral("secondary_window"), windowJson(a.usage.secondary)},
            {QStringLiteral("last_selected_at"), optionalTime(a.record.lastSelectedMs)},
        };
        if (const auto problem = m_refreshEgress.constFind(a.record.id); problem != m_refreshEgress.cend())
            o.insert(QStringLiteral("refresh_blocked"), QJsonObject{{QStringLiteral("reason"), problem->first},
                                                                    {QStringLiteral("detail"), problem->second}});
        out.append(o);
    }
    return out;
}

} // namespace sy
