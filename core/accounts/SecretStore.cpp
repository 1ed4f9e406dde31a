#include "accounts/SecretStore.h"

#include <QEventLoop>
#include <QPointer>
#include <QThread>
#include <QTimer>
#include <memory>

namespace sy {

namespace {

struct BlockingState
{
    bool done = false;
    SecretOutcome outcome;
    AuthTokens tokens;
};

using Finish = std::function<void(const SecretOutcome &, const AuthTokens &)>;

SecretOutcome wrongThread()
{
    return SecretOutcome::failure(SecretError::Failed,
                                  QStringLiteral("secret store called from a thread it does not live in"));
}

// Starts a call and waits for its callback in a local event loop, at most timeoutMs. A callback that
// arrives after we gave up only touches the shared state and a null QPointer.
SecretOutcome runBlocking(const std::function<void(Finish)> &start, int timeoutMs, const QString &what,
                          AuthTokens *tokens)
{
    QEventLoop loop;
    QPointer<QEventLoop> loopPtr(&loop);
    auto state = std::make_shared<BlockingState>();
    start([state, loopPtr](const SecretOutcome &outcome, const AuthTokens &read) {
        state->done = true;
        state->outcome = outcome;
        state->tokens = read;
        if (loopPtr)
            loopPtr->quit();
    });
    if (!state->done) {
        QTimer::singleShot(timeoutMs, &loop, &QEventLoop::quit);
        loop.exec();
    }
    if (!state->done)
        return SecretOutcome::failure(
            SecretError::Timeout,
            QStringLiteral("the secret store did not answer within %1 s while %2").arg(timeoutMs / 1000.0).arg(what));
    if (state->outcome.ok && tokens)
        *tokens = state->tokens;
    return state->outcome;
}

} // namespace

SecretOutcome SecretStore::readTokensBlocking(const QString &accountId, AuthTokens *tokens, int timeoutMs)
{
    if (QThread::currentThread() != thread())
        return wrongThread();
    return runBlocking(
        [&](Finish finish) {
            readTokens(accountId, [finish](const SecretOutcome &o, const AuthTokens &t) { finish(o, t); });
        },
        timeoutMs, QStringLiteral("reading tokens"), tokens);
}

SecretOutcome SecretStore::writeTokensBlocking(const QString &accountId, const AuthTokens &tokens, int timeoutMs)
{
    if (QThread::currentThread() != thread())
        return wrongThread();
    return runBlocking(
        [&](Finish finish) { writeTokens(accountId, tokens, [finish](const SecretOutcome &o) { finish(o, {}); }); },
        timeoutMs, QStringLiteral("writing tokens"), nullptr);
}

SecretOutcome SecretStore::removeTokensBlocking(const QString &accountId, int timeoutMs)
{
    if (QThread::currentThread() != thread())
        return wrongThread();
    return runBlocking(
        [&](Finish finish) { removeTokens(accountId, [finish](const SecretOutcome &o) { finish(o, {}); }); }, timeoutMs,
        QStringLiteral("removing tokens"), nullptr);
}

bool SecretStore::checkThread(const std::function<void(const SecretOutcome &)> &report)
{
    if (QThread::currentThread() == thread())
        return true;
    // QtKeychain serialises jobs through a process-wide object that is not thread-safe, so a call from a
    // foreign thread is refused rather than risked. The report still runs on the store's thread.
    const SecretOutcome outcome = wrongThread();
    QMetaObject::invokeMethod(
        this, [report, outcome] { report(outcome); }, Qt::QueuedConnection);
    return false;
}

} // namespace sy
