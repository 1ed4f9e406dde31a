#pragma once

#include "accounts/SecretStore.h"

namespace QKeychain {
class Job;
}

namespace sy {

// Tokens in the OS keychain through QtKeychain (Secret Service on Linux, Keychain on macOS, Credential
// Manager on Windows). One entry per account: service "switchyard", key "account/<id>", value the three
// tokens as one compact JSON blob. The insecure plain-text fallback is always off.
//
// Threading: QtKeychain queues all jobs of a process through one object that is not thread-safe, so every
// KeychainSecretStore of a process must live on the same thread, and be called on it.
//
// A keychain that never answers (a hung daemon, a locked collection waiting for a prompt) makes the call
// fail with SecretError::Timeout after jobTimeoutMs. QtKeychain runs jobs one at a time, so later jobs wait
// behind a hung one and time out too until it finishes.
class KeychainSecretStore final : public SecretStore
{
    Q_OBJECT
public:
    static constexpr int kDefaultJobTimeoutMs = 10000;

    explicit KeychainSecretStore(QObject *parent = nullptr, int jobTimeoutMs = kDefaultJobTimeoutMs,
                                 const QString &serviceName = QStringLiteral("switchyard"));

    void readTokens(const QString &accountId, ReadCallback callback) override;
    void writeTokens(const QString &accountId, const AuthTokens &tokens, Callback callback) override;
    void removeTokens(const QString &accountId, Callback callback) override;

    QString serviceName() const { return m_service; }
    int jobTimeoutMs() const { return m_jobTimeoutMs; }

private:
    using Finish = std::function<void(const SecretOutcome &outcome, QKeychain::Job *job)>;
    void run(QKeychain::Job *job, const QString &what, Finish finish);

    int m_jobTimeoutMs;
    QString m_service;
};

} // namespace sy
