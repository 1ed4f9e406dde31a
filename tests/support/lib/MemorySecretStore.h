#pragma once

#include "accounts/SecretStore.h"

#include <QHash>
#include <QStringList>

namespace sy::test {

// A SecretStore in memory, for unit tests of modules that need tokens (never linked into the app).
// Like the real one it answers later (queued), never inside the call. Failures can be injected.
class MemorySecretStore final : public SecretStore
{
    Q_OBJECT
public:
    explicit MemorySecretStore(QObject *parent = nullptr) : SecretStore(parent) {}

    void readTokens(const QString &accountId, ReadCallback callback) override;
    void writeTokens(const QString &accountId, const AuthTokens &tokens, Callback callback) override;
    void removeTokens(const QString &accountId, Callback callback) override;

    // Every following call fails with this error until clearFailure(); SecretError::Timeout makes calls
    // never answer (like a hung keychain), which the blocking helpers turn into their timeout.
    void failWith(SecretError error, const QString &text = QStringLiteral("injected failure"));
    void clearFailure() { m_failure = SecretError::None; }

    // Direct access for test setup and assertions.
    void put(const QString &accountId, const AuthTokens &tokens) { m_entries.insert(accountId, tokens); }
    bool contains(const QString &accountId) const { return m_entries.contains(accountId); }
    AuthTokens tokens(const QString &accountId) const { return m_entries.value(accountId); }
    int size() const { return int(m_entries.size()); }
    // "read:<id>", "write:<id>", "remove:<id>" in call order.
    QStringList calls() const { return m_calls; }

private:
    // Queues `answer` unless a failure is injected; then queues the failure (or nothing, for Timeout).
    void answer(const std::function<void()> &ok, const std::function<void(const SecretOutcome &)> &fail);

    QHash<QString, AuthTokens> m_entries;
    QStringList m_calls;
    SecretError m_failure = SecretError::None;
    QString m_failureText;
};

} // namespace sy::test
