#pragma once

#include "accounts/AccountRecord.h"
#include "accounts/AuthTokens.h"
#include "accounts/RefreshCoordinator.h"
#include "config/Config.h"
#include "ownership/SlotLedger.h"
#include "routing/Selection.h"
#include "store/AnchorRepository.h"
#include "upstream/egress/EgressRoute.h"
#include "usage/FailureClassifier.h"
#include "usage/UsageWindows.h"
#include "util/TwoGenerationCache.h"

#include <QHash>
#include <QJsonArray>
#include <QObject>
#include <QRandomGenerator>
#include <QTimer>

#include <functional>
#include <memory>
#include <optional>

namespace sy {

class Clock;
class EgressSelector;
class SecretStore;
class StoreWorker;

// The proxy thread's view of the accounts: records, tokens (read once from the keychain when an account
// appears), usage windows, cooldowns, in-flight slots, session affinity and continuity anchors. Durable
// state lives in the database; changes made here are written through the store thread, and changes made
// by other processes (the CLI) are picked up by polling the database's change counter once a second.
class AccountPool : public QObject
{
    Q_OBJECT

public:
    // Each in-memory binding cache keeps at least this many of its latest entries and at most twice as many.
    // 4,096 recent sessions, turn states and anchors is hours of work for a person or a team; the soak's 95
    // turns a second fill the three caches in under two minutes (about 4 MB), after which memory stays flat.
    static constexpr qsizetype kBindingCacheLimit = 4096;

    struct Account
    {
        AccountRecord record;
        AuthTokens tokens;
        bool tokensReady = false;
        QString tokenProblem; // why tokens are not usable (keychain error), never a token
        AccountUsage usage;
    };

    struct Acquisition
    {
        SelectionResult selection; // ok(): claim a slot of selection.accountId next
        bool shouldWait = false;   // nothing free now, but an account would serve once a slot frees (gate)
    };

    AccountPool(std::shared_ptr<const Config> config, const Clock &clock, StoreWorker *store, SecretStore *secrets,
                QObject *parent = nullptr);
    ~AccountPool() override;
    // How long after a turn's usage arrived it is stored (see the constructor).
    static constexpr int kUsageWriteDelayMs = 5;
    // A configuration reloaded while running: strategy, slots_per_account, backoff_max_s, the gate's bounds and
    // the leases apply from the next selection, claim or renewal on.
    void setConfig(std::shared_ptr<const Config> config);

    // Registers this replica, loads accounts and settings and starts watching for changes. `ready(error)` runs
    // once the first load is done (error empty) or the replica could not register.
    void start(std::function<void(const QString &error)> ready);
    void reloadNow();

    // Selection from this replica's snapshot (accounts and owner slots). The decision dispatches only after
    // claim() won the slot's compare-and-set, which re-checks the durable account row.
    Acquisition select(const SelectionRequest &request, bool ignoreSlots = false);
    // Claims a slot of `accountId` for the request (SlotLedger::claim). A refusal by the durable row makes the
    // snapshot reload at once. A continuation of a stream still running here carries that stream's unwritten
    // anchor, which the claim writes before it checks the anchor's account.
    void claim(SlotLedger::ClaimRequest request, std::function<void(const ClaimOutcome &)> done);
    // A won claim given up before it was used (Turn::rerouteAfterEarlyClaim): its slot goes back as in a
    // failover, and the account's selection time, in this snapshot and durably, to what it was before the claim
    // (unless a later claim has changed it since), so that the strategies do not count a turn it never served.
    void giveUpClaim(const QString &requestId, const QString &accountId, const ClaimOutcome &outcome,
                     std::function<void()> released);
    int slotTotal(const QString &accountId) const;
    SlotLedger *ledger() const { return m_ledger; }

    const Account *account(const QString &accountId) const;
    QList<const Account *> accounts() const;
    int accountCount() const { return int(m_accounts.size()); }
    // Turns listening to slotFreed(): those in flight that have waited at the gate, not the others
    // (/api/status "gate.slot_watchers").
    int slotWatchers() const { return receivers(SIGNAL(slotFreed())); }

    QString pinnedAccountId() const { return m_pinnedAccountId; }
    bool pinStrict() const { return m_pinStrict; }
    Strategy strategy() const { return m_strategy; }
    // The user paused the proxy (tray menu; settings key proxy_paused): new turns are refused, in-flight ones
    // finish.
    bool proxyPaused() const { return m_proxyPaused; }

    // Session affinity (Codex session-id / prompt_cache_key, OpenCode x-session-affinity).
    QString sessionAccount(const QString &sessionKey) const { return m_sessions.value(sessionKey); }
    void bindSession(const QString &sessionKey, const QString &accountId);
    // Codex turn state: the account that issued it keeps the turn.
    QString turnStateAccount(const QByteArray &turnState) const
    {
        return m_turnStates.value(turnState);
    }
    void bindTurnState(const QByteArray &turnState, const QString &accountId);

