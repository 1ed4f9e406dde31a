#pragma once

#include "accounts/AuthTokens.h"

#include <QObject>
#include <QString>
#include <functional>

namespace sy {

enum class SecretError
{
    None,
    NotFound,  // nothing stored for that account
    NoBackend, // no secure keychain reachable (no Secret Service / D-Bus, ...)
    Timeout,   // the backend did not answer in time
    AccessDenied,
    Failed, // anything else, including a stored blob that is not ours
};

struct SecretOutcome
{
    bool ok = false;
    SecretError error = SecretError::None;
    QString errorText; // for people; never contains a token

    static SecretOutcome success() { return {true, SecretError::None, {}}; }
    static SecretOutcome failure(SecretError e, const QString &text) { return {false, e, text}; }
};

// Where account tokens live (DESIGN.md "Secrets"). Asynchronous because keychains talk over IPC and may
// hang; every implementation bounds each call with a timeout and reports it as SecretError::Timeout.
//
// Threading: call a store only from the thread it lives in. Callbacks run on that thread, always later
// (queued), never inside the call itself.
class SecretStore : public QObject
{
    Q_OBJECT
public:
    using ReadCallback = std::function<void(const SecretOutcome &outcome, const AuthTokens &tokens)>;
    using Callback = std::function<void(const SecretOutcome &outcome)>;

    static constexpr int kDefaultBlockingTimeoutMs = 10000;

    explicit SecretStore(QObject *parent = nullptr) : QObject(parent) {}

    virtual void readTokens(const QString &accountId, ReadCallback callback) = 0;
    virtual void writeTokens(const QString &accountId, const AuthTokens &tokens, Callback callback) = 0;
    // Removing an account that has no stored tokens succeeds.
    virtual void removeTokens(const QString &accountId, Callback callback) = 0;

    // For the command line: run the call and wait for it in a local event loop, at most timeoutMs (then
    // SecretError::Timeout with a message saying so). Must be called on the store's thread.
    SecretOutcome readTokensBlocking(const QString &accountId, AuthTokens *tokens,
                                     int timeoutMs = kDefaultBlockingTimeoutMs);
    SecretOutcome writeTokensBlocking(const QString &accountId, const AuthTokens &tokens,
                                      int timeoutMs = kDefaultBlockingTimeoutMs);
    SecretOutcome removeTokensBlocking(const QString &accountId, int timeoutMs = kDefaultBlockingTimeoutMs);

    // The keychain key for an account: "account/<id>".
    static QString keyFor(const QString &accountId) { return QStringLiteral("account/") + accountId; }

protected:
    // True when called on the store's own thread; otherwise queues a failure to `report` and returns false.
    bool checkThread(const std::function<void(const SecretOutcome &)> &report);
};

} // namespace sy
