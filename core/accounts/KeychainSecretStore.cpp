#include "accounts/KeychainSecretStore.h"

#include <QTimer>
#include <memory>
#include <qt6keychain/keychain.h>

namespace sy {

namespace {

// libsecret reports an unreachable session bus or Secret Service as a generic error (QtKeychain's
// OtherError) whose text comes from GDBus; recognise those texts so the user hears the real cause.
bool looksLikeNoKeychain(const QString &detail)
{
    static const char *const markers[] = {
        "d-bus",          "dbus",          "autolaunch", "could not connect", "org.freedesktop.secrets",
        ".service files", "secret service"};
    for (const char *marker : markers) {
        if (detail.contains(QLatin1String(marker), Qt::CaseInsensitive))
            return true;
    }
    return false;
}

SecretOutcome outcomeOf(const QKeychain::Job *job, const QString &what)
{
    const QString detail = job->errorString();
    switch (job->error()) {
    case QKeychain::NoError:
        return SecretOutcome::success();
    case QKeychain::EntryNotFound:
        return SecretOutcome::failure(SecretError::NotFound,
                                      QStringLiteral("no tokens stored in the keychain for this account"));
    case QKeychain::AccessDenied:
    case QKeychain::AccessDeniedByUser:
        return SecretOutcome::failure(SecretError::AccessDenied,
                                      QStringLiteral("the keychain denied access while %1: %2").arg(what, detail));
    case QKeychain::NoBackendAvailable:
        break;
    case QKeychain::OtherError:
        if (looksLikeNoKeychain(detail))
            break;
        return SecretOutcome::failure(SecretError::Failed,
                                      QStringLiteral("keychain error while %1: %2").arg(what, detail));
    default:
        return SecretOutcome::failure(SecretError::Failed,
                                      QStringLiteral("keychain error while %1: %2").arg(what, detail));
    }
    return SecretOutcome::failure(
        SecretError::NoBackend,
        QStringLiteral("no secure keychain available (Secret Service / D-Bus not reachable): %1").arg(detail));
}

} // namespace

KeychainSecretStore::KeychainSecretStore(QObject *parent, int jobTimeoutMs, const QString &serviceName)
    : SecretStore(parent), m_jobTimeoutMs(jobTimeoutMs), m_service(serviceName)
{
}

void KeychainSecretStore::run(QKeychain::Job *job, const QString &what, Finish finish)
{
    job->setInsecureFallback(false);
    // The job stays unparented and deletes itself when QtKeychain finishes it: libsecret holds a raw pointer
    // to it until then, so deleting it at our timeout would crash later.
    job->setAutoDelete(true);
    auto settled = std::make_shared<bool>(false);
    auto *timer = new QTimer(this);
    timer->setSingleShot(true);
    connect(job, &QKeychain::Job::finished, this, [settled, timer, what, finish](QKeychain::Job *done) {
        if (*settled)
            return;
        *settled = true;
        timer->deleteLater();
        finish(outcomeOf(done, what), done);
    });
    const int timeoutMs = m_jobTimeoutMs;
    connect(timer, &QTimer::timeout, this, [settled, timer, what, finish, timeoutMs] {
        if (*settled)
            return;
        *settled = true;
        timer->deleteLater();
        finish(SecretOutcome::failure(
                   SecretError::Timeout,
                   QStringLiteral("the keychain did not answer within %1 ms while %2").arg(timeoutMs).arg(what)),
               nullptr);
    });
    timer->start(m_jobTimeoutMs);
    job->start();
}

void KeychainSecretStore::readTokens(const QString &accountId, ReadCallback callback)
{
    if (!checkThread([callback](const SecretOutcome &o) { callback(o, {}); }))
        return;
    auto *job = new QKeychain::ReadPasswordJob(m_service);
    job->setKey(keyFor(accountId));
    run(job, QStringLiteral("reading tokens"), [callback](const SecretOutcome &outcome, QKeychain::Job *done) {
        if (!outcome.ok) {
            callback(outcome, {});
            return;
        }
        AuthTokens tokens;
        QString error;
        if (!deserializeTokens(static_cast<QKeychain::ReadPasswordJob *>(done)->binaryData(), &tokens, &error)) {
            callback(
                SecretOutcome::failure(SecretError::Failed, QStringLiteral("keychain entry is unreadable: ") + error),
                {});
            return;
        }
        callback(outcome, tokens);
    });
}

void KeychainSecretStore::writeTokens(const QString &accountId, const AuthTokens &tokens, Callback callback)
{
    if (!checkThread(callback))
        return;
    auto *job = new QKeychain::WritePasswordJob(m_service);
    job->setKey(keyFor(accountId));
    job->setTextData(QString::fromUtf8(serializeTokens(tokens)));
    run(job, QStringLiteral("writing tokens"),
        [callback](const SecretOutcome &outcome, QKeychain::Job *) { callback(outcome); });
}

void KeychainSecretStore::removeTokens(const QString &accountId, Callback callback)
{
    if (!checkThread(callback))
        return;
    auto *job = new QKeychain::DeletePasswordJob(m_service);
    job->setKey(keyFor(accountId));
    run(job, QStringLiteral("removing tokens"), [callback](const SecretOutcome &outcome, QKeychain::Job *) {
        // Removing what is not there leaves the keychain as asked.
        if (outcome.error == SecretError::NotFound)
            callback(SecretOutcome::success());
        else
            callback(outcome);
    });
}

} // namespace sy