    // Continuity anchors: which account produced a response id. Lookups hit memory first, then the store.
    void lookupAnchor(const QString &responseId, std::function<void(std::optional<AnchorRecord>)> done);
    // Keeps a served response's anchor in memory. True when its row still has to be written (a new anchor, or
    // a new account or epoch): the turn writes it in its settlement's transaction (Settlement::anchor), so a
    // turn commits two transactions (claim, settlement), not three. Until the turn hands it over with
    // anchorHandedOver(), the anchor is "unwritten": a continuation claimed in the meantime writes it first
    // (unwrittenAnchor(), SlotLedger::ClaimRequest::unwrittenAnchor).
    bool rememberAnchor(const AnchorRecord &anchor);
    // The turn submitted its settlement with the anchor (or ended without one): jobs submitted from now on
    // queue behind that write.
    void anchorHandedOver(const QString &responseId);
    std::optional<AnchorRecord> unwrittenAnchor(const QString &responseId) const;

    void recordUsage(const QString &accountId, const AccountUsage &usage);
    void recordFailure(const QString &accountId, const FailureInfo &failure);
    void recordSuccess(const QString &accountId);
    // The plan reported by the usage endpoint; stored only when it changed.
    void recordPlan(const QString &accountId, const QString &plan);

    QJsonArray statusJson() const;

    // Refreshes the account's OAuth tokens (single flight per account, also across processes). `done(ok)`
    // runs once, later: ok means the account now holds tokens newer than the ones that failed. When
    // `staleAccessToken` is given and the account already uses another access token (a refresh finished
    // since that request was sent), no refresh is made and done(true) follows. A permanent refusal moves the
    // account to reauth_required (deactivated for deactivation codes) with a reason.
    void refreshTokens(const QString &accountId, std::function<void(bool ok)> done,
                       const QString &staleAccessToken = {});
    // Refreshes accounts whose access token expires within 5 minutes or whose last refresh is 8 days old.
    void refreshDueAccounts();

    // The egress pools: token refreshes (and usage polls, through outboundRoute()) of a bound account go
    // through its pool and never direct. Until this is set a bound account's refresh is refused
    // (no_healthy_proxy). Set it before start().
    void setEgress(EgressSelector *egress);
    EgressRoute outboundRoute(const QString &accountId) const;
    // Why the account's last refresh could not go out through its egress pool (a blocked_by name), or empty.
    QString refreshEgressReason(const QString &accountId) const { return m_refreshEgress.value(accountId).first; }

signals:
    void slotFreed();
    void accountsChanged();

private:
    void load(std::function<void()> ready);
    void pollChanges();
    void applyLoaded(QList<Account> loaded, QString pin, bool strict, qint64 counter);
    void loadTokens(const QString &accountId);
    QList<Candidate> candidates(bool ignoreSlots) const;
    void persistAccountState(const Account &a);
    void applyRefresh(const QString &accountId, const RefreshCoordinator::Outcome &outcome);
    void setStatus(Account &a, const QString &status, const QString &reason);

    std::shared_ptr<const Config> m_config;
    const Clock &m_clock;
    StoreWorker *m_store;
    SecretStore *m_secrets;
    QRandomGenerator m_rng;
    QTimer m_pollTimer;
    QTimer m_refreshTimer;
    RefreshCoordinator *m_refresh = nullptr;
    SlotLedger *m_ledger = nullptr;
    QHash<QString, qint64> m_refreshRetryAtMs; // proactive refresh backoff after a transient failure
    // Accounts whose last refresh their egress pool could not carry: (blocked_by reason, message).
    QHash<QString, QPair<QString, QString>> m_refreshEgress;
    EgressSelector *m_egress = nullptr;
    QHash<QString, qint64> m_usageWrittenMs;   // when each account's usage was last stored
    // Usage to store, written kUsageWriteDelayMs after it arrived (recordUsage) or when the pool goes.
    QHash<QString, UsageRecord> m_usageToWrite;
    QTimer m_usageWriteTimer;
    void writePendingUsage();
    bool m_loading = false;
    int m_pendingTokenLoads = 0;
    QList<std::function<void()>> m_tokensSettled;
    qint64 m_changeCounter = -1;

    QList<Account> m_accounts;
    QHash<QString, int> m_index;
    QString m_pinnedAccountId;
    bool m_pinStrict = false;
    bool m_proxyPaused = false;
    Strategy m_strategy = Strategy::CapacityWeighted;

    // In-memory bindings, bounded (the soak showed unbounded growth per turn): a binding that falls out only
    // loses stickiness (sessions, turn states) or a database read (anchors, whose table still answers).
    TwoGenerationCache<QString, QString> m_sessions{kBindingCacheLimit};
    TwoGenerationCache<QByteArray, QString> m_turnStates{kBindingCacheLimit};
    TwoGenerationCache<QString, AnchorRecord> m_anchors{kBindingCacheLimit};
    // Anchors of streams still running, whose rows their settlements will write (at most one per open turn).
    QHash<QString, AnchorRecord> m_unwrittenAnchors;
};

} // namespace sy
