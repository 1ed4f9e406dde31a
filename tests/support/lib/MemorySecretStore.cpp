#include "MemorySecretStore.h"

namespace sy::test {

void MemorySecretStore::failWith(SecretError error, const QString &text)
{
    m_failure = error;
    m_failureText = text;
}

void MemorySecretStore::answer(const std::function<void()> &ok, const std::function<void(const SecretOutcome &)> &fail)
{
    if (m_failure == SecretError::Timeout)
        return;
    if (m_failure != SecretError::None) {
        const SecretOutcome outcome = SecretOutcome::failure(m_failure, m_failureText);
        QMetaObject::invokeMethod(
            this, [fail, outcome] { fail(outcome); }, Qt::QueuedConnection);
        return;
    }
    QMetaObject::invokeMethod(this, ok, Qt::QueuedConnection);
}

void MemorySecretStore::readTokens(const QString &accountId, ReadCallback callback)
{
    m_calls << QStringLiteral("read:") + accountId;
    const auto found = m_entries.constFind(accountId);
    const bool exists = found != m_entries.constEnd();
    const AuthTokens tokens = exists ? *found : AuthTokens{};
    answer(
        [callback, exists, tokens] {
            if (exists)
                callback(SecretOutcome::success(), tokens);
            else
                callback(
                    SecretOutcome::failure(SecretError::NotFound, QStringLiteral("no tokens stored for this account")),
                    {});
        },
        [callback](const SecretOutcome &outcome) { callback(outcome, {}); });
}

void MemorySecretStore::writeTokens(const QString &accountId, const AuthTokens &tokens, Callback callback)
{
    m_calls << QStringLiteral("write:") + accountId;
    if (m_failure == SecretError::None)
        m_entries.insert(accountId, tokens);
    answer([callback] { callback(SecretOutcome::success()); }, callback);
}

void MemorySecretStore::removeTokens(const QString &accountId, Callback callback)
{
    m_calls << QStringLiteral("remove:") + accountId;
    if (m_failure == SecretError::None)
        m_entries.remove(accountId);
    answer([callback] { callback(SecretOutcome::success()); }, callback);
}

} // namespace sy::test
